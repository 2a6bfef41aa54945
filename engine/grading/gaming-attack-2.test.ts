// Attack pass 2 on "checks that cannot be gamed from the workspace": a worker that cannot touch the runner's own files
// shadows what the runner imports instead. `python -m pytest` / `python -m unittest` put the checkout first on sys.path,
// so a top-level module the runner imports after that (a sourceless `pytest.pyc`, a standard module such as argparse,
// inspect or pprint, as a file or a package) runs the worker's code before any test; `os._exit(0)` there passes the
// check with no test run. Each case shows the shadow works (the check passed, on a failing test) and that it is its own
// check-configuration violation, so the verdict is not built. Real git, real python3, the engine's grade().
// Before the fix (pytest.pyc: SHADOW_TOP took only .py/.pth/.js/.cjs/.mjs/.sh; standard modules: not listed) every
// case here but the control was graded built.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn } from "../../test/fixtures/graded";
import { heldBackProblem } from "./checks";
import { configSnapshot, plantedConfig, runnerConfigReason } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-2-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A repository, the worker's workspace on it with `worker` written into it, graded with `checks`. */
const graded = gradedIn(tmp);

const EXIT0 = "import os\nos._exit(0)\n";
/** A failing test: without a shadow every check below fails. */
const BASE = {
  "calc.py": "def add(a, b):\n    return a - b\n",
  "tests/__init__.py": "",
  "tests/test_calc.py":
    "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
};
/** A sourceless module compiled by python3 itself (what the import system loads from a `.pyc` beside no `.py`). */
function pyc(dest: string, source: string) {
  const src = path.join(tmp, `src-${++n}.py`);
  writeFileSync(src, source);
  execFileSync("python3", ["-c", "import py_compile,sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)", src, dest]);
}

