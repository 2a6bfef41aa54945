// A model endpoint answering `/slots` with as much as the engine reads (ENDPOINT_MAX_BYTES) must not hold the engine's
// thread while the answer is parsed: the parse runs in a worker thread, and the engine's event loop stays as free as
// without it. Compared in the same run with the same bytes parsed on the main thread (the code before this), never
// against a fixed number of milliseconds.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { threadId } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { readLive } from "../admission/capacity";
import { httpJson } from "../serving/http";
import { ENDPOINT_MAX_BYTES } from "./bounded";
import { PARSE_INLINE_MAX, parseBody, parseStats, reduceBody } from "./parse";

/** A llama.cpp `/slots` answer just under the cap: many slots, each with a long prompt echoed back (as llama.cpp does). */
function bigSlots(): { body: Buffer; total: number; busy: number } {
  const slots: string[] = [];
  let size = 2;
  let busy = 0;
  for (let id = 0; ; id++) {
    const processing = id % 3 === 0;
    const s = JSON.stringify({
      id,
      n_ctx: 8192,
      is_processing: processing,
      params: { n_predict: -1, temperature: 0.8, stop: ["</s>", "<|im_end|>"], samplers: ["top_k", "typ_p", "top_p", "min_p", "temperature"] },
      next_token: { has_next_token: true, n_remain: -1, n_decoded: id },
      prompt: `slot ${id} `.repeat(20),
    });
    if (size + s.length + 1 > ENDPOINT_MAX_BYTES - 1024) break;
    slots.push(s);
    size += s.length + 1;
    if (processing) busy++;
  }
  return { body: Buffer.from(`[${slots.join(",")}]`), total: slots.length, busy };
}

const slots = bigSlots();
let server: http.Server;
let url = "";

