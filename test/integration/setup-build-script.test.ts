/** scripts/build-llama-server.sh: a cache hit never rebuilds and prints the binary path on its last stdout line. */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

const BIN = process.env.LLAMA_SERVER;
const SCRIPT = path.join(__dirname, "../../scripts/build-llama-server.sh");

describe("build-llama-server.sh", () => {
  it("cache hit: same path, under 10 s, no build", (ctx) => {
    if (!BIN) return ctx.skip("LLAMA_SERVER is unset: the build script has not been run (CI runs it before the tests)");
    const cacheRoot = path.dirname(path.dirname(path.dirname(BIN)));
    if (!/opencode-worker[/\\]llama$/.test(cacheRoot) && !process.env.OCW_LLAMA_CACHE) return ctx.skip(`LLAMA_SERVER (${BIN}) is not from the build script's cache`);
    const t0 = Date.now();
    const out = execFileSync("bash", [SCRIPT], { env: { ...process.env, OCW_LLAMA_CACHE: process.env.OCW_LLAMA_CACHE ?? cacheRoot }, stdio: ["ignore", "pipe", "pipe"] }).toString();
    const ms = Date.now() - t0;
    expect(out.trim().split("\n").at(-1)).toBe(BIN);
    expect(ms).toBeLessThan(10_000);
    const v = execFileSync(BIN, ["--version"], { stdio: ["ignore", "pipe", "pipe"] });
    expect(v.length).toBeGreaterThanOrEqual(0);
  });
});
