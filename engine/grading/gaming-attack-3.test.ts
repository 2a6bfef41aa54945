// Attack pass 3 on "a verdict is evidence": a cheating worker with only its workspace and its shell. Each case drives the
// engine's grade() on real git and a real runner (python3, pytest, bash), shows the trick works on the check (it passed
// on a failing test), and that the verdict is not built. Before the fixes each case here but the controls was built.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gradedIn, heldBackIn, installedPythonPackage } from "../../test/fixtures/graded";
import { createWorkspace, inspectRepo } from "../workspace";
import { grade } from "./grade";
import { clearHeldBackBytecode, pythonImportPaths, pythonImports } from "./checks";
import { configSnapshot, plantedConfig, runnerConfigReason } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-3-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const graded = gradedIn(tmp);

/** A held-back folder with one pytest test in tests/ (no __init__.py: pytest puts tests/ first on sys.path). */
const heldBack = heldBackIn(tmp);

describe("a worker shadowing a module beside the held-back tests", () => {
  // pytest's default import mode inserts the folder of each test module (the first one up without an __init__.py) at
  // the front of sys.path, and `unittest discover -s tests` does the same: a worker's module there is imported in place of
  // a standard one the held-back test imports. At the top of the checks' folder that was already a violation.
  const TEST = "import colorsys\nfrom calc import red\n\ndef test_red():\n    assert colorsys.rgb_to_hsv(red(), 0, 0)[2] == 1.0\n";
  const BASE = { "calc.py": "def red():\n    return 0\n" };
  const SHADOW = "def rgb_to_hsv(*a):\n    return (0, 0, 1.0)\n";

  it("control: the fix alone is built; the failing test fails", async () => {
    const held = heldBack(TEST);
    const check: CheckSpec[] = [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }];
    const none = await graded(BASE, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check);
    expect(none.checks[0]).toMatchObject({ passed: false });
    const fixed = await graded(BASE, (ws) => writeFileSync(path.join(ws, "calc.py"), "def red():\n    return 1\n"), check);
    expect(fixed.verdict).toBe("built");
  }, 120_000);

  it("tests/colorsys.py beside the held-back test: the shadow passes the check, and it is a check-configuration violation", async () => {
    const held = heldBack(TEST);
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "colorsys.py"), SHADOW);
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }],
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: tests\/colorsys\.py — .*held-back tests/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a package tests/colorsys/ and a shadow a check writes there: each counts; the worker's own helper module there does not", async () => {
    const held = heldBack(TEST);
    const pkg = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests", "colorsys"), { recursive: true });
        writeFileSync(path.join(ws, "tests", "colorsys", "__init__.py"), SHADOW);
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }],
    );
    expect(pkg.checks[0]).toMatchObject({ passed: true });
    expect(pkg.verdict).toBe("honest-failure");
    const planted = await graded(
      BASE,
      (ws) =>
        writeFileSync(
          path.join(ws, "build.py"),
          `import os\nos.makedirs('tests', exist_ok=True)\nopen('tests/colorsys.py', 'w').write(${JSON.stringify(SHADOW)})\n`,
        ),
      [
        { run: "python3 build.py", name: "build" },
        { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back" },
      ],
    );
    expect(planted.checks.map((c) => c.passed)).toEqual([false, false]);
    expect(planted.verdict).toBe("honest-failure");
    const helper = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "helpers.py"), "X = 1\n");
        writeFileSync(path.join(ws, "calc.py"), "def red():\n    return 1\n");
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }],
    );
    expect(helper.scope.checkConfig).toBeUndefined();
    expect(helper.verdict).toBe("built");
  }, 120_000);

  it("only beside held-back tests (their folder or one above it): the same name elsewhere is the worker's", () => {
    expect(runnerConfigReason("lib/colorsys.py")).toBeNull();
    const root = path.join(tmp, `scan-${++n}`);
    mkdirSync(path.join(root, "tests", "unit"), { recursive: true });
    mkdirSync(path.join(root, "lib"), { recursive: true });
    const before = configSnapshot(root, root, ["tests/unit"]);
    writeFileSync(path.join(root, "tests", "unit", "decimal.py"), "x\n");
    writeFileSync(path.join(root, "tests", "argparse.pyc"), "x\n");
    writeFileSync(path.join(root, "lib", "decimal.py"), "x\n");
    writeFileSync(path.join(root, "tests", "unit", "helpers.py"), "x\n");
    const what = plantedConfig(before, configSnapshot(root, root, ["tests/unit"]), root);
    expect(what).toEqual([expect.stringMatching(/^tests\/argparse\.pyc written/), expect.stringMatching(/^tests\/unit\/decimal\.py written/)]);
  });
});