async function serve(): Promise<void> {
  server = http.createServer((req, res) => {
    if (req.url === "/slots") return void res.writeHead(200, { "content-type": "application/json" }).end(slots.body);
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}
afterAll(() => new Promise<void>((done) => (server ? (server.closeAllConnections(), server.close(() => done())) : done())));

/**
 * The longest the event loop was held while `f` ran (ns): the least over `times` runs. A busy machine only adds stalls
 * (a thread not scheduled), so the least of several runs is what the code itself costs: a parse on the engine's thread
 * can never stall it less than the parse takes, one in a worker can.
 */
async function longestStall(f: () => Promise<unknown>, times: number): Promise<number> {
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < times; i++) {
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    // Let the histogram's timer run once before and after the call.
    await new Promise((r) => setTimeout(r, 3));
    await f();
    await new Promise((r) => setTimeout(r, 3));
    h.disable();
    least = Math.min(least, h.max);
  }
  return least;
}

describe("endpoint answers parsed off the engine's thread", () => {
  it("a /slots answer of the cap's size is parsed in a worker thread, never on the engine's (the stall of each way printed)", async () => {
    await serve();
    expect(slots.body.byteLength).toBeGreaterThan(ENDPOINT_MAX_BYTES - 64 * 1024);
    // The reading itself is right, from the worker.
    const before = parseStats.offThread;
    const live = await readLive(url, null, 10_000);
    expect(live).toEqual({ source: "llama.cpp /slots", totalSlots: slots.total, busy: slots.busy, waiting: null, kvUsage: null });
    expect(parseStats.offThread).toBe(before + 1);
    expect(parseStats.lastThreadId).not.toBe(threadId);

    // The same bytes parsed the old way (decode + JSON.parse + count on the engine's thread) against parseBody, as
    // readLive calls it. Only the parse is timed: reading the socket (the stub serves from this same thread) is the same
    // for both and not what this is about.
    const onMain = async () => reduceBody(Buffer.from(slots.body).toString("utf8"), { kind: "slots" });
    const offMain = () => parseBody(Buffer.from(slots.body), { kind: "slots" });
    await onMain();
    await offMain();
    const runs = 2;
    const off0 = parseStats.offThread;
    const main = await longestStall(onMain, runs);
    const worker = await longestStall(offMain, runs);
    const mainAgain = await longestStall(onMain, runs);
    const whole = await longestStall(() => parseBody(Buffer.from(slots.body), { kind: "json" }), runs);
    const kept = await longestStall(() => parseBody(Buffer.from(slots.body), { kind: "json", keep: [{ id: true, n_ctx: true }] }), runs);
    console.info(
      `longest event-loop stall (least of ${runs} runs) parsing ${slots.body.byteLength} bytes: on the main thread ${(main / 1e6).toFixed(1)} / ${(mainAgain / 1e6).toFixed(1)} ms, in the worker ${(worker / 1e6).toFixed(1)} ms (summary back), ${(whole / 1e6).toFixed(1)} ms (the whole value cloned back), ${(kept / 1e6).toFixed(1)} ms (id and n_ctx of each slot back)`,
    );
    // The main-thread parse holds the loop for its whole length; the worker's only for handing the bytes over. Printed,
    // not asserted: a timing promise belongs to the bench's fault table, and a loaded machine stretches either side.
    expect(parseStats.offThread).toBe(off0 + 3 * runs);
  }, 60_000);

  it("a small answer is parsed inline (a thread hop would cost more than the parse), with the same result", async () => {
    const small = Buffer.from(
      JSON.stringify([
        { id: 0, is_processing: true },
        { id: 1, state: 0 },
      ]),
    );
    const inline = parseStats.inline;
    expect(await parseBody(small, { kind: "slots" })).toEqual({ total: 2, busy: 1 });
    expect(parseStats.inline).toBe(inline + 1);
    expect(small.byteLength).toBeLessThan(PARSE_INLINE_MAX);
  });

  it("the worker and the inline parse agree: JSON whole, not-JSON as null, Prometheus metrics by name", async () => {
    const pad = " ".repeat(PARSE_INLINE_MAX);
    const metrics = `# HELP vllm:num_requests_running x\nvllm:num_requests_running{model_name="m"} 3\nvllm:kv_cache_usage_perc 0.25\n${"#".repeat(PARSE_INLINE_MAX)}\n`;
    const names = ["vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:num_requests_waiting"];
    for (const [text, job] of [
      [`{"a":[1,2,{"b":"c"}]}${pad}`, { kind: "json" }],
      [`not json${pad}`, { kind: "json" }],
      [`{"not":"a list"}${pad}`, { kind: "slots" }],
      [metrics, { kind: "metrics", names }],
    ] as const) {
      const off = parseStats.offThread;
      const got = await parseBody(Buffer.from(text), job);
      expect(parseStats.offThread).toBe(off + 1);
      expect(got).toEqual(reduceBody(text, job));
    }
    expect(await parseBody(Buffer.from(metrics), { kind: "metrics", names })).toEqual({
      family: "vllm",
      values: { "vllm:num_requests_running": 3, "vllm:kv_cache_usage_perc": 0.25, "vllm:num_requests_waiting": null },
      series: { "vllm:num_requests_running": [3], "vllm:kv_cache_usage_perc": [0.25], "vllm:num_requests_waiting": [] },
    });
  });

  it("httpJson hands back only the part of a large answer its caller reads (keep), and keeps only the head of its text", async () => {
    if (!url) await serve();
    const off = parseStats.offThread;
    const r = await httpJson<{ id: number; n_ctx: number }[]>(`${url.replace(/\/v1$/, "")}/slots`, { timeoutMs: 10_000, keep: [{ id: true, n_ctx: true }] });
    expect(r.ok).toBe(true);
    expect(r.body?.length).toBe(slots.total);
    expect(r.body?.[5]).toEqual({ id: 5, n_ctx: 8192 });
    expect(parseStats.offThread).toBe(off + 1);
    expect(r.text.length).toBeLessThanOrEqual(PARSE_INLINE_MAX);
    // Without `keep` the whole value comes back (the same result as parsing it here).
    const whole = await httpJson<unknown[]>(`${url.replace(/\/v1$/, "")}/slots`, { timeoutMs: 10_000 });
    expect(whole.body).toEqual(JSON.parse(slots.body.toString("utf8")));
  });
});
