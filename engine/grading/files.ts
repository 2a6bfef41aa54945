// Reading the worker's files at grading: the checkout is made from the worker's commit, so any name in it may be a
// symlink (to /dev/zero, a FIFO, /proc/…, a file outside the checkout) or a file of any size, and a check (the worker's
// code) may leave a FIFO or a device where a file was. Grading reads such a file only through these: a regular file, of
// a bounded size, opened without following a last link and without blocking (a FIFO opened to read would wait for a
// writer for good, and /dev/zero read whole took the engine's memory and ended it, every worker with it).
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from "node:fs";
import path from "node:path";

/** A file grading reads for what it says (a script, a package.json, a makefile, a runner's configuration): at most this. */
export const MAX_READ_BYTES = 1024 * 1024;

/**
 * `fn` over the regular file at `file`, opened without following a last link and without blocking, with its size; null
 * where it is missing, a link, a folder, FIFO, socket or device, or `fn` fails.
 */
function withRegular<T>(file: string, fn: (fd: number, size: number) => T | null): T | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    return st.isFile() ? fn(fd, st.size) : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The bytes of the regular file at `file`, or null: missing, a link (the last part of the path is not followed), a
 * folder, FIFO, socket or device, or bigger than `max` bytes.
 */
export function readRegular(file: string, max = MAX_READ_BYTES): Buffer | null {
  return withRegular(file, (fd, size) => {
    if (size > max) return null;
    // Read to the size it had, and one byte past: a file that grows meanwhile is not read.
    const buf = Buffer.alloc(size + 1);
    let got = 0;
    for (;;) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n === 0) return buf.subarray(0, got);
      got += n;
      if (got > size) return null;
    }
  });
}

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

/**
 * The sha256 of the regular file at `file`, read a part at a time (a file a check wrote may be any size), or null: a link
 * (not followed), a folder, FIFO, socket or device, or missing.
 */
export function hashRegular(file: string): string | null {
  return withRegular(file, (fd) => {
    const hash = createHash("sha256");
    const buf = Buffer.alloc(1024 * 1024);
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) return hash.digest("hex");
      hash.update(buf.subarray(0, n));
    }
  });
}
