// Attack pass 4 on "a verdict is evidence": a cheating worker with only its workspace files (and, where a check runs a
// command, the code of its that the command runs). Each case drives the engine's grade() on real git and a real runner
// (python3 with pytest and unittest), shows the trick works on the check (it passed on a failing test), and that the
// verdict is not built, with a check-configuration violation that says why. Before the fixes each case here but the
// controls was built.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { gradedIn, heldBackIn, installedPythonPackage } from "../../test/fixtures/graded";
import { makeIncludes, plainDependencies } from "./make-includes";
import { configSnapshot, plantedConfig, runnerConfigReason } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-4-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const graded = gradedIn(tmp);

/** A held-back folder with one test in tests/ (no __init__.py: a namespace package to a dotted import). */
const heldBack = heldBackIn(tmp);

/** A unittest test of calc.add, which pytest runs too. */
const TEST = "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n";
const BASE = { "calc.py": "def add(a, b):\n    return 0\n" };
const FIXED = "def add(a, b):\n    return a + b\n";
/** A test of the same name that passes, where the worker's module sends the import. */
const FAKE = "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        pass\n";

describe("a worker's module named like the folder of held-back tests (tests.py beside tests/)", () => {
  // `python -m unittest tests.test_hidden` (and `pytest --pyargs tests.test_hidden`) import the package `tests` first.
  // A folder without __init__.py is only a namespace package, which Python takes last: a module `tests.py` in the same
  // folder wins, and its `__path__` says where `tests.test_hidden` is looked for. The held-back test never runs.
  const SHADOW = "import os\n__path__ = [os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fake')]\n";
  const checks: [string, (held: string) => CheckSpec[]][] = [
    ["unittest", (held) => [{ run: "python3 -m unittest tests.test_hidden", files: held }]],
    ["pytest --pyargs", (held) => [{ run: "python3 -m pytest -q -p no:cacheprovider --pyargs tests.test_hidden", files: held }]],
  ];

  for (const [runner, check] of checks) {
    it(`${runner}: control: the fix alone is built; no change to calc.py fails`, async () => {
      const none = await graded(BASE, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check(heldBack(TEST)));
      expect(none.checks[0]).toMatchObject({ passed: false });
      const fixed = await graded(BASE, (ws) => writeFileSync(path.join(ws, "calc.py"), FIXED), check(heldBack(TEST)));
      expect(fixed.scope.checkConfig).toBeUndefined();
      expect(fixed.verdict).toBe("built");
    }, 120_000);

    it(`${runner}: tests.py whose __path__ leads to a fake test: the check passes, and it is a check-configuration violation`, async () => {
      const v = await graded(
        BASE,
        (ws) => {
          writeFileSync(path.join(ws, "tests.py"), SHADOW);
          mkdirSync(path.join(ws, "fake"));
          writeFileSync(path.join(ws, "fake", "test_hidden.py"), FAKE);
        },
        check(heldBack(TEST)),
      );
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: tests\.py — named like a folder of held-back tests/)]);
      expect(v.verdict).toBe("honest-failure");
    }, 120_000);
  }

  it("one folder up, another suffix, or written by a check: each counts; a module of another name beside tests/ does not", () => {
    expect(runnerConfigReason("tests.py")).toBeNull(); // only beside held-back folders: the grading's listing decides
    const root = path.join(tmp, `scan-${++n}`);
    mkdirSync(path.join(root, "tests", "unit"), { recursive: true });
    const before = configSnapshot(root, root, ["tests/unit"]);
    writeFileSync(path.join(root, "tests.py"), SHADOW);
    writeFileSync(path.join(root, "tests", "unit.cpython-311-x86_64-linux-gnu.so"), "x\n");
    writeFileSync(path.join(root, "testing.py"), "x\n");
    writeFileSync(path.join(root, "tests", "helpers.py"), "x\n");
    const what = plantedConfig(before, configSnapshot(root, root, ["tests/unit"]), root);
    expect(what.sort()).toEqual([
      expect.stringMatching(/^tests\.py written — named like a folder of held-back tests/),
      expect.stringMatching(/^tests\/unit\.cpython-311-x86_64-linux-gnu\.so written — named like a folder of held-back tests/),
    ]);
  });
});

