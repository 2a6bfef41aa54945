/**
 * Admission's reading of a real llama-server (the pinned build; LLAMA_SERVER, skipped without): with /slots off
 * (--no-slots answers 501) the load comes from its --metrics counters; while it loads the model it is not healthy.
 */
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasRoom, readEndpoint } from "../../engine/admission/capacity";
import { buildLlamaArgs, freePort, startLlamaServer, stopPid } from "../../engine/serving/llama-server";
import { vocabDirFor, writeModel } from "../fixtures/gguf/writer";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN ? "LLAMA_SERVER is unset" : !VOCAB ? `no llama.cpp test vocabularies next to ${BIN}` : null;
const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-adm-llama-"));
let model: string;
const pids: number[] = [];

beforeAll(async () => {
  if (SKIP) return;
  model = path.join(dir, "llama.gguf");
  await writeModel(model, { arch: "llama", vocabFile: path.join(VOCAB!, "ggml-vocab-llama-spm.gguf"), name: "tiny-llama" });
}, 120_000);
afterAll(async () => {
  for (const p of pids) await stopPid(p);
});

describe("admission reads a real llama-server", () => {
  it("--no-slots --metrics: 2 slots busy and 1 request queued read from /metrics, so no room", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const port = await freePort();
    const args = [...buildLlamaArgs({ model, ctx: 4096, parallel: 2, kvUnified: false, port }), "--no-slots", "--metrics"];
    const s = await startLlamaServer({ bin: BIN!, args, apiKey: "k", logFile: path.join(dir, "noslots.log"), port });
    pids.push(s.pid);
    const url = `http://127.0.0.1:${port}/v1`;
    const idle = await readEndpoint({ url, slots: 2 }, "k", 0);
    expect(idle).toMatchObject({ healthy: true, live: { source: "llama.cpp /metrics", busy: 0, waiting: 0 } });
    // three long requests on two slots: two run, one waits in the server
    const long = (p: string) =>
      fetch(`${url.replace(/\/v1$/, "")}/completion`, {
        method: "POST",
        headers: { authorization: "Bearer k", "content-type": "application/json" },
        body: JSON.stringify({ prompt: p, n_predict: 1500, ignore_eos: true, cache_prompt: false }),
      }).catch(() => null);
    const runs = ["a", "b", "c"].map(long);
    let busy = await readEndpoint({ url, slots: 2 }, "k", 0);
    for (let i = 0; i < 50 && !(busy.live?.busy === 2 && (busy.live?.waiting ?? 0) >= 1); i++) {
      await new Promise((r) => setTimeout(r, 50));
      busy = await readEndpoint({ url, slots: 2 }, "k", 0);
    }
    expect(busy.live).toMatchObject({ source: "llama.cpp /metrics", busy: 2, waiting: 1 });
    expect(hasRoom(busy)).toBe(false);
    await stopPid(s.pid);
    await Promise.all(runs);
  }, 120_000);

  it("a server loading its model is not healthy until /health says so", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const port = await freePort();
    const child = spawn(BIN!, buildLlamaArgs({ model, ctx: 4096, parallel: 1, kvUnified: false, port }), { stdio: "ignore" });
    pids.push(child.pid!);
    const url = `http://127.0.0.1:${port}/v1`;
    // every reading agrees with /health at that moment: 503 while loading → not healthy; 200 → healthy
    let sawLoading = false;
    for (let i = 0; i < 200; i++) {
      const before = await fetch(`http://127.0.0.1:${port}/health`)
        .then((r) => r.status)
        .catch(() => 0);
      const s = await readEndpoint({ url, slots: 1 }, null, 0);
      const after = await fetch(`http://127.0.0.1:${port}/health`)
        .then((r) => r.status)
        .catch(() => 0);
      if (before === 503 && after === 503) {
        sawLoading = true;
        expect(s.healthy, s.problem ?? "").toBe(false);
        expect(s.problem).toMatch(/loading the model/);
      }
      if (before === 200) {
        expect(s.healthy).toBe(true);
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    console.log(`loading state observed: ${sawLoading}`);
    await stopPid(child.pid!);
  }, 60_000);
});
