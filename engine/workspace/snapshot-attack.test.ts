// Attacks on the engine's in-process snapshot (snapshot.ts) by a worker that races it: its files, names and folders
// changed between the engine's look at a path and its read of it. A real race cannot be timed from a test, so the
// file-system calls of snapshot.ts are the real ones with a hook run just before (or after) the call that names a
// chosen file: the hook is the worker's background process, acting at the worst moment. Whatever the worker does, the
// snapshot never holds bytes from outside the workspace, never waits forever, and a read it cannot trust is refused
// (NotInProcess) so git's way takes the grading.
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  closeSync,
  constants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import type { FileHandle } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { NotInProcess, parseBaseTree, readWorktree, type Snapshot } from "./snapshot";
import { commitAndCheckOut, createWorkspace, inspectRepo, snapshotCaps } from "./workspace";

type Call = "lstat" | "open" | "readlink" | "writeFile";
const hooks = vi.hoisted(() => ({
  /** Run before each call, with the call and its path (latin1). */
  before: null as null | ((call: Call, p: string) => void | Promise<void>),
  /** Run after each call returned. */
  after: null as null | ((call: Call, p: string) => void),
  /** Files (not folders) open now, and the most at once. */
  open: 0,
  peak: 0,
}));

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs/promises")>();
  const named = (p: unknown) => (Buffer.isBuffer(p) ? p.toString("latin1") : String(p));
  const wrap =
    <A extends unknown[], R>(call: Call, fn: (p: never, ...rest: A) => Promise<R>) =>
    async (p: unknown, ...rest: A): Promise<R> => {
      await hooks.before?.(call, named(p));
      const r = await fn(p as never, ...rest);
      hooks.after?.(call, named(p));
      return r;
    };
  const open = async (p: unknown, flags?: number, mode?: number): Promise<FileHandle> => {
    const h = await wrap("open", fs.open as (p: never, f?: number, m?: number) => Promise<FileHandle>)(p, flags, mode);
    if (typeof flags === "number" && flags & constants.O_DIRECTORY) return h;
    hooks.peak = Math.max(hooks.peak, ++hooks.open);
    const close = h.close.bind(h);
    h.close = () => (hooks.open--, close());
    return h;
  };
  const mocked = { ...fs, lstat: wrap("lstat", fs.lstat), readlink: wrap("readlink", fs.readlink), writeFile: wrap("writeFile", fs.writeFile), open };
  return { ...mocked, default: mocked };
});

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-snapattack-"));
// rm, not rmSync: a path past PATH_MAX is left to a remover that walks by folder.
afterAll(() => execFileSync("rm", ["-rf", tmp]));
afterEach(() => {
  hooks.before = null;
  hooks.after = null;
});
let n = 0;
const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "latin1" });
const write = (w: string, f: string, c: string | Buffer) => {
  mkdirSync(path.dirname(path.join(w, f)), { recursive: true });
  writeFileSync(path.join(w, f), c);
};

/** A repository whose worktree is the workspace: a base commit, then the worker's changes. */
function repo(files: Record<string, string> = { a0: "zero\n", "docs/deep/nested/f.txt": "deep\n", "README.md": "# r\n" }): string {
  const dir = path.join(tmp, `repo-${n++}`);
  execFileSync("git", ["init", "-q", "-b", "main", dir]);
  for (const [f, c] of Object.entries(files)) write(dir, f, c);
  git(dir, "add", "-A");
  git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
  return dir;
}

/** readWorktree as grading calls it: the base's listing, the new files git lists. */
function snapshotOf(dir: string): Promise<Snapshot> {
  const out = `${git(dir, "rev-parse", "HEAD^{tree}").trim()}\n${git(dir, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", "HEAD")}`;
  const base = parseBaseTree(out, "sha1");
  if (!base) throw new Error("no base");
  const fresh = git(dir, "ls-files", "-z", "-o", "--exclude-standard").split("\0").filter(Boolean);
  return readWorktree(dir, base, fresh);
}

/** The hook runs once, at the first call of `call` whose path ends in `/leaf`. */
function once(call: Call, leaf: string, fn: () => void, when: "before" | "after" = "before") {
  let done = false;
  hooks[when] = (c, p) => {
    if (done || c !== call || !p.endsWith(`/${leaf}`)) return;
    done = true;
    fn();
  };
}

