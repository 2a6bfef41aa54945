import { execFileSync } from "node:child_process";
import { chmodSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { gitStartsDuring } from "../../test/fixtures/git-repo";
import { objectId, parseBaseTree, treesOf } from "./snapshot";
import { commitAndCheckOut, createWorkspace, inspectRepo, partialHolds, snapshotCaps } from "./workspace";

// The in-process snapshot (snapshot.ts) against git's own (`add -A`, `write-tree`, `commit-tree`, `checkout-index`):
// for each way a worker can leave its files, both make the same changes (paths, modes, blobs: the same tree on the
// same base), the same diff stat and the same checkout, and the engine's way starts no `git add`.

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-snapshot-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();

/** A base with the shapes a worker meets: nested folders, an executable, a symlink, names that sort oddly, an ignored but tracked file. */
function baseRepo(format: "sha1" | "sha256" = "sha1"): string {
  const dir = path.join(tmp, `repo-${n++}`);
  execFileSync("git", ["init", "-q", "-b", "main", `--object-format=${format}`, dir]);
  const files: Record<string, string> = {
    "README.md": "# r\n",
    "src/a.txt": "a\n",
    "src/b.sh": "#!/bin/sh\necho b\n",
    "a-b": "dash\n",
    "a.b": "dot\n",
    "a/x": "in a\n",
    a0: "zero\n",
    "docs/deep/nested/f.txt": "deep\n",
    ".gitignore": "*.log\nbuild/\n",
    "tracked.log": "kept\n",
    empty: "",
  };
  for (const [f, c] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), c);
  }
  chmodSync(path.join(dir, "src/b.sh"), 0o755);
  symlinkSync("README.md", path.join(dir, "link"));
  git(dir, "add", "-A");
  git(dir, "add", "-f", "tracked.log");
  git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
  return dir;
}

/** Every file of a checkout: its kind, its owner-exec bit, its bytes or link target (names as bytes, shown in hex). */
function listing(dir: Buffer, rel = ""): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir, { encoding: "buffer" }).sort(Buffer.compare)) {
    const at = Buffer.concat([dir, Buffer.from("/"), name]);
    const p = `${rel}/${name.toString("hex")}`;
    const st = lstatSync(at);
    if (st.isSymbolicLink()) out.push(`${p} -> ${readlinkSync(at)}`);
    else if (st.isDirectory()) out.push(`${p}/`, ...listing(at, p));
    else out.push(`${p} ${st.mode & 0o100 ? "x" : "-"} ${readFileSync(at).toString("hex")}`);
  }
  return out;
}

type Mutate = (w: string) => void;
const write = (w: string, f: string, c: string | Buffer) => {
  mkdirSync(path.dirname(path.join(w, f)), { recursive: true });
  writeFileSync(path.join(w, f), c);
};

