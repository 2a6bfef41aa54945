// Grading's own folders (the fresh checkout, the checks' HOME and TMPDIR) go when a grading is done with them. A check
// decides what is in them: a read-only tree (Go's module cache is read-only by design) cannot be deleted by a user who
// is not root until its folders are made writable again, and a failed delete must never fail a grading or pile up.
import { randomBytes } from "node:crypto";
import { renameSync } from "node:fs";
import { chmod, lstat, mkdir, readdir, rm } from "node:fs/promises";
import path from "node:path";

const DISCARDED = ".discarded-";

/**
 * A folder out of the way at once (renamed beside itself) and deleted later (removeLater): the verdict does not wait
 * for a checkout of a large repository to be deleted, and the next grading of the same worker finds its folders free.
 * What is left when the engine stops is swept at its next start (sweepDiscarded).
 */
export function discard(dir: string): void {
  const away = awayName(dir);
  try {
    renameSync(dir, away);
  } catch {
    return; // never made, or already gone
  }
  removeLater(away);
}

const awayName = (dir: string) => `${dir}${DISCARDED}${randomBytes(4).toString("hex")}`;

/**
 * Discarded folders are deleted once gradings pause (QUIET_MS with no new one), or at the latest MAX_WAIT_MS after the
 * first of them: deleting a checkout (a readdir, an lstat and an unlink per file) while a batch's other workers are
 * being graded took CPU from their gradings, and nothing waits on it.
 */
const QUIET_MS = 300;
const MAX_WAIT_MS = 5000;
const pending: string[] = [];
let timer: NodeJS.Timeout | null = null;
let firstAt = 0;

function removeLater(dir: string): void {
  pending.push(dir);
  if (!timer) {
    firstAt = Date.now();
    timer = setTimeout(removePending, QUIET_MS);
    // An engine about to exit does not wait for it: what is left is swept at its next start.
    timer.unref();
  } else if (Date.now() - firstAt < MAX_WAIT_MS) timer.refresh();
}

async function removePending(): Promise<void> {
  timer = null;
  const dirs = pending.splice(0);
  for (const d of dirs) await removeTree(d);
}

/** Deletes what discard left in `gradingDir` when the engine stopped before it was deleted. */
export async function sweepDiscarded(gradingDir: string): Promise<void> {
  const names = await readdir(gradingDir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.includes(DISCARDED)).map((n) => removeTree(path.join(gradingDir, n))));
}

/** Deletes a tree, its read-only folders included; false when some of it could not be deleted (the next sweep tries again). */
async function removeTree(dir: string): Promise<boolean> {
  try {
    await rm(dir, { recursive: true, force: true });
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM") return false;
  }
  await writableFolders(dir);
  return rm(dir, { recursive: true, force: true }).then(
    () => true,
    () => false,
  );
}

/** The owner may write every folder of the tree again (folders only, found with lstat: a symlink is never followed). */
async function writableFolders(dir: string): Promise<void> {
  const st = await lstat(dir).catch(() => null);
  if (!st?.isDirectory()) return;
  await chmod(dir, (st.mode & 0o7777) | 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await writableFolders(path.join(dir, e.name));
}

/**
 * The folder the task named, inside the fresh checkout (made when the commit deleted it). The commit may have turned a
 * part of its path into a symlink or a file: following it would make the engine create folders and run the checks
 * outside the checkout, so the checks cannot run and fail with the reason.
 */
export async function folderIn(checkout: string, sub: string): Promise<string | { problem: string }> {
  let at = checkout;
  for (const part of sub.split(path.sep).filter(Boolean)) {
    at = path.join(at, part);
    const st = await lstat(at).catch(() => null);
    if (!st) await mkdir(at);
    else if (!st.isDirectory()) {
      const what = st.isSymbolicLink() ? "a symlink" : "not a folder";
      return {
        problem: `${path.relative(checkout, at)} is ${what} in the graded commit: the checks run in ${sub}, which must stay a folder of the repository`,
      };
    }
  }
  return at;
}