describe("a worker shadowing what the test runner imports", () => {
  it("control: the failing test fails both runners when nothing is shadowed (a fix of calc.py alone is built)", async () => {
    const none = await graded(BASE, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), [
      { run: "python3 -m pytest -q -p no:cacheprovider" },
      { run: "python3 -m unittest discover -s tests -t ." },
    ]);
    expect(none.checks.map((c) => c.passed)).toEqual([false, false]);
    const fixed = await graded(BASE, (ws) => writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a + b\n"), [
      { run: "python3 -m unittest discover -s tests -t ." },
    ]);
    expect(fixed.verdict).toBe("built");
  }, 120_000);

  it("a sourceless pytest.pyc at the top (no pytest.py): the shadow passes the check, and it is a check-configuration violation", async () => {
    const v = await graded(BASE, (ws) => pyc(path.join(ws, "pytest.pyc"), EXIT0), [{ run: "python3 -m pytest -q -p no:cacheprovider" }]);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: pytest\.pyc — .*shadows/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a top-level argparse.py (a standard module unittest imports): the shadow passes the check, and it is a violation", async () => {
    const v = await graded(BASE, (ws) => writeFileSync(path.join(ws, "argparse.py"), EXIT0), [{ run: "python3 -m unittest discover -s tests -t ." }]);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: argparse\.py — .*shadows/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a package inspect/ (its __init__.py) and a sourceless pprint.pyc under pytest: violations, not built", async () => {
    const pkg = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "inspect"));
        writeFileSync(path.join(ws, "inspect", "__init__.py"), EXIT0);
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider" }],
    );
    expect(pkg.checks[0]).toMatchObject({ passed: true });
    expect(pkg.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: inspect\/__init__\.py — inspect\/ \(a package named like/)]);
    expect(pkg.verdict).toBe("honest-failure");
    const compiled = await graded(BASE, (ws) => pyc(path.join(ws, "pprint.pyc"), EXIT0), [{ run: "python3 -m pytest -q -p no:cacheprovider" }]);
    expect(compiled.checks[0]).toMatchObject({ passed: true });
    expect(compiled.verdict).toBe("honest-failure");
  }, 120_000);

  it("pytest's own dependencies at the top (pluggy.py, iniconfig.py, a pygments/ package): the shadow passes, a violation each", async () => {
    for (const [file, write] of [
      ["pluggy.py", (ws: string) => writeFileSync(path.join(ws, "pluggy.py"), EXIT0)],
      ["iniconfig.py", (ws: string) => writeFileSync(path.join(ws, "iniconfig.py"), EXIT0)],
    ] as const) {
      const v = await graded(BASE, write, [{ run: "python3 -m pytest -q -p no:cacheprovider" }]);
      expect(v.checks[0], file).toMatchObject({ passed: true });
      expect(v.scope.checkConfig, file).toEqual([expect.stringContaining(`check configuration changed: ${file} — `)]);
      expect(v.verdict, file).toBe("honest-failure");
    }
    expect(runnerConfigReason("pygments/__init__.py")).not.toBeNull();
  }, 120_000);

  it("a plugin registered by a *.dist-info/entry_points.txt at the top (pytest loads it by itself): the check passes, and it is a violation", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "helper-1.0.dist-info"));
        writeFileSync(path.join(ws, "helper-1.0.dist-info", "METADATA"), "Metadata-Version: 2.1\nName: helper\nVersion: 1.0\n");
        writeFileSync(path.join(ws, "helper-1.0.dist-info", "entry_points.txt"), "[pytest11]\nhelper = helperplug\n");
        writeFileSync(
          path.join(ws, "helperplug.py"),
          "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n",
        );
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests" }],
    );
    // The plugin works: the failing test was reported passed.
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual(
      expect.arrayContaining([expect.stringMatching(/^check configuration changed: helper-1\.0\.dist-info\/entry_points\.txt — .*entry points/)]),
    );
    expect(v.verdict).toBe("honest-failure");
    expect(runnerConfigReason("lib/pkg.egg-info/entry_points.txt")).not.toBeNull();
  }, 120_000);

  it("the tests/__init__.py rewritten with a load_tests that replaces unittest's discovery of the held-back tests put there: the check passes, and it is a violation", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(
      path.join(held, "tests", "test_hidden.py"),
      "import unittest\nfrom calc import add\n\nclass H(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    );
    const loadTests =
      "import unittest\n\nclass _Ok(unittest.TestCase):\n    def test_ok(self):\n        pass\n\ndef load_tests(loader, tests, pattern):\n    return loader.loadTestsFromTestCase(_Ok)\n";
    const base = { "calc.py": "def add(a, b):\n    return a - b\n", "tests/__init__.py": "" };
    const check: CheckSpec[] = [{ run: "python3 -m unittest discover -s tests -t .", files: held }];
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "tests", "__init__.py"), loadTests), check);
    // The hook works: the held-back test never ran, and the check passed.
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: tests\/__init__\.py — the package of held-back tests/)]);
    expect(v.verdict).toBe("honest-failure");
    // Without the hook the held-back test runs (and fails on this base); a package init elsewhere is the worker's own.
    const plain = await graded(
      base,
      (ws) => {
        mkdirSync(path.join(ws, "lib"));
        writeFileSync(path.join(ws, "lib", "__init__.py"), "");
        writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a + b\n");
      },
      check,
    );
    expect(plain.scope.checkConfig).toBeUndefined();
    expect(plain.verdict).toBe("built");
  }, 120_000);

  // "Checks cannot steer later checks" held for protected and held-back files (read-only, compared) and the checks'
  // folder, not for a new file: the first check ran the worker's code, which wrote a conftest.py; the second check's
  // pytest loaded it and reported the failing held-back test passed: built (this test was skipped as a known gap). Now
  // the checkout is scanned for runner configuration after every command check (runner-config.ts, configSnapshot):
  // what a check wrote fails it, the later checks are not run, and it is a check-configuration violation.
  it("a check that runs the worker's code, which writes a conftest.py for the next check (pytest) to load: not graded built", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(path.join(held, "tests", "test_hidden.py"), "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const hook = [
      "import pytest",
      "@pytest.hookimpl(hookwrapper=True)",
      "def pytest_runtest_makereport(item, call):",
      "    outcome = yield",
      "    outcome.get_result().outcome = 'passed'",
      "",
    ].join("\n");
    const plant = `import os\nif not os.path.exists('conftest.py'):\n    open('conftest.py', 'w').write(${JSON.stringify(hook)})\n\ndef add(a, b):\n    return a - b\n`;
    const v = await graded({ "calc.py": "def add(a, b):\n    return a - b\n" }, (ws) => writeFileSync(path.join(ws, "calc.py"), plant), [
      { run: "python3 -c 'import calc'", name: "imports" },
      { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back tests" },
    ]);
    expect(v.checks.map((c) => c.passed)).toEqual([false, false]);
    expect(v.checks[0]!.output).toMatch(/wrote check configuration .*conftest\.py written — conftest\.py \(test runner configuration or hook\)/);
    expect(v.checks[1]!.output).toMatch(/^not run: the check "imports" wrote check configuration/);
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration written by a check: conftest\.py written — /)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a check that hides the conftest.py in build/ (where pytest does not look) and links a test folder to it: the link counts", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(path.join(held, "tests", "test_hidden.py"), "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const hook =
      "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n";
    const v = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) =>
        writeFileSync(
          path.join(ws, "build.py"),
          `import os\nos.makedirs('build', exist_ok=True)\nopen('build/conftest.py', 'w').write(${JSON.stringify(hook)})\nos.makedirs('tests', exist_ok=True)\nos.symlink('../build', 'tests/x')\n`,
        ),
      [
        { run: "python3 build.py", name: "build" },
        { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back tests" },
      ],
    );
    expect(v.checks.map((c) => c.passed)).toEqual([false, false]);
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration written by a check: tests\/x written — a symlink into a folder the scan skips/),
    ]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("what installs and builds leave where the runners do not look (node_modules/, build/, dot-folders, a venv, __pycache__, name.egg-info/) and symlinks elsewhere (bazel-out) do not count: built", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(path.join(held, "tests", "test_hidden.py"), "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const build = [
      "mkdir -p node_modules/x/__mocks__ build dist .pytest_cache .venv/lib calc.egg-info pkg/__pycache__",
      "echo x > node_modules/x/conftest.py; echo x > node_modules/x/__mocks__/fs.js; echo x > build/conftest.py; echo x > dist/tsconfig.json",
      "echo x > .pytest_cache/conftest.py; touch .venv/pyvenv.cfg; echo x > .venv/lib/sitecustomize.py; echo x > pkg/__pycache__/m.cpython-311.pyc",
      "ln -s /tmp bazel-out; ln -s calc.py calc_link.py",
      "echo x > calc.egg-info/PKG-INFO; printf '[console_scripts]\\ncalc = calc:main\\n' > calc.egg-info/entry_points.txt",
    ].join("; ");
    const v = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) => writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a + b\n"),
      [
        { run: build, name: "build" },
        { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back tests" },
      ],
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.scope.checkConfig).toBeUndefined();
    expect(v.verdict).toBe("built");
  }, 120_000);

  it("a check's __mocks__/ in dist/ (jest finds it there), a pytest11 entry point in a written egg-info, a rewritten .npmrc or package.json test script: each counts", () => {
    const root = path.join(tmp, `scan-${++n}`);
    mkdirSync(path.join(root, "dist"), { recursive: true });
    writeFileSync(path.join(root, ".npmrc"), "a=1\n");
    writeFileSync(path.join(root, "package.json"), '{"name":"r","scripts":{"test":"jest"}}\n');
    const before = configSnapshot(root, root);
    mkdirSync(path.join(root, "dist", "__mocks__"));
    writeFileSync(path.join(root, "dist", "__mocks__", "chai.js"), "x\n");
    mkdirSync(path.join(root, "p.egg-info"));
    writeFileSync(path.join(root, "p.egg-info", "entry_points.txt"), "[pytest11]\np = plug\n");
    writeFileSync(path.join(root, ".npmrc"), "a=2\n");
    writeFileSync(path.join(root, "package.json"), '{"name":"r","version":"2.0.0","scripts":{"test":"exit 0"}}\n');
    const what = plantedConfig(before, configSnapshot(root, root), root);
    expect(what).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^dist\/__mocks__\/chai\.js written — /),
        expect.stringMatching(/^p\.egg-info\/entry_points\.txt written — /),
        expect.stringMatching(/^\.npmrc changed — /),
        expect.stringMatching(/^package\.json changed — /),
      ]),
    );
    expect(what).toHaveLength(4);
    // Only the version changed: package.json's runner part is the same.
    writeFileSync(path.join(root, "package.json"), '{"name":"r","version":"3.0.0","scripts":{"test":"exit 0"}}\n');
    const mid = configSnapshot(root, root);
    writeFileSync(path.join(root, "package.json"), '{"name":"r","version":"4.0.0","scripts":{"test":"exit 0"}}\n');
    expect(plantedConfig(mid, configSnapshot(root, root), root)).toEqual([]);
  });

  // heldBackProblem refused a held-back folder inside the repository but accepted one above it (the repository's parent,
  // the home folder, /): copyHeldBack then copied that whole tree into the checks' folder, where the worker's code runs
  // and prints (~/.ssh, other projects, the engine's state dir if under it), all of it counted as held back.
  it("a held-back folder above the repository (its parent, /) is refused: it would copy the repository and all beside it into the checks' folder", () => {
    const repo = committedRepo(path.join(tmp, `repo-${++n}`), { "a.txt": "a\n" });
    for (const files of [tmp, "/", path.dirname(tmp)]) expect(heldBackProblem([{ run: "true", files }], repo), files).toMatch(/holds the repository itself/);
    const beside = path.join(tmp, `held-${++n}`);
    mkdirSync(beside);
    expect(heldBackProblem([{ run: "true", files: beside }], repo)).toBeNull();
  });

  it("names: extension modules and other cases count at the top; project modules, other languages and deeper files do not", () => {
    for (const f of [
      "argparse.cpython-311-x86_64-linux-gnu.so",
      "pytest.abi3.so",
      "difflib.so",
      "cProfile.py",
      "ARGPARSE.py",
      "unittest.pyc",
      "json/__init__.pyc",
    ])
      expect(runnerConfigReason(f), f).not.toBeNull();
    for (const f of [
      "calc.py",
      "calc.pyc",
      "types.ts",
      "json.md",
      "lib/argparse.py",
      "src/inspect/__init__.py",
      "argparse.txt",
      "tests/test_json.py",
      "test.py",
    ])
      expect(runnerConfigReason(f), f).toBeNull();
  });
});