const cases: [string, Mutate][] = [
  ["nothing changed", () => {}],
  ["same size, other bytes", (w) => write(w, "src/a.txt", "b\n")],
  ["a file grown", (w) => write(w, "src/a.txt", "a\nand more\n")],
  [
    "an executable bit set (the owner's only), one cleared",
    (w) => (chmodSync(path.join(w, "README.md"), 0o744), chmodSync(path.join(w, "a0"), 0o711), chmodSync(path.join(w, "src/b.sh"), 0o644)),
  ],
  ["a file deleted", (w) => rmSync(path.join(w, "src/a.txt"))],
  ["a whole folder deleted", (w) => rmSync(path.join(w, "docs"), { recursive: true })],
  ["a file become a folder", (w) => (rmSync(path.join(w, "a.b")), write(w, "a.b/inner.txt", "inner\n"))],
  ["a folder become a file", (w) => (rmSync(path.join(w, "a"), { recursive: true }), write(w, "a", "now a file\n"))],
  ["a file become a symlink", (w) => (rmSync(path.join(w, "src/a.txt")), symlinkSync("../README.md", path.join(w, "src/a.txt")))],
  ["a symlink become a file", (w) => (rmSync(path.join(w, "link")), write(w, "link", "plain\n"))],
  [
    "a symlink retargeted, one to outside added",
    (w) => (rmSync(path.join(w, "link")), symlinkSync("src/a.txt", path.join(w, "link")), symlinkSync("/etc/passwd", path.join(w, "leak"))),
  ],
  [
    "a folder replaced by a symlink to another (its files are not read through it)",
    (w) => (rmSync(path.join(w, "docs"), { recursive: true }), symlinkSync("src", path.join(w, "docs"))),
  ],
  [
    "a folder on the way become a symlink to one outside holding the same names (not read through it)",
    (w) => {
      const outside = path.join(tmp, "outside");
      write(outside, "deep/nested/f.txt", "outside secret\n");
      write(outside, "x", "outside x\n");
      rmSync(path.join(w, "docs"), { recursive: true });
      symlinkSync(outside, path.join(w, "docs"));
      rmSync(path.join(w, "a"), { recursive: true });
      symlinkSync(outside, path.join(w, "a"));
    },
  ],
  [
    "new files: nested, spaces, non-ASCII, invalid UTF-8, empty, names sorting around folders",
    (w) => {
      write(w, "n/e/w/file.txt", "new\n");
      write(w, "with spaces.txt", "s\n");
      write(w, "ünï.txt", "u\n");
      writeFileSync(Buffer.concat([Buffer.from(`${w}/`), Buffer.from([0x62, 0xff, 0x2e, 0x74])]), "bytes\n");
      write(w, "new-empty", "");
      write(w, "a-c", "c\n");
      write(w, "a/y", "y\n");
      write(w, "a.a", "aa\n");
    },
  ],
  [
    "ignored files left out, a tracked ignored file changed",
    (w) => (write(w, "x.log", "log\n"), write(w, "build/out.txt", "o\n"), write(w, "tracked.log", "changed\n")),
  ],
  ["a binary file and a long one", (w) => (write(w, "bin.dat", Buffer.from([0, 1, 2, 0, 255])), write(w, "long.txt", "line\n".repeat(5000)))],
  [
    "everything emptied",
    (w) => {
      for (const f of readdirSync(w)) if (f !== ".git") rmSync(path.join(w, f), { recursive: true, force: true });
    },
  ],
  [
    "a hard link to a file outside the workspace (its bytes, as git reads them)",
    (w) => {
      const outside = path.join(tmp, `outside-hard-${n++}`);
      writeFileSync(outside, "linked from outside\n");
      linkSync(outside, path.join(w, "hard.txt"));
    },
  ],
  [
    "names git takes as they are: a backslash, a colon, .github, a symlinked .gitignore and .mailmap",
    (w) => {
      write(w, "b\\c", "b\n");
      write(w, "x:y", "x\n");
      write(w, ".github/workflows/ci.yml", "on: push\n");
      symlinkSync("README.md", path.join(w, ".mailmap"));
      write(w, "sub/x", "x\n");
      symlinkSync("x", path.join(w, "sub/.gitignore"));
    },
  ],
  [
    "a tracked folder made a repository of its own, a file in it changed, one added",
    (w) => {
      execFileSync("git", ["init", "-q", path.join(w, "src")]);
      write(w, "src/a.txt", "changed in a nested repository\n");
      write(w, "src/new.txt", "new\n");
    },
  ],
  [
    "a tracked folder made a repository with a commit of its own",
    (w) => {
      git(path.join(w, "src"), "init", "-q");
      git(path.join(w, "src"), "add", "-A");
      execFileSync("git", ["-C", path.join(w, "src"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "own"], {
        env: { ...process.env, GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z", GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z" },
      });
      write(w, "src/a.txt", "changed after\n");
    },
  ],
  // git's way, taken by the engine's: attributes (their conversions are git's to apply), a nested repository.
  [
    "an ignored, untracked .gitattributes at the top: git's add applies it (git's way)",
    (w) => (write(w, ".gitignore", "*.log\nbuild/\n.gitattributes\n"), write(w, ".gitattributes", "*.txt text eol=lf\n"), write(w, "src/a.txt", "a\r\nb\r\n")),
  ],
  [
    "an ignored, untracked .gitattributes in a folder (git's way)",
    (w) => (write(w, "src/.gitignore", ".gitattributes\n"), write(w, "src/.gitattributes", "a.txt ident\n"), write(w, "src/a.txt", "$Id: smuggled $\n")),
  ],
  [
    "an ignored .gitattributes that is a folder or a symlink (git's way)",
    (w) => (
      write(w, ".gitignore", ".gitattributes\n"),
      symlinkSync("README.md", path.join(w, ".gitattributes")),
      write(w, "docs/.gitignore", ".gitattributes\n"),
      mkdirSync(path.join(w, "docs/.gitattributes"))
    ),
  ],
  [
    "a new FIFO beside a changed file (left out, as git's listing leaves it)",
    (w) => (execFileSync("mkfifo", [path.join(w, "new-fifo")]), write(w, "src/a.txt", "changed\n")),
  ],

  ["attributes added (git's way)", (w) => (write(w, ".gitattributes", "*.txt text eol=crlf\n"), write(w, "src/a.txt", "a\r\nb\r\n"))],
  [
    "a nested repository (git's way)",
    (w) => {
      write(w, "sub/f.txt", "f\n");
      execFileSync("git", ["init", "-q", path.join(w, "sub")]);
      git(path.join(w, "sub"), "add", "-A");
      // A fixed date: the same commit (the gitlink's id) in every workspace of the case.
      execFileSync("git", ["-C", path.join(w, "sub"), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "sub"], {
        env: { ...process.env, GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z", GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z" },
      });
    },
  ],
];

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
