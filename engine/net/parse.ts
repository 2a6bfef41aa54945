/**
 * Endpoint answers parsed off the engine's thread. A bounded read (bounded.ts) still lets a model server answer up to
 * its cap (megabytes): JSON.parse or a regex over that many bytes holds the engine's one thread (its API, every
 * worker's events) for as long as it runs. A body larger than PARSE_INLINE_MAX is decoded and parsed in a small pool of
 * worker threads, which hands back only what the caller reads of it (a `/slots` answer comes back as two numbers);
 * small ones are parsed inline, where a thread hop would cost more than the parse.
 */
import os from "node:os";
import { threadId as mainThreadId, Worker } from "node:worker_threads";
import { ENDPOINT_MAX_BYTES, readBoundedBytes } from "./bounded";

/** Bodies up to this size are parsed inline (256 KiB parses in well under a millisecond's worth of a frame's work). */
export const PARSE_INLINE_MAX = 256 * 1024;

/**
 * What is made of a body where it is parsed:
 * - `json`: the JSON value, or its `keep` part (null when the body is not JSON);
 * - `slots`: a llama.cpp `/slots` answer as `{ total, busy }` (null when it is not a non-empty list);
 * - `metrics`: a Prometheus text answer as the family it belongs to and the values of the named metrics.
 */
type ParseJob = { kind: "json"; keep?: Keep } | { kind: "slots" } | { kind: "metrics"; names: string[] };
/**
 * The part of a JSON value a caller reads: `true` the value whole; `{ key: Keep }` only those keys of an object;
 * `[Keep]` each element of a list so. Handing a large value back from the worker costs the engine's thread about as
 * much as parsing it there (measured: 4 MiB of `/slots`, 23–25 ms cloned back against 19–26 ms parsed), so a caller of
 * a large answer names what it reads and gets only that.
 */
export type Keep = true | { [key: string]: Keep } | [Keep];
export type SlotsSummary = { total: number; busy: number };
/**
 * `values`: each named metric's first series; `series`: every series of it (a vLLM with data parallel reports one per
 * engine, `engine="0"`, `engine="1"` …).
 */
export type MetricsReading = { family: "vllm" | "sglang" | "llamacpp" | null; values: Record<string, number | null>; series: Record<string, number[]> };

/**
 * The parse itself, the same inline and in the worker (whose source is this function's text: it must not refer to
 * anything outside itself).
 */
export function reduceBody(text: string, job: ParseJob): unknown {
  if (job.kind === "metrics") {
    const family = /^vllm:/m.test(text) ? "vllm" : /^sglang:/m.test(text) ? "sglang" : /^llamacpp:/m.test(text) ? "llamacpp" : null;
    const values: Record<string, number | null> = {};
    const series: Record<string, number[]> = {};
    for (const name of job.names) {
      const re = new RegExp(`^${name.replace(/[^A-Za-z0-9_]/g, "\\$&")}(?:\\{[^}\\n]*\\})?[ \\t]+([0-9.eE+-]+)`, "gm");
      series[name] = [...text.matchAll(re)].map((m) => Number(m[1])).filter((x) => Number.isFinite(x));
      values[name] = series[name].length ? series[name][0]! : null;
    }
    return { family, values, series };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (job.kind === "slots") {
    if (!Array.isArray(value) || !value.length) return null;
    let busy = 0;
    for (const s of value as { is_processing?: boolean; state?: number }[]) if (s && (s.is_processing ?? s.state === 1)) busy++;
    return { total: value.length, busy };
  }
  if (value === undefined) return null;
  if (!job.keep) return value;
  // The kept part of a value; a value of another type than the shape expects is dropped (undefined).
  const pick = (v: unknown, k: Keep): unknown => {
    if (k === true) return v;
    if (Array.isArray(k)) return Array.isArray(v) ? v.map((e) => pick(e, k[0])) : undefined;
    if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(k)) if (Object.hasOwn(v, key)) out[key] = pick((v as Record<string, unknown>)[key], k[key]!);
    return out;
  };
  return pick(value, job.keep) ?? null;
}

