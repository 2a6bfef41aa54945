/**
 * Honest capture (issue 27), without a real llama-server: the GPU double test/fixtures/hardware/fake-runtime.ts in
 * llama mode with OCW_FAKE_KV_POOL=1 plays llama-server's KV cache — with --kv-unified one pool of -c cells that
 * /props and /slots report as every slot's n_ctx (as llama-server does: shared/notes/llama.md §2.4), split -c/-np each;
 * requests that do not fit the pool at once answer "Context size has been exceeded." (the double holds each request's
 * cells for a moment, as prompt processing does). What is real: verify.
 *  - a unified pool of 65,536 for 4 slots is 4 × 16,384, not 4 × 65,536 (nothing asked);
 *  - asked for 4 × 32,768 it is cannot-build (the pool check runs at N × ctx; it used to stop at 16k and pass);
 *  - 4 × 4,096 is below what OpenCode's first request needs: cannot-build;
 *  - a keyless server on loopback is "no key (loopback only)", not a failed auth check.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../engine/serving/llama-server";
import { MIN_SLOT_CTX, verifyEndpoint } from "../../engine/serving/verify";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-capture-honest-"));
const fake = path.join(tmp, "fake-runtime.mjs");
const children: ChildProcess[] = [];

beforeAll(() => {
  buildSync({
    entryPoints: [path.join(__dirname, "../fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: fake,
    logLevel: "error",
  });
});
afterAll(() => {
  for (const c of children) c.kill("SIGTERM");
});

async function llama(args: string[]): Promise<string> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, OCW_FAKE_MODE: "llama", OCW_FAKE_LOAD_MS: "0", OCW_FAKE_KV_POOL: "1" };
  delete env.LLAMA_API_KEY; // a server started without a key
  const c = spawn(process.execPath, [fake, ...args, "--port", String(port), "--alias", "m"], { env, stdio: "ignore" });
  children.push(c);
  for (let i = 0; i < 200; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return `http://127.0.0.1:${port}/v1`;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the fake llama-server did not start");
}

const verify = (url: string, perSlotCtx: number | null) =>
  verifyEndpoint({ url, model: "m", key: null, engine: "llama.cpp", slots: 4, perSlotCtx, concurrencyTokens: 16 });

describe("capture of a llama-server with one unified KV pool", () => {
  it("-c 65536 -np 4 --kv-unified, nothing asked: each slot is recorded with 65536 ÷ 4, not 65536", async () => {
    const url = await llama(["-c", "65536", "-np", "4", "--kv-unified"]);
    const v = await verify(url, null);
    const slots = v.checks.find((c) => c.name === "slots")!;
    expect(slots.evidence).toMatch(/per-slot n_ctx=65536/);
    expect(slots.passed, slots.evidence).toBe(true);
    expect(v.observed.perSlotCtx).toBe(16384);
    expect(slots.evidence).toMatch(/one KV pool of 65536 shared by 4 slots: each worker is given 16384/);
    // no key, on loopback: not a failed check
    const auth = v.checks.find((c) => c.name === "auth")!;
    expect([auth.passed, auth.evidence]).toEqual([true, expect.stringMatching(/^no key \(loopback only\)/)]);
    expect(v.outcome, v.summary).toBe("built");
  }, 120_000);

  it("the same server asked for 4 × 32768: the pool check at N × ctx fails it (cannot-build, with the fix)", async () => {
    const v = await verify(await llama(["-c", "65536", "-np", "4", "--kv-unified"]), 32768);
    const slots = v.checks.find((c) => c.name === "slots")!;
    expect(slots.passed).toBe(false);
    expect(slots.evidence).toMatch(/Context size has been exceeded.*-c 131072 -np 4 --kv-unified/);
    expect(v.outcome).toBe("cannot-build");
  }, 120_000);

  it("-c 16384 -np 4 --kv-unified, nothing asked: 4096 per slot is below OpenCode's first request → cannot-build", async () => {
    expect(MIN_SLOT_CTX).toBeGreaterThan(4096);
    const v = await verify(await llama(["-c", "16384", "-np", "4", "--kv-unified"]), null);
    const slots = v.checks.find((c) => c.name === "slots")!;
    expect(v.observed.perSlotCtx).toBe(4096);
    expect(slots.passed).toBe(false);
    expect(slots.evidence).toMatch(/4096 tokens per slot is less than OpenCode's first request needs/);
    expect(v.outcome).toBe("cannot-build");
  }, 120_000);
});
