// The engine's commit of a worker's files made inside the engine, for the usual case (a small repository, a small
// change): the same tree `git add -A && git write-tree` makes on a fresh index of the base, and the same commit
// `commit-tree` writes, without their three process starts (with the checkout, five of the seven a grading started:
// at 32 workers finishing together, grading's git was most of what the engine added to a batch; bench/report.md).
// Anything this file does not read exactly as git would (a submodule or nested repository, `.gitattributes` with its
// conversions, a file that is neither a file nor a symlink, a large repository) is left to git's own path
// (workspace.ts), as is any failure here. Names are bytes throughout, carried as latin1 strings.
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, readlink, rename, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { deflate, deflateSync } from "node:zlib";
import type { ObjectFormat } from "./mirror";

const deflateAsync = promisify(deflate);

/** One entry of a tree: a blob (a file or a symlink) or a gitlink, by its git mode ("100644", "100755", "120000", "160000"). */
export interface Entry {
  mode: string;
  oid: string;
}

/** A base commit as the in-process snapshot reads it (made once per base, from `ls-tree -r -t -l`). */
export interface BaseTree {
  /** Every blob and gitlink by path, with its size ("-": a gitlink). */
  entries: Map<string, Entry & { size: number }>;
  /** The ids of the base's trees: a snapshot writes only the trees the base lacks. */
  trees: Set<string>;
  /** The base's root tree. */
  root: string;
  format: ObjectFormat;
}

/** Past these, a snapshot is git's: every tracked file is read and hashed at each grading, on the engine's thread. */
export const IN_PROCESS_MAX_FILES = 2000;
export const IN_PROCESS_MAX_BYTES = 4 * 1024 * 1024;

/** The in-process snapshot does not hold for these files: git's path takes over. */
export class NotInProcess extends Error {}

/** git's id of an object of `type` with `content`. */
export function objectId(type: string, content: Buffer, format: ObjectFormat): string {
  return createHash(format).update(`${type} ${content.length}\0`).update(content).digest("hex");
}

/**
 * `git rev-parse BASE^{tree}` then `git ls-tree -r -t -l -z --full-tree BASE` (latin1), as a BaseTree; null when this
 * file would not make the base's own root tree from its entries (then no snapshot of that base is made here).
 */
export function parseBaseTree(out: string, format: ObjectFormat): BaseTree | null {
  const nl = out.indexOf("\n");
  const root = out.slice(0, nl);
  const entries = new Map<string, Entry & { size: number }>();
  const trees = new Set<string>([root]);
  const record = /^(\d+) (blob|tree|commit) ([0-9a-f]+) +(\d+|-)\t([\s\S]+)$/;
  for (const rec of out.slice(nl + 1).split("\0")) {
    if (!rec) continue;
    const m = record.exec(rec);
    if (!m) return null;
    if (m[2] === "tree") trees.add(m[3]!);
    else entries.set(m[5]!, { mode: m[1]!, oid: m[3]!, size: m[4] === "-" ? 0 : Number(m[4]) });
  }
  // The whole method checked once per base: its trees, sorted and written as here, must be git's.
  return treesOf(entries, format).root === root ? { entries, trees, root, format } : null;
}

interface Dir {
  files: Map<string, Entry>;
  dirs: Map<string, Dir>;
}

/** The tree objects of a listing (path → entry): the root's id and every tree's content by id. */
export function treesOf(entries: Iterable<[string, Entry]>, format: ObjectFormat): { root: string; objects: Map<string, Buffer> } {
  const top: Dir = { files: new Map(), dirs: new Map() };
  for (const [p, e] of entries) {
    const parts = p.split("/");
    let d = top;
    for (const part of parts.slice(0, -1)) {
      let next = d.dirs.get(part);
      if (!next) d.dirs.set(part, (next = { files: new Map(), dirs: new Map() }));
      d = next;
    }
    d.files.set(parts.at(-1)!, e);
  }
  const objects = new Map<string, Buffer>();
  const raw = format === "sha256" ? 32 : 20;
  const write = (d: Dir): string | null => {
    // git's order: names compared as bytes, a tree's as if it ended in "/".
    const items: { key: string; head: Buffer; oid: string }[] = [];
    for (const [name, e] of d.files) {
      if (!name || d.dirs.has(name)) throw new NotInProcess(`an unusual name in the tree: ${JSON.stringify(name)}`);
      items.push({ key: name, head: Buffer.from(`${e.mode} ${name}\0`, "latin1"), oid: e.oid });
    }
    for (const [name, sub] of d.dirs) {
      const oid = write(sub);
      // A folder left with nothing in it is not in the tree.
      if (oid) items.push({ key: `${name}/`, head: Buffer.from(`40000 ${name}\0`, "latin1"), oid });
    }
    if (!items.length && d !== top) return null;
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const content = Buffer.concat(items.flatMap((i) => [i.head, Buffer.from(i.oid, "hex").subarray(0, raw)]));
    const oid = objectId("tree", content, format);
    objects.set(oid, content);
    return oid;
  };
  return { root: write(top)!, objects };
}

