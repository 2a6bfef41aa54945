import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gitStartsDuring } from "../../test/fixtures/git-repo";
import { listing, type Mutate, snapshotCases, write } from "../../test/fixtures/snapshot-cases";
import { objectId, parseBaseTree, treesOf } from "./snapshot";
import { commitAndCheckOut, createWorkspace, inspectRepo, partialHolds, snapshotCaps } from "./workspace";

// The in-process snapshot (snapshot.ts) against git's own (`add -A`, `write-tree`, `commit-tree`, `checkout-index`):
// for each way a worker can leave its files, both make the same changes (paths, modes, blobs: the same tree on the
// same base), the same diff stat and the same checkout, and the engine's way starts no `git add`.

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-snapshot-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();

const { baseRepo, cases } = snapshotCases(tmp);

async function workspace(r: string, repos = "repos") {
  const id = `w-${n++}`;
  return createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(r), id, path.join(tmp, repos, `${id}.git`));
}

describe("the engine's own snapshot is git's", () => {
  const r = baseRepo();
  it.each(cases)("%s", (name, mutate) => bothWays(r, name, mutate));
});

describe("the engine's own snapshot of a sha256 repository is git's", () => {
  const r = baseRepo("sha256");
  const some = ["a file grown", "an executable bit", "a whole folder deleted", "a symlink retargeted", "new files:", "everything emptied"];
  it.each(cases.filter(([name]) => some.some((s) => name.startsWith(s))))("%s", (name, mutate) => bothWays(r, name, mutate));
});

describe("an empty base (a commit of the empty tree), both ways", () => {
  const r = path.join(tmp, `repo-empty-${n++}`);
  execFileSync("git", ["init", "-q", "-b", "main", r]);
  git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty");
  it.each<[string, Mutate]>([
    ["nothing changed", () => {}],
    [
      "new files, a folder, a symlink, an executable",
      (w) => (write(w, "a/b.txt", "b\n"), write(w, "x.sh", "#!/bin/sh\n"), chmodSync(path.join(w, "x.sh"), 0o755), symlinkSync("a/b.txt", path.join(w, "l"))),
    ],
  ])("%s", (name, mutate) => bothWays(r, name, mutate));
});

/** A case graded both ways, whole and partial: the same changes, diff stat and checkout; git's add only where named. */
async function bothWays(r: string, name: string, mutate: Mutate) {
  {
    const only = ["src/a.txt", "docs/deep/nested/f.txt", "a.b", "link"];
    const results = [];
    for (const how of ["any", "git"] as const) {
      for (const partial of [false, true]) {
        const ws = await workspace(r);
        mutate(ws.worktree);
        const dir = path.join(tmp, `checkout-${n++}`);
        let made: Awaited<ReturnType<typeof commitAndCheckOut>> | undefined;
        const starts = await gitStartsDuring(path.join(tmp, `bin-${n++}`), async () => {
          made = await commitAndCheckOut(ws, "ocw: snapshot", dir, snapshotCaps(), partial ? only : undefined, how);
        });
        const m = made!;
        results.push({
          how,
          partial,
          added: starts.includes("add"),
          changed: m.changed,
          diffStat: m.diffStat,
          changes: [...(m.changes ?? [])].sort((a, b) => (a.path < b.path ? -1 : 1)),
          unchanged: m.commit === ws.baseCommit,
          checkout: listing(Buffer.from(dir)),
          holds: partial ? partialHolds(dir, only) : null,
        });
      }
    }
    const [mine, minePartial, gits, gitsPartial] = results;
    const byGit = name.includes("(git's way)");
    expect(mine!.added).toBe(byGit);
    expect(gits!.added).toBe(true);
    for (const [a, b] of [
      [mine!, gits!],
      [minePartial!, gitsPartial!],
    ]) {
      expect({ ...a, how: "", added: false }).toEqual({ ...b, how: "", added: false });
    }
    if (name === "nothing changed") expect(mine!.unchanged).toBe(true);
    else expect(mine!.changes.length).toBeGreaterThan(0);
  }
}

