// Attack pass 3 on "a verdict is evidence": a cheating worker with only its workspace and its shell. Each case drives the
// engine's grade() on real git and a real runner (python3, pytest, bash), shows the trick works on the check (it passed
// on a failing test), and that the verdict is not built. Before the fixes each case here but the controls was built.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { gradedIn } from "../../test/fixtures/graded";
import { configSnapshot, plantedConfig, runnerConfigReason } from "./runner-config";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-3-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const graded = gradedIn(tmp);

/** A held-back folder with one pytest test in tests/ (no __init__.py: pytest puts tests/ first on sys.path). */
function heldBack(test: string): string {
  const held = path.join(tmp, `held-${++n}`);
  mkdirSync(path.join(held, "tests"), { recursive: true });
  writeFileSync(path.join(held, "tests", "test_hidden.py"), test);
  return held;
}

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