/** A file of the snapshot: its entry and the bytes git would store for it (a symlink's: its target). */
export interface Snapped extends Entry {
  content: Buffer;
}

/** What the worker's files are, read as `git add -A` on a fresh index of the base reads them. */
export interface Snapshot {
  /** Every path of the new tree. */
  files: Map<string, Snapped>;
  /** The paths that differ from the base (added, changed, deleted). */
  changed: Set<string>;
}

/**
 * Reads the worktree against the base: every tracked path (deleted when it, or a folder above it, is no longer a real
 * folder's file or symlink), and each new file `git ls-files -o --exclude-standard` named. Throws NotInProcess for
 * whatever git's path must read instead.
 */
export async function readWorktree(worktree: string, base: BaseTree, fresh: string[]): Promise<Snapshot> {
  const root = Buffer.from(worktree + path.sep);
  const at = (name: string) => Buffer.concat([root, Buffer.from(name, "latin1")]);
  if (base.entries.size > IN_PROCESS_MAX_FILES || fresh.length > IN_PROCESS_MAX_FILES) throw new NotInProcess("too many files");
  const attributes = (p: string) => p === ".gitattributes" || p.endsWith("/.gitattributes");
  for (const [p, e] of base.entries) if (e.mode === "160000" || attributes(p)) throw new NotInProcess(`${p}: a submodule or attributes`);
  for (const p of fresh) if (p.endsWith("/") || attributes(p)) throw new NotInProcess(`${p}: a nested repository or attributes`);
  // A folder on the way to a path counts only as a real folder (not a symlink to one): as git's leading-path check.
  const folders = new Map<string, Promise<boolean>>();
  const realFolder = (dir: string): Promise<boolean> => {
    let p = folders.get(dir);
    if (!p) {
      const parent = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) : "";
      p = (parent ? realFolder(parent) : Promise.resolve(true)).then(async (ok) => {
        if (!ok) return false;
        const st = await lstat(at(dir)).catch(() => null);
        return !!st && st.isDirectory();
      });
      folders.set(dir, p);
    }
    return p;
  };
  const look = async (name: string) => {
    const dir = name.includes("/") ? name.slice(0, name.lastIndexOf("/")) : "";
    if (dir && !(await realFolder(dir))) return null;
    try {
      return await lstat(at(name));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw err;
    }
  };
  // A name both tracked and listed as new (an index read while missing reads as empty) is read once, as tracked.
  const paths = [...base.entries.keys(), ...fresh.filter((p) => !base.entries.has(p))];
  const stats = await Promise.all(paths.map(look));
  let bytes = 0;
  for (const st of stats) {
    if (!st || st.isDirectory()) continue;
    if (!st.isFile() && !st.isSymbolicLink()) throw new NotInProcess("a file that is neither a file nor a symlink");
    bytes += st.size;
  }
  if (bytes > IN_PROCESS_MAX_BYTES) throw new NotInProcess("too many bytes");
  const files = new Map<string, Snapped>();
  const changed = new Set<string>();
  await Promise.all(
    paths.map(async (name, i) => {
      const st = stats[i]!;
      const before = base.entries.get(name);
      // Gone, or a folder now (its files are new ones, listed by ls-files): deleted.
      if (!st || st.isDirectory()) {
        if (before) changed.add(name);
        return;
      }
      const content = st.isSymbolicLink() ? await readlink(at(name), { encoding: "buffer" }) : await readWhole(at(name), st.ino, st.size);
      const mode = st.isSymbolicLink() ? "120000" : st.mode & 0o100 ? "100755" : "100644";
      const oid = objectId("blob", content, base.format);
      files.set(name, { mode, oid, content });
      if (!before || before.mode !== mode || before.oid !== oid) changed.add(name);
    }),
  );
  return { files, changed };
}

/** A regular file's bytes: opened without following a symlink, the same file lstat saw, and no more bytes than it had then. */
async function readWhole(file: Buffer, ino: number, size: number): Promise<Buffer> {
  const h = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const changed = () => new NotInProcess("a file changed while it was read");
    const st = await h.stat();
    if (!st.isFile() || st.ino !== ino || st.size !== size) throw changed();
    const buf = Buffer.alloc(size);
    let got = 0;
    while (got < size) {
      const { bytesRead } = await h.read(buf, got, size - got, got);
      if (!bytesRead) throw changed();
      got += bytesRead;
    }
    if ((await h.stat()).size !== size) throw changed();
    return buf;
  } finally {
    await h.close();
  }
}