/** What a grading of `how` gave: its changes and checkout, or git's complaint (the same words both ways). */
async function outcome(r: string, mutate: Mutate, how: "any" | "git", repos?: string) {
  const ws = await workspace(r, repos);
  mutate(ws.worktree);
  const dir = path.join(tmp, `checkout-${n++}`);
  let made: Awaited<ReturnType<typeof commitAndCheckOut>> | undefined;
  let error: string | undefined;
  const starts = await gitStartsDuring(path.join(tmp, `bin-${n++}`), async () => {
    made = await commitAndCheckOut(ws, "ocw: snapshot", dir, snapshotCaps(), undefined, how).catch((err: Error) => {
      error = err.message.replace(/ in \S+: /, " in …: ");
      return undefined;
    });
  });
  return {
    added: starts.includes("add"),
    result: made
      ? {
          changed: made.changed,
          diffStat: made.diffStat,
          changes: [...(made.changes ?? [])].sort((a, b) => (a.path < b.path ? -1 : 1)),
          checkout: listing(Buffer.from(dir)),
        }
      : { error },
  };
}

// What git's own add refuses, the engine's must not record: it leaves them to git's way, whose error (or result) is the
// grading's.
describe("what git's add refuses is git's to refuse", () => {
  const r = baseRepo();
  const file =
    (name: string): Mutate =>
    (w) =>
      write(w, name, "1\n");
  const link =
    (name: string): Mutate =>
    (w) =>
      symlinkSync("README.md", path.join(w, name));
  it.each<[string, Mutate]>([
    ["a .GIT folder", file(".GIT/config")],
    ["a .Git folder deeper down", file("a/.Git/hooks/post-checkout")],
    ["a .git folder with a trailing space (NTFS)", file(".git /x")],
    ["a .git folder with a trailing dot (NTFS)", file(".git./x")],
    ["an NTFS short name of .git", file("git~1/x")],
    ["an NTFS short name of .git in capitals", file("GIT~1/x")],
    ["an NTFS stream of .git", file(".git::$INDEX_ALLOCATION/x")],
    ["a symlinked .gitmodules", link(".gitmodules")],
    ["a symlinked NTFS short name of .gitmodules", link("gitmod~1")],
    ["an HFS-ignorable character in .git (git on Linux takes it)", file(".g\u200cit/x")],
    ["a tracked file replaced by a FIFO", (w) => (rmSync(path.join(w, "a0")), execFileSync("mkfifo", [path.join(w, "a0")]))],
    // Found by snapshot-fuzz.test.ts: `ls-files -o` lists no repository where the base has a file; git's add refuses one
    // with no commit checked out (the engine's own had graded the file deleted).
    [
      "a tracked file replaced by a repository with no commit",
      (w) => (rmSync(path.join(w, "a0")), write(w, "a0/f.txt", "f\n"), execFileSync("git", ["init", "-q", path.join(w, "a0")])),
    ],
  ])("%s", async (_name, mutate) => {
    const mine = await outcome(r, mutate, "any");
    const gits = await outcome(r, mutate, "git");
    expect(mine.result).toEqual(gits.result);
    // git's way took it, not the engine's.
    expect(mine.added).toBe(true);
  });
});

// git's probe of the file system where the engine's repository lives (`git init`): on one without executable bits or
// with case-folding names, git's add reads modes and names otherwise; the engine's own snapshot leaves those to it.
describe("an engine repository whose git does not trust the file system's modes or names", () => {
  const r = baseRepo();
  it.each([
    ["core.filemode false", "core.filemode", "false"],
    ["core.ignorecase true", "core.ignorecase", "true"],
    ["core.precomposeunicode true", "core.precomposeunicode", "true"],
  ])("%s: git's way", async (_name, key, value) => {
    const repos = `repos-${key}`;
    const engine = path.join(tmp, repos, ".engine-sha1.git");
    execFileSync("git", ["init", "-q", "--bare", "--template=", engine]);
    git(engine, "config", key, value);
    const mutate: Mutate = (w) => (chmodSync(path.join(w, "README.md"), 0o755), write(w, "new.sh", "#!/bin/sh\n"), chmodSync(path.join(w, "new.sh"), 0o755));
    const mine = await outcome(r, mutate, "any", repos);
    const gits = await outcome(r, mutate, "git", repos);
    expect(mine.result).toEqual(gits.result);
    expect(mine.added).toBe(true);
  });
});