describe("a worker's module named like an installed package a held-back test imports", () => {
  // pytest and unittest put the held-back test's folder first on sys.path, and `python -m pytest` the checks' folder:
  // a worker's numpy.py there is what `import numpy` loads, and a stub of the one function the test calls passes it.
  // The package: the first of these installed for the checks' python3 (numpy on this machine).
  const pkg = installedPythonPackage();
  const TEST = `import ${pkg}\nfrom calc import total\n\ndef test_total():\n    assert ${pkg}.ocw_verify(total([1, 2]))\n`;
  const BASE = { "calc.py": "def total(xs):\n    return 0\n" };
  const STUB = "def ocw_verify(*a):\n    return True\n";
  const check = (held: string): CheckSpec[] => [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }];

  it("the names a held-back file imports: absolute imports at the start of a line, top-level name only", () => {
    const text =
      "import numpy as np, os.path\nfrom yaml.loader import Loader\nfrom . import helper\nfrom .x import y\n  import requests  # indented\nx = 'import'\n";
    expect(pythonImports(text).sort()).toEqual(["numpy", "os", "requests", "yaml"]);
    expect(pythonImports("from pkg import(a)\n")).toEqual(["pkg"]);
  });

  it("an installed package is there to shadow", () => {
    expect(pkg, "none of numpy, yaml, requests, six, certifi, idna is installed for python3").toBeTruthy();
  });

  it("beside the held-back test, at the top of the checks' folder, or as a package: the stub passes the check, and it is a check-configuration violation", async () => {
    for (const [file, at] of [
      [`tests/${pkg}.py`, "tests"],
      [`${pkg}.py`, ""],
      [`tests/${pkg}/__init__.py`, `tests/${pkg}`],
    ] as const) {
      const v = await graded(
        BASE,
        (ws) => {
          mkdirSync(path.join(ws, "tests", at.replace(/^tests\/?/, "")), { recursive: true });
          writeFileSync(path.join(ws, file), STUB);
        },
        check(heldBack(TEST)),
      );
      expect(v.checks[0], file).toMatchObject({ passed: true });
      expect(v.scope.checkConfig, file).toEqual([
        expect.stringMatching(
          new RegExp(`^check configuration changed: ${file.replace(/[./]/g, "\\$&")} — named like ${pkg}, an installed package a held-back test imports`),
        ),
      ]);
      expect(v.verdict, file).toBe("honest-failure");
    }
  }, 120_000);

  it("control: the worker's own module the test imports (not installed) is built; a module of that name elsewhere is not asked about", async () => {
    const fixed = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), "def total(xs):\n    return sum(xs)\n");
        mkdirSync(path.join(ws, "lib"));
        writeFileSync(path.join(ws, "lib", `${pkg}.py`), STUB);
      },
      check(heldBack(`import ${pkg}\nfrom calc import total\n\ndef test_total():\n    assert ${pkg} and total([1, 2]) == 3\n`)),
    );
    expect(fixed.scope.checkConfig).toBeUndefined();
    expect(fixed.verdict).toBe("built");
  }, 120_000);

  it("named in the scope, the worker's module of that name is allowed", async () => {
    const v = await graded(BASE, (ws) => writeFileSync(path.join(ws, `${pkg}.py`), STUB), check(heldBack(TEST)), [`${pkg}.py`]);
    expect(v.scope.checkConfig).toBeUndefined();
  }, 120_000);
});