const contents = (snap: Snapshot) => [...snap.files.values()].map((f) => f.content?.toString("latin1")).join("\n");

/** A folder outside the workspace holding what the worker would like the engine to read. */
function outside(): string {
  const dir = path.join(tmp, `outside-${n++}`);
  write(dir, "deep/nested/f.txt", "OUTSIDE SECRET\n");
  write(dir, "f.txt", "OUTSIDE SECRET\n");
  symlinkSync("OUTSIDE-LINK-TARGET", path.join(dir, "l"));
  return dir;
}

/** The snapshot, or the refusal it ended in. */
const attempt = (p: Promise<Snapshot>) =>
  p.then(
    (snap) => ({ snap }),
    (err: Error) => ({ err }),
  );

describe("a worker racing the engine's read of its files", () => {
  it("a folder on the way swapped for a symlink out of the workspace after the engine found it a folder: nothing read through it", async () => {
    const w = repo();
    const out = outside();
    // Once the engine is at the file, `docs` becomes a link to the outside folder (the real one moved aside).
    once("lstat", "f.txt", () => (renameSync(path.join(w, "docs"), path.join(w, "docs-real")), symlinkSync(out, path.join(w, "docs"))));
    const r = await attempt(snapshotOf(w));
    if ("snap" in r) expect(contents(r.snap)).not.toContain("OUTSIDE SECRET");
  });

  it("the same swap just before the file is opened: nothing read through it (closed before too: the inode is checked)", async () => {
    const w = repo();
    const out = outside();
    once("open", "f.txt", () => (renameSync(path.join(w, "docs"), path.join(w, "docs-real")), symlinkSync(out, path.join(w, "docs"))));
    const r = await attempt(snapshotOf(w));
    if ("snap" in r) expect(contents(r.snap)).not.toContain("OUTSIDE SECRET");
  });

  it("a new symlink's folder swapped for a link out of the workspace: the link outside is not read", async () => {
    const w = repo();
    const out = outside();
    mkdirSync(path.join(w, "d"));
    symlinkSync("inside", path.join(w, "d/l"));
    once("lstat", "l", () => (renameSync(path.join(w, "d"), path.join(w, "d-real")), symlinkSync(out, path.join(w, "d"))));
    const r = await attempt(snapshotOf(w));
    if ("snap" in r) expect(contents(r.snap)).not.toContain("OUTSIDE-LINK-TARGET");
  });

  it("a file swapped for a FIFO between its lstat and its open: refused at once, never waits on the FIFO", async () => {
    const w = repo();
    const fifo = path.join(w, "a0");
    once("open", "a0", () => (rmSync(fifo), execFileSync("mkfifo", [fifo])));
    const hung = Symbol("hung");
    let timer: NodeJS.Timeout | undefined;
    const r = await Promise.race([attempt(snapshotOf(w)), new Promise<symbol>((res) => (timer = setTimeout(() => res(hung), 15_000)))]);
    clearTimeout(timer);
    if (r === hung) {
      // Free the thread the engine's open holds (a writer lets it return), then fail.
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    }
    expect(r).not.toBe(hung);
    expect((r as { err?: Error }).err).toBeInstanceOf(NotInProcess);
  }, 30_000);

  it("a file swapped for a symlink out of the workspace between its lstat and its open: refused (closed before: O_NOFOLLOW)", async () => {
    const w = repo();
    const out = outside();
    once("open", "a0", () => (rmSync(path.join(w, "a0")), symlinkSync(path.join(out, "f.txt"), path.join(w, "a0"))));
    const r = await attempt(snapshotOf(w));
    expect("err" in r).toBe(true);
  });

  it("a file swapped for another of the same size: refused (closed before: the inode is checked)", async () => {
    const w = repo();
    // The old file kept (moved aside): the new one is another inode.
    once("open", "a0", () => (renameSync(path.join(w, "a0"), path.join(w, "a0.old")), writeFileSync(path.join(w, "a0"), "ZERO\n")));
    const r = await attempt(snapshotOf(w));
    expect((r as { err?: Error }).err).toBeInstanceOf(NotInProcess);
  });

  it("a file growing as it is read: refused, never more bytes than the caps saw (closed before)", async () => {
    const w = repo();
    once("open", "a0", () => appendFileSync(path.join(w, "a0"), "x".repeat(1 << 20)), "after");
    const r = await attempt(snapshotOf(w));
    expect((r as { err?: Error }).err).toBeInstanceOf(NotInProcess);
  });

  it("a folder swapped for another holding an ignored .gitattributes once it was checked: read from the folder it checked", async () => {
    const w = repo();
    // The replacement's attributes would turn the file's bytes; the engine reads the folder it opened (no attributes).
    once("lstat", "f.txt", () => {
      renameSync(path.join(w, "docs/deep/nested"), path.join(w, "docs/deep/was"));
      write(w, "docs/deep/nested/f.txt", "swapped\r\n");
      write(w, "docs/deep/nested/.gitattributes", "* text\n");
    });
    const r = await attempt(snapshotOf(w));
    if ("snap" in r) expect(r.snap.files.get("docs/deep/nested/f.txt")?.content?.toString()).toBe("deep\n");
  });
});