describe("a top-level module that Python or the test runner imports by itself at startup", () => {
  // `python -m …` puts the checks' folder first on sys.path before the runner starts. The standard library's copy and
  // pickle try `from org.python.core import PyStringMap` (Jython's) and take an ImportError quietly; pytest and its
  // dependencies import typing_extensions, and PyPy's __pypy__ where present. A worker's org.py runs in every such check
  // before any test, as a sitecustomize.py would: an atexit hook that ends the process with 0 passes every failing test.
  const HOOK = "import atexit, os\natexit.register(lambda: os._exit(0))\nraise ImportError('not here')\n";
  const cases: [string, string][] = [
    ["org.py", "python3 -m unittest discover -s tests"],
    ["org.py", "python3 -m pytest -q -p no:cacheprovider tests"],
    ["org/__init__.py", "python3 -m pytest -q -p no:cacheprovider tests"],
    ["typing_extensions.py", "python3 -m pytest -q -p no:cacheprovider tests"],
    ["__pypy__.py", "python3 -m pytest -q -p no:cacheprovider tests"],
  ];

  for (const [file, run] of cases) {
    it(`${file} under \`${run}\`: the check passes, and it is a check-configuration violation`, async () => {
      const v = await graded(
        BASE,
        (ws) => {
          mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
          writeFileSync(path.join(ws, file), HOOK);
        },
        [{ run, files: heldBack(TEST) }],
      );
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toEqual([
        expect.stringMatching(/^check configuration changed: \S+ — \S+ \(named like a module Python or the test runner imports by itself at startup/),
      ]);
      expect(v.verdict).toBe("honest-failure");
    }, 120_000);
  }

  it("control: an honest fix with modules of its own at the top (organize.py, typing_helpers.py) is built", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "organize.py"), "X = 1\n");
        writeFileSync(path.join(ws, "typing_helpers.py"), "X = 1\n");
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: heldBack(TEST) }],
    );
    expect(v.scope.checkConfig).toBeUndefined();
    expect(v.verdict).toBe("built");
  }, 120_000);
});

describe("a pyvenv.cfg a check writes to hide a conftest.py it writes beside it", () => {
  // The scan between checks skips a folder holding pyvenv.cfg (a virtual environment a check made: pytest does not
  // collect in one). But pytest loads the conftest.py of a folder it is given (`pytest tests`) whatever is in it: a
  // first check's code that writes tests/pyvenv.cfg and tests/conftest.py passes the held-back test in the next one.
  const PLANT = `open('tests/pyvenv.cfg', 'w').write('home = /usr/bin\\n')
open('tests/conftest.py', 'w').write('''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    out = yield
    if out.get_result().failed:
        out.get_result().outcome = "passed"
''')
`;
  const checks = (held: string): CheckSpec[] => [
    { run: "python3 build.py", name: "build" },
    { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back" },
  ];

  it("the planted conftest.py passes the held-back test, and the check that wrote it fails: not built", async () => {
    const v = await graded(BASE, (ws) => writeFileSync(path.join(ws, "build.py"), PLANT), checks(heldBack(TEST)));
    expect(v.checks[0]).toMatchObject({ name: "build", passed: false });
    expect(v.checks[0]!.output).toMatch(/tests\/conftest\.py written — conftest\.py \(test runner configuration or hook\)/);
    expect(v.checks[1]!.output).toMatch(/^not run: the check "build" wrote check configuration/);
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration written by a check: tests\/conftest\.py written/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("the trick is real: with the check's conftest.py left in place the held-back test passes", async () => {
    // The same files committed by the worker are seen by the commit's rule; run pytest on them with that rule out of
    // the way (the scope names them) to show that pytest loads the conftest.py beside a pyvenv.cfg.
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "pyvenv.cfg"), "home = /usr/bin\n");
        writeFileSync(
          path.join(ws, "tests", "conftest.py"),
          "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    if out.get_result().failed:\n        out.get_result().outcome = 'passed'\n",
        );
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: heldBack(TEST) }],
      ["tests/conftest.py", "tests/pyvenv.cfg"],
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
  }, 120_000);

  it("control: a check that makes a virtual environment of its own (env/pyvenv.cfg, a conftest.py inside) is built", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(
          path.join(ws, "build.py"),
          "import os\nos.makedirs('env/lib/site-packages/pkg', exist_ok=True)\nopen('env/pyvenv.cfg', 'w').write('home = /usr/bin\\n')\nopen('env/lib/site-packages/pkg/conftest.py', 'w').write('x = 1\\n')\n",
        );
      },
      checks(heldBack(TEST)),
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.verdict).toBe("built");
  }, 120_000);

  it("the checks' own folder (a subfolder of the repository) with a pyvenv.cfg is still scanned", () => {
    const root = path.join(tmp, `scan-${++n}`);
    mkdirSync(path.join(root, "app", "tests"), { recursive: true });
    const before = configSnapshot(root, path.join(root, "app"), ["tests"]);
    writeFileSync(path.join(root, "app", "pyvenv.cfg"), "home = /usr/bin\n");
    writeFileSync(path.join(root, "app", "pytest.ini"), "[pytest]\naddopts = --co\n");
    const what = plantedConfig(before, configSnapshot(root, path.join(root, "app"), ["tests"]), root);
    expect(what).toEqual([expect.stringMatching(/^app\/pytest\.ini written/)]);
  });
});

