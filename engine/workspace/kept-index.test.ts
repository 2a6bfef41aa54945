import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { committedRepo } from "../../test/fixtures/git-repo";
import { gitsWaySuite, gradeGitsWay, keptIndexMeta, settle } from "../../test/fixtures/kept-index";
import { type Mutate, snapshotCases, write } from "../../test/fixtures/snapshot-cases";
import {
  commitAndCheckOut,
  createWorkspace,
  fullDiff,
  gradedStoreOf,
  inspectRepo,
  keepGraded,
  keptIndexUseOf,
  kernelStampsCtime,
  snapshotCaps,
  type Workspace,
} from "./workspace";

// Grading's git way (a repository past the in-process snapshot: `add -A` on a private index) starts from the index of
// the workspace's checkout, kept by the engine before the worker ran: git reads again only the files whose stat data
// changed. For each way a worker can leave its files, the commit (its changes: paths, modes, blobs), the diff stat and
// the checkout are those of the base's index (every file read again, as before), which a workspace without its kept
// index still takes.

const tmp = gitsWaySuite("ocw-kept-index-");
let n = 0;
const { baseRepo, cases } = snapshotCases(tmp);

async function workspace(r: string, opts: { importFrom?: string; head?: string } = {}): Promise<Workspace> {
  const id = `w-${n++}`;
  const info = await inspectRepo(r);
  return createWorkspace(path.join(tmp, "workspaces"), { ...info, head: opts.head ?? info.head }, id, path.join(tmp, "repos", `${id}.git`), {
    importFrom: opts.importFrom,
  });
}

const meta = keptIndexMeta;
/** A workspace graded the way it was before the kept index (one made before it, a resumed worker's). */
const withoutKept = (ws: Workspace) => rmSync(meta(ws));

const grade = (ws: Workspace) => gradeGitsWay(ws, path.join(tmp, `checkout-${n++}`), "ocw: kept index");

/** The entries of a kept index in use, after checking that at most the changed files were smudged. */
const readUse = (use: { kept: number; reread: number } | null, changed = 2) => {
  expect(use).not.toBeNull();
  expect(use!.reread).toBeLessThanOrEqual(changed);
  return use!.kept + use!.reread;
};

const attributes = (name: string) => /gitattributes|attributes added/.test(name);

function oracle(format: "sha1" | "sha256", which: [string, Mutate][]) {
  const r = baseRepo(format);
  const pairs = new Map<string, [Workspace, Workspace]>();
  beforeAll(async () => {
    for (const [name] of which) pairs.set(name, [await workspace(r), await workspace(r)]);
    await settle();
  }, 60_000);
  it.each(which)("%s", async (name, mutate) => {
    const [kept, before] = pairs.get(name)!;
    withoutKept(before);
    mutate(kept.worktree);
    mutate(before.worktree);
    const use = await keptIndexUseOf(kept);
    // Where a .gitattributes could apply, git's add converts what it reads: every file is read (the base's index).
    expect(use === null).toBe(attributes(name));
    // The checkout's second is over: every entry is left to git's own stat check.
    if (name === "nothing changed") expect(use).toEqual({ kept: 12, reread: 0 });
    else if (!attributes(name)) expect(readUse(use, 12)).toBe(12);
    expect(await keptIndexUseOf(before)).toBeNull();
    // A running worker's diff (its files snapshotted the same way), then the grading.
    expect(await fullDiff(kept)).toBe(await fullDiff(before));
    expect(await grade(kept)).toEqual(await grade(before));
  });
}

describe("git's way from the kept checkout index makes the commit the base's index makes", () => {
  oracle("sha1", cases);
});

describe("the same in a sha256 repository", () => {
  const some = [
    "nothing changed",
    "same size",
    "a file grown",
    "an executable bit",
    "a whole folder deleted",
    "a file become a symlink",
    "new files:",
    "attributes added",
  ];
  oracle(
    "sha256",
    cases.filter(([name]) => some.some((s) => name.startsWith(s))),
  );
});

describe("which workspaces keep their checkout's index", () => {
  it("every one of 16 files or more does (git's way past the in-process snapshot reads it, and the in-process snapshot of file checks); a smaller one none", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 2001; i++) files[`d${i % 20}/f${i}`] = `${i}\n`;
    const big = committedRepo(path.join(tmp, "repo-big"), files);
    const small = committedRepo(path.join(tmp, "repo-small"), { "a.txt": "a\n" });
    delete process.env.OCW_SNAPSHOT_GIT;
    try {
      const [b, s] = [await workspace(big), await workspace(small)];
      expect(existsSync(meta(b))).toBe(true);
      expect(existsSync(meta(s))).toBe(false);
      const sixteen = committedRepo(path.join(tmp, "repo-sixteen"), Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`f${i}.txt`, `${i}\n`])));
      expect(existsSync(meta(await workspace(sixteen)))).toBe(true);
      await settle();
      write(b.worktree, "d3/f3", "changed\n");
      expect(readUse(await keptIndexUseOf(b))).toBe(2001);
      const g = await grade(b);
      expect(g.changed).toEqual(["d3/f3"]);
      withoutKept(b);
      expect(await grade(b)).toEqual(g);
    } finally {
      process.env.OCW_SNAPSHOT_GIT = "1";
    }
  }, 60_000);
});

