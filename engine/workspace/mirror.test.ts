import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { committedRepo } from "../../test/fixtures/git-repo";
import { codeOf } from "../../shared/errors";
import { mirrorObjects, refreshMirror, type LinkFn } from "./mirror";
import { createWorkspace, inspectRepo, moveOntoMirror, workspaceMirror } from "./workspace";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-mirror-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
const repo = (files?: Record<string, string>) => committedRepo(path.join(tmp, `repo-${n++}`), files);
const g = (dir: string, ...args: string[]) =>
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    encoding: "utf8",
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
  }).trim();
const objectsIn = (dir: string) => path.join(dir, ".git", "objects");
/** Every object file of a store (loose objects and pack files), relative to it. */
const files = (objects: string) =>
  readdirSync(objects, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(objects, path.join(e.parentPath, e.name)))
    .filter((f) => /^[0-9a-f]{2}\/|^pack\/pack-/.test(f))
    .sort();
const commit = (dir: string, name: string, text: string) => {
  writeFileSync(path.join(dir, name), text);
  g(dir, "add", "-A");
  g(dir, "commit", "-qm", name);
};

describe("the engine's mirror of a user repository's objects", () => {
  it("hard-links every object file on the same file system (the same inode), loose objects and packs", async () => {
    const r = repo({ "a.txt": "a\n" });
    commit(r, "b.txt", "b\n");
    g(r, "repack", "-q"); // one pack (with its .idx) besides the loose objects of the next commit
    commit(r, "c.txt", "c\n");
    const mirror = mirrorObjects(path.join(tmp, "mirrors"), r, "sha1");
    const done = await refreshMirror(objectsIn(r), mirror);
    const want = files(objectsIn(r));
    expect(want.some((f) => f.endsWith(".pack"))).toBe(true);
    expect(files(mirror)).toEqual(want);
    expect(done).toMatchObject({ linked: want.length, copied: 0, present: 0, unreadable: [], promisor: false });
    for (const f of want) expect(statSync(path.join(mirror, f)).ino).toBe(statSync(path.join(objectsIn(r), f)).ino);
  });

  it("copies a file whole where a hard link is refused (another file system: EXDEV), leaving no temporary file", async () => {
    const r = repo({ "a.txt": "a\n" });
    g(r, "repack", "-q");
    commit(r, "b.txt", "b\n");
    const mirror = mirrorObjects(path.join(tmp, "mirrors-xdev"), r, "sha1");
    const exdev: LinkFn = async () => {
      throw Object.assign(new Error("EXDEV: cross-device link not permitted"), { code: "EXDEV" });
    };
    const done = await refreshMirror(objectsIn(r), mirror, { link: exdev });
    const want = files(objectsIn(r));
    expect(done).toMatchObject({ linked: 0, copied: want.length });
    expect(readdirSync(mirror, { recursive: true }).filter((f) => String(f).includes("tmp_ocw"))).toEqual([]);
    for (const f of want) {
      expect(statSync(path.join(mirror, f)).ino).not.toBe(statSync(path.join(objectsIn(r), f)).ino);
      expect(readFileSync(path.join(mirror, f)).equals(readFileSync(path.join(objectsIn(r), f)))).toBe(true);
    }
    // A workspace borrowing the copied mirror works.
    const ws = await createWorkspace(path.join(tmp, "ws-xdev", "workspaces"), await inspectRepo(r), "w-xdev", path.join(tmp, "ws-xdev", "repos", "w.git"), {
      mirrorsRoot: path.join(tmp, "mirrors-xdev"),
      link: exdev,
    });
    expect(g(ws.worktree, "log", "--oneline").split("\n")).toHaveLength(2);
  });

  it("a refresh places only what the mirror lacks; a workspace from a base the mirror lacks refreshes it", async () => {
    const r = repo({ "a.txt": "a\n" });
    const root = path.join(tmp, "incr");
    const workspaces = path.join(root, "workspaces");
    const first = await createWorkspace(workspaces, await inspectRepo(r), "w-1", path.join(root, "repos", "w-1.git"));
    const mirror = workspaceMirror(workspaces, r, first.baseCommit);
    const before = files(mirror).length;
    expect(await refreshMirror(objectsIn(r), mirror)).toMatchObject({ linked: 0, copied: 0, present: before });
    commit(r, "b.txt", "b\n"); // three new objects: a blob, a tree, a commit
    const again = await refreshMirror(objectsIn(r), mirror);
    expect(again).toMatchObject({ linked: 3, copied: 0, present: before });
    commit(r, "c.txt", "c\n");
    const second = await createWorkspace(workspaces, await inspectRepo(r), "w-2", path.join(root, "repos", "w-2.git"));
    expect(g(second.worktree, "log", "--oneline").split("\n")).toHaveLength(3);
    expect(files(mirror)).toEqual(files(objectsIn(r)));
    // The workspaces borrow the mirror, never the user's store.
    for (const ws of [first, second]) expect(readFileSync(path.join(ws.worktree, ".git", "objects", "info", "alternates"), "utf8")).toBe(mirror + "\n");
  });

  it("two workspaces of a repository made at once, on a new mirror and on a base it lacks, both work", async () => {
    const r = repo({ "a.txt": "a\n" });
    const root = path.join(tmp, "pair");
    const workspaces = path.join(root, "workspaces");
    const info = await inspectRepo(r);
    const pair = await Promise.all(["w-a", "w-b"].map((id) => createWorkspace(workspaces, info, id, path.join(root, "repos", `${id}.git`))));
    for (const ws of pair) expect(g(ws.worktree, "log", "--format=%s")).toBe("init");
    commit(r, "b.txt", "b\n");
    const later = await inspectRepo(r);
    const next = await Promise.all(["w-c", "w-d"].map((id) => createWorkspace(workspaces, later, id, path.join(root, "repos", `${id}.git`))));
    for (const ws of next) {
      expect(g(ws.worktree, "log", "--format=%s").split("\n")).toEqual(["b.txt", "init"]);
      expect(g(ws.worktree, "fsck", "--connectivity-only", "--no-dangling")).toBe("");
    }
    const mirror = workspaceMirror(workspaces, r, later.head);
    expect(readdirSync(mirror, { recursive: true }).filter((f) => String(f).includes("tmp_ocw"))).toEqual([]);
  });

  it("follows the user store's own alternates: a repository cloned with --shared works from the mirror alone", async () => {
    const origin = repo({ "a.txt": "a\n" });
    const shared = path.join(tmp, `shared-${n++}`);
    execFileSync("git", ["clone", "-q", "--shared", origin, shared]);
    expect(files(objectsIn(shared))).toEqual([]); // every object is the origin's
    const root = path.join(tmp, "chain");
    const ws = await createWorkspace(path.join(root, "workspaces"), await inspectRepo(shared), "w-1", path.join(root, "repos", "w-1.git"));
    expect(g(ws.worktree, "log", "--format=%s")).toBe("init");
    expect(files(workspaceMirror(path.join(root, "workspaces"), shared, ws.baseCommit))).toEqual(files(objectsIn(origin)));
  });

  it("an alternate the user's store names but the engine cannot read: a coded error naming it, nothing made", async () => {
    const origin = repo({ "a.txt": "a\n" });
    const shared = path.join(tmp, `shared-${n++}`);
    execFileSync("git", ["clone", "-q", "--shared", origin, shared]);
    const info = await inspectRepo(shared);
    renameSync(origin, origin + "-gone");
    const root = path.join(tmp, "unreadable");
    const err = await createWorkspace(path.join(root, "workspaces"), info, "w-1", path.join(root, "repos", "w-1.git")).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(codeOf(err)).toBe("conflict");
    expect((err as Error).message).toContain(objectsIn(origin));
    expect((err as Error).message).toContain("Nothing was changed");
    expect(readdirSync(path.join(root, "workspaces"), { recursive: true }).filter((f) => String(f).endsWith("w-1"))).toEqual([]);
    renameSync(origin + "-gone", origin);
  });

  it("a partial clone whose base was never fetched: a coded error that says to fetch it", async () => {
    const origin = repo({ "a.txt": "a\n" });
    g(origin, "config", "uploadpack.allowFilter", "true");
    const partial = path.join(tmp, `partial-${n++}`);
    execFileSync("git", ["clone", "-q", "--no-checkout", "--filter=blob:none", `file://${origin}`, partial]);
    const root = path.join(tmp, "partial");
    const err = await createWorkspace(path.join(root, "workspaces"), await inspectRepo(partial), "w-1", path.join(root, "repos", "w-1.git")).catch(
      (e: Error) => e,
    );
    expect(codeOf(err)).toBe("conflict");
    expect((err as Error).message).toMatch(/partial clone.*fetch/);
    // Once the person checks it out (git fetches the blobs), a workspace works.
    g(partial, "checkout", "-q", "HEAD");
    const ws = await createWorkspace(path.join(root, "workspaces"), await inspectRepo(partial), "w-2", path.join(root, "repos", "w-2.git"));
    expect(readFileSync(path.join(ws.worktree, "a.txt"), "utf8")).toBe("a\n");
  });

  it("a workspace made before the mirrors (borrowing the user's store) moves onto its mirror when resumed", async () => {
    const r = repo({ "a.txt": "a\n" });
    const root = path.join(tmp, "resume");
    const workspaces = path.join(root, "workspaces");
    const ws = await createWorkspace(workspaces, await inspectRepo(r), "w-1", path.join(root, "repos", "w-1.git"));
    const alternates = path.join(ws.worktree, ".git", "objects", "info", "alternates");
    writeFileSync(alternates, objectsIn(r) + "\n"); // as the engine wrote it before
    const mirror = workspaceMirror(workspaces, r, ws.baseCommit);
    rmSync(path.dirname(mirror), { recursive: true, force: true });
    await moveOntoMirror(workspaces, ws);
    expect(readFileSync(alternates, "utf8")).toBe(mirror + "\n");
    expect(g(ws.worktree, "log", "--format=%s")).toBe("init");
    // Made again (not re-pointed) when its mirror is gone; one the worker re-pointed elsewhere is left as it is.
    rmSync(path.dirname(mirror), { recursive: true, force: true });
    await moveOntoMirror(workspaces, ws);
    expect(existsSync(mirror)).toBe(true);
  });

  it("a worker that names the user's store in its alternates and makes .git/objects/info a symlink out: the engine writes nothing through it on resume", async () => {
    const r = repo({ "a.txt": "a\n" });
    const root = path.join(tmp, "resume-link");
    const workspaces = path.join(root, "workspaces");
    const ws = await createWorkspace(workspaces, await inspectRepo(r), "w-1", path.join(root, "repos", "w-1.git"));
    // Another worker's (or any) folder the engine may write: the worker's symlink points there, with its own alternates.
    const elsewhere = path.join(root, "elsewhere");
    mkdirSync(elsewhere, { recursive: true });
    writeFileSync(path.join(elsewhere, "alternates"), objectsIn(r) + "\n");
    const info = path.join(ws.worktree, ".git", "objects", "info");
    rmSync(info, { recursive: true, force: true });
    symlinkSync(elsewhere, info);
    await moveOntoMirror(workspaces, ws);
    expect(readdirSync(elsewhere)).toEqual(["alternates"]);
    expect(readFileSync(path.join(elsewhere, "alternates"), "utf8")).toBe(objectsIn(r) + "\n");
  });
});