// Plain CommonJS, evaluated in the worker: the engine is one bundled file, so the worker cannot load a module of ours.
const WORKER_SOURCE = `
const { parentPort, threadId } = require("node:worker_threads");
const reduceBody = ${reduceBody.toString()};
parentPort.on("message", ({ id, bytes, job }) => {
  try {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
    parentPort.postMessage({ id, ok: true, value: reduceBody(text, job), threadId });
  } catch (e) {
    parentPort.postMessage({ id, ok: false, error: String((e && e.message) || e), threadId });
  }
});
`;

type Reply = { id: number; threadId: number } & ({ ok: true; value: unknown } | { ok: false; error: string });

/** Where parses ran, for the engine's own tests and the bench: inline count, worker count, the last worker's threadId. */
export const parseStats = { inline: 0, offThread: 0, lastThreadId: mainThreadId };

class ParsePool {
  private readonly threads: { worker: Worker; busy: number }[] = [];
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; slot: { worker: Worker; busy: number } }>();

  constructor(private readonly size: number) {}

  parse(bytes: Uint8Array, job: ParseJob): Promise<unknown> {
    const slot = this.pick();
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, slot });
      if (slot.busy++ === 0) slot.worker.ref();
      // Handed over without a copy where the bytes own their buffer (a read's Buffer.concat does).
      const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
      const data = own ? bytes : Uint8Array.prototype.slice.call(bytes);
      slot.worker.postMessage({ id, bytes: data, job }, [data.buffer as ArrayBuffer]);
    });
  }

  private pick(): { worker: Worker; busy: number } {
    const idle = this.threads.find((t) => t.busy === 0);
    if (idle) return idle;
    if (this.threads.length < this.size) return this.start();
    return this.threads.reduce((a, b) => (b.busy < a.busy ? b : a));
  }

  private start(): { worker: Worker; busy: number } {
    // A body is at most a few MiB: a parse that needs more than this heap is not an endpoint's answer.
    const worker = new Worker(WORKER_SOURCE, { eval: true, name: "ocw parse", resourceLimits: { maxOldGenerationSizeMb: 512 } });
    const slot = { worker, busy: 0 };
    worker.unref();
    worker.on("message", (m: Reply) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (--slot.busy === 0) worker.unref();
      parseStats.offThread++;
      parseStats.lastThreadId = m.threadId;
      if (m.ok) p.resolve(m.value);
      else p.reject(new Error(`the answer could not be parsed: ${m.error}`));
    });
    const lost = (why: string) => {
      const i = this.threads.indexOf(slot);
      if (i < 0) return;
      this.threads.splice(i, 1);
      for (const [id, p] of this.waiting) {
        if (p.slot !== slot) continue;
        this.waiting.delete(id);
        p.reject(new Error(`the engine's parse thread ${why}`));
      }
    };
    // An answer that could not be cloned back (a value nested deeper than this thread's stack can rebuild): it is the
    // slot's oldest parse, since a worker answers in order. Without this its caller would wait for ever.
    worker.on("messageerror", (e) => {
      const first = [...this.waiting].find(([, p]) => p.slot === slot);
      if (!first) return;
      this.waiting.delete(first[0]);
      if (--slot.busy === 0) worker.unref();
      first[1].reject(new Error(`the answer could not be parsed: ${e.message}`));
    });
    worker.on("error", (e) => lost(`failed: ${e.message}`));
    worker.on("exit", (code) => lost(`exited (${code})`));
    this.threads.push(slot);
    return slot;
  }
}

const pool = new ParsePool(Math.max(1, Math.min(2, os.availableParallelism() - 1)));

/**
 * A body read by bounded.ts, parsed as `job` says: inline up to PARSE_INLINE_MAX bytes, in the parse pool above it.
 * The bytes are handed to the pool (not copied where they own their buffer): do not use them afterwards.
 */
export async function parseBody(bytes: Uint8Array, job: ParseJob): Promise<unknown> {
  if (bytes.byteLength <= PARSE_INLINE_MAX) {
    parseStats.inline++;
    return reduceBody(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"), job);
  }
  return pool.parse(bytes, job);
}

/** A response's JSON, read to `maxBytes` at most (BodyTooLarge over it) and parsed as parseBody does; null when not JSON. */
export async function readJsonBounded<T = unknown>(res: Response, url: string, maxBytes = ENDPOINT_MAX_BYTES): Promise<T | null> {
  return (await parseBody(await readBoundedBytes(res, url, maxBytes), { kind: "json" })) as T | null;
}