describe("the trees it writes", () => {
  it("the base's own root tree from its listing, in git's order (a file sorts before a folder of the same stem)", () => {
    const r = baseRepo();
    const out = `${git(r, "rev-parse", "HEAD^{tree}")}\n${execFileSync("git", ["-C", r, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", "HEAD"], { encoding: "latin1" })}`;
    const base = parseBaseTree(out, "sha1");
    expect(base?.root).toBe(git(r, "rev-parse", "HEAD^{tree}"));
    // A listing that does not make the base's tree is refused: no snapshot of that base is made in the engine.
    expect(parseBaseTree(out.replace(/^[0-9a-f]{40}/, "0".repeat(40)), "sha1")).toBeNull();
  });

  it("a base past the in-process limit is not held or hashed: null, git's way", () => {
    const blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    const many = Array.from({ length: 2001 }, (_, i) => `100644 blob ${blob}       0\tf${i}\0`).join("");
    expect(parseBaseTree(`${"0".repeat(40)}\n${many}`, "sha1")).toBeNull();
    // The same listing's trees as parseBaseTree would hash them, to show the root it would compare.
    const entries = Array.from({ length: 2001 }, (_, i) => [`f${i}`, { mode: "100644", oid: blob }] as [string, { mode: string; oid: string }]);
    const root = treesOf(entries, "sha1").root;
    expect(parseBaseTree(`${root}\n${many}`, "sha1")).toBeNull();
    expect(parseBaseTree(`${treesOf(entries.slice(0, 2000), "sha1").root}\n${many.split("\0").slice(0, 2000).join("\0")}\0`, "sha1")).not.toBeNull();
  });

  it("sha256 repositories: blob, tree and root ids as git's", () => {
    const dir = path.join(tmp, `repo256-${n++}`);
    execFileSync("git", ["init", "-q", "--object-format=sha256", dir]);
    write(dir, "x/y.txt", "y\n");
    write(dir, "x.txt", "x\n");
    git(dir, "add", "-A");
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
    const out = `${git(dir, "rev-parse", "HEAD^{tree}")}\n${execFileSync("git", ["-C", dir, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", "HEAD"], { encoding: "latin1" })}`;
    const base = parseBaseTree(out, "sha256");
    expect(base).not.toBeNull();
    expect(base!.entries.get("x.txt")!.oid).toBe(objectId("blob", Buffer.from("x\n"), "sha256"));
    expect(treesOf(base!.entries, "sha256").root).toBe(git(dir, "rev-parse", "HEAD^{tree}"));
  });
});

// The engine writes a grading's new objects as one pack and its index (snapshot.ts writePack), not a loose file each:
// git must read them as its own, small and large (a pack over the size written on the engine's thread), both formats.
describe("the graded commit's new objects: one pack git verifies", () => {
  it.each(["sha1", "sha256"] as const)("%s", async (format) => {
    const r = baseRepo(format);
    const ws = await workspace(r);
    write(ws.worktree, "src/new.txt", "new\n");
    write(ws.worktree, "big/large.bin", "x".repeat(40_000) + Array.from({ length: 30_000 }, (_, i) => String(i % 97)).join(","));
    write(ws.worktree, "empty.txt", "");
    const made = await commitAndCheckOut(ws, "ocw: snapshot", path.join(tmp, `checkout-${n++}`), snapshotCaps(), undefined, "any");
    const packs = path.join(ws.gitDir, "grade-objects", "pack");
    const idx = readdirSync(packs).filter((f) => f.endsWith(".idx"));
    expect(idx).toHaveLength(1);
    expect(readdirSync(packs).filter((f) => !f.startsWith(idx[0]!.slice(0, -4)))).toEqual([]);
    const verified = execFileSync("git", ["verify-pack", "-v", `--object-format=${format}`, path.join(packs, idx[0]!)], { cwd: r, encoding: "utf8" });
    // The commit, the new blobs and the trees the base lacks (the root, src/, big/), each whole: no deltas.
    expect(verified).toMatch(new RegExp(`^${made.commit} commit `, "m"));
    expect(verified).toContain("non delta: ");
    expect(verified).not.toMatch(/chain length/);
    // No loose object beside it.
    expect(readdirSync(path.join(ws.gitDir, "grade-objects")).filter((d) => /^[0-9a-f]{2}$/.test(d))).toEqual([]);
    // And git reads the commit's files back through the engine's repository.
    const objects = `${path.join(ws.gitDir, "grade-objects")}:${git(r, "rev-parse", "--path-format=absolute", "--git-path", "objects")}`;
    const show = execFileSync("git", ["-C", r, "show", `${made.commit}:big/large.bin`], {
      env: { ...process.env, GIT_ALTERNATE_OBJECT_DIRECTORIES: objects },
      encoding: "utf8",
    });
    expect(show.length).toBeGreaterThan(64 * 1024);
    expect(made.changed.sort()).toEqual(["big/large.bin", "empty.txt", "src/new.txt"]);
  });
});