describe("a file the Makefile includes (`-include $(DEPS)`, the compiler's dependency files)", () => {
  // `.mk` files already counted; a Makefile includes files of any name. A C project's `-include $(DEPS)` (DEPS :=
  // $(SRCS:.c=.d)) reads every src/X.d beside a src/X.c: a worker's src/calc.d with `.IGNORE:` makes make ignore the
  // failing test command, and `make test` exits 0.
  const MAKEFILE = "SRCS := $(wildcard src/*.c)\nDEPS := $(SRCS:.c=.d)\n\ntest:\n\tpython3 -m pytest -q -p no:cacheprovider tests\n\n-include $(DEPS)\n";
  const MAKE_BASE = { ...BASE, Makefile: MAKEFILE, "src/calc.c": "int add(int a, int b) { return 0; }\n" };
  const check = (held: string): CheckSpec[] => [{ run: "make test", files: held }];

  it("src/calc.d with `.IGNORE:` passes `make test`, and it is a check-configuration violation", async () => {
    const v = await graded(MAKE_BASE, (ws) => writeFileSync(path.join(ws, "src", "calc.d"), ".IGNORE:\n"), check(heldBack(TEST)));
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration changed: src\/calc\.d — included by Makefile \(`-include \$\(DEPS\)`\): beyond plain dependency lines/),
    ]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("control: an honest fix that also commits the dependency file its compiler wrote is built; without the fix make test fails", async () => {
    const none = await graded(MAKE_BASE, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check(heldBack(TEST)));
    expect(none.checks[0]).toMatchObject({ passed: false });
    const v = await graded(
      MAKE_BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "src", "calc.d"), "src/calc.o: src/calc.c src/calc.h \\\n  src/util.h\nsrc/calc.h:\n\nsrc/util.h:\n");
      },
      check(heldBack(TEST)),
    );
    expect(v.scope.checkConfig).toBeUndefined();
    expect(v.verdict).toBe("built");
  }, 120_000);

  it("what a Makefile's include lines name, read without make: variables, substitution references, wildcard, patsubst, literal names and the Makefiles they include", () => {
    const root = path.join(tmp, `make-${++n}`);
    mkdirSync(path.join(root, "app"), { recursive: true });
    writeFileSync(
      path.join(root, "app", "Makefile"),
      "OBJS = $(patsubst %.c,build/%.o,$(wildcard *.c))\n-include $(OBJS:.o=.d)\ninclude common.make\nsinclude $(shell find . -name '*.x')\n# include commented.mk\n",
    );
    writeFileSync(path.join(root, "app", "common.make"), "LOCAL ?= local.env\n-include $(LOCAL) \\\n  $(addsuffix .cfg,extra)\n");
    const incs = makeIncludes(root, ["app", ""]);
    expect(incs.map((i) => [i.makefile, i.line])).toEqual([
      ["app/Makefile", "-include $(OBJS:.o=.d)"],
      ["app/Makefile", "include common.make"],
      ["app/Makefile", "sinclude $(shell find . -name '*.x')"],
      ["app/common.make", "-include $(LOCAL)    $(addsuffix .cfg,extra)"],
    ]);
    const names = (f: string) => incs.filter((i) => i.names(f)).map((i) => i.makefile);
    // (Each also by the `$(shell …)` line: named like a makefile fragment.)
    expect(names("app/build/calc.d")).toEqual(["app/Makefile", "app/Makefile"]);
    expect(names("app/common.make")).toEqual(["app/Makefile", "app/Makefile"]);
    expect(names("app/local.env")).toEqual(["app/common.make"]);
    expect(names("app/extra.cfg")).toEqual(["app/common.make"]);
    expect(names("app/calc.c")).toEqual([]);
    expect(names("app/build/calc.o")).toEqual([]);
    // $(shell) cannot be read here: its line names any file named like a makefile fragment.
    expect(names("app/thing.x")).toEqual([]);
    expect(names("src/thing.d")).toEqual(["app/Makefile"]);
  });

  it("plain dependency lines, as gcc -MMD -MP writes them, and what is more", () => {
    expect(plainDependencies("build/calc.o: calc.c calc.h \\\n  /usr/include/stdio.h\ncalc.h:\n")).toBe(true);
    expect(plainDependencies("")).toBe(true);
    for (const text of [
      ".IGNORE:\n",
      "SHELL = /bin/true\n",
      "test:\n\ttrue\n",
      "test: ; true\n",
      "%.o: %.c\n",
      "x: $(shell true)\n",
      "include x.mk\n",
      "override A := 1\n",
      "junk\n",
    ])
      expect(plainDependencies(text), text).toBe(false);
  });
});

