/**
 * Verify sends N long requests at once into a unified KV pool (issue 13): a real llama-server whose -c is too small
 * for -np N slots at the per-slot context fails the slots check with the reason; one sized N × ctx passes; a captured
 * server with nothing asked records the context each slot can count on (the pool shared N ways).
 * Without LLAMA_SERVER every test reports itself skipped with the reason.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";
import { buildLlamaArgs, freePort, startLlamaServer, stopPid } from "../../engine/serving/llama-server";
import { verifyEndpoint } from "../../engine/serving/verify";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN} (share/vocab) and OCW_LLAMA_VOCAB_DIR unset`
    : null;
const state = mkdtempSync(path.join(os.tmpdir(), "ocw-verify-pool-"));
let model: string;
const pids: number[] = [];

beforeAll(async () => {
  if (SKIP) return;
  model = (await writeTinyModels(mkdtempSync(path.join(os.tmpdir(), "ocw-models-")), VOCAB!)).llama;
});
afterAll(async () => {
  for (const pid of pids) await stopPid(pid);
});

async function serve(ctx: number, np: number): Promise<string> {
  const port = await freePort();
  const s = await startLlamaServer({
    bin: BIN!,
    args: buildLlamaArgs({ model, ctx, parallel: np, kvUnified: true, port }),
    apiKey: "pool-key",
    logFile: path.join(state, `pool-${ctx}-${np}.log`),
    port,
  });
  pids.push(s.pid);
  return `http://127.0.0.1:${port}/v1`;
}

const verify = (url: string, perSlotCtx: number | null) =>
  verifyEndpoint({ url, model: "m", key: "pool-key", engine: "llama.cpp", slots: 4, perSlotCtx, tools: false, concurrencyTokens: 32 });

// Long prompts on a CPU llama-server: a capture's pool check at N × ctx (4 × 32,768 tokens) alone takes minutes on 2 cores.
describe("verify: N long requests at once in a unified KV pool (real llama-server)", { timeout: 600_000 }, () => {
  // (per-slot sizes of 8192: below MIN_SLOT_CTX, 7168, a slot cannot take OpenCode's first request at all)
  it("-c 8192 -np 4 --kv-unified for 4 slots × 8192: every slot says 8192, but the pool holds one → cannot-build with the reason", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const v = await verify(await serve(8192, 4), 8192);
    const slots = v.checks.find((c) => c.name === "slots")!;
    console.log(`too small: ${slots.evidence}`);
    expect(slots.evidence).toMatch(/per-slot n_ctx=8192/);
    expect(slots.passed).toBe(false);
    expect(slots.evidence).toMatch(/of 4 failed .*Context size has been exceeded/);
    expect(slots.evidence).toMatch(/KV pool holds fewer than 4 × 8192 tokens .*-c 32768 -np 4 --kv-unified/);
    expect(v.outcome).toBe("cannot-build");
  });

  it("-c 32768 -np 4 --kv-unified for 4 slots × 8192: the 4 long requests all answer", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const v = await verify(await serve(32768, 4), 8192);
    const slots = v.checks.find((c) => c.name === "slots")!;
    console.log(`sized: ${slots.evidence}`);
    expect(slots.passed).toBe(true);
    const m = /pool: 4 requests × (\d+) prompt tokens at once .* all answered/.exec(slots.evidence);
    expect(m).not.toBeNull();
    // each request filled most of its slot: a pool of 2 × 8192 could not have held the 4
    expect(Number(m![1])).toBeGreaterThan(6144);
    expect(v.outcome).not.toBe("cannot-build");
  });

  it("nothing asked (a capture): a pool of 32768 shown as 4 × 32768 is recorded as 4 × 8192", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const v = await verify(await serve(32768, 4), null);
    const slots = v.checks.find((c) => c.name === "slots")!;
    console.log(`capture: ${slots.evidence}`);
    expect(slots.passed).toBe(true);
    expect(slots.evidence).toMatch(/one KV pool of 32768 shared by 4 slots: each worker is given 8192/);
    expect(v.observed.perSlotCtx).toBe(8192);
  });
});
