// Grading's reads of the worker's files (files.ts): a regular file of a bounded size only, never through a last link,
// never what a device gives (a link to /dev/zero read whole ended the engine), never outside the root.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readInside } from "./files";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-files-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const root = path.join(tmp, "root");
mkdirSync(path.join(root, "sub"), { recursive: true });
writeFileSync(path.join(root, "sub", "a.txt"), "alpha\n");
writeFileSync(path.join(root, "big.txt"), "x".repeat(2000));
writeFileSync(path.join(tmp, "outside.txt"), "secret\n");
symlinkSync("/dev/zero", path.join(root, "zero"));
symlinkSync("sub/a.txt", path.join(root, "inner-link"));
symlinkSync("../outside.txt", path.join(root, "out-link"));
symlinkSync("/proc/self/environ", path.join(root, "environ"));

describe("readInside", () => {
  it("reads a regular file of the root, through a link that stays inside", () => {
    expect(readInside(root, "sub/a.txt")).toBe("alpha\n");
    expect(readInside(root, "inner-link")).toBe("alpha\n");
  });

  it("reads nothing through a link to a device or out of the root, nor a folder, a missing file or one over the limit", () => {
    expect(readInside(root, "zero")).toBeNull();
    expect(readInside(root, "environ")).toBeNull();
    expect(readInside(root, "out-link")).toBeNull();
    expect(readInside(root, "../outside.txt")).toBeNull();
    expect(readInside(root, "sub")).toBeNull();
    expect(readInside(root, "nope")).toBeNull();
    expect(readInside(root, "big.txt", 1999)).toBeNull();
    expect(readInside(root, "big.txt", 2000)).toHaveLength(2000);
  });
});