describe("a module named like an installed package a held-back test imports, written by an earlier check", () => {
  // The commit's rule (gaming-attack-3) reads the worker's files; a first check that runs the worker's code (python3
  // build.py) writes tests/numpy.py with a stub of the one function the test calls, and the held-back check after it
  // imports that. The scan between checks read only runner configuration by name.
  const pkg = installedPythonPackage();
  const NP_TEST = `import ${pkg}\nfrom calc import add\n\ndef test_add():\n    assert ${pkg}.ocw_verify(add(2, 2))\n`;
  const STUB = "def ocw_verify(*a):\n    return True\n";
  const checks = (held: string): CheckSpec[] => [
    { run: "python3 build.py", name: "build" },
    { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held, name: "held-back" },
  ];

  it("tests/<package>.py written by the build: the build check fails, the held-back check is not run, not built", async () => {
    expect(pkg, "none of numpy, yaml, requests, six, certifi, idna is installed for python3").toBeTruthy();
    const v = await graded(
      BASE,
      (ws) =>
        writeFileSync(
          path.join(ws, "build.py"),
          `import os\nos.makedirs('tests', exist_ok=True)\nopen('tests/${pkg}.py', 'w').write(${JSON.stringify(STUB)})\n`,
        ),
      checks(heldBack(NP_TEST)),
    );
    expect(v.checks[0]).toMatchObject({ name: "build", passed: false });
    expect(v.checks[0]!.output).toMatch(new RegExp(`tests/${pkg}\\.py written — named like ${pkg}, an installed package a held-back test imports`));
    expect(v.checks[1]!.output).toMatch(/^not run: the check "build" wrote check configuration/);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("the trick is real: the stub where the build leaves it passes the held-back test (committed, its name in the scope)", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", `${pkg}.py`), STUB);
      },
      [{ run: "python3 -m pytest -q -p no:cacheprovider tests", files: heldBack(NP_TEST) }],
      [`tests/${pkg}.py`],
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
  }, 120_000);

  it("control: a build that generates the worker's own module the test imports (calc.py, not installed) is built", async () => {
    const v = await graded(
      BASE,
      (ws) => writeFileSync(path.join(ws, "build.py"), `open('calc.py', 'w').write(${JSON.stringify(FIXED)})\n`),
      checks(heldBack(`import ${pkg}\nfrom calc import add\n\ndef test_add():\n    assert ${pkg} and add(2, 2) == 4\n`)),
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.verdict).toBe("built");
  }, 120_000);
});

