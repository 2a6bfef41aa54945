// Reading the worker's files at grading: the checkout is made from the worker's commit, so any name in it may be a
// symlink (to /dev/zero, a FIFO, /proc/…, a file outside the checkout) or a file of any size, and a check (the worker's
// code) may leave a FIFO or a device where a file was. Grading reads such a file only through these: a regular file, of
// a bounded size, opened without following a last link and without blocking (a FIFO opened to read would wait for a
// writer for good, and /dev/zero read whole took the engine's memory and ended it, every worker with it).
import { realpathSync } from "node:fs";
import path from "node:path";
import { readRegular } from "../workspace";

/** A file grading reads for what it says (a script, a package.json, a makefile, a runner's configuration): at most this. */
export const MAX_READ_BYTES = 1024 * 1024;

/** Where `file` (a path from the root of `root`, "/"-separated) really is, from that root, or null: missing, or outside it. */
export function realInside(root: string, file: string): string | null {
  try {
    const real = realpathSync(root);
    const rel = path
      .relative(real, realpathSync(path.join(root, file)))
      .split(path.sep)
      .join("/");
    return rel === "" || rel === ".." || rel.startsWith("../") || path.isAbsolute(rel) ? null : rel;
  } catch {
    return null;
  }
}

/**
 * The text of the file `file` (from the root of `root`), or null: missing, outside the root (a link leading out: not
 * the worker's to have read), or not a regular file of at most `max` bytes (readRegular).
 */
export function readInside(root: string, file: string, max = MAX_READ_BYTES): string | null {
  const real = realInside(root, file);
  if (real === null) return null;
  try {
    return readRegular(path.join(realpathSync(root), real), max)?.toString("utf8") ?? null;
  } catch {
    return null;
  }
}
