import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, link, mkdir, readdir, readFile, rm } from "node:fs/promises";
import path from "node:path";

/**
 * The engine's mirror of a user repository's object store, one per repository and object format, under the engine's
 * state dir (`<mirrorsRoot>/<repo-name>-<hash>-<format>/objects`). Every worker's private repository borrows its objects
 * from here (its `objects/info/alternates` names the mirror), so nothing that runs inside a sandbox — opencode serve, a
 * worker's command — needs to see the user's repository at all: not its checkout, not its `.git/config`, not its object
 * store. The engine's own trusted git scripts (grading, diffs, publishing) still read the user's store directly.
 *
 * Git's object files are immutable and named by their content (a loose object by its id, a pack by the hash of its
 * objects), and git gives a file its final name only once it is whole: so a file is taken as it is, hard-linked where
 * the file system allows (no bytes copied, same inode), copied otherwise (another file system, a link refused), always
 * whole or not at all (a copy goes to a temporary name and is then linked into place). A pack's `.pack` and `.rev` are
 * placed before its `.idx`, since git sees a pack only once its `.idx` is there. The mirror is refreshed incrementally:
 * only files it lacks are placed; a present file is never rewritten. The objects of the user store's own alternates
 * (`objects/info/alternates`, followed to the end of the chain) are placed in the same mirror, flattened.
 *
 * Not mirrored: `info/commit-graph` and `pack/multi-pack-index` (rewritten in place of older versions by git; optional
 * speed-ups that would describe objects the mirror may lack), `.bitmap`, `.keep`, `.mtimes` and `.promisor` files.
 * Files the user's `git gc` removes later stay in the mirror (the mirror never deletes: a workspace may need them).
 */

export type ObjectFormat = "sha1" | "sha256";

/** What a refresh did. */
export interface MirrorRefresh {
  /** The mirror's object folder (a workspace's alternate). */
  objects: string;
  /** Files hard-linked from the user's store (no bytes copied). */
  linked: number;
  /** Files copied (a link was refused: another file system, a hard-link limit). */
  copied: number;
  /** Files the mirror already had. */
  present: number;
  /** The object folders read: the user's store, then its alternates chain. */
  sources: string[];
  /** Alternates the user's store names that could not be read (missing, no permission): their objects are not here. */
  unreadable: string[];
  /** The user's store holds promisor packs (a partial clone): objects it never fetched are in no store at all. */
  promisor: boolean;
  ms: number;
}

/** The hard-link function (injected by tests to stand for a file system that refuses links). */
export type LinkFn = (existing: string, newPath: string) => Promise<void>;

/** The mirror's object folder for a user repository (its top level, as git gives it) and object format. */
export function mirrorObjects(mirrorsRoot: string, repoRoot: string, format: ObjectFormat): string {
  const tag = createHash("sha256").update(repoRoot).digest("hex").slice(0, 8);
  return path.join(mirrorsRoot, `${path.basename(repoRoot)}-${tag}-${format}`, "objects");
}

const LOOSE = /^[0-9a-f]{38}(?:[0-9a-f]{24})?$/;
const FANOUT = /^[0-9a-f]{2}$/;
const PACK_IDX = /^pack-[0-9a-f]+\.idx$/;

/** The object folders of a store's alternates (git's rules: one per line, `#` comments, relative to the store). */
async function alternatesOf(objects: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path.join(objects, "info", "alternates"), "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => path.resolve(objects, l.startsWith('"') && l.endsWith('"') ? l.slice(1, -1) : l));
}

/** Places one of git's files whole: a hard link where allowed, else a copy to a temporary name, then linked into place. */
async function place(src: string, dest: string, linkFn: LinkFn, counts: { linked: number; copied: number; present: number }): Promise<void> {
  if (existsSync(dest)) {
    counts.present++;
    return;
  }
  try {
    await linkFn(src, dest);
    counts.linked++;
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") {
      counts.present++;
      return;
    }
    if (code === "ENOENT" && !existsSync(src)) return; // gone meanwhile (the user's gc): a refresh takes the new pack
    // EXDEV (another file system), EPERM (fs.protected_hardlinks, a file system without links), EMLINK: copy it.
  }
  const tmp = path.join(path.dirname(dest), `tmp_ocw_${process.pid}_${randomBytes(6).toString("hex")}`);
  try {
    try {
      await copyFile(src, tmp);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" && !existsSync(src)) return;
      throw err;
    }
    try {
      await link(tmp, dest);
      counts.copied++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      counts.present++;
    }
  } finally {
    await rm(tmp, { force: true });
  }
}

