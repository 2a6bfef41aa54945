// An absolute path with a `..` after a symlink, as opencode's write and edit name it in their ask (`metadata.filepath`,
// as the worker wrote it, which opencode opens as written): the engine reads it as the kernel does. Before, it
// normalised the path first (`<ws>/root/../<sibling>/x` read as `<ws>/<sibling>/x`, inside) and raised no flag, and a
// careless approval wrote into another worker's workspace (test/integration/escape-dotdot.test.ts, with opencode).
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inspectAsk, realLocation } from "./inspect";

const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-inspect-dotdot-")));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ws = path.join(tmp, "w-a");
const sibling = path.join(tmp, "w-b");
mkdirSync(path.join(ws, "tests", "sub"), { recursive: true });
mkdirSync(path.join(ws, "src"), { recursive: true });
mkdirSync(sibling);
symlinkSync("/", path.join(ws, "root"));
symlinkSync(path.join(ws, "tests", "sub"), path.join(ws, "src", "t"));
const at = { worktree: ws, cwd: ws };
const kinds = (what: string, spec = { scope: [] as string[], protect: [] as string[] }) =>
  inspectAsk({ tool: "edit", what, patterns: [] } as never, at, spec).map((f) => f.kind);

describe("an edit ask's path through a symlink, as the kernel reads it", () => {
  it("is where the kernel puts it: outside the workspace, flagged (the engine then refuses it, whoever approves)", () => {
    expect(realLocation(`${ws}/root/..${sibling}/x.txt`)).toBe(`${sibling}/x.txt`);
    expect(kinds(`${ws}/root/..${sibling}/x.txt`)).toContain("outside-workspace");
    expect(
      inspectAsk({ tool: "bash", what: "ls", workdir: `${ws}/root/..${sibling}`, patterns: [] } as never, at, { scope: [], protect: [] }).map((f) => f.kind),
    ).toContain("outside-workspace");
  });

  it("inside, its protection is the real file's: src/t/../x.py is tests/x.py", () => {
    expect(kinds(`${ws}/src/t/../x.py`, { scope: [], protect: ["tests/**"] })).toContain("protected");
  });

  it("a relative path is opencode's normalised one, as before; a `..` through real folders is what it says", () => {
    expect(kinds("src/../README.md")).toEqual([]);
    expect(realLocation(`${ws}/src/../README.md`)).toBe(`${ws}/README.md`);
  });

  it("a dangling symlink (its target not made yet): where the write would create it, outside the workspace, flagged", () => {
    symlinkSync(path.join(sibling, "new.txt"), path.join(ws, "dangling.txt"));
    symlinkSync("../w-b/deeper/x.txt", path.join(ws, "rel-dangling.txt"));
    symlinkSync("loop-b", path.join(ws, "loop-a"));
    symlinkSync("loop-a", path.join(ws, "loop-b"));
    expect(realLocation(path.join(ws, "dangling.txt"))).toBe(path.join(sibling, "new.txt"));
    expect(kinds("dangling.txt")).toContain("outside-workspace");
    expect(kinds(`${ws}/rel-dangling.txt`)).toContain("outside-workspace");
    expect(kinds("src/new-file.ts")).toEqual([]);
    // A loop of links opens nothing (ELOOP): not taken for a file outside, and no hang.
    expect(kinds("loop-a")).not.toContain("outside-workspace");
  });
});