describe("the engine's resources against a worker's many files", () => {
  it("1,500 new files: read a few at a time, not 1,500 files open at once", async () => {
    const w = repo();
    for (let i = 0; i < 1500; i++) writeFileSync(path.join(w, `f${i}.txt`), `${i}\n`);
    hooks.peak = 0;
    hooks.open = 0;
    const snap = await snapshotOf(w);
    expect(snap.changed.size).toBe(1500);
    expect(hooks.peak).toBeLessThanOrEqual(64);
  });

  it("a path longer than the system opens: git's listing leaves it out; named anyway, refused (not read as gone)", async () => {
    const w = repo();
    const long = "d".repeat(200);
    execFileSync("bash", ["-c", `cd -P "$1" && for i in $(seq 25); do mkdir "$2" && cd -P "$2" || exit 1; done && echo deep > f.txt`, "bash", w, long]);
    // git's listing cannot open the folder: no new file (git's add -A does the same, measured).
    const snap = await snapshotOf(w);
    expect(snap.changed.size).toBe(0);
    const out = `${git(w, "rev-parse", "HEAD^{tree}").trim()}\n${git(w, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", "HEAD")}`;
    const named = `${Array(25).fill(long).join("/")}/f.txt`;
    await expect(readWorktree(w, parseBaseTree(out, "sha1")!, [named])).rejects.toThrow();
  });

  it("an unreadable folder (root reads it anyway): the snapshot is git's or refused, never a deletion git would not see", async () => {
    const w = repo();
    chmodSync(path.join(w, "docs/deep"), 0o000);
    try {
      const r = await attempt(snapshotOf(w));
      if ("snap" in r) expect(r.snap.changed.has("docs/deep/nested/f.txt")).toBe(false);
    } finally {
      chmodSync(path.join(w, "docs/deep"), 0o755);
    }
  });
});

describe("a refused in-process read falls back to git's way, whose word is final", () => {
  const base = repo();
  async function grade(how: "any" | "git", race?: (w: string) => void) {
    const id = `w-${n++}`;
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(base), id, path.join(tmp, "repos", `${id}.git`));
    write(ws.worktree, "docs/deep/nested/f.txt", "changed\n");
    if (race) once("open", "a0", () => race(ws.worktree));
    const dir = path.join(tmp, `checkout-${n++}`);
    return commitAndCheckOut(ws, "ocw: snapshot", dir, snapshotCaps(), undefined, how).then(
      (m) => ({ changed: m.changed, changes: m.changes }),
      (err: Error) => ({ error: err.message.replace(/ in \S+: /, " in …: ") }),
    );
  }

  it("a file made a FIFO as the engine opens it: the grading is git's (git's own error for the FIFO)", async () => {
    const fifo = (w: string) => (rmSync(path.join(w, "a0")), execFileSync("mkfifo", [path.join(w, "a0")]));
    const mine = await grade("any", fifo);
    hooks.before = null;
    const gits = await grade("git");
    const gitsOnFifo = await (async () => {
      // git's way on a workspace already in the state the race left.
      const id = `w-${n++}`;
      const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(base), id, path.join(tmp, "repos", `${id}.git`));
      write(ws.worktree, "docs/deep/nested/f.txt", "changed\n");
      fifo(ws.worktree);
      return commitAndCheckOut(ws, "ocw: snapshot", path.join(tmp, `checkout-${n++}`), snapshotCaps(), undefined, "git").then(
        (m) => ({ changed: m.changed, changes: m.changes }),
        (err: Error) => ({ error: err.message.replace(/ in \S+: /, " in …: ") }),
      );
    })();
    expect(gits).toHaveProperty("changed");
    expect(mine).toEqual(gitsOnFifo);
    expect(mine).toHaveProperty("error");
  }, 30_000);
});

