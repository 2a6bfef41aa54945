import { z } from "zod";
import type { ServingEndpoint } from "../../shared/target";
import { type MetricsReading, parseBody, readBoundedBytes, type SlotsSummary } from "../net";

/** What an endpoint of a target looks like right now, from its own server's reports. */
export const EndpointStatus = z.object({
  url: z.string(),
  /** Answered its last probe. */
  healthy: z.boolean(),
  /** Workers this endpoint is configured for (the target's slots, or the endpoint's own). */
  slots: z.number().int(),
  /** Workers the engine runs on it now. */
  inUse: z.number().int(),
  /** What the serving engine itself reports, when it does: llama.cpp `/slots` (or its `/metrics`), vLLM/SGLang `/metrics`. */
  live: z
    .object({
      source: z.enum(["llama.cpp /slots", "llama.cpp /metrics", "vllm /metrics", "sglang /metrics"]),
      totalSlots: z.number().nullable(),
      busy: z.number(),
      waiting: z.number().nullable(),
      kvUsage: z.number().nullable(),
      /**
       * The engine's own workers on this endpoint when it was read (absent when the reader did not say). With it, the
       * server's busy slots that are not ours (another client's load) are told apart from ours: see `freeSlots`.
       */
      ours: z.number().int().nullable().optional(),
    })
    .nullable(),
  problem: z.string().nullable(),
  checkedAt: z.number().nullable(),
  /** Its last probe timed out once after a healthy reading: kept in admission until a second one does. */
  slowOnce: z.boolean().optional(),
});
export type EndpointStatus = z.infer<typeof EndpointStatus>;
type LiveReading = NonNullable<EndpointStatus["live"]>;

/** A KV cache fuller than this takes no new worker (the engine would only queue it inside the server). */
const KV_FULL = 0.9;

const root = (url: string) => url.replace(/\/+$/, "").replace(/\/v1$/, "");

/** Reads what the server reports about its load; null when it reports nothing we understand. */
export async function readLive(url: string, key: string | null, timeoutMs = 1500): Promise<LiveReading | null> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  const get = async (p: string) => {
    const res = await fetch(root(url) + p, { headers, signal: AbortSignal.timeout(timeoutMs) }).catch(() => null);
    return res?.ok ? res : null;
  };
  // Bounded reads, parsed off the engine's thread when large (net/parse.ts): an endpoint answering megabytes must not
  // hold the engine's thread (it reports nothing then).
  const bytes = (res: Response, p: string) => readBoundedBytes(res, root(url) + p).catch(() => null);
  const slots = await get("/slots");
  if (slots) {
    const body = await bytes(slots, "/slots");
    const s = body && ((await parseBody(body, { kind: "slots" }).catch(() => null)) as SlotsSummary | null);
    if (s?.total) return { source: "llama.cpp /slots", totalSlots: s.total, busy: s.busy, waiting: null, kvUsage: null };
  }
  const metrics = await get("/metrics");
  if (!metrics) return null;
  const metricsBody = await bytes(metrics, "/metrics");
  if (metricsBody === null) return null;
  const m = (await parseBody(metricsBody, { kind: "metrics", names: METRICS }).catch(() => null)) as MetricsReading | null;
  if (!m) return null;
  // a server with data parallel reports one series per engine: counts add up; a KV usage is the engine with the most
  // room (a new request goes there)
  const all = (name: string): number[] => m.series?.[name] ?? (m.values[name] != null ? [m.values[name]!] : []);
  const metric = (name: string): number | null => (all(name).length ? all(name).reduce((a, b) => a + b, 0) : null);
  const least = (name: string): number | null => (all(name).length ? Math.min(...all(name)) : null);
  if (m.family === "vllm") {
    return {
      source: "vllm /metrics",
      totalSlots: null,
      busy: metric("vllm:num_requests_running") ?? 0,
      waiting: metric("vllm:num_requests_waiting"),
      kvUsage: least("vllm:kv_cache_usage_perc") ?? least("vllm:gpu_cache_usage_perc"),
    };
  }
  if (m.family === "llamacpp") {
    // a llama-server with /slots off (--no-slots; 501) but --metrics: requests running and queued in it, no slot count
    return {
      source: "llama.cpp /metrics",
      totalSlots: null,
      busy: metric("llamacpp:requests_processing") ?? 0,
      waiting: metric("llamacpp:requests_deferred"),
      kvUsage: null,
    };
  }
  if (m.family === "sglang") {
    return {
      source: "sglang /metrics",
      totalSlots: null,
      busy: metric("sglang:num_running_reqs") ?? 0,
      waiting: metric("sglang:num_queue_reqs"),
      kvUsage: least("sglang:token_usage"),
    };
  }
  return null;
}

