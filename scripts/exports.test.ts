// The dead-export check (scripts/exports.mjs, run by `npm test`) on a small tree of its own: an export nothing uses is
// found, one used by its own file, another file or a test is not, and a surface's re-export nobody takes is found; the
// --own-file report lists an export only its own file uses.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module of the scripts, without types
import { deadExports, ownFileExports } from "./exports.mjs";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), "ocw-exports-"));
  dirs.push(root);
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    writeFileSync(path.join(root, f), text);
  }
  return root;
}

describe("dead exports", () => {
  it("names an export nothing uses, and no export that its own file, another file or a test uses", () => {
    const root = tree({
      "engine/a/a.ts": [
        "export function unused(): number { return 1; }",
        "export function usedHere(): number { return 2; }",
        "export const total = usedHere() + 1;",
        "export type ByTest = { n: number };",
        "/** unusedType is mentioned only in a comment */",
        "export interface unusedType { n: number }",
      ].join("\n"),
      "engine/b/b.ts": 'import { total } from "../a/a";\nexport const twice = () => total * 2;',
      "engine/b/b.test.ts": 'import type { ByTest } from "../a/a";\nimport { twice } from "./b";\nconst x: ByTest = { n: twice() };',
    });
    const dead = deadExports(root).map((d: { file: string; name: string }) => `${d.file} ${d.name}`);
    expect(dead.sort()).toEqual(["engine/a/a.ts unused", "engine/a/a.ts unusedType"]);
  });

  it("names a surface's re-export that no other file takes", () => {
    const root = tree({
      "engine/c/impl.ts": "export const taken = 1;\nexport const left = 2;\nexport const both = taken + left;",
      "engine/c/index.ts": 'export { both, left, taken } from "./impl";',
      "engine/d/d.ts": 'import { both, taken } from "../c";\nexport const sum = both + taken;',
      "test/d.test.ts": 'import { sum } from "../engine/d/d";\nsum;',
    });
    expect(deadExports(root)).toEqual([{ file: "engine/c/index.ts", name: "left", how: "re-exported" }]);
  });

  it("reports, without failing, an export only its own file uses", () => {
    const root = tree({
      "engine/e/e.ts": "export const inner = 1;\nexport const outer = inner + 1;\nexport const tested = outer + 1;\nexport const nobody = 3;",
      // f spells `inner` as a local of its own: a word, not an import of e's
      "engine/f/f.ts": 'import { outer } from "../e/e";\nconst inner = 2;\nexport const g = outer + inner;',
      "test/e.test.ts": 'import { tested } from "../engine/e/e";\nimport { g } from "../engine/f/f";\ntested + g;',
    });
    expect(ownFileExports(root)).toEqual([{ file: "engine/e/e.ts", name: "inner" }]);
    expect(deadExports(root)).toEqual([{ file: "engine/e/e.ts", name: "nobody", how: "declared" }]);
  });
});