describe("the engine's checkout when its own write fails", () => {
  it("a write of the checkout that fails: the others end before git's way writes its checkout (none lands in git's)", async () => {
    const r = repo();
    const id = `w-${n++}`;
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(r), id, path.join(tmp, "repos", `${id}.git`));
    write(ws.worktree, "docs/deep/nested/f.txt", "changed\n");
    const dir = path.join(tmp, `checkout-${n++}`);
    let late: Promise<void> = Promise.resolve();
    hooks.before = (call, p) => {
      if (call !== "writeFile" || !p.startsWith(dir)) return;
      // One write of the engine's checkout fails (a full disk); another is slow, and meanwhile the worker changes the
      // file it writes: git's way, taking over, commits and checks out the new bytes.
      if (p.endsWith("/a0")) throw Object.assign(new Error("no space left"), { code: "ENOSPC" });
      if (p.endsWith("/README.md")) {
        writeFileSync(path.join(ws.worktree, "README.md"), "changed by the worker meanwhile\n");
        late = new Promise((res) => setTimeout(res, 1500));
        return late;
      }
    };
    const made = await commitAndCheckOut(ws, "ocw: snapshot", dir, snapshotCaps());
    await late;
    await new Promise((res) => setTimeout(res, 50));
    expect(made.changed).toContain("README.md");
    // The checkout shows the graded commit's bytes, not the engine's slow write of the earlier ones.
    expect(readFileSync(path.join(dir, "README.md"), "utf8")).toBe("changed by the worker meanwhile\n");
  }, 30_000);
});

describe("a base the in-process snapshot cannot remake", () => {
  it("a base tree holding a file and a folder of one name (git's read-tree takes it): graded git's way, not failed", async () => {
    const dir = path.join(tmp, `repo-df-${n++}`);
    execFileSync("git", ["init", "-q", "-b", "main", dir]);
    const blob = execFileSync("git", ["-C", dir, "hash-object", "-w", "--stdin"], { input: "hi\n", encoding: "utf8" }).trim();
    const sub = execFileSync("git", ["-C", dir, "mktree"], { input: `100644 blob ${blob}\tx\n`, encoding: "utf8" }).trim();
    const tree = execFileSync("git", ["-C", dir, "mktree"], {
      input: `100644 blob ${blob}\ta\n040000 tree ${sub}\ta\n100644 blob ${blob}\tz\n`,
      encoding: "utf8",
    }).trim();
    const commit = git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-m", "a file and a folder named a").trim();
    git(dir, "update-ref", "refs/heads/main", commit);
    git(dir, "checkout", "-q", "main");
    const out = `${git(dir, "rev-parse", "HEAD^{tree}").trim()}\n${git(dir, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", "HEAD")}`;
    expect(parseBaseTree(out, "sha1")).toBeNull();
    const id = `w-${n++}`;
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(dir), id, path.join(tmp, "repos", `${id}.git`));
    write(ws.worktree, "z", "changed\n");
    const made = await commitAndCheckOut(ws, "ocw: snapshot", path.join(tmp, `checkout-${n++}`), snapshotCaps());
    expect(made.changed).toContain("z");
  });
});

describe("a /proc that does not lead to the engine's open folders", () => {
  it("every name under /proc/self/fd gone (another namespace's /proc): refused, never a snapshot deleting everything", async () => {
    const w = repo();
    hooks.before = (call, p) => {
      if (p.startsWith("/proc/self/fd/")) throw Object.assign(new Error(`ENOENT: ${call} ${p}`), { code: "ENOENT" });
    };
    const r = await attempt(snapshotOf(w));
    expect("err" in r).toBe(true);
  });
});

describe("nothing left running or unhandled", () => {
  it("an empty base, no new file, an ignored .gitattributes at the top: refused, no stray rejection", async () => {
    const dir = path.join(tmp, `repo-empty-${n++}`);
    execFileSync("git", ["init", "-q", "-b", "main", dir]);
    git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty");
    write(dir, ".gitignore", ".gitignore\n.gitattributes\n");
    write(dir, ".gitattributes", "* text\n");
    const r = await attempt(snapshotOf(dir));
    expect((r as { err?: Error }).err).toBeInstanceOf(NotInProcess);
  });
});