describe("a worker that changes a helper the held-back tests import from beside them", () => {
  // tests/helpers.py is the project's, in the folder the held-back tests land in; they import it. A worker that empties
  // its assertion passes them. Not a violation (a task may have to change a helper), but said with the verdict.
  const BASE = { "calc.py": "def total(xs):\n    return 0\n", "tests/helpers.py": "def check(ok):\n    assert ok\n" };
  const EMPTIED = "def check(ok):\n    pass\n";

  it("`from helpers import check` and `from tests.helpers import check`: the emptied helper passes, and the verdict says the worker changed it", async () => {
    for (const line of ["from helpers import check", "from tests.helpers import check"]) {
      const held = heldBack(`${line}\nfrom calc import total\n\ndef test_total():\n    check(total([1, 2]) == 3)\n`);
      const v = await graded(BASE, (ws) => writeFileSync(path.join(ws, "tests", "helpers.py"), EMPTIED), [
        { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held },
      ]);
      expect(v.checks[0], line).toMatchObject({ passed: true });
      expect(v.caveats, line).toContainEqual(expect.stringMatching(/^the worker changed tests\/helpers\.py, which a held-back test imports as a test helper/));
    }
  }, 120_000);

  it("control: a fix of the code under test alone carries no such word, nor does a helper no held-back test imports", async () => {
    const held = heldBack("from helpers import check\nfrom calc import total\n\ndef test_total():\n    check(total([1, 2]) == 3)\n");
    const v = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), "def total(xs):\n    return sum(xs)\n");
        writeFileSync(path.join(ws, "tests", "other.py"), "X = 1\n");
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }],
    );
    expect(v.verdict).toBe("built");
    expect(v.caveats?.some((c) => c.startsWith("the worker changed"))).toBe(false);
  }, 120_000);

  it("the module paths a held-back file imports", () => {
    const text = "import a.b as c, d\nfrom e.f import g, h\nfrom . import x\nfrom .y import z\nfrom .. import no\nfrom k import (m,\n  n)\n";
    expect(pythonImportPaths(text).sort()).toEqual(["./x", "./y", "./y/z", "a/b", "d", "e/f", "e/f/g", "e/f/h", "k", "k/m"].sort());
  });
});

describe("a worker's program found through a relative PATH entry of the engine's", () => {
  // The engine passes its PATH on to every check. An entry that is not absolute (`bin`, `.`, an empty one: a leading,
  // trailing or doubled `:`, as `PATH=$PATH:$UNSET` leaves) is looked up from the check's folder: the worker's checkout.
  const TEST = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n";
  const BASE = { "calc.py": "def add(a, b):\n    return a - b\n" };
  const FAKE = "#!/bin/sh\nexit 0\n";

  for (const entry of ["bin", ""]) {
    it(`PATH=${JSON.stringify(entry)}:$PATH and the worker's ${entry || "."}/python3 that exits 0: the check runs the real python3 (fails), not built`, async () => {
      const held = heldBack(TEST);
      const saved = process.env.PATH;
      process.env.PATH = `${entry}${path.delimiter}${saved}`;
      try {
        const v = await graded(
          BASE,
          (ws) => {
            mkdirSync(path.join(ws, entry || "."), { recursive: true });
            writeFileSync(path.join(ws, entry || ".", "python3"), FAKE, { mode: 0o755 });
          },
          [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: held }],
          // A task that may change these (the fake must not be caught as a shadow of python3 at the top: this is PATH's doing).
          ["python3", "bin/python3"],
        );
        expect(v.checks[0]).toMatchObject({ passed: false });
        expect(v.checks[0]!.output).toMatch(/assert -1 == 5/);
        expect(v.verdict).toBe("honest-failure");
      } finally {
        process.env.PATH = saved;
      }
    }, 120_000);
  }
});