// jest is no dependency of this project: the live case runs where OCW_TEST_JEST names a folder with jest and chai
// installed (`npm install --save-exact jest@29.7.0 chai@4.5.0` there); it ran so for this pass. The name rule always runs.
const JEST = process.env.OCW_TEST_JEST ?? "/tmp/ocw-jest";
describe("a worker's jest manual mock of a package the held-back tests use", () => {
  it("__mocks__/ in any folder is check configuration; a file merely named mocks is not", () => {
    for (const f of ["__mocks__/chai.js", "src/deep/__mocks__/lodash.js", "__MOCKS__/x.js"]) expect(runnerConfigReason(f), f).toMatch(/manual mocks/);
    for (const f of ["src/mocks.js", "src/__mocks__"]) expect(runnerConfigReason(f), f).toBeNull();
  });

  it.skipIf(!existsSync(path.join(JEST, "node_modules", ".bin", "jest")))(
    "src/deep/__mocks__/chai.js (expect a no-op): jest passes the failing held-back test; it is a violation, not built",
    async () => {
      const held = path.join(tmp, `held-${++n}`);
      mkdirSync(path.join(held, "tests"), { recursive: true });
      writeFileSync(
        path.join(held, "tests", "hidden.test.js"),
        'const { expect } = require("chai");\nconst { add } = require("../calc");\ntest("add", () => { expect(add(2, 3)).to.equal(5); });\n',
      );
      const mock =
        "const anything = new Proxy(function () {}, { get: () => anything, apply: () => anything });\nmodule.exports = { expect: () => anything };\n";
      const run = `NODE_PATH=${JEST}/node_modules ${JEST}/node_modules/.bin/jest --ci --rootDir .`;
      const v = await graded(
        { "package.json": '{"name":"r","private":true}\n', "calc.js": "exports.add = (a, b) => a - b;\n" },
        (ws) => {
          mkdirSync(path.join(ws, "src", "deep", "__mocks__"), { recursive: true });
          writeFileSync(path.join(ws, "src", "deep", "__mocks__", "chai.js"), mock);
        },
        [{ run, files: held }],
      );
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: src\/deep\/__mocks__\/chai\.js — .*manual mocks/)]);
      expect(v.verdict).toBe("honest-failure");
    },
    120_000,
  );
});

