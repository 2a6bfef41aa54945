import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gitRunsIn, workspaceToOpen } from "./open";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-open-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const root = path.join(tmp, "workspaces");
const ws = path.join(root, "repo-1234abcd", "w_ok");
mkdirSync(ws, { recursive: true });
const w = (id: string, worktree: string | null, discarded = false) => ({ id, worktree, discarded });

describe("workspaceToOpen: only a worker's own workspace, never a path a client chose", () => {
  it("answers the real path of a live workspace", () => {
    expect(workspaceToOpen(w("w_ok", ws), root)).toEqual({ workerId: "w_ok", path: ws, gitRuns: [] });
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

describe("gitRunsIn: what a person's git (an editor's, a terminal prompt's) would run from a worker's repository", () => {
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "w",
    GIT_AUTHOR_EMAIL: "w@w",
    GIT_COMMITTER_NAME: "w",
    GIT_COMMITTER_EMAIL: "w@w",
  };
  const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { env, encoding: "utf8" });
  let k = 0;
  /** A workspace as the engine makes one (git init without templates, a branch checked out), committed to once. */
  const made = () => {
    const dir = path.join(tmp, `git-${k++}`);
    mkdirSync(dir, { recursive: true });
    git(dir, "init", "-q", "--template=");
    writeFileSync(path.join(dir, "a.txt"), "a\n");
    git(dir, "add", "-A");
    git(dir, "commit", "-qm", "x");
    git(dir, "checkout", "-q", "-b", "ocw/w-1");
    git(dir, "config", "user.email", "me@example.com");
    return dir;
  };

  it("nothing in a workspace as the engine makes it and a worker's ordinary git leaves it", () => {
    expect(gitRunsIn(made())).toEqual([]);
  });

  it("core.fsmonitor, a filter, a textconv, an include, hooksPath, a hook, a .git that is a symlink or a file, a nested repository's: each said", () => {
    const dir = made();
    git(dir, "config", "core.fsmonitor", "sh -c 'id > /tmp/pwned'");
    git(dir, "config", "filter.x.clean", "evil");
    git(dir, "config", "diff.x.textconv", "evil");
    git(dir, "config", "include.path", "../evil.cfg");
    git(dir, "config", "core.hooksPath", "hooks");
    mkdirSync(path.join(dir, ".git", "hooks"));
    writeFileSync(path.join(dir, ".git", "hooks", "post-checkout"), "#!/bin/sh\nid\n");
    const found = gitRunsIn(dir);
    expect(found).toHaveLength(2);
    expect(found[0]).toBe('.git/config sets "core.fsmonitor", "core.hookspath", "filter.x.clean", "diff.x.textconv", "include.path"');
    expect(found[1]).toBe('.git/hooks holds "post-checkout"');
    const nested = made();
    const inner = path.join(nested, "vendor", "lib");
    mkdirSync(inner, { recursive: true });
    git(inner, "init", "-q", "--template=");
    git(inner, "config", "core.pager", "evil");
    expect(gitRunsIn(nested)).toEqual(['"vendor/lib": .git/config sets "core.pager"']);
    const linked = made();
    rmSync(path.join(linked, ".git"), { recursive: true, force: true });
    symlinkSync(path.join(dir, ".git"), path.join(linked, ".git"));
    expect(gitRunsIn(linked)).toEqual([".git is a symlink naming another repository, whose settings git would use"]);
    const common = made();
    writeFileSync(path.join(common, ".git", "commondir"), "../x\n");
    expect(gitRunsIn(common)).toEqual([".git/commondir (git reads settings through it)"]);
  });

  it("a .git/config that is a FIFO is said at once, never read (no hang)", () => {
    const dir = made();
    rmSync(path.join(dir, ".git", "config"));
    execFileSync("mkfifo", [path.join(dir, ".git", "config")]);
    expect(gitRunsIn(dir)).toEqual([".git/config is not a plain file"]);
  });
});
