// The engine's commit of a worker's files made inside the engine, for the usual case (a small repository, a small
// change): the same tree `git add -A && git write-tree` makes on a fresh index of the base, and the same commit
// `commit-tree` writes, without their three process starts (with the checkout, five of the seven a grading started:
// at 32 workers finishing together, grading's git was most of what the engine added to a batch; bench/report.md).
// Anything this file does not read exactly as git would (a submodule or nested repository, `.gitattributes` with its
// conversions wherever one lies on the way, a name git's add refuses, a file that is neither a file nor a symlink, a
// large repository, a system without /proc/self/fd) is left to git's own path (workspace.ts), as is any failure here.
// A worker races every read (its background processes run on): folders are opened once and never through a symlink,
// files never opened before they are known regular files (snapshot-attack.test.ts). Names are bytes throughout,
// carried as latin1 strings.
import { createHash, randomBytes } from "node:crypto";
import { type BigIntStats, constants, lstatSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readlink, rename, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { crc32, deflate, deflateSync } from "node:zlib";
import { ENGINE_AUTHOR } from "./git";
import type { ObjectFormat } from "./mirror";

const deflateAsync = promisify(deflate);

/** One entry of a tree: a blob (a file or a symlink) or a gitlink, by its git mode ("100644", "100755", "120000", "160000"). */
interface Entry {
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
    // A base no snapshot here would read (readWorktree): not held (8 bases kept) nor hashed on the engine's thread.
    if (entries.size > IN_PROCESS_MAX_FILES) return null;
  }
  // The whole method checked once per base: its trees, sorted and written as here, must be git's. A tree treesOf
  // refuses (a file and a folder of one name: git's read-tree takes it) is git's to snapshot, not a failed listing.
  try {
    return treesOf(entries, format).root === root ? { entries, trees, root, format } : null;
  } catch {
    return null;
  }
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
interface Snapped extends Entry {
  /** Null for a base file unchanged by its stat data (KeptStats), which was not read: its blob is the base's. */
  content: Buffer | null;
}

/** What the checkout's kept stat data says of the base's files (workspace.ts keptStats). */
export interface KeptStats {
  /** Whether the base's file `name` (latin1) is, by this lstat of it, exactly what the checkout left. */
  unchanged(name: string, st: BigIntStats): boolean;
}

/** What the worker's files are, read as `git add -A` on a fresh index of the base reads them. */
export interface Snapshot {
  /** Every path of the new tree. */
  files: Map<string, Snapped>;
  /** The paths that differ from the base (added, changed, deleted). */
  changed: Set<string>;
  /** How many files were read (the others: base files unchanged by their kept stat data). */
  read: number;
}

/**
 * Linux's O_PATH (this value on every architecture Node runs on; alpha, parisc and sparc differ): a folder named, not
 * opened, with no more than git's lstat needs of it (its search permission).
 */
const O_PATH = 0o10000000;

/** Folders a snapshot opens at most (each held open while it reads). */
const IN_PROCESS_MAX_FOLDERS = 1024;
/** Files read at once (each an open file). */
const IN_PROCESS_READS = 32;
/**
 * The engine's open files for snapshots, all gradings together (32 finish at once in a batch): folders held at most,
 * and files open at once. Past the folders' budget a snapshot is git's; a file waits for its turn. The rest of the
 * engine (logs, sockets, its opencode) keeps its descriptors.
 */
const FOLDER_BUDGET = 2048;
const OPEN_FILES = 64;
let foldersHeld = 0;
let filesOpen = 0;
const fileTurns: (() => void)[] = [];
/** `fn` holding one of the OPEN_FILES turns (handed straight to the next waiting caller when it ends). */
async function withFile<T>(fn: () => Promise<T>): Promise<T> {
  if (filesOpen < OPEN_FILES) filesOpen++;
  else await new Promise<void>((turn) => fileTurns.push(turn));
  try {
    return await fn();
  } finally {
    const next = fileTurns.shift();
    if (next) next();
    else filesOpen--;
  }
}
/** The longest path (the worktree's included) the system opens whole: past it, git's own add could not read the file. */
const PATH_MAX = 4096;

/**
 * A name git's add refuses (verify_path: `.git` in any case, its NTFS forms, a symlinked `.gitmodules`), or one near
 * it (a superset, non-ASCII dropped: macOS's git also refuses `.git` with characters HFS ignores): git's way decides.
 */
function refusedName(name: string, symlink: boolean): boolean {
  const parts = name.split("/");
  const plain = (part: string) => part.replace(/[^\x00-\x7f]/g, "").toLowerCase();
  for (const part of parts) {
    if (part === "" || part === "." || part === "..") return true;
    const p = plain(part);
    if (/^\.git[ .]*(:|$)/.test(p) || p.startsWith("git~")) return true;
  }
  const last = plain(parts.at(-1)!);
  return symlink && (last.startsWith(".gitmodules") || last.includes("~"));
}

/**
 * Linux names an open folder's files by `/proc/self/fd/N/NAME` (as openat would): a folder opened once (never through a
 * symlink) is the one each of its files is read from, whatever the worker renames or links meanwhile. Elsewhere no
 * snapshot is made here.
 */
let procFd: Promise<boolean> | undefined;
const byFolder = () =>
  (procFd ??=
    process.platform === "linux"
      ? lstat("/proc/self/fd").then(
          (st) => st.isDirectory(),
          () => false,
        )
      : Promise.resolve(false));

/** `fn` on each item, `limit` at a time; every call settled before it returns (or throws the first failure). */
async function eachLimited<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { err: unknown } | null = null;
  const worker = async () => {
    while (!failure && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw (failure as { err: unknown }).err;
  return out;
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * Reads the worktree against the base: every tracked path (deleted when it, or a folder above it, is no longer a real
 * folder's file or symlink), and each new file `git ls-files -o --exclude-standard` named. Each folder is opened once,
 * never through a symlink, and its files are read from that open folder (a folder swapped for a link meanwhile is not
 * followed out of the workspace). Throws NotInProcess for whatever git's path must read instead: a submodule, nested
 * repository (a new one, or one where the base has a file), `.gitattributes` anywhere on the way (ignored or not: git's
 * add applies them), a name git refuses, a FIFO, socket or device, a file changed while read, too many files, bytes or
 * folders.
 */
export async function readWorktree(
  worktree: string,
  base: BaseTree,
  fresh: string[],
  opts: { kept?: KeptStats; wanted?: Set<string> } = {},
): Promise<Snapshot> {
  const { kept, wanted } = opts;
  if (base.entries.size > IN_PROCESS_MAX_FILES || fresh.length > IN_PROCESS_MAX_FILES) throw new NotInProcess("too many files");
  const attributes = (p: string) => p === ".gitattributes" || p.endsWith("/.gitattributes");
  for (const [p, e] of base.entries) if (e.mode === "160000" || attributes(p)) throw new NotInProcess(`${p}: a submodule or attributes`);
  for (const p of fresh) if (p.endsWith("/") || attributes(p)) throw new NotInProcess(`${p}: a nested repository or attributes`);
  for (const p of fresh) if (refusedName(p, false)) throw new NotInProcess(`${p}: a name git refuses`);
  if (!(await byFolder())) throw new NotInProcess("no /proc/self/fd");
  // A name both tracked and listed as new (an index read while missing reads as empty) is read once, as tracked.
  const paths = [...base.entries.keys(), ...fresh.filter((p) => !base.entries.has(p))];
  const rootLength = Buffer.byteLength(worktree + path.sep);
  const dirs = new Set<string>();
  for (const p of paths) {
    if (rootLength + p.length >= PATH_MAX) throw new NotInProcess("a path longer than the system opens");
    for (let i = p.indexOf("/"); i >= 0; i = p.indexOf("/", i + 1)) dirs.add(p.slice(0, i));
  }
  if (dirs.size > IN_PROCESS_MAX_FOLDERS) throw new NotInProcess("too many folders");
  // Its folders (and the top one) counted against the budget of all snapshots at once, until it ends.
  const reserved = dirs.size + 1;
  if (foldersHeld + reserved > FOLDER_BUDGET) throw new NotInProcess("the snapshots' budget of open folders is in use");
  foldersHeld += reserved;
  const split = (name: string) => {
    const i = name.lastIndexOf("/");
    return i < 0 ? { dir: "", leaf: name } : { dir: name.slice(0, i), leaf: name.slice(i + 1) };
  };
  const inFolder = (fd: number, leaf: string) => Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), Buffer.from(leaf, "latin1")]);
  const held: FileHandle[] = [];
  try {
    // Attributes in a folder apply to every path below it: their file there at all (an ignored one too, a folder or a
    // link) means git's way.
    const noAttributes = async (fd: number) => {
      const st = await lstat(inFolder(fd, ".gitattributes")).catch((err) => {
        if (code(err) === "ENOENT") return null;
        throw err;
      });
      if (st) throw new NotInProcess("a .gitattributes on the way");
    };
    // Folders named with O_PATH: what git's lstat needs of a folder (its search permission), no more.
    const top = await open(worktree, O_PATH | constants.O_DIRECTORY);
    held.push(top);
    // The open folder's name under /proc must lead to it (a /proc of another namespace, or none, would read every path
    // as gone: a snapshot deleting everything).
    const [seen, named] = await Promise.all([top.stat(), lstat(inFolder(top.fd, "."))]);
    if (seen.ino !== named.ino || seen.dev !== named.dev) throw new NotInProcess("/proc/self/fd does not lead to the open folder");
    await noAttributes(top.fd);
    const folders = new Map<string, Promise<number | null>>([["", Promise.resolve(top.fd)]]);
    // A folder on the way to a path counts only as a real folder (not a symlink to one): as git's leading-path check.
    const folder = (dir: string): Promise<number | null> => {
      let p = folders.get(dir);
      if (!p) {
        const { dir: parent, leaf } = split(dir);
        p = folder(parent).then(async (fd) => {
          if (fd === null) return null;
          let h: FileHandle;
          try {
            h = await open(inFolder(fd, leaf), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
          } catch (err) {
            if (["ENOENT", "ENOTDIR", "ELOOP"].includes(code(err) ?? "")) return null;
            throw err;
          }
          held.push(h);
          await noAttributes(h.fd);
          return h.fd;
        });
        folders.set(dir, p);
      }
      return p;
    };
    // Each path looked at with a synchronous lstat (through its open folder), a turn of the event loop every 256: a
    // promise and a trip to the thread pool per path cost the engine several times the call itself (1,500 files: ~7 ms
    // of its thread per grading, most of it allocation).
    const look = (fd: number | null, leaf: string) => {
      if (fd === null) return null;
      try {
        // With kept stat data, to the nanosecond (KeptStats compares times and ids exactly).
        const st = kept ? lstatSync(inFolder(fd, leaf), { bigint: true, throwIfNoEntry: false }) : lstatSync(inFolder(fd, leaf), { throwIfNoEntry: false });
        return st ? { fd, leaf, st } : null;
      } catch (err) {
        if (code(err) === "ENOTDIR") return null;
        throw err;
      }
    };
    // The folders first, all at once (each open a trip to the thread pool); then every path in one pass.
    await Promise.all([...dirs].map((d) => folder(d)));
    const found: ReturnType<typeof look>[] = [];
    for (const [i, name] of paths.entries()) {
      if (i && i % 256 === 0) await new Promise((r) => setImmediate(r));
      const { dir, leaf } = split(name);
      found.push(look(await folder(dir), leaf));
    }
    // A tracked name that is a folder now is deleted, unless that folder is a repository: git's add then takes it as a
    // gitlink (a commit checked out) or refuses it (none), and `ls-files -o` lists no repository standing where the
    // index has a file. Any `.git` in it (a folder, a gitfile, a link) means git's way.
    await eachLimited(
      found.flatMap((f, i) => (f?.st.isDirectory() && base.entries.has(paths[i]!) ? [f] : [])),
      64,
      async (f) => {
        const st = await lstat(Buffer.concat([inFolder(f.fd, f.leaf), Buffer.from("/.git")])).catch((err) => {
          if (code(err) === "ENOENT" || code(err) === "ENOTDIR") return null;
          throw err;
        });
        if (st) throw new NotInProcess("a repository where the base has a file");
      },
    );
    let bytes = 0;
    for (const [i, f] of found.entries()) {
      if (!f || f.st.isDirectory()) continue;
      if (!f.st.isFile() && !f.st.isSymbolicLink()) throw new NotInProcess("a file that is neither a file nor a symlink");
      if (f.st.isSymbolicLink() && refusedName(paths[i]!, true)) throw new NotInProcess("a symlink of a name git refuses");
      bytes += Number(f.st.size);
    }
    if (bytes > IN_PROCESS_MAX_BYTES) throw new NotInProcess("too many bytes");
    const files = new Map<string, Snapped>();
    const changed = new Set<string>();
    let read = 0;
    await eachLimited(paths, IN_PROCESS_READS, async (name, i) => {
      const f = found[i];
      const before = base.entries.get(name);
      // Gone, or a folder now (its files are new ones, listed by ls-files): deleted.
      if (!f || f.st.isDirectory()) {
        if (before) changed.add(name);
        return;
      }
      // A base file the checkout left as it was (by its kept stat data) is the base's blob, not read: unless the
      // checkout of the checks needs its bytes.
      if (before && kept && !wanted?.has(name) && kept.unchanged(name, f.st as BigIntStats)) {
        files.set(name, { mode: before.mode, oid: before.oid, content: null });
        return;
      }
      read++;
      const at = inFolder(f.fd, f.leaf);
      const link = f.st.isSymbolicLink();
      const st = { ino: Number(f.st.ino), dev: Number(f.st.dev), size: Number(f.st.size) };
      const content = link ? await readlink(at, { encoding: "buffer" }) : await withFile(() => readWhole(at, st));
      const mode = link ? "120000" : Number(f.st.mode) & 0o100 ? "100755" : "100644";
      const oid = objectId("blob", content, base.format);
      files.set(name, { mode, oid, content });
      if (!before || before.mode !== mode || before.oid !== oid) changed.add(name);
    });
    return { files, changed, read };
  } finally {
    // Only once nothing reads through them (eachLimited settles every call): a closed number is soon another file's.
    await Promise.all(held.map((h) => h.close().catch(() => undefined)));
    foldersHeld -= reserved;
  }
}

/**
 * A regular file's bytes: opened without following a symlink or waiting on a FIFO (O_NONBLOCK), checked to be the
 * regular file lstat saw before a byte is read, and no more bytes than it had then. (A device swapped in is opened, not
 * read: only a worker that can make device nodes, root outside any sandbox, could; naming it with O_PATH first cost the
 * engine a third more per grading.)
 */
async function readWhole(file: Buffer, seen: { ino: number; dev: number; size: number }): Promise<Buffer> {
  const { size } = seen;
  const changed = () => new NotInProcess("a file changed while it was read");
  const h = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const st = await h.stat();
    if (!st.isFile() || st.ino !== seen.ino || st.dev !== seen.dev || st.size !== size) throw changed();
    // One byte more asked for than lstat saw: a short read of a regular file is its end, a full one a file grown.
    const buf = Buffer.alloc(size + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await h.read(buf, got, size + 1 - got, got);
      got += bytesRead;
      if (got > size) throw changed();
      if (got === size || !bytesRead) break;
    }
    if (got !== size) throw changed();
    return buf.subarray(0, size);
  } finally {
    await h.close();
  }
}

/** Below this, an object is compressed on the engine's thread, and a pack of this size at most is written there (see writePack). */
const SMALL_OBJECT = 64 * 1024;

/** git's pack object types. */
const PACK_TYPE = { commit: 1, tree: 2, blob: 3 } as const;

/** A packed object's header: its type and its size (before compression), 7 bits a byte after the first 4. */
function packedHeader(type: keyof typeof PACK_TYPE, size: number): Buffer {
  const bytes: number[] = [];
  let c = (PACK_TYPE[type] << 4) | (size & 0x0f);
  let rest = Math.floor(size / 16);
  while (rest > 0) {
    bytes.push(c | 0x80);
    c = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(c);
  return Buffer.from(bytes);
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/**
 * `objects` as one pack of git's (version 2) in `<dir>/pack`, with its index (version 2): what `git pack-objects`
 * writes for them, undeltified. One pack and one index in place of a loose file per object: on the file systems here a
 * file or folder made costs the engine ~0.5 ms of kernel time, and a grading's loose objects (each a fan-out folder, a
 * temporary file and a rename) were the largest part of the engine's own CPU in a 32-task batch (issue 31). The pack is
 * written first and its index last, under a temporary name renamed into place: git sees a pack only once its index is
 * there, whole. Small packs are compressed and written on the engine's thread (trips to the thread pool cost more than
 * the work); large objects are compressed off it.
 */
async function writePack(dir: string, objects: { type: keyof typeof PACK_TYPE; oid: string; content: Buffer }[], format: ObjectFormat): Promise<void> {
  const packed = await Promise.all(
    objects.map(async (o) => {
      const data = o.content.length < SMALL_OBJECT ? deflateSync(o.content, { level: 1 }) : await deflateAsync(o.content, { level: 1 });
      const head = packedHeader(o.type, o.content.length);
      return { oid: o.oid, head, data, crc: crc32(data, crc32(head)), offset: 0 };
    }),
  );
  const chunks: Buffer[] = [Buffer.from("PACK"), u32(2), u32(packed.length)];
  let offset = 12;
  for (const p of packed) {
    p.offset = offset;
    chunks.push(p.head, p.data);
    offset += p.head.length + p.data.length;
  }
  const packHash = createHash(format);
  for (const c of chunks) packHash.update(c);
  const checksum = packHash.digest();
  chunks.push(checksum);
  // The index: a fan-out of counts by first byte, the names in order, each packed object's CRC-32 and offset (offsets
  // past 2 GiB in a table of 8-byte ones), then the pack's checksum and its own.
  const sorted = [...packed].sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
  const fanout = Buffer.alloc(256 * 4);
  for (let i = 0, at = 0; i < 256; i++) {
    while (at < sorted.length && Number.parseInt(sorted[at]!.oid.slice(0, 2), 16) <= i) at++;
    fanout.writeUInt32BE(at, i * 4);
  }
  const large: Buffer[] = [];
  const offsets = sorted.map((p) => {
    if (p.offset < 0x80000000) return u32(p.offset);
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(p.offset));
    large.push(b);
    return u32((0x80000000 | (large.length - 1)) >>> 0);
  });
  const idx = Buffer.concat([
    Buffer.from([0xff, 0x74, 0x4f, 0x63]),
    u32(2),
    fanout,
    ...sorted.map((p) => Buffer.from(p.oid, "hex")),
    ...sorted.map((p) => u32(p.crc)),
    ...offsets,
    ...large,
    checksum,
  ]);
  const index = Buffer.concat([idx, createHash(format).update(idx).digest()]);
  const folder = path.join(dir, "pack");
  const name = path.join(folder, `pack-${checksum.toString("hex")}`);
  const tmp = path.join(folder, `tmp_idx_${randomBytes(6).toString("hex")}`);
  if (offset + checksum.length <= SMALL_OBJECT) {
    mkdirSync(folder, { recursive: true });
    try {
      writeFileSync(`${name}.pack`, Buffer.concat(chunks), { mode: 0o444 });
      writeFileSync(tmp, index, { mode: 0o444 });
      renameSync(tmp, `${name}.idx`);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
    return;
  }
  await mkdir(folder, { recursive: true });
  try {
    await withFile(() => writeFile(`${name}.pack`, Buffer.concat(chunks), { mode: 0o444 }));
    await withFile(() => writeFile(tmp, index, { mode: 0o444 }));
    await rename(tmp, `${name}.idx`);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** The engine's identity on its commits (the one git's way is given). */
const IDENTITY = `${ENGINE_AUTHOR.name} <${ENGINE_AUTHOR.email}>`;

/** A commit object's content as `git commit-tree TREE -p PARENT -m MESSAGE` writes it, at `when` (local time zone). */
function commitContent(tree: string, parent: string, message: string, when = new Date()): Buffer {
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
  const written: Parameters<typeof writePack>[1] = [];
  for (const p of snap.changed) {
    const f = snap.files.get(p);
    if (f && !known.has(f.oid)) {
      // A changed file was always read (only a base file unchanged by its stat data is not).
      if (!f.content) throw new NotInProcess(`${p}: changed, and not read`);
      known.add(f.oid);
      written.push({ type: "blob", oid: f.oid, content: f.content });
    }
  }
  for (const [oid, content] of trees) if (!base.trees.has(oid)) written.push({ type: "tree", oid, content });
  const commit = commitContent(root, parent, message);
  const id = objectId("commit", commit, base.format);
  written.push({ type: "commit", oid: id, content: commit });
  await writePack(objects, written, base.format);
  return id;
}

/**
 * The snapshot's files in `dir` (an empty folder) as `git checkout-index` writes them: all, or only the paths named
 * (those that are files of the tree; each folder on the way made).
 */
export async function writeCheckout(dir: string, snap: Snapshot, only?: string[]): Promise<void> {
  const root = Buffer.from(dir + path.sep);
  const names = only ? only.filter((p) => snap.files.has(p)) : [...snap.files.keys()];
  // Every file written was read (readWorktree's `wanted`): else git's way writes this checkout.
  for (const name of names) if (!snap.files.get(name)!.content) throw new NotInProcess(`${name}: to check out, and not read`);
  const made = new Set<string>();
  for (const name of names) {
    const parent = name.includes("/") ? name.slice(0, name.lastIndexOf("/")) : "";
    if (parent && !made.has(parent)) {
      await mkdir(Buffer.concat([root, Buffer.from(parent, "latin1")]), { recursive: true });
      made.add(parent);
    }
  }
  // A few at a time, each a new file (never through one already there), and every write ended before a failure is
  // reported: git's way, which then takes over, writes its own checkout in this folder.
  await eachLimited(names, IN_PROCESS_READS, async (name) => {
    const f = snap.files.get(name)!;
    const content = f.content!;
    const file = Buffer.concat([root, Buffer.from(name, "latin1")]);
    if (f.mode === "120000") await symlink(content, file);
    else await withFile(() => writeFile(file, content, { mode: f.mode === "100755" ? 0o777 : 0o666, flag: "wx" }));
  });
}
