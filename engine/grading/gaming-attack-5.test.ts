// Attack pass 5 on "a verdict is evidence": a cheating worker with only its workspace files. Each case drives the
// engine's grade() on real git and a real runner (node --test, bash, python3), shows the trick works on the check (it
// passed on a failing test), and that the verdict says so: a caveat naming the file, or a check-configuration
// violation. Before the fixes each case here but the controls was built with no word of it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { gradedIn } from "../../test/fixtures/graded";
import { jsImportCandidates, jsRelativeImports } from "./checks";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-gaming-5-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const graded = gradedIn(tmp);

/** A held-back folder with these files (paths relative to it). */
function heldFiles(files: Record<string, string>): string {
  const held = path.join(tmp, `held-${++n}`);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(held, f)), { recursive: true });
    writeFileSync(path.join(held, f), text);
  }
  return held;
}

const helperCaveat = (file: string) =>
  expect.stringMatching(new RegExp(`^the worker changed ${file.replaceAll(".", "\\.")}, which a held-back test imports from beside it`));
const changedCaveats = (caveats: string[] | undefined) => (caveats ?? []).filter((c) => c.startsWith("the worker changed"));

describe("a worker that changes a JavaScript or TypeScript helper a held-back test imports", () => {
  // test/helpers.js (or test-utils/index.js) is the project's; a held-back test requires or imports it relatively and
  // asserts through it. A worker that empties its assertion passes the held-back test. Not a violation (a task may have
  // to change a helper), but the verdict names the file, as it does a Python helper's.
  const CHECK = 'const assert = require("node:assert");\nexports.check = (ok) => assert.ok(ok);\n';
  const NOOP = "exports.check = () => {};\n";
  const CALC = "exports.add = (a, b) => a - b;\n";
  const cases: { name: string; base: Record<string, string>; helper: string; noop: string; test: Record<string, string> }[] = [
    {
      name: "require('./helpers')",
      base: { "calc.js": CALC, "test/helpers.js": CHECK },
      helper: "test/helpers.js",
      noop: NOOP,
      test: {
        "test/hidden.test.js":
          'const test = require("node:test");\nconst { check } = require("./helpers");\nconst { add } = require("../calc");\ntest("add", () => check(add(2, 3) === 5));\n',
      },
    },
    {
      name: "import { check } from './helpers.js' (ESM)",
      base: {
        "package.json": '{ "type": "module" }\n',
        "calc.js": "export const add = (a, b) => a - b;\n",
        "test/helpers.js": 'import assert from "node:assert";\nexport const check = (ok) => assert.ok(ok);\n',
      },
      helper: "test/helpers.js",
      noop: "export const check = () => {};\n",
      test: {
        "test/hidden.test.js":
          'import test from "node:test";\nimport { check } from "./helpers.js";\nimport { add } from "../calc.js";\ntest("add", () => check(add(2, 3) === 5));\n',
      },
    },
    {
      name: "require('../test-utils') (a folder's index.js)",
      base: { "calc.js": CALC, "test-utils/index.js": CHECK },
      helper: "test-utils/index.js",
      noop: NOOP,
      test: {
        "test/hidden.test.js":
          'const test = require("node:test");\nconst { check } = require("../test-utils");\nconst { add } = require("../calc");\ntest("add", () => check(add(2, 3) === 5));\n',
      },
    },
  ];

  for (const c of cases) {
    it(`${c.name}: the emptied helper passes the held-back test, and the verdict names it`, async () => {
      const check: CheckSpec[] = [{ run: "node --test test/", files: heldFiles(c.test) }];
      const control = await graded(c.base, (ws) => writeFileSync(path.join(ws, "notes.txt"), "x\n"), check);
      expect(control.checks[0]).toMatchObject({ passed: false });
      const v = await graded(c.base, (ws) => writeFileSync(path.join(ws, c.helper), c.noop), check);
      expect(v.checks[0]).toMatchObject({ passed: true });
      expect(v.scope.checkConfig).toBeUndefined();
      expect(v.caveats).toContainEqual(helperCaveat(c.helper));
    }, 120_000);
  }

  it("control: the fix of the code under test (../calc) and a helper no held-back test imports carry no such word", async () => {
    const base = { "calc.js": CALC, "test/helpers.js": CHECK, "test/other.js": "exports.x = 1;\n" };
    const v = await graded(
      base,
      (ws) => {
        writeFileSync(path.join(ws, "calc.js"), "exports.add = (a, b) => a + b;\n");
        writeFileSync(path.join(ws, "test", "other.js"), "exports.x = 2;\n");
      },
      [{ run: "node --test test/", files: heldFiles(cases[0]!.test) }],
    );
    expect(v.verdict).toBe("built");
    expect(changedCaveats(v.caveats)).toEqual([]);
  }, 120_000);

  it("the relative imports a held-back file makes, and the files Node may load for each", () => {
    const text =
      'const a = require("./a");\nimport { b } from "../lib/b.js";\nimport {\n  c,\n} from "./c";\nimport "./setup";\nexport * from "./d";\nconst e = await import("./e.mjs");\nimport x from "node:test";\nrequire("lodash");\n';
    expect(jsRelativeImports(text).sort()).toEqual(["../lib/b.js", "./a", "./c", "./d", "./e.mjs", "./setup"]);
    const found = jsImportCandidates("test", "./helpers.js");
    expect(found).toEqual(expect.arrayContaining(["test/helpers.js", "test/helpers.ts", "test/helpers.js/index.js"]));
    expect(jsImportCandidates("test", "../test-utils")).toEqual(
      expect.arrayContaining(["test-utils", "test-utils.js", "test-utils/index.ts", "test-utils/package.json"]),
    );
    expect(jsImportCandidates("test", "../../outside")).toEqual([]);
  });
});
