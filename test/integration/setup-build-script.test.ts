/** scripts/build-llama-server.sh: a cache hit never rebuilds and prints the binary path on its last stdout line. */
import { execFileSync, spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const BIN = process.env.LLAMA_SERVER;
const SCRIPT = path.join(__dirname, "../../scripts/build-llama-server.sh");

describe("build-llama-server.sh", () => {
  it("cache hit: same path, the binary untouched (no build), and it runs", (ctx) => {
    if (!BIN) return ctx.skip("LLAMA_SERVER is unset: the build script has not been run (CI runs it before the tests)");
    const cacheRoot = path.dirname(path.dirname(path.dirname(BIN)));
    if (!/opencode-worker[/\\]llama$/.test(cacheRoot) && !process.env.OCW_LLAMA_CACHE)
      return ctx.skip(`LLAMA_SERVER (${BIN}) is not from the build script's cache`);
    const before = statSync(BIN).mtimeMs;
    const out = execFileSync("bash", [SCRIPT], {
      env: { ...process.env, OCW_LLAMA_CACHE: process.env.OCW_LLAMA_CACHE ?? cacheRoot },
      stdio: ["ignore", "pipe", "pipe"],
    }).toString();
    expect(out.trim().split("\n").at(-1)).toBe(BIN);
    // A rebuild would rewrite the binary; a hit leaves it as it was.
    expect(statSync(BIN).mtimeMs).toBe(before);
    // llama-server prints its version on stderr: "version: N (hash)".
    const v = spawnSync(BIN, ["--version"], { encoding: "utf8" });
    expect(`${v.stdout}${v.stderr}`).toMatch(/version: \d+/);
  });
});