/** The metrics read of a vLLM or SGLang `/metrics` answer. */
const METRICS = [
  "vllm:num_requests_running",
  "vllm:num_requests_waiting",
  "vllm:kv_cache_usage_perc",
  "vllm:gpu_cache_usage_perc",
  "sglang:num_running_reqs",
  "sglang:num_queue_reqs",
  "sglang:token_usage",
  "llamacpp:requests_processing",
  "llamacpp:requests_deferred",
];

/**
 * Whether the endpoint answers (any HTTP answer counts but 503), or why not. A 503 is a server that is up but cannot
 * serve: llama-server binds its port before it loads the model and answers every path, `/v1/models` included, with
 * 503 "Loading model" until it is ready (minutes for a large model, and again after a crash restart) — a worker sent
 * there only collects 503s while another replica of the pool is ready.
 */
export async function probeHealth(url: string, key: string | null, timeoutMs = 1500): Promise<string | null> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  try {
    const res = await fetch(`${url.replace(/\/$/, "")}/models`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 503) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    const text = (await readBoundedBytes(res, `${url}/models`, 4096).catch(() => Buffer.alloc(0))).toString("utf8");
    return /loading model/i.test(text) ? "answers 503: still loading the model" : "answers 503: unavailable";
  } catch (err) {
    return probeProblem(err, timeoutMs);
  }
}

const CODE_WORDS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  UND_ERR_CONNECT_TIMEOUT: "connect timed out",
  UND_ERR_HEADERS_TIMEOUT: "no answer in time",
  UND_ERR_SOCKET: "the connection broke",
  ERR_INVALID_URL: "not a valid URL",
};

/** Why a probe failed, in words a person can act on (never an internal error class name such as "TypeError"). */
function probeProblem(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return `no answer within ${timeoutMs} ms`;
  const code = e?.cause?.code;
  if (code) return CODE_WORDS[code] ? `${CODE_WORDS[code]} (${code})` : code;
  const why = e?.cause?.message || (e?.message && e.message !== "fetch failed" ? e.message : "");
  return why ? `the request failed: ${why}` : "the request failed";
}

/**
 * An endpoint read now: does it answer, and what does it report of its load. `ours` is how many of the engine's workers
 * are on it at this moment (so a later admission can tell another client's load from ours); nothing is counted in
 * `inUse` here (0): the engine fills that in when it shows the endpoint.
 */
export async function readEndpoint(e: ServingEndpoint, key: string | null, ours?: number): Promise<EndpointStatus> {
  const [problem, live] = await Promise.all([probeHealth(e.url, key), readLive(e.url, key)]);
  const reading = problem || !live ? null : ours === undefined ? live : { ...live, ours };
  return { url: e.url, healthy: !problem, slots: e.slots, inUse: 0, live: reading, problem, checkedAt: Date.now() };
}

/**
 * The readings of endpoints, shared by everything in the engine that watches them (the pool refresh, the model-health
 * check, `ocw targets`): an endpoint is probed at most once per `periodMs`, however many callers ask — a caller gets
 * the reading in flight, or the last one while it is younger than the period. `fresh` forces a new probe (preflight,
 * or a worker whose model call just failed), still joining one already in flight.
 */