async function mirrorStore(from: string, to: string, linkFn: LinkFn, counts: { linked: number; copied: number; present: number }): Promise<void> {
  const names = await readdir(from);
  const fanout = names.filter((d) => FANOUT.test(d));
  // A few folders at a time: each is a readdir and a link per object, cheap on their own.
  for (let i = 0; i < fanout.length; i += 16) {
    await Promise.all(
      fanout.slice(i, i + 16).map(async (d) => {
        const objects = (await readdir(path.join(from, d)).catch(() => [] as string[])).filter((f) => LOOSE.test(f));
        if (!objects.length) return;
        await mkdir(path.join(to, d), { recursive: true });
        for (const name of objects) await place(path.join(from, d, name), path.join(to, d, name), linkFn, counts);
      }),
    );
  }
  const packDir = path.join(from, "pack");
  const packNames = await readdir(packDir).catch(() => [] as string[]);
  const packs = packNames.filter((f) => PACK_IDX.test(f)).map((f) => f.slice(0, -".idx".length));
  if (!packs.length) return;
  await mkdir(path.join(to, "pack"), { recursive: true });
  for (const pack of packs) {
    if (existsSync(path.join(to, "pack", pack + ".idx"))) {
      counts.present += packNames.includes(pack + ".rev") ? 3 : 2;
      continue;
    }
    // The .pack (and its reverse index) before the .idx: git sees a pack only once its .idx is there.
    for (const ext of [".pack", ".rev", ".idx"]) {
      if (packNames.includes(pack + ext)) await place(path.join(packDir, pack + ext), path.join(to, "pack", pack + ext), linkFn, counts);
    }
  }
}

async function hasPromisor(objects: string): Promise<boolean> {
  return (await readdir(path.join(objects, "pack")).catch(() => [] as string[])).some((f) => f.endsWith(".promisor"));
}

async function refreshNow(userObjects: string, mirror: string, linkFn: LinkFn): Promise<MirrorRefresh> {
  const started = performance.now();
  const counts = { linked: 0, copied: 0, present: 0 };
  await mkdir(path.join(mirror, "info"), { recursive: true });
  await mkdir(path.join(mirror, "pack"), { recursive: true });
  const sources: string[] = [];
  const unreadable: string[] = [];
  let promisor = false;
  // The user's store (whose failure is the engine's error to report), then its alternates chain, each store once.
  const queue = [userObjects];
  while (queue.length) {
    const store = queue.shift()!;
    if (sources.includes(store) || unreadable.includes(store) || sources.length > 64) continue;
    try {
      await mirrorStore(store, mirror, linkFn, counts);
    } catch (err) {
      if (store === userObjects) throw err;
      unreadable.push(store);
      continue;
    }
    sources.push(store);
    promisor ||= await hasPromisor(store);
    queue.push(...(await alternatesOf(store)));
  }
  return { objects: mirror, ...counts, sources, unreadable, promisor, ms: Math.round(performance.now() - started) };
}

// One refresh at a time per mirror (a second engine doing the same is harmless: every placement is idempotent). A
// refresh asked for while one runs starts after it (the running one may have listed a folder before the asked-for
// objects were there); asks made while one waits share that one.
const queued = new Map<string, { waiting: Promise<MirrorRefresh> | null; tail: Promise<unknown> }>();

/**
 * Brings the mirror up to the user's store (and its alternates): places every object file it lacks. Concurrent calls
 * for one mirror are serialized.
 */
export function refreshMirror(userObjects: string, mirror: string, opts: { link?: LinkFn } = {}): Promise<MirrorRefresh> {
  const linkFn = opts.link ?? link;
  let q = queued.get(mirror);
  if (!q) queued.set(mirror, (q = { waiting: null, tail: Promise.resolve() }));
  if (q.waiting) return q.waiting;
  const entry = q;
  const run = entry.tail.then(() => {
    entry.waiting = null;
    return refreshNow(userObjects, mirror, linkFn);
  });
  entry.waiting = run;
  entry.tail = run.catch(() => undefined);
  void entry.tail.then(() => {
    if (queued.get(mirror) === entry && !entry.waiting) queued.delete(mirror);
  });
  return run;
}
