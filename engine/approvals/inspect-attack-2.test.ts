// Attack pass 2: one edit ask that names several files (opencode's apply_patch, given to `gpt-*` models instead of
// edit/write; its `what` is the names joined with ", ", and a move's target is only in its metadata). Each file is
// inspected by real path: a symlink into a sibling's workspace among them flags the whole ask. Before the fix the
// joined names were resolved as one path (inside, no flag) and a careless approval wrote into the sibling's workspace
// (test/integration/attack-pass-2.test.ts shows that with the real opencode). An approving policy rule matched the joined
// names whole too (`src/**` answered an ask also writing `.github/workflows/ci.yml`).
import type { PermissionRequest } from "@opencode-ai/sdk/v2";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { permissionAsk } from "../harness/translate";
import { inspectAsk, ruleMatches } from "./inspect";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-inspect-2-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ws = path.join(tmp, "w-a");
const sibling = path.join(tmp, "w-b");
mkdirSync(path.join(ws, "src"), { recursive: true });
mkdirSync(sibling);
symlinkSync(sibling, path.join(ws, "sib"));
const at = { worktree: ws, cwd: ws };
const free = { scope: [], protect: [] };

/** The permission.asked opencode 1.18.33's apply_patch sends (patterns: the files relative to the worktree, moves left out). */
function applyPatchAsk(files: { filePath: string; movePath?: string }[]): PermissionRequest {
  return {
    id: "per_1",
    sessionID: "ses_1",
    permission: "edit",
    patterns: files.map((f) => path.relative(ws, f.filePath)),
    always: ["*"],
    metadata: { filepath: files.map((f) => path.relative(ws, f.filePath)).join(", "), diff: "", files },
  } as unknown as PermissionRequest;
}

describe("an edit ask of several files", () => {
  it("every file is inspected: one through a symlink into a sibling's workspace flags the ask outside", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "notes.txt") }, { filePath: path.join(ws, "sib", "src", "app.py") }]));
    expect(ask.what).toBe("notes.txt, sib/src/app.py");
    expect(inspectAsk(ask, at, free).map((f) => f.kind)).toEqual(["symlink", "outside-workspace"]);
  });

  it("a move's target (only in the metadata, not in the patterns) is inspected too", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "src", "a.txt"), movePath: path.join(ws, "sib", "moved.txt") }]));
    expect(ask.patterns).toEqual(["src/a.txt"]);
    expect(ask.paths).toContain(path.join(ws, "sib", "moved.txt"));
    expect(inspectAsk(ask, at, free).map((f) => f.kind)).toContain("outside-workspace");
  });

  it("protected and out-of-scope files among several are flagged; files all inside and in scope are not", () => {
    const ask = permissionAsk("w-a", applyPatchAsk([{ filePath: path.join(ws, "src", "a.ts") }, { filePath: path.join(ws, "tests", "t.py") }]));
    expect(inspectAsk(ask, at, { scope: ["src/**", "tests/**"], protect: ["tests/**"] }).map((f) => f.kind)).toEqual(["protected"]);
    expect(inspectAsk(ask, at, { scope: ["src/**"], protect: [] }).map((f) => f.kind)).toEqual(["out-of-scope"]);
    expect(inspectAsk(ask, at, { scope: ["src/**", "tests/**"], protect: [] })).toEqual([]);
  });

  it("an ask of one file (edit, write) keeps its one path, as before", () => {
    const one = permissionAsk("w-a", {
      id: "per_2",
      sessionID: "ses_1",
      permission: "edit",
      patterns: ["sib/x.txt"],
      always: ["*"],
      metadata: { filepath: path.join(ws, "sib", "x.txt"), diff: "" },
    } as unknown as PermissionRequest);
    expect(one.paths).toBeUndefined();
    expect(inspectAsk(one, at, free).map((f) => f.kind)).toEqual(["symlink", "outside-workspace"]);
  });
});

describe("a policy rule on an edit ask of several files", () => {
  const ask = (names: string[]) => permissionAsk("w-a", applyPatchAsk(names.map((n) => ({ filePath: path.join(ws, n) })))) as Parameters<typeof ruleMatches>[0];
  it("an approving rule answers only when it matches every file (not the joined names, which `src/**` matches whole)", () => {
    const two = ask(["src/a.ts", ".github/workflows/ci.yml"]);
    expect(two.what).toBe("src/a.ts, .github/workflows/ci.yml");
    for (const pattern of ["src/**", "**/src/**"]) expect(ruleMatches(two, { pattern, decision: "once" }), pattern).toBe(false);
    expect(ruleMatches(ask(["src/a.ts", "src/b.ts"]), { pattern: "**/src/**", decision: "once" })).toBe(true);
  });
  it("a rejecting rule answers when it matches any file", () => {
    expect(ruleMatches(ask(["src/a.ts", ".github/workflows/ci.yml"]), { pattern: "**/.github/**", decision: "reject" })).toBe(true);
    expect(ruleMatches(ask(["src/a.ts", "src/b.ts"]), { pattern: "**/.github/**", decision: "reject" })).toBe(false);
  });
});