describe("the stat data it trusts", () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 40; i++) files[`src/m${i % 4}/f${i}.txt`] = `file ${i}\n`;
  const r = committedRepo(path.join(tmp, "repo-many"), files);

  it("one file changed: only it is read again, and the commit is the base index's", async () => {
    const [kept, before] = [await workspace(r), await workspace(r)];
    await settle();
    withoutKept(before);
    for (const w of [kept, before]) write(w.worktree, "src/m1/f1.txt", "changed\n");
    // Left to git's stat check, or (an entry of the fence's own second) smudged where its file changed.
    expect(readUse(await keptIndexUseOf(kept))).toBe(40);
    const g = await grade(kept);
    expect(g.changed).toEqual(["src/m1/f1.txt"]);
    expect(g).toEqual(await grade(before));
  });

  it("git reads again only files whose stat data changed: an untouched file's kept entry is what is committed", async () => {
    // Shown by a kept entry naming other bytes (another file's blob): git takes it without reading the file. The base's
    // index (before) reads every file.
    const ws = await workspace(r);
    await settle();
    const file = path.join(ws.gitDir, "checkout-index");
    // Without its cache of trees (the TREE extension: the base's trees, which write-tree would take as they are).
    const whole = readFileSync(file);
    const tree = whole.lastIndexOf(Buffer.from("TREE"));
    expect(tree).toBeGreaterThan(0);
    const b = Buffer.concat([whole.subarray(0, tree), Buffer.alloc(20)]);
    const other = execFileSync("git", ["-C", r, "rev-parse", "HEAD:src/m1/f1.txt"], { encoding: "utf8" }).trim();
    const name = b.indexOf(Buffer.from("src/m0/f0.txt\0"));
    Buffer.from(other, "hex").copy(b, name - 2 - 20);
    createHash("sha1")
      .update(b.subarray(0, b.length - 20))
      .digest()
      .copy(b, b.length - 20);
    writeFileSync(file, b);
    writeFileSync(meta(ws), readFileSync(meta(ws), "utf8").replace(/"checksum":"[0-9a-f]+"/, `"checksum":"${b.subarray(b.length - 20).toString("hex")}"`));
    expect(await keptIndexUseOf(ws)).toEqual({ kept: 40, reread: 0 });
    const g = await grade(ws);
    expect(g.changes.map((c) => [c.path, c.oid])).toEqual([["src/m0/f0.txt", other]]);
    withoutKept(ws);
    expect((await grade(ws)).unchanged).toBe(true);
  });

  // The same bytes count, the mtime put back to the nanosecond: only the ctime tells. Right after the checkout (the
  // second git's racy-clean rule covers) and after it.
  it.each([
    ["right after the checkout", false],
    ["seconds after the checkout", true],
  ])("a file rewritten %s with its size and mtime put back is read again", async (_when, wait) => {
    const ws = await workspace(r);
    if (wait) await settle();
    const file = path.join(ws.worktree, "src/m2/f2.txt");
    const st = lstatSync(file, { bigint: true });
    writeFileSync(file, "FILE 2\n");
    const sec = st.mtimeNs / 1_000_000_000n;
    const nsec = String(st.mtimeNs % 1_000_000_000n).padStart(9, "0");
    execFileSync("touch", ["-d", `@${sec}.${nsec}`, file]);
    const now = lstatSync(file, { bigint: true });
    expect([now.mtimeNs, now.size, now.ino]).toEqual([st.mtimeNs, st.size, st.ino]);
    const use = await keptIndexUseOf(ws);
    // Seconds after, every entry is of a second before the look: all kept but this one, read again. Right after, which
    // entries the engine looks at depends on the second the checkout wrote each in (one of a second before the fence's is
    // kept unlooked, and git's own comparison of its ctime, to the second, sees the rewrite): the grade below must see it.
    if (wait) expect(readUse(use)).toBe(40);
    else expect(use!.kept + use!.reread).toBe(40);
    const g = await grade(ws);
    expect(g.changed).toEqual(["src/m2/f2.txt"]);
    expect(g.changes[0]!.oid).toBe(execFileSync("git", ["hash-object", "--stdin"], { input: "FILE 2\n", encoding: "utf8" }).trim());
  });

  it("a file replaced by a copy of the same bytes and times (another inode) is read again; nothing changed", async () => {
    const ws = await workspace(r);
    await settle();
    const file = path.join(ws.worktree, "src/m3/f3.txt");
    const st = lstatSync(file, { bigint: true });
    writeFileSync(`${file}.new`, readFileSync(file));
    execFileSync("touch", ["-d", `@${st.mtimeNs / 1_000_000_000n}.${String(st.mtimeNs % 1_000_000_000n).padStart(9, "0")}`, `${file}.new`]);
    renameSync(`${file}.new`, file);
    expect(readUse(await keptIndexUseOf(ws))).toBe(40);
    const g = await grade(ws);
    expect(g.unchanged).toBe(true);
  });

  it("a later round grades against the same base: the kept index is still the checkout's", async () => {
    const [kept, before] = [await workspace(r), await workspace(r)];
    await settle();
    withoutKept(before);
    const index = readFileSync(path.join(kept.gitDir, "checkout-index"));
    for (const w of [kept, before]) write(w.worktree, "src/m1/f1.txt", "round one\n");
    expect(await grade(kept)).toEqual(await grade(before));
    // The next round: f1 put back as the base had it, another file changed.
    for (const w of [kept, before]) write(w.worktree, "src/m1/f1.txt", "file 1\n"), write(w.worktree, "src/m0/f0.txt", "round two\n");
    expect(readUse(await keptIndexUseOf(kept))).toBeGreaterThan(0);
    const g = await grade(kept);
    expect(g.changed).toEqual(["src/m0/f0.txt"]);
    expect(g).toEqual(await grade(before));
    expect(readFileSync(path.join(kept.gitDir, "checkout-index")).equals(index)).toBe(true);
  });

  it("a workspace started from a graded commit (an attempt's, imported) keeps its checkout's index too", async () => {
    const first = await workspace(r);
    write(first.worktree, "src/m0/new.txt", "from the first task\n");
    const dir = path.join(tmp, `checkout-${n++}`);
    const graded = await commitAndCheckOut(first, "ocw: first", dir, snapshotCaps(), undefined, "git");
    await keepGraded(first, graded.commit);
    const from = await gradedStoreOf(first);
    const [kept, before] = [await workspace(r, { importFrom: from, head: graded.commit }), await workspace(r, { importFrom: from, head: graded.commit })];
    expect(kept.baseCommit).toBe(graded.commit);
    await settle();
    withoutKept(before);
    for (const w of [kept, before]) write(w.worktree, "src/m0/new.txt", "changed by the second\n");
    expect(readUse(await keptIndexUseOf(kept))).toBe(41);
    const g = await grade(kept);
    expect(g.changed).toEqual(["src/m0/new.txt"]);
    expect(g).toEqual(await grade(before));
  });

  describe("where it does not hold, the base's index (every file read again)", () => {
    it.each<[string, (ws: Workspace) => void]>([
      ["no kept index (a workspace made before it)", (ws) => rmSync(path.join(ws.gitDir, "checkout-index"))],
      ["its description missing", (ws) => rmSync(meta(ws))],
      ["kept for another base", (ws) => writeFileSync(meta(ws), readFileSync(meta(ws), "utf8").replace(ws.baseCommit, "1".repeat(40)))],
      [
        "its bytes changed",
        (ws) => {
          const file = path.join(ws.gitDir, "checkout-index");
          const b = readFileSync(file);
          b[40] = b[40]! ^ 1;
          writeFileSync(file, b);
        },
      ],
      ["its description unreadable", (ws) => writeFileSync(meta(ws), "{not json")],
      [
        "an ignored .gitattributes in a folder of the base's files",
        (ws) => (write(ws.worktree, "src/m1/.gitattributes", "*.txt text\n"), write(ws.worktree, "src/m1/.gitignore", ".gitattributes\n")),
      ],
    ])("%s", async (_name, spoil) => {
      const [ws, before] = [await workspace(r), await workspace(r)];
      await settle();
      withoutKept(before);
      spoil(ws);
      write(ws.worktree, "src/m1/f1.txt", "changed\r\n");
      write(before.worktree, "src/m1/f1.txt", "changed\r\n");
      if (_name.includes(".gitattributes")) spoil(before);
      expect(await keptIndexUseOf(ws)).toBeNull();
      expect(await grade(ws)).toEqual(await grade(before));
    });
  });
});

describe("where the kept stat data is trusted at all", () => {
  it("on a file system whose ctime the kernel stamps (this machine's temporary folders), not on another (/proc, /sys: as a FUSE or network one)", async () => {
    expect(await kernelStampsCtime(tmp)).toBe(true);
    if (process.platform !== "linux") return;
    expect(await kernelStampsCtime("/proc")).toBe(false);
    expect(await kernelStampsCtime("/sys")).toBe(false);
    expect(await kernelStampsCtime(path.join(tmp, "no-such-folder"))).toBe(false);
  });
});
