import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { workspaceToOpen } from "./open";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-open-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const root = path.join(tmp, "workspaces");
const ws = path.join(root, "repo-1234abcd", "w_ok");
mkdirSync(ws, { recursive: true });
const w = (id: string, worktree: string | null, discarded = false) => ({ id, worktree, discarded });

describe("workspaceToOpen: only a worker's own workspace, never a path a client chose", () => {
  it("answers the real path of a live workspace", () => {
    expect(workspaceToOpen(w("w_ok", ws), root)).toEqual({ workerId: "w_ok", path: ws });
  });
  it("refuses a discarded worker, one without a workspace, and one whose workspace is gone", () => {
    expect(() => workspaceToOpen(w("w_ok", ws, true), root)).toThrow(/was discarded/);
    expect(() => workspaceToOpen(w("w_new", null), root)).toThrow(/has no workspace yet/);
    expect(() => workspaceToOpen(w("w_gone", path.join(root, "repo-1234abcd", "w_gone")), root)).toThrow(/gone from disk/);
  });
  it("refuses anything not exactly at <workspaces>/<repo>/<id>: outside, a symlink out, another worker's, deeper, a file", () => {
    const outside = mkdtempSync(path.join(tmp, "outside-"));
    expect(() => workspaceToOpen(w("w_x", outside), root)).toThrow(/not where the engine keeps workspaces/);
    const link = path.join(root, "repo-1234abcd", "w_link");
    symlinkSync(outside, link);
    expect(() => workspaceToOpen(w("w_link", link), root)).toThrow(/not where the engine keeps workspaces/);
    expect(() => workspaceToOpen(w("w_other", ws), root)).toThrow(/not where the engine keeps workspaces/);
    const deeper = path.join(ws, "src");
    mkdirSync(deeper);
    expect(() => workspaceToOpen(w("src", deeper), root)).toThrow(/not where the engine keeps workspaces/);
    const file = path.join(root, "repo-1234abcd", "w_file");
    writeFileSync(file, "x");
    expect(() => workspaceToOpen(w("w_file", file), root)).toThrow(/not a folder/);
    expect(() => workspaceToOpen(w("w_ok", `${root}/../workspaces/repo-1234abcd/w_ok`), root)).not.toThrow();
  });
});