describe("a worker's package named like a held-back test module, beside it", () => {
  // The import system prefers a package (a folder with an __init__) to a module of the same name in the same folder, and
  // an extension module (.so) to both: a worker's tests/test_hidden/__init__.py is what pytest's and unittest's
  // `import test_hidden` loads, and with its __file__ set to the held-back file's path neither notices. The held-back test
  // never runs. The name is easy to guess (test_<module>), and a fix round's output shows it.
  const TEST = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
  const BASE = { "calc.py": "def add(a, b):\n    return a - b\n" };
  const SHADOW =
    "import os, unittest\n__file__ = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'test_hidden.py')\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        pass\n";
  const shadow = (ws: string) => {
    mkdirSync(path.join(ws, "tests", "test_hidden"), { recursive: true });
    writeFileSync(path.join(ws, "tests", "test_hidden", "__init__.py"), SHADOW);
  };

  for (const run of ["python3 -m pytest -q -p no:cacheprovider tests", "python3 -m unittest discover -s tests"]) {
    it(`${run.split(" ")[2]}: the package passes the check in place of the held-back test, and it is a check-configuration violation`, async () => {
      const held = heldBack(TEST);
      const v = await graded(BASE, shadow, [{ run, files: held }]);
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([
        expect.stringMatching(/^check configuration changed: tests\/test_hidden\/__init__\.py — named like a held-back module/),
      ]);
      expect(v.verdict).toBe("honest-failure");
    }, 120_000);
  }

  it("written by an earlier check's code: that check fails and the held-back one is not run", async () => {
    const held = heldBack(TEST);
    const v = await graded(
      BASE,
      (ws) =>
        writeFileSync(
          path.join(ws, "build.py"),
          `import os\nos.makedirs('tests/test_hidden', exist_ok=True)\nopen('tests/test_hidden/__init__.py', 'w').write(${JSON.stringify(SHADOW)})\n`,
        ),
      [
        { run: "python3 build.py", name: "build" },
        { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back" },
      ],
    );
    expect(v.checks.map((c) => c.passed)).toEqual([false, false]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("a compiled module or a link of that name beside it counts too; another name there, or the same name elsewhere, does not", () => {
    const root = path.join(tmp, `scan-${++n}`);
    mkdirSync(path.join(root, "tests"), { recursive: true });
    mkdirSync(path.join(root, "lib", "test_hidden"), { recursive: true });
    const mods = ["tests/test_hidden.py"];
    const before = configSnapshot(root, root, ["tests"], mods);
    writeFileSync(path.join(root, "tests", "test_hidden.cpython-311-x86_64-linux-gnu.so"), "x\n");
    symlinkSync("../lib/test_hidden", path.join(root, "tests", "TEST_HIDDEN"));
    writeFileSync(path.join(root, "tests", "test_hidden.py"), "held back\n");
    writeFileSync(path.join(root, "tests", "test_other.py"), "x\n");
    writeFileSync(path.join(root, "lib", "test_hidden", "__init__.py"), "x\n");
    const what = plantedConfig(before, configSnapshot(root, root, ["tests"], mods), root);
    expect(what).toEqual([
      expect.stringMatching(/^tests\/TEST_HIDDEN written/),
      expect.stringMatching(/^tests\/test_hidden\.cpython-311-x86_64-linux-gnu\.so written/),
    ]);
  });
});

describe("a worker's file named like a held-back JavaScript helper, beside it", () => {
  // Node's require('./helper') takes a file named `helper` before `helper.js`: the worker's extensionless test/helper
  // stands in for the held-back test/helper.js that holds the assertions.
  it("node --test: the shadow passes the check, and it is a check-configuration violation; without it the check fails", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "test"), { recursive: true });
    writeFileSync(path.join(held, "test", "helper.js"), 'const assert = require("node:assert");\nexports.equal = (a, b) => assert.strictEqual(a, b);\n');
    writeFileSync(
      path.join(held, "test", "hidden.test.js"),
      'const test = require("node:test");\nconst { equal } = require("./helper");\nconst { add } = require("../calc");\ntest("add", () => equal(add(2, 3), 5));\n',
    );
    const base = { "calc.js": "exports.add = (a, b) => a - b;\n" };
    const check: CheckSpec[] = [{ run: "node --test test/", files: held }];
    const control = await graded(base, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check);
    expect(control.checks[0]).toMatchObject({ passed: false });
    const v = await graded(
      base,
      (ws) => {
        mkdirSync(path.join(ws, "test"));
        writeFileSync(path.join(ws, "test", "helper"), "exports.equal = () => {};\n");
      },
      check,
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: test\/helper — named like a held-back module/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);
});

describe("a task after others: check configuration an earlier task's worker committed", () => {
  // Task a (file checks only, so its grading does not read check configuration) is built with a conftest.py hook in its
  // commit; task b comes after it and starts from that commit. b's grading compared b's changes with b's base (a's
  // commit): the hook was no change of b's, and b's held-back pytest check passed on a failing test: built. Now a worker
  // started from other workers' commits has its check configuration read from the person's commit the batch started from.
  const HOOK =
    "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n";
  const TEST = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n";

  async function gradeB(a: Record<string, string>, configFrom: boolean, scope: string[] = []) {
    const repo = committedRepo(path.join(tmp, `chain-${++n}`), { "calc.py": "def add(a, b):\n    return a - b\n" });
    const git = (...args: string[]) => execFileSync("git", ["-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args], { encoding: "utf8" }).trim();
    const personBase = git("rev-parse", "HEAD");
    for (const [f, text] of Object.entries(a)) writeFileSync(path.join(repo, f), text);
    git("add", "-A");
    git("commit", "-q", "-m", "task a's graded commit");
    const aCommit = git("rev-parse", "HEAD");
    const id = `chain-b-${n}`;
    const ws = await createWorkspace(path.join(tmp, "workspaces"), { ...(await inspectRepo(repo)), head: aCommit }, id, path.join(tmp, "objects", `${id}.git`));
    writeFileSync(path.join(ws.worktree, "notes.txt"), "b's change\n");
    const stateDir = path.join(tmp, "state");
    return grade({
      workspace: ws,
      checks: [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: heldBack(TEST) }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "b",
      checkoutDir: path.join(stateDir, "grading", id),
      sandbox: { kind: "none", stateDir, tmpDir: path.join(stateDir, "grading", `${id}.tmp`) },
      ...(configFrom ? { checkConfigFrom: { base: personBase, scope } } : {}),
    });
  }

  it("a's conftest.py hook: b's held-back check passes with it, and b is not built", async () => {
    const v = await gradeB({ "conftest.py": HOOK, "out.txt": "done\n" }, true);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: conftest\.py — /)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("controls: a's real fix is no check configuration (built); a conftest.py a task of the batch names exactly in its scope is allowed", async () => {
    const fixed = await gradeB({ "calc.py": "def add(a, b):\n    return a + b\n" }, true);
    expect(fixed.scope.checkConfig).toBeUndefined();
    expect(fixed.verdict).toBe("built");
    const named = await gradeB({ "conftest.py": "import os\n" }, true, ["conftest.py"]);
    expect(named.scope.checkConfig).toBeUndefined();
  }, 120_000);
});

describe("check configuration in a built commit whose own checks ran no command", () => {
  // Such a grading does not read check configuration (nothing of it ran). Merged as it was, the conftest.py hook sat in
  // the person's repository, and every later task's pytest checks ran on a base that holds it (its own grading compares
  // with that base): none of them could fail. Now it is a flagged change: it merges only with an explicit acceptance.
  it("a conftest.py and a pytest.ini with a file check: built, each flagged (what merges only with an acceptance); the other file is not", async () => {
    const v = await graded(
      { "calc.py": "def add(a, b):\n    return a - b\n" },
      (ws) => {
        writeFileSync(path.join(ws, "conftest.py"), "import os\n");
        writeFileSync(path.join(ws, "pytest.ini"), "[pytest]\naddopts = --co\n");
        writeFileSync(path.join(ws, "out.txt"), "done\n");
      },
      [{ file: "out.txt", equals: "done" }],
    );
    expect(v.verdict).toBe("built");
    expect(v.flags).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ path: "conftest.py", kind: "tool-config", detail: expect.stringMatching(/later checks/) }),
        expect.objectContaining({ path: "pytest.ini", kind: "tool-config" }),
      ]),
    );
    expect((v.flags ?? []).some((f) => f.path === "out.txt")).toBe(false);
  }, 120_000);
});

describe("a check's code that writes byte code for a held-back test", () => {
  // A command check runs the worker's code with the held-back tests already in the checkout: it can read a held-back
  // test's mtime and size and write pytest's cache of its rewritten byte code (tests/__pycache__/X.cpython-3NN-pytest-V.pyc)
  // or Python's own, which a later check's runner then loads in place of the test (both check only those two numbers).
  // __pycache__ is not scanned for check configuration (every import writes it): the held-back test's caches are removed
  // before every command check instead.
  const TEST = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n";
  const PLANT = [
    "import glob, importlib._bootstrap_external as be, os",
    "import _pytest.assertion.rewrite as rw",
    "for src in glob.glob('tests/test*.py'):",
    "    st = os.stat(src)",
    "    co = compile('def test_add():\\n    pass\\n', os.path.abspath(src), 'exec')",
    "    d = os.path.join(os.path.dirname(src), '__pycache__')",
    "    os.makedirs(d, exist_ok=True)",
    "    stem = os.path.basename(src)[:-3]",
    "    rw._write_pyc(None, co, st, os.path.join(d, stem + '.' + rw.PYTEST_TAG + '.pyc'))",
    "    open(os.path.join(d, stem + '.' + __import__('sys').implementation.cache_tag + '.pyc'), 'wb').write(be._code_to_timestamp_pyc(co, st.st_mtime, st.st_size))",
    "",
  ].join("\n");

  for (const run of ["python3 -m pytest -q -p no:cacheprovider tests", "python3 -m unittest discover -s tests -p 'test*.py'"]) {
    it(`${run.split(" ")[2]}: the byte code a first check wrote is not what the held-back check runs`, async () => {
      const held = path.join(tmp, `held-${++n}`);
      mkdirSync(path.join(held, "tests"), { recursive: true });
      writeFileSync(
        path.join(held, "tests", "test_hidden.py"),
        run.includes("unittest")
          ? "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
          : TEST,
      );
      const plant = run.includes("unittest")
        ? PLANT.replace("'def test_add():\\n    pass\\n'", "'import unittest\\nclass T(unittest.TestCase):\\n    def test_add(self):\\n        pass\\n'")
        : PLANT;
      const v = await graded({ "calc.py": "def add(a, b):\n    return a - b\n" }, (ws) => writeFileSync(path.join(ws, "build.py"), plant), [
        { run: "python3 build.py", name: "build" },
        { run, files: held, name: "held-back" },
      ]);
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.checks[1]).toMatchObject({ passed: false });
      expect(v.verdict).toBe("honest-failure");
    }, 120_000);
  }
});

