import { z } from "zod";
import type { ServingEndpoint, Target } from "../../shared/target";

/** What an endpoint of a target looks like right now, from its own server's reports. */
export const EndpointStatus = z.object({
  url: z.string(),
  /** Answered its last probe. */
  healthy: z.boolean(),
  /** Workers this endpoint is configured for (the target's slots, or the endpoint's own). */
  slots: z.number().int(),
  /** Workers the engine runs on it now. */
  inUse: z.number().int(),
  /** What the serving engine itself reports, when it does: llama.cpp `/slots`, vLLM/SGLang `/metrics`. */
  live: z
    .object({
      source: z.enum(["llama.cpp /slots", "vllm /metrics", "sglang /metrics"]),
      totalSlots: z.number().nullable(),
      busy: z.number(),
      waiting: z.number().nullable(),
      kvUsage: z.number().nullable(),
    })
    .nullable(),
  problem: z.string().nullable(),
  checkedAt: z.number().nullable(),
});
export type EndpointStatus = z.infer<typeof EndpointStatus>;
export type LiveReading = NonNullable<EndpointStatus["live"]>;

/** The endpoints of a target: its pool, or its one endpoint with the target's slots. */
export function endpointsOf(target: Target): ServingEndpoint[] {
  return target.serving.endpoints.length ? target.serving.endpoints : [{ url: target.endpoint, slots: target.serving.slots }];
}

export const isPool = (target: Target) => target.serving.endpoints.length > 1;

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
  const slots = await get("/slots");
  if (slots) {
    const list = (await slots.json().catch(() => null)) as { is_processing?: boolean; state?: number }[] | null;
    if (Array.isArray(list) && list.length) {
      const busy = list.filter((s) => s.is_processing ?? s.state === 1).length;
      return { source: "llama.cpp /slots", totalSlots: list.length, busy, waiting: null, kvUsage: null };
    }
  }
  const metrics = await get("/metrics");
  if (!metrics) return null;
  const text = await metrics.text();
  const metric = (name: string): number | null => {
    const m = new RegExp(`^${name.replace(/[:]/g, "\\:")}(?:\\{[^}]*\\})?\\s+([0-9.eE+-]+)`, "m").exec(text);
    return m ? Number(m[1]) : null;
  };
  if (/^vllm:/m.test(text)) {
    return {
      source: "vllm /metrics",
      totalSlots: null,
      busy: metric("vllm:num_requests_running") ?? 0,
      waiting: metric("vllm:num_requests_waiting"),
      kvUsage: metric("vllm:kv_cache_usage_perc") ?? metric("vllm:gpu_cache_usage_perc"),
    };
  }
  if (/^sglang:/m.test(text)) {
    return { source: "sglang /metrics", totalSlots: null, busy: metric("sglang:num_running_reqs") ?? 0, waiting: metric("sglang:num_queue_reqs"), kvUsage: metric("sglang:token_usage") };
  }
  return null;
}

/** Whether the endpoint answers at all (any HTTP answer counts), or why not. */
export async function probeHealth(url: string, key: string | null, timeoutMs = 1500): Promise<string | null> {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  try {
    await fetch(`${url.replace(/\/$/, "")}/models`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    return null;
  } catch (err) {
    return (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
  }
}

/** An endpoint read now: does it answer, and what does it report of its load (nothing of ours is counted: inUse 0). */
export async function readEndpoint(e: ServingEndpoint, key: string | null): Promise<EndpointStatus> {
  const [problem, live] = await Promise.all([probeHealth(e.url, key), readLive(e.url, key)]);
  return { url: e.url, healthy: !problem, slots: e.slots, inUse: 0, live: problem ? null : live, problem, checkedAt: Date.now() };
}

/**
 * Room for one more worker on an endpoint: its configured slots, capped by what the server itself reports — all of its
 * slots busy (with work that is not ours), a queue inside the server, or a nearly full KV cache mean no room.
 */
export function hasRoom(s: EndpointStatus): boolean {
  if (!s.healthy || s.inUse >= s.slots) return false;
  const live = s.live;
  if (!live) return true;
  if (live.totalSlots !== null && s.inUse >= live.totalSlots) return false;
  if (live.totalSlots !== null && live.busy >= live.totalSlots) return false;
  if (live.waiting !== null && live.waiting > 0) return false;
  if (live.kvUsage !== null && live.kvUsage >= KV_FULL) return false;
  return true;
}

/**
 * The endpoint a worker runs on: the one it ran on before if it is healthy and has room (its prefix cache is there),
 * else the healthy one with the most room; null when none has room.
 */
export function chooseEndpoint(statuses: EndpointStatus[], previous: string | null): EndpointStatus | null {
  const prev = previous ? statuses.find((s) => s.url === previous) : undefined;
  if (prev && hasRoom(prev)) return prev;
  const room = statuses.filter(hasRoom);
  room.sort((a, b) => b.slots - b.inUse - (a.slots - a.inUse));
  return room[0] ?? null;
}