/**
 * git's loose object of `content` in the object folder `objects` (what `git hash-object -w` writes): compressed (on the
 * engine's thread when small: a trip to the thread pool costs more), written whole under a temporary name, then renamed.
 * `folders` holds the fan-out folders already made.
 */
export async function writeLoose(objects: string, type: string, oid: string, content: Buffer, folders = new Map<string, Promise<unknown>>()): Promise<void> {
  const file = path.join(objects, oid.slice(0, 2), oid.slice(2));
  const raw = Buffer.concat([Buffer.from(`${type} ${content.length}\0`), content]);
  const data = raw.length < 64 * 1024 ? deflateSync(raw, { level: 1 }) : await deflateAsync(raw, { level: 1 });
  const fanout = path.dirname(file);
  let made = folders.get(fanout);
  if (!made) folders.set(fanout, (made = mkdir(fanout, { recursive: true })));
  await made;
  const tmp = path.join(objects, `tmp_obj_${randomBytes(6).toString("hex")}`);
  await writeFile(tmp, data, { mode: 0o444 });
  await rename(tmp, file).catch(async (err) => {
    await rm(tmp, { force: true });
    throw err;
  });
}

/** The engine's identity on its commits (as OCW_IDENTITY and the trusted environment give git). */
const IDENTITY = "opencode-worker <opencode-worker@localhost>";

/** A commit object's content as `git commit-tree TREE -p PARENT -m MESSAGE` writes it, at `when` (local time zone). */
export function commitContent(tree: string, parent: string, message: string, when = new Date()): Buffer {
  const off = -when.getTimezoneOffset();
  const zone = `${off < 0 ? "-" : "+"}${String(Math.floor(Math.abs(off) / 60)).padStart(2, "0")}${String(Math.abs(off) % 60).padStart(2, "0")}`;
  const stamp = `${Math.floor(when.getTime() / 1000)} ${zone}`;
  const text = message.replace(/\0/g, "");
  return Buffer.from(
    `tree ${tree}\nparent ${parent}\nauthor ${IDENTITY} ${stamp}\ncommitter ${IDENTITY} ${stamp}\n\n${text}${text.endsWith("\n") ? "" : "\n"}`,
  );
}

/**
 * Writes the snapshot's commit into `objects` (the new blobs, the trees the base lacks, the commit) and returns its id,
 * or null when nothing changed.
 */
export async function writeSnapshot(objects: string, base: BaseTree, snap: Snapshot, parent: string, message: string): Promise<string | null> {
  if (!snap.changed.size) return null;
  const { root, objects: trees } = treesOf(snap.files, base.format);
  const known = new Set([...base.entries.values()].map((e) => e.oid));
  const writes: Promise<void>[] = [];
  const folders = new Map<string, Promise<unknown>>();
  for (const p of snap.changed) {
    const f = snap.files.get(p);
    if (f && !known.has(f.oid)) {
      known.add(f.oid);
      writes.push(writeLoose(objects, "blob", f.oid, f.content, folders));
    }
  }
  for (const [oid, content] of trees) if (!base.trees.has(oid)) writes.push(writeLoose(objects, "tree", oid, content, folders));
  const commit = commitContent(root, parent, message);
  const id = objectId("commit", commit, base.format);
  writes.push(writeLoose(objects, "commit", id, commit, folders));
  await Promise.all(writes);
  return id;
}

/**
 * The snapshot's files in `dir` (an empty folder) as `git checkout-index` writes them: all, or only the paths named
 * (those that are files of the tree; each folder on the way made).
 */
export async function writeCheckout(dir: string, snap: Snapshot, only?: string[]): Promise<void> {
  const root = Buffer.from(dir + path.sep);
  const names = only ? only.filter((p) => snap.files.has(p)) : [...snap.files.keys()];
  const made = new Set<string>();
  for (const name of names) {
    const parent = name.includes("/") ? name.slice(0, name.lastIndexOf("/")) : "";
    if (parent && !made.has(parent)) {
      await mkdir(Buffer.concat([root, Buffer.from(parent, "latin1")]), { recursive: true });
      made.add(parent);
    }
  }
  await Promise.all(
    names.map(async (name) => {
      const f = snap.files.get(name)!;
      const file = Buffer.concat([root, Buffer.from(name, "latin1")]);
      if (f.mode === "120000") await symlink(f.content, file);
      else await writeFile(file, f.content, { mode: f.mode === "100755" ? 0o777 : 0o666 });
    }),
  );
}