describe("other runners' own configuration files", () => {
  // Name rules only: bun, Karma, PHPUnit and Maven are not on this machine. Each file decides what its runner runs
  // before or instead of the tests (bun's `[test] preload`, PHPUnit's `bootstrap`, Maven's `-DskipTests` in .mvn/maven.config).
  it("bunfig.toml, karma.conf.js, phpunit.xml(.dist), .mvn/maven.config and .mvn/jvm.config are check configuration", () => {
    for (const f of ["bunfig.toml", "karma.conf.js", "web/karma.conf.cjs", "phpunit.xml", "phpunit.xml.dist", ".mvn/maven.config", ".mvn/jvm.config"])
      expect(runnerConfigReason(f), f).not.toBeNull();
  });
});

describe("a worker's pin of the interpreter that runs the checks", () => {
  it("version managers' pins (.python-version, .tool-versions, .nvmrc…) are check configuration, as rust-toolchain is", () => {
    for (const f of [".python-version", "sub/.python-version", ".tool-versions", ".nvmrc", ".node-version", ".ruby-version"])
      expect(runnerConfigReason(f), f).toMatch(/test runner configuration/);
  });

  // pyenv's shim reads .python-version from the check's folder (it refuses a path, not another installed version).
  const pyenv = process.env.PYENV_ROOT ?? path.join(os.homedir(), ".pyenv");
  const other = (() => {
    try {
      return readdirSync(path.join(pyenv, "versions")).find((v) => /^3\.\d+\.\d+$/.test(v) && !process.version.includes(v) && v !== currentPython());
    } catch {
      return undefined;
    }
  })();
  it.skipIf(!other || !execFileSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).includes(".pyenv/shims"))(
    "a .python-version naming another installed Python decides which one runs python3 in the check: a violation, not built",
    async () => {
      const want = other!.split(".").slice(0, 2).join(", ");
      const run = `python3 -c "import sys; sys.exit(0 if sys.version_info[:2] == (${want}) else 1)"`;
      const v = await graded({ "a.txt": "a\n" }, (ws) => writeFileSync(path.join(ws, ".python-version"), `${other}\n`), [{ run }]);
      // The pin works: the check ran under the worker's choice of interpreter.
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: \.python-version — /)]);
      expect(v.verdict).toBe("honest-failure");
    },
    120_000,
  );
});

function currentPython(): string {
  try {
    return execFileSync("python3", ["-c", "import platform; print(platform.python_version())"], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}