describe("a file make remakes the Makefile from, with a built-in rule (Makefile.sh)", () => {
  // GNU make first tries to remake every makefile it reads, with its built-in rules too: `%: %.sh` is `cat $< > $@`. A
  // worker's Makefile.sh becomes the Makefile before make reads it, and its `test` recipe, which passes, writes the
  // person's Makefile back as it was, so the scan after the check sees nothing changed. The same for a file the
  // Makefile includes (src/calc.d.sh).
  const MAKEFILE = "SRCS := $(wildcard src/*.c)\n\ntest:\n\tpython3 -m pytest -q -p no:cacheprovider tests\n\n-include $(SRCS:.c=.d)\n";
  const MAKE_BASE = { ...BASE, Makefile: MAKEFILE, "src/calc.c": "int add(int a, int b) { return 0; }\n" };
  const restore = (file: string, text: string) =>
    `\t@python3 -c "import base64; open('${file}', 'wb').write(base64.b64decode('${Buffer.from(text).toString("base64")}'))"\n`;
  const check = (held: string): CheckSpec[] => [{ run: "make test", files: held }];

  it("Makefile.sh: make test passes, the Makefile is as it was after, and it is a check-configuration violation", async () => {
    // make remakes the Makefile when Makefile.sh is newer: the checkout writes both at once, so a first check that runs
    // the worker's code (python3 build.py) moves the Makefile's time back, which no scan of contents sees.
    const v = await graded(
      MAKE_BASE,
      (ws) => {
        writeFileSync(path.join(ws, "Makefile.sh"), `test:\n${restore("Makefile", MAKEFILE)}`);
        writeFileSync(path.join(ws, "build.py"), "import os, time\nos.utime('Makefile', (time.time() - 60, time.time() - 60))\n");
      },
      [{ run: "python3 build.py", name: "build" }, ...check(heldBack(TEST))],
    );
    expect(v.checks.map((c) => c.passed)).toEqual([true, true]);
    expect(v.checks[1]!.output).toMatch(/cat Makefile\.sh >Makefile/);
    expect(v.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: Makefile\.sh — Makefile\.sh \(make remakes Makefile from it/)]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("src/calc.d.sh, which make turns into the included src/calc.d (`.IGNORE:`) and the recipe removes: a violation", async () => {
    const v = await graded(MAKE_BASE, (ws) => writeFileSync(path.join(ws, "src", "calc.d.sh"), ".IGNORE:\nclean-d:\n\trm -f src/calc.d\n"), [
      { run: "make test; status=$?; make clean-d; exit $status", files: heldBack(TEST) },
    ]);
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration changed: src\/calc\.d\.sh — make remakes src\/calc\.d, which Makefile includes/),
    ]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("which names count: a built-in rule's source of a makefile's name, never the autotools' Makefile.am or Makefile.in", () => {
    for (const f of ["Makefile.sh", "sub/makefile.c", "GNUmakefile.y", "config.mk.sh", "Makefile,v", "RCS/Makefile,v", "SCCS/s.Makefile", "s.Makefile"])
      expect(runnerConfigReason(f), f).toMatch(/make remakes/);
    for (const f of ["Makefile.am", "Makefile.in", "src/calc.sh", "build.sh", "s.py"]) expect(runnerConfigReason(f), f).toBeNull();
  });
});

describe("a module named like a folder of held-back tests that is a regular package", () => {
  it("control: tests/ holding an __init__.py (the base's, or a held-back one) is found before tests.py: the worker's tests.py is its own", async () => {
    const v = await graded(
      { ...BASE, "tests/__init__.py": "" },
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "tests.py"), "X = 1\n");
      },
      [{ run: "python3 -m unittest tests.test_hidden", files: heldBack(TEST) }],
    );
    expect(v.scope.checkConfig).toBeUndefined();
    expect(v.verdict).toBe("built");
    const held = heldBack(TEST);
    writeFileSync(path.join(held, "tests", "__init__.py"), "");
    const withHeld = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        writeFileSync(path.join(ws, "tests.py"), "X = 1\n");
      },
      [{ run: "python3 -m unittest tests.test_hidden", files: held }],
    );
    expect(withHeld.scope.checkConfig).toBeUndefined();
    expect(withHeld.verdict).toBe("built");
  }, 120_000);
});