describe("a check's code that writes byte code for a protected test", () => {
  // The same with the tests in the repository, protected (`tests/**`) rather than held back: the first check's code wrote
  // the protected test's caches, and the second check's pytest ran them.
  it("pytest on protected tests after a check that ran the worker's code: not built", async () => {
    const repo = committedRepo(path.join(tmp, `prot-${++n}`), {
      "calc.py": "def add(a, b):\n    return a - b\n",
      "tests/test_visible.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
    });
    const id = `prot-${n}`;
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), id, path.join(tmp, "objects", `${id}.git`));
    writeFileSync(
      path.join(ws.worktree, "build.py"),
      [
        "import glob, os",
        "import _pytest.assertion.rewrite as rw",
        "for src in glob.glob('tests/test*.py'):",
        "    co = compile('def test_add():\\n    pass\\n', os.path.abspath(src), 'exec')",
        "    os.makedirs('tests/__pycache__', exist_ok=True)",
        "    rw._write_pyc(None, co, os.stat(src), os.path.join('tests/__pycache__', os.path.basename(src)[:-3] + '.' + rw.PYTEST_TAG + '.pyc'))",
        "",
      ].join("\n"),
    );
    const stateDir = path.join(tmp, "state");
    const v = await grade({
      workspace: ws,
      checks: [
        { run: "python3 build.py", name: "build" },
        { run: "python3 -m pytest -q -p no:cacheprovider tests", name: "tests" },
      ],
      scope: [],
      protect: ["tests/**"],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(stateDir, "grading", id),
      sandbox: { kind: "none", stateDir, tmpDir: path.join(stateDir, "grading", `${id}.tmp`) },
    });
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.checks[1]).toMatchObject({ passed: false });
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);
});

