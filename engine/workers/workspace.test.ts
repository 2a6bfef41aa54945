import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createWorkspace, inspectRepo, removeWorkspace } from "./workspace";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-workspace-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function repo(): string {
  const dir = path.join(tmp, "repo");
  execFileSync("git", ["init", "-q", "-b", "main", dir]);
  writeFileSync(path.join(dir, "README.md"), "# r\n");
  execFileSync("git", ["-C", dir, "add", "-A"]);
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
  return dir;
}

describe("worktrees of one repository", () => {
  it("32 created at once all succeed, and removed at once all go (git worktree add is not safe concurrently)", async () => {
    const info = await inspectRepo(repo());
    const ids = Array.from({ length: 32 }, (_, i) => `w-${i}`);
    const made = await Promise.allSettled(ids.map((id) => createWorkspace(path.join(tmp, "worktrees"), info, id)));
    const failed = made.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
    expect(failed).toEqual([]);
    const spaces = made.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof createWorkspace>>>).value);
    for (const ws of spaces) expect(existsSync(path.join(ws.worktree, "README.md"))).toBe(true);
    await Promise.all(spaces.map((ws) => removeWorkspace(ws)));
    for (const ws of spaces) expect(existsSync(ws.worktree)).toBe(false);
  });
});