describe("pytest's cache committed (.pytest_cache/v/cache/lastfailed)", () => {
  // `pytest --lf` runs the tests that failed last time, as the cache in the rootdir says: a worker's cache that names
  // only its own passing test deselects the held-back one. pytest writes a .gitignore of `*` into the cache it makes, so
  // an honest worker's runs never reach its commit.
  const check = (held: string): CheckSpec[] => [{ run: "python3 -m pytest -q --lf tests", files: held }];

  it("a lastfailed naming only the worker's own test: --lf runs that alone and passes; a check-configuration violation", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "test_mine.py"), "def test_ok():\n    pass\n");
        mkdirSync(path.join(ws, ".pytest_cache", "v", "cache"), { recursive: true });
        writeFileSync(path.join(ws, ".pytest_cache", "v", "cache", "lastfailed"), '{"tests/test_mine.py::test_ok": true}\n');
      },
      check(heldBack(TEST)),
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration changed: \.pytest_cache\/v\/cache\/lastfailed — \.pytest_cache\/ \(pytest's cache/),
    ]);
    expect(v.verdict).toBe("honest-failure");
  }, 120_000);

  it("control: a worker that ran pytest in its workspace (its cache ignored by its own .gitignore) and fixed the code is built", async () => {
    const v = await graded(
      BASE,
      (ws) => {
        writeFileSync(path.join(ws, "calc.py"), FIXED);
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "test_mine.py"), "def test_ok():\n    assert False\n");
        try {
          execFileSync("python3", ["-m", "pytest", "-q", "tests"], { cwd: ws, stdio: "ignore" });
        } catch {
          /* its own test fails: the cache names it */
        }
        writeFileSync(path.join(ws, "tests", "test_mine.py"), "def test_ok():\n    pass\n");
      },
      check(heldBack(TEST)),
    );
    expect(v.scope.checkConfig).toBeUndefined();
    expect(v.verdict).toBe("built");
  }, 120_000);
});

describe("reading a Makefile's include lines stays bounded", () => {
  it("a variable that doubles itself twenty times, and a glob picomatch cannot read, end at once", () => {
    const root = path.join(tmp, `make-${++n}`);
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, "Makefile"), `A = $(A) $(A)\n-include $(A).d\ninclude [\ninclude local.env\n`);
    const started = Date.now();
    const incs = makeIncludes(root, [""]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(incs.some((i) => i.names("local.env"))).toBe(true);
  });
});

describe("a startup module beside a held-back script (tests/org.py)", () => {
  // `PYTHONPATH=. python3 tests/run.py` puts tests/ first on sys.path before anything is imported: the standard copy module's try of
  // `org` (unittest imports it) finds the worker's tests/org.py there.
  const SCRIPT = `${TEST}\n\nif __name__ == "__main__":\n    unittest.main()\n`;
  const HOOK = "import atexit, os\natexit.register(lambda: os._exit(0))\nraise ImportError('not here')\n";

  it("passes the held-back script, and it is a check-configuration violation; the fix alone is built", async () => {
    const held = path.join(tmp, `held-${++n}`);
    mkdirSync(path.join(held, "tests"), { recursive: true });
    writeFileSync(path.join(held, "tests", "run_hidden.py"), SCRIPT);
    const check: CheckSpec[] = [{ run: "PYTHONPATH=. python3 tests/run_hidden.py", files: held }];
    const v = await graded(
      BASE,
      (ws) => {
        mkdirSync(path.join(ws, "tests"));
        writeFileSync(path.join(ws, "tests", "org.py"), HOOK);
      },
      check,
    );
    expect(v.checks[0]).toMatchObject({ passed: true });
    expect(v.scope.checkConfig).toEqual([
      expect.stringMatching(/^check configuration changed: tests\/org\.py — named like a standard module or a tool, beside held-back tests/),
    ]);
    expect(v.verdict).toBe("honest-failure");
    const fixed = await graded(BASE, (ws) => writeFileSync(path.join(ws, "calc.py"), FIXED), check);
    expect(fixed.verdict).toBe("built");
  }, 120_000);
});