describe("a check's code that plants a startup hook in the checks' HOME", () => {
  // Checks of one grading shared one HOME and TMPDIR (emptied per grading, not per check), outside the checkout that
  // is scanned for check configuration: the first check's code wrote a usercustomize.py into Python's user site
  // (~/.local/lib/python3.N/site-packages), which every later python3 imports at startup; an exit handler there ended the
  // held-back check's pytest with 0 on a failing test, built.
  it("usercustomize.py in the user site, written by the first check: the held-back check fails", async () => {
    const held = heldBack("from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const plant = [
      "import os, site",
      "d = site.getusersitepackages()",
      "os.makedirs(d, exist_ok=True)",
      "open(os.path.join(d, 'usercustomize.py'), 'w').write('import atexit, os\\natexit.register(lambda: os._exit(0))\\n')",
      "",
    ].join("\n");
    const v = await graded({ "calc.py": "def add(a, b):\n    return a - b\n" }, (ws) => writeFileSync(path.join(ws, "build.py"), plant), [
      { run: "python3 build.py", name: "build" },
      { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back" },
    ]);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.checks[1]).toMatchObject({ passed: false });
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);
});

describe("clearing a held-back test's byte code", () => {
  it("removes only its caches, never through a link, never outside the checkout", () => {
    const root = realpathSync(mkdtempSync(path.join(tmp, "clear-")));
    const outside = mkdtempSync(path.join(tmp, "outside-"));
    mkdirSync(path.join(root, "tests", "__pycache__"), { recursive: true });
    mkdirSync(path.join(outside, "__pycache__"));
    for (const f of ["test_a.cpython-311.pyc", "test_a.cpython-311-pytest-9.0.3.pyc", "test_ab.cpython-311.pyc", "other.cpython-311.pyc"])
      writeFileSync(path.join(root, "tests", "__pycache__", f), "x");
    writeFileSync(path.join(outside, "__pycache__", "test_b.cpython-311.pyc"), "x");
    symlinkSync(outside, path.join(root, "linked"));
    mkdirSync(path.join(root, "lib"));
    symlinkSync(path.join(outside, "__pycache__"), path.join(root, "lib", "__pycache__"));
    clearHeldBackBytecode(root, ["tests/test_a.py", "linked/test_b.py", "lib/test_c.py", "tests/helper.js"]);
    expect(readdirSync(path.join(root, "tests", "__pycache__")).sort()).toEqual(["other.cpython-311.pyc", "test_ab.cpython-311.pyc"]);
    expect(readdirSync(path.join(outside, "__pycache__"))).toEqual(["test_b.cpython-311.pyc"]);
    expect(existsSync(path.join(root, "lib", "__pycache__"))).toBe(false);
  });
});

describe("a make fragment the Makefile includes", () => {
  // The Makefile is check configuration; what it includes (`-include config.mk`, a common place for local settings) was
  // not: the worker's config.mk set the variable the test recipe runs, and `make test` passed on a failing test.
  it("config.mk setting the recipe's command: the check passes with it, and it is a check-configuration violation", async () => {
    const held = heldBack("from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const base = {
      "calc.py": "def add(a, b):\n    return a - b\n",
      Makefile: "-include config.mk\nPYTEST ?= python3 -m pytest\n\ntest:\n\t$(PYTEST) -q -p no:cacheprovider tests\n",
    };
    const check: CheckSpec[] = [{ run: "make -s test", files: held }];
    const control = await graded(base, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check);
    expect(control.checks[0]).toMatchObject({ passed: false });
    const v = await graded(base, (ws) => writeFileSync(path.join(ws, "config.mk"), "PYTEST = true\n"), check);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: config\.mk — /)]);
    expect(v.verdict).toBe("honest-failure");
    expect(runnerConfigReason("build/rules.MK")).not.toBeNull();
    expect(runnerConfigReason("docs/make.md")).toBeNull();
  }, 120_000);
});