/** What a timed-out probe reports (fetch's AbortSignal.timeout), as opposed to a refused or reset connection. */
const TIMEOUTS = new Set(["TimeoutError", "AbortError", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT"]);
const isTimeout = (problem: string) => TIMEOUTS.has(problem) || /^no answer within |\((UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT)\)$/.test(problem);

export class EndpointProbes {
  private readonly last = new Map<string, EndpointStatus>();
  private readonly inFlight = new Map<string, Promise<EndpointStatus>>();
  /** Probes actually sent, by URL (for tests and the bench). */
  readonly sent = new Map<string, number>();

  constructor(
    private readonly periodMs: number,
    private readonly probe: (e: ServingEndpoint, key: string | null, ours?: number) => Promise<EndpointStatus> = readEndpoint,
    private readonly now: () => number = Date.now,
  ) {}

  read(e: ServingEndpoint, key: string | null, o: { ours?: number; fresh?: boolean } = {}): Promise<EndpointStatus> {
    const running = this.inFlight.get(e.url);
    if (running) return running;
    const had = this.last.get(e.url);
    // A little slack, so that two timers of the same period do not each miss the other's reading by a millisecond.
    if (!o.fresh && had?.checkedAt != null && this.now() - had.checkedAt < this.periodMs * 0.9) return Promise.resolve({ ...had, slots: e.slots });
    this.sent.set(e.url, (this.sent.get(e.url) ?? 0) + 1);
    const p = this.probe(e, key, o.ours)
      .then((s) => {
        // A probe that timed out once, after a healthy reading, is a slow answer (a busy server or machine), not a death:
        // the endpoint stays in admission with its last load for one more period. Two in a row, or a refused or reset
        // connection (the server is gone), take it out.
        const slow = s.problem !== null && isTimeout(s.problem) && had?.healthy === true && !had.slowOnce;
        const out: EndpointStatus = slow && had ? { ...had, slots: e.slots, checkedAt: s.checkedAt, slowOnce: true } : s;
        this.last.set(e.url, out);
        return out;
      })
      .finally(() => this.inFlight.delete(e.url));
    this.inFlight.set(e.url, p);
    return p;
  }

  /** Whether an endpoint answers (null) or why not, from the shared reading. */
  async health(url: string, key: string | null, o: { fresh?: boolean; ours?: number } = {}): Promise<string | null> {
    return (await this.read({ url, slots: 0 }, key, o)).problem;
  }

  /** A reading learnt otherwise (a failed model call found the endpoint unreachable): callers get it until the next probe. */
  note(s: EndpointStatus): void {
    this.last.set(s.url, s);
  }

  /** The last reading of an endpoint, without probing. */
  peek(url: string): EndpointStatus | undefined {
    return this.last.get(url);
  }
}

/**
 * How many more workers the server itself has room for, from its own report: its slots less those busy with work that
 * is not ours, less ours now. Busy slots that are not ours are `busy − ours` at the time of the reading (a lower bound:
 * one of ours idle then, waiting on a person, hides a foreign one — the next reading corrects it). Without `ours`
 * (an older reader) every busy slot is taken as possibly ours. Null when the server reports no slot count (vLLM, SGLang).
 */
export function freeSlots(s: EndpointStatus): number | null {
  const live = s.live;
  if (!live || live.totalSlots === null) return null;
  if (live.ours === undefined || live.ours === null) return live.busy >= live.totalSlots ? 0 : live.totalSlots - s.inUse;
  const foreign = Math.max(0, live.busy - live.ours);
  return Math.max(0, live.totalSlots - foreign - s.inUse);
}

/**
 * Room for one more worker on an endpoint: its configured slots, capped by what the server itself reports — all of its
 * slots busy (with work that is not ours), a queue inside the server, or a nearly full KV cache mean no room.
 */
export function hasRoom(s: EndpointStatus): boolean {
  return room(s) > 0;
}

/** How many more workers an endpoint takes now: its configured slots less ours, capped by the server's own report. */
function room(s: EndpointStatus): number {
  if (!s.healthy) return 0;
  let n = Math.max(0, s.slots - s.inUse);
  const live = s.live;
  if (!live) return n;
  const free = freeSlots(s);
  if (free !== null) n = Math.min(n, free);
  if (live.waiting !== null && live.waiting > 0) return 0;
  if (live.kvUsage !== null && live.kvUsage >= KV_FULL) return 0;
  return n;
}

/**
 * The endpoint a worker runs on: the one it ran on before if it is healthy and has room (its prefix cache is there),
 * else the healthy one with the most room (by the server's own report too); null when none has room.
 */
export function chooseEndpoint(statuses: EndpointStatus[], previous: string | null): EndpointStatus | null {
  const prev = previous ? statuses.find((s) => s.url === previous) : undefined;
  if (prev && hasRoom(prev)) return prev;
  let best: EndpointStatus | null = null;
  let most = 0;
  for (const s of statuses) {
    const r = room(s);
    if (r > most) [best, most] = [s, r];
  }
  return best;
}