/**
 * The figures the report gives (OCW_MIRROR_COST_REPO=<a repository>): a mirror of it made, refreshed with nothing new,
 * and refreshed after one commit (made in a `--shared` clone of it, whose own alternate is the repository's store).
 */
describe.skipIf(!process.env.OCW_MIRROR_COST_REPO)("the cost of a mirror of a real repository", () => {
  it("makes one and refreshes it", async () => {
    const r = process.env.OCW_MIRROR_COST_REPO!;
    const clone = path.join(tmp, "cost-clone");
    execFileSync("git", ["clone", "-q", "--shared", "--no-checkout", r, clone]);
    const objects = objectsIn(clone);
    const mirror = path.join(tmp, "cost", "objects");
    const made = await refreshMirror(objects, mirror);
    const again = await refreshMirror(objects, mirror);
    const tree = g(clone, "mktree", "--missing");
    g(clone, "update-ref", "HEAD", g(clone, "commit-tree", tree, "-m", "one more"));
    const after = await refreshMirror(objects, mirror);
    const figures = (x: typeof made) => ({ ms: x.ms, linked: x.linked, copied: x.copied, present: x.present });
    console.log(JSON.stringify({ made: figures(made), again: figures(again), afterOneCommit: figures(after) }));
    expect(made.linked + made.copied).toBeGreaterThan(0);
    expect(again.linked + again.copied).toBe(0);
    expect(after.linked + after.copied).toBeGreaterThan(0);
  });
});
