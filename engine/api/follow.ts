import type { EngineEvent } from "../../shared/events";
import { isAtRest, reduceWorker, type Worker } from "../../shared/worker";
import type { EngineClient } from "./client";

interface FollowOptions {
  onEvent?: (event: EngineEvent, workers: Map<string, Worker>) => void;
  /** Resolve early when this returns true (e.g. a pending ask, for a bounded wait). */
  until?: (workers: Map<string, Worker>) => boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Reads the followed workers' pictures in one request (a batch's list) instead of one request each. */
  load?: () => Promise<Worker[]>;
  /**
   * The event stream lost the engine ("lost", with why; it keeps reconnecting) or has it again ("back"): once per
   * outage, so a client can say why nothing moves while the engine is stopped or restarting.
   */
  onConnection?: (state: "lost" | "back", detail: string) => void;
}

interface FollowResult {
  workers: Map<string, Worker>;
  reason: "settled" | "until" | "timeout" | "aborted";
}

/** Follows workers over the event stream (no polling) until all are final, `until` holds, the time is up, or `signal` aborts. */
export async function follow(client: EngineClient, workerIds: string[], opts: FollowOptions = {}): Promise<FollowResult> {
  const ids = new Set(workerIds);
  const workers = new Map<string, Worker>();
  // All at once: the client batches them into a few HTTP requests (one each, in turn, cost a wait ~16 round trips).
  const snapshot = async () => {
    if (opts.load) {
      for (const w of await opts.load()) if (ids.has(w.id)) workers.set(w.id, w);
      return;
    }
    const list = [...ids];
    const got = await Promise.all(list.map((id) => client.workers.get.query({ workerId: id })));
    list.forEach((id, i) => workers.set(id, got[i]!));
  };
  const cursor = (await client.health.query()).cursor;
  await snapshot();
  const done = (): FollowResult["reason"] | null => {
    if ([...workers.values()].every((w) => isAtRest(w.state))) return "settled";
    if (opts.until?.(workers)) return "until";
    return null;
  };
  const first = done();
  if (first) return { workers, reason: first };
  if (opts.signal?.aborted) return { workers, reason: "aborted" };
  return new Promise<FollowResult>((resolve, reject) => {
    let finished = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let sub: { unsubscribe(): void } | null = null;
    const outage = outageNotes(opts.onConnection);
    const onAbort = () => finish("aborted");
    const end = () => {
      finished = true;
      clearTimeout(timer);
      sub?.unsubscribe();
      opts.signal?.removeEventListener("abort", onAbort);
    };
    const finish = (reason: FollowResult["reason"]) => {
      if (finished) return;
      end();
      resolve({ workers, reason });
    };
    sub = client.events.subscribe(
      { lastEventId: cursor },
      {
        onData: (tracked) => {
          if (finished) return;
          const event = tracked.data as EngineEvent;
          if (event.type === "reset") {
            void snapshot().then(
              () => {
                // the events it missed are in the new picture (an ask answered meanwhile reads as answered there)
                if (!finished) opts.onEvent?.(event, workers);
                const r = done();
                if (r) finish(r);
              },
              () => undefined,
            );
            return;
          }
          if ("workerId" in event && ids.has(event.workerId) && "seq" in event) {
            const w = workers.get(event.workerId);
            if (w && event.seq > w.lastSeq) workers.set(event.workerId, reduceWorker(w, event));
          }
          opts.onEvent?.(event, workers);
          const r = done();
          if (r) finish(r);
        },
        onError: (err) => {
          if (finished) return;
          end();
          reject(err);
        },
        onConnectionStateChange: (st) => {
          if (!finished) outage(st);
        },
      },
    );
    if (opts.timeoutMs) timer = setTimeout(() => finish("timeout"), opts.timeoutMs);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) finish("aborted");
  });
}

/**
 * The first event after `cursor` (events are replayed from it) that `pred` accepts: "event"; or "timeout" after
 * `timeoutMs`, "aborted" on `signal`. Rejects when the stream fails. A `reset` (the cursor can no longer be replayed) is
 * an event like any other: a caller that must refetch on it accepts it in `pred`.
 */
export function nextEvent(
  client: EngineClient,
  cursor: string,
  pred: (e: EngineEvent) => boolean,
  opts: { timeoutMs?: number; signal?: AbortSignal; onConnection?: FollowOptions["onConnection"] } = {},
): Promise<"event" | "timeout" | "aborted"> {
  return new Promise((resolve, reject) => {
    let sub: { unsubscribe(): void } | null = null;
    let ended = false;
    const outage = outageNotes(opts.onConnection);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const end = () => {
      ended = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      sub?.unsubscribe();
    };
    const finish = (r: "event" | "timeout" | "aborted") => {
      if (ended) return;
      end();
      resolve(r);
    };
    const onAbort = () => finish("aborted");
    if (opts.timeoutMs !== undefined) timer = setTimeout(() => finish("timeout"), Math.max(1, opts.timeoutMs));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) return finish("aborted");
    sub = client.events.subscribe(
      { lastEventId: cursor },
      {
        onData: (t) => {
          if (!ended && pred(t.data as EngineEvent)) finish("event");
        },
        onError: (err) => {
          if (ended) return;
          end();
          reject(err);
        },
        // The stream reconnects by itself; a caller that follows for a person says the engine went away (and came back).
        onConnectionStateChange: (st) => {
          if (!ended) outage(st);
        },
      },
    );
    if (ended) sub.unsubscribe();
  });
}

/**
 * The event stream's connection as a person hears of it (FollowOptions.onConnection): "lost", with why in words (not an
 * error's class name), once per outage while the stream keeps reconnecting, and "back" when it is open again. One
 * tracker for every follower of the stream here (follow and nextEvent).
 */
export function outageNotes(
  say: FollowOptions["onConnection"],
): (st: { state: "idle" | "connecting" | "pending"; error?: { message: string } | null }) => void {
  let lost = false;
  return (st) => {
    if (!say) return;
    if (st.state === "connecting" && st.error && !lost) {
      lost = true;
      say("lost", st.error.message.replace(/^(\w*Error: )+/, ""));
    } else if (st.state === "pending" && lost) {
      lost = false;
      say("back", "");
    }
  };
}
