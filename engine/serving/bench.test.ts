/**
 * The post-start benchmark against a stub OpenAI-compatible server: the server's own `timings` are taken where it
 * sends them, N streams really run at once, a slow server at full load earns the agent warning, a failing one is
 * counted (never thrown), and the budget bounds the requests.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { benchLine, benchmarkEndpoint, benchPrompt } from "./bench";

interface Stub {
  url: string;
  server: Server;
  maxInFlight: number;
  bodies: Record<string, unknown>[];
}

/**
 * A streaming chat endpoint. `timings`: llama-server-like figures in the last chunk, the decode rate shared by the
 * streams in flight (`decodeTotal` ÷ in flight, as a memory-bound server shares its bandwidth); `fail`: HTTP 500 (a
 * number: only that request, counted from 1).
 */
async function stub(o: { timings?: boolean; decodeTotal?: number; fail?: boolean | number; sharedMs?: number; dropSecond?: boolean } = {}): Promise<Stub> {
  const s: Stub = { url: "", server: createServer(), maxInFlight: 0, bodies: [] };
  let inFlight = 0;
  // `dropSecond`: the second request finds its connection closed before any answer, as one sent on a kept-alive
  // connection the server closes while idle (llama-server's keep-alive timeout) does; the client cannot tell the two apart.
  let requests = 0;
  // each live stream's most peers at once over its life (a stream shares the bandwidth with every one it overlaps)
  const live = new Set<{ peak: number }>();
  s.server.on("request", (req, res) => {
    if (o.dropSecond && ++requests === 2) {
      req.socket.destroy();
      return;
    }
    let raw = "";
    req.on("data", (b) => (raw += b));
    req.on("end", async () => {
      const body = JSON.parse(raw) as { max_tokens: number };
      s.bodies.push(body);
      if (o.fail === true || o.fail === s.bodies.length) {
        res.writeHead(500, { "content-type": "application/json" }).end('{"error":{"message":"boom"}}');
        return;
      }
      inFlight++;
      s.maxInFlight = Math.max(s.maxInFlight, inFlight);
      const me = { peak: 0 };
      live.add(me);
      for (const l of live) l.peak = Math.max(l.peak, inFlight);
      res.writeHead(200, { "content-type": "text/event-stream" });
      // `sharedMs`: a stream with others in flight first waits this long (a machine that runs them one after another).
      if (o.sharedMs && inFlight > 1) await new Promise((r) => setTimeout(r, o.sharedMs));
      const n = Math.min(body.max_tokens, 12);
      for (let i = 0; i < n; i++) {
        res.write(`data: ${JSON.stringify({ choices: [{ delta: { content: "tok " } }] })}\n\n`);
        await new Promise((r) => setTimeout(r, 5));
      }
      const usage = { prompt_tokens: 300, completion_tokens: n };
      const timings = o.timings ? { prompt_n: 300, prompt_per_second: 1500, predicted_n: n, predicted_per_second: (o.decodeTotal ?? 40) / me.peak } : undefined;
      res.write(`data: ${JSON.stringify({ choices: [], usage, ...(timings ? { timings } : {}) })}\n\n`);
      res.end("data: [DONE]\n\n");
      inFlight--;
      live.delete(me);
    });
  });
  await new Promise<void>((r) => s.server.listen(0, "127.0.0.1", () => r()));
  s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}/v1`;
  return s;
}

const servers: Stub[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.server.close();
});

describe("benchmark after start", () => {
  it("takes the server's own timings: prefill and decode at 1 stream, and N streams side by side", async () => {
    const s = await stub({ timings: true, decodeTotal: 40 });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: "k", engine: "llama.cpp", slots: 4, perSlotCtx: 8192, budgetSec: 0 });
    expect(b.source).toBe("timings");
    expect(b.requests).toBe(1 + 4); // a zero budget: one request alone, one round of 4
    expect(b.failed).toBe(0);
    expect(b.prefillTps1).toBe(1500);
    expect(b.decodeTps1).toBe(40);
    expect(s.maxInFlight).toBe(4);
    expect(b.decodeTpsPerStreamN).toBeLessThanOrEqual(40 / 2); // shared by the streams in flight
    expect(b.slots).toBe(4);
    expect(b.promptTokens).toBe(300);
    // llama.cpp: no prompt cache, no early stop, usage in the stream
    expect(s.bodies[0]).toMatchObject({ stream: true, cache_prompt: false, ignore_eos: true, stream_options: { include_usage: true } });
    expect(benchLine(b)).toMatch(/prefill 1500 tok\/s, decode 40 tok\/s \(1 stream\)/);
  });

  it("warns when a stream at full load decodes too slowly for an agent", async () => {
    const s = await stub({ timings: true, decodeTotal: 24 });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "llama.cpp", slots: 4, perSlotCtx: 8192, budgetSec: 0 });
    expect(b.decodeTps1).toBe(24); // fine alone …
    expect(b.decodeTpsPerStreamN).toBe(6); // … 6 tokens/s each with 4 busy
    expect(b.decodeTpsN).toBe(24);
    expect(b.warning).toMatch(/6 tokens\/s per stream with all 4 slots busy .*too slow for agents/);
  });

  it("one slot: one stream alone is all there is to measure — no redundant round, and never '1 streams'", async () => {
    const s = await stub({ timings: true, decodeTotal: 40 });
    servers.push(s);
    const notes: string[] = [];
    const b = await benchmarkEndpoint({
      url: s.url,
      model: "m",
      key: null,
      engine: "llama.cpp",
      slots: 1,
      perSlotCtx: 8192,
      budgetSec: 0,
      onProgress: (_n, note) => notes.push(note),
    });
    // a zero budget: one request alone, and no "round" of one stream more
    expect(s.bodies).toHaveLength(1);
    expect(b).toMatchObject({ slots: 1, requests: 1, failed: 0, decodeTps1: 40, decodeTpsN: 40, decodeTpsPerStreamN: 40, warning: null });
    expect(notes.join("\n")).not.toMatch(/\b1 streams\b/);
    expect(benchLine(b)).not.toMatch(/\b1 streams\b/);
    expect(benchLine(b)).toMatch(/^measured: prefill 1500 tok\/s, decode 40 tok\/s \(1 stream, the only slot\)$/);
    // too slow with its one slot: said of that slot, not "all 1 slots"
    const slow = await stub({ timings: true, decodeTotal: 5 });
    servers.push(slow);
    const w = await benchmarkEndpoint({ url: slow.url, model: "m", key: null, engine: "llama.cpp", slots: 1, perSlotCtx: 8192, budgetSec: 0 });
    expect(w.warning).toMatch(/^measured 5 tokens\/s with its one slot busy \(under 8\): too slow for agents/);
    expect(w.warning).not.toMatch(/all 1 slots/);
  });

  it("falls back to the stream's clock where the server sends no timings", async () => {
    const s = await stub({ timings: false });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "vllm", slots: 2, perSlotCtx: null, budgetSec: 0 });
    expect(b.source).toBe("stream");
    expect(b.failed).toBe(0);
    expect(b.decodeTps1).toBeGreaterThan(0);
    expect(b.prefillTps1).toBeGreaterThan(0);
    expect(b.decodeTpsN).toBeGreaterThan(0);
    expect(s.bodies[0]).not.toHaveProperty("cache_prompt");
  });

  it("an API provider gets no runtime-only fields; failures are counted and said, never thrown", async () => {
    const s = await stub({ fail: true });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "api", slots: 2, perSlotCtx: 4096, budgetSec: 0 });
    expect(s.bodies[0]).not.toHaveProperty("ignore_eos");
    expect(b.failed).toBe(3);
    expect(b.decodeTps1).toBeNull();
    expect(b.warning).toMatch(/nothing was measured .*3 of 3 requests failed: HTTP 500/);
  });

  it("a request that failed among answered ones is said with why, beside the figures measured without it", async () => {
    // The first request (one stream alone) fails; the round of two at once answers.
    const s = await stub({ timings: true, fail: 1 });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "llama.cpp", slots: 2, perSlotCtx: 4096, budgetSec: 0 });
    expect(b.failed).toBe(1);
    expect(b.decodeTpsPerStreamN).toBeGreaterThan(0);
    expect(b.warning).toMatch(/^1 of \d+ requests failed \(the first: HTTP 500 .*boom/);
  });

  it("a connection closed before any answer (a kept-alive one the server closed while idle) is not a failed request: sent again on a fresh one", async () => {
    const s = await stub({ timings: true, dropSecond: true });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "llama.cpp", slots: 2, perSlotCtx: 4096, budgetSec: 0 });
    expect(b, `the bench's warning: ${b.warning}`).toMatchObject({ failed: 0, warning: null });
    expect(b.requests).toBeGreaterThanOrEqual(3);
  });

  it("a round of N streams slower than one request's least time, within N × 3 × one alone, is measured, not counted failed", async () => {
    // One stream alone answers in ~70 ms (12 tokens, 5 ms apart); two at once wait 250 ms more: past the 200 ms every
    // request is given at least, inside 2 × 3 × one alone.
    const s = await stub({ timings: true, sharedMs: 250 });
    servers.push(s);
    const b = await benchmarkEndpoint({ url: s.url, model: "m", key: null, engine: "llama.cpp", slots: 2, perSlotCtx: 4096, budgetSec: 0, minTimeoutMs: 200 });
    expect(s.maxInFlight).toBe(2);
    expect(b.warning).toBeNull();
    expect(b).toMatchObject({ failed: 0, slots: 2 });
    expect(b.decodeTpsN).toBeGreaterThan(0);
  });

  it("prompts differ (no cache serves them) and stay near the size asked", () => {
    const a = benchPrompt(200);
    expect(a).not.toBe(benchPrompt(200));
    expect(a.split(/\s+/).length).toBeGreaterThan(150);
    expect(a.split(/\s+/).length).toBeLessThan(260);
  });
});
