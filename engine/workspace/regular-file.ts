// Reading a file a worker may have made anything (a symlink to /dev/zero, a FIFO, a device, a file of any size): only a
// regular file, opened without following a last link and without blocking (a FIFO opened to read waits for a writer
// for good; /dev/zero read whole took the engine's memory and ended it, every worker with it). The workspace's reads of
// a nested repository's git files and grading's reads of the worker's scripts and settings (grading/files.ts) go here.
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/**
 * `fn` over the regular file at `file`, opened without following a last link and without blocking, with its size; null
 * where it is missing, a link, a folder, FIFO, socket or device, or `fn` fails.
 */
function withRegular<T>(file: string | Buffer, fn: (fd: number, size: number) => T | null): T | null {
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
export function readRegular(file: string | Buffer, max: number): Buffer | null {
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

/** The first `max` bytes of the regular file at `file` (readRegular's kind of file), or none. */
export function readHead(file: string | Buffer, max: number): Buffer {
  return (
    withRegular(file, (fd) => {
      const buf = Buffer.alloc(max);
      return buf.subarray(0, readSync(fd, buf, 0, max, 0));
    }) ?? Buffer.alloc(0)
  );
}

/**
 * The sha256 of the regular file at `file`, read a part at a time (a file a check wrote may be any size), or null: a link
 * (not followed), a folder, FIFO, socket or device, or missing.
 */
export function hashRegular(file: string | Buffer): string | null {
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
