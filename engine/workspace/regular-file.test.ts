// The workspace's and grading's reads of files a worker may have made anything (regular-file.ts): a regular file only,
// never through a last link, never what a device gives (a link to /dev/zero read whole ended the engine).
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hashRegular, readRegular } from "./regular-file";

const MAX = 1024 * 1024;
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-regular-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const root = path.join(tmp, "root");
mkdirSync(path.join(root, "sub"), { recursive: true });
writeFileSync(path.join(root, "sub", "a.txt"), "alpha\n");
symlinkSync("/dev/zero", path.join(root, "zero"));
symlinkSync("sub/a.txt", path.join(root, "inner-link"));

describe("readRegular and hashRegular", () => {
  it("never follow a last link, and read no device", () => {
    expect(readRegular(path.join(root, "zero"), MAX)).toBeNull();
    expect(readRegular("/dev/zero", MAX)).toBeNull();
    expect(readRegular(path.join(root, "inner-link"), MAX)).toBeNull();
    expect(hashRegular(path.join(root, "zero"))).toBeNull();
    expect(hashRegular("/dev/zero")).toBeNull();
    expect(readRegular(path.join(root, "sub", "a.txt"), MAX)?.toString()).toBe("alpha\n");
  });

  it("hash a file of any size a part at a time, as a whole read would", () => {
    const file = path.join(tmp, "large.bin");
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    bytes.write("head", 0);
    writeFileSync(file, bytes);
    expect(hashRegular(file)).toBe(createHash("sha256").update(bytes).digest("hex"));
    // over the read limit: not read whole
    expect(readRegular(file, MAX)).toBeNull();
  });
});
