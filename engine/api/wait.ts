// `workers.wait` / `workers.waitStream`: a bounded wait done inside the engine (shared/wait.ts). The engine holds every
// worker's live picture and hears every event first, so a waiting client sends one request and gets one answer,
// instead of reading pictures, opening a stream of every engine event and folding it itself.
import type { z } from "zod";
import type { BatchSummary } from "../../shared/batch";
import type { Delivered, EngineEvent } from "../../shared/events";
import { askNote, describeNote, noteLine, slimBatch, slimWorker, type WaitInput, type WaitNote, type WaitResult, type WaitStreamItem } from "../../shared/wait";
import { isAtRest, pendingAsks, type Worker } from "../../shared/worker";

/** What a wait reads of the engine (the Engine itself in production). */
export interface WaitSource {
  bus: { subscribe(fn: (d: Delivered) => void): () => void };
  get(id: string): Worker;
  batch(batchId: string): BatchSummary;
  /**
   * The answers on their way to opencode: a worker one of whose asks is being answered is about to move, not blocked.
   * `ended` is told when one ends, taken or not (then the worker moves, or its ask is still open).
   */
  answers?: { has(askId: string): boolean; ended(fn: () => void): () => void };
}

interface WaitOptions {
  /** The request's signal: a cancelled request ends the wait at once (reason "aborted"). */
  signal?: AbortSignal;
  /** A progress line per event worth showing of a followed worker, in its parts (shared/wait.ts describeNote). */
  onNote?: (note: WaitNote) => void;
  /** The workers it follows, once known (a batch's after it waited for the batch's next step), before it follows them. */
  onFollow?: (workerIds: string[]) => void;
}

type Input = z.output<typeof WaitInput>;

/** How long news that arrives while a wait follows its workers gathers before the answer (a burst answered once). */
export const GATHER_MS = 25;
/**
 * A burst still growing when its window ends (more asks came in it) is gathered another GATHER_MS, up to this in all: a
 * batch's asks arriving over a tenth of a second are one answer, where a wait answered at the first window left the
 * rest to the next wait, after the client's answers to the first.
 */
export const GATHER_MAX_MS = 150;
/**
 * The window when no followed worker is on its way to news (none running or being graded: each waits on an ask, is at
 * rest or has yet to start): nothing is coming to gather, and the wait answers after this, just long enough for the
 * asks of one model step (parallel tool calls) to come in together. A batch's last asks waited GATHER_MS or more for
 * nothing.
 */
export const GATHER_IDLE_MS = 5;

/**
 * Waits until there is news for the caller — a pending ask it was not shown, a worker finished that it was not shown
 * finished — or every followed worker is at rest, or the time is up, or the request is cancelled. A batch goes on
 * after its workers end (tasks that come after others start, the integration checks run): while every worker it has
 * is at rest but the batch is not done, the wait first waits for the batch's next step.
 */
export async function waitForNews(src: WaitSource, input: Input, opts: WaitOptions = {}): Promise<WaitResult> {
  const deadline = Date.now() + input.timeoutMs;
  const signal = opts.signal;
  // Every id in `also` is checked now (the registry's coded not-found): an unknown one must not fail the answer only
  // after the whole wait.
  for (const id of new Set(input.also)) src.get(id);
  let ids: string[];
  let batch: BatchSummary | null = null;
  // The batch's next step was waited for until the deadline (its timer may fire a millisecond before Date.now() reads
  // the deadline: the answer is still the time running out).
  let ranOut = false;
  if (input.batchId) {
    batch = src.batch(input.batchId);
    ids = batch.workerIds;
    const batchId = input.batchId;
    while (!batch.done && batch.workerIds.every((id) => isAtRest(batch!.states[id]!)) && Date.now() < deadline && !signal?.aborted) {
      const got = await nextEvent(
        src,
        (e) => (e.type === "batch" && e.batchId === batchId) || (e.type === "worker.created" && e.batchId === batchId),
        deadline,
        signal,
      );
      batch = src.batch(batchId);
      ids = batch.workerIds;
      if (got !== "event") {
        ranOut = got === "timeout";
        break;
      }
    }
  } else {
    const all = [...new Set(input.workerIds!.map((id) => src.get(id).id))];
    const open = input.unfinished ? all.filter((id) => !isAtRest(src.get(id).state)) : [];
    ids = open.length ? open : all;
  }
  const shownAsks = new Set(input.shownAsks);
  const shownFinished = new Set(input.shownFinished);
  const followed = new Set(ids);
  opts.onFollow?.(ids);
  // The asks already waiting that this caller was not shown are lines too: an ask that opened a moment before the
  // wait began following would otherwise be in the answer without ever having been a line of its progress.
  if (opts.onNote) for (const id of ids) for (const a of pendingAsks(src.get(id))) if (!shownAsks.has(a.id)) opts.onNote(askNote(a.workerId, a));
  // How much news there is: the asks not shown, the workers finished and not shown.
  const news = () =>
    ids.reduce((n, id) => {
      const w = src.get(id);
      return n + pendingAsks(w).filter((a) => !shownAsks.has(a.id)).length + (isAtRest(w.state) && !shownFinished.has(w.id) ? 1 : 0);
    }, 0);
  const answering = (w: Worker) => pendingAsks(w).some((a) => src.answers?.has(a.id));
  const outcome = (): "settled" | "news" | "blocked" | null => {
    const ws = ids.map((id) => src.get(id));
    if (ws.every((w) => isAtRest(w.state))) return "settled";
    if (news() > 0) return "news";
    if (input.untilGone && !ws.some((w) => pendingAsks(w).some((a) => a.id === input.untilGone))) return "news";
    // Every worker still going waits on an ask the caller was shown: only its answer (or a person's) moves them. One
    // whose answer is on its way (the caller's approve sent beside this wait) is about to move.
    if (input.blocked && ws.every((w) => isAtRest(w.state) || (w.state === "waiting-approval" && pendingAsks(w).length > 0 && !answering(w)))) return "blocked";
    return null;
  };
  // Whether a followed worker may bring news within a gathering window: one at work on the model, or being graded.
  const moving = () =>
    ids.some((id) => {
      const state = src.get(id).state;
      return state === "running" || state === "settled" || state === "grading";
    });
  // Blocked at once is looked at again after GATHER_MS: an approve the caller sent beside this wait (Claude sends both in
  // one message) may reach the engine just after it, and the answer would send the caller round again at once.
  const first = outcome();
  const reached =
    first && first !== "blocked"
      ? first
      : signal?.aborted
        ? "aborted"
        : await follow(src, followed, { outcome, news, moving }, deadline, { ...opts, lookAgainMs: first === "blocked" ? GATHER_MS : undefined });
  const workers = ids.map((id) => slimWorker(src.get(id), { diffs: input.diffs }));
  if (input.batchId) batch = src.batch(input.batchId);
  const settled = workers.every((w) => isAtRest(w.state)) && (!batch || batch.done !== false);
  // Every worker at rest while the batch goes on (tasks after others, its integration checks) is not the batch settled:
  // the time ran out waiting for its next event, or a worker finished.
  const reason = reached === "settled" && !settled ? (ranOut || Date.now() >= deadline ? "timeout" : "news") : reached;
  const also = settled && input.also ? [...new Set(input.also)].filter((id) => !followed.has(id)).map((id) => slimWorker(src.get(id))) : [];
  return { workerIds: ids, reason, workers, batch: batch && slimBatch(batch), also };
}

/**
 * Follows the workers' events until `outcome` says so, the deadline or the signal. `outcome` is looked at once per
 * turn of the event loop after an event of a followed worker, not per event: an ask and the state change it causes
 * are published together, and the answer reports both; news is answered GATHER_MS later, with whatever came meanwhile
 * (longer while it keeps growing: GATHER_MAX_MS).
 */
function follow(
  src: WaitSource,
  followed: Set<string>,
  seen: { outcome: () => "settled" | "news" | "blocked" | null; news: () => number; moving: () => boolean },
  deadline: number,
  opts: WaitOptions & { lookAgainMs?: number },
): Promise<WaitResult["reason"]> {
  const { outcome, news, moving } = seen;
  return new Promise((resolve) => {
    let ended = false;
    let pending: NodeJS.Immediate | null = null;
    let gather: NodeJS.Timeout | null = null;
    const finish = (r: WaitResult["reason"]) => {
      if (ended) return;
      ended = true;
      unsubscribe();
      clearTimeout(timer);
      if (pending) clearImmediate(pending);
      if (gather) clearTimeout(gather);
      opts.signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    const onAbort = () => finish("aborted");
    const offBus = src.bus.subscribe(({ event }) => {
      if (ended || !("workerId" in event) || !followed.has(event.workerId)) return;
      if (opts.onNote) {
        const note = describeNote(event, followed);
        if (note) opts.onNote(note);
      }
      look();
    });
    // An answer that ends without the ask going (opencode did not take it) leaves its worker blocked again: no worker
    // event says so.
    const offAnswers = src.answers?.ended(() => !ended && look());
    const unsubscribe = () => {
      offBus();
      offAnswers?.();
    };
    const look = () => {
      pending ??= setImmediate(() => {
        pending = null;
        const r = outcome();
        if (r === "settled") return finish(r);
        // News that comes in a burst (a batch's asks, its workers' verdicts) is answered together: one answer, not one
        // wait per worker. Looked at again when the short window ends (it may have settled, or gone: then wait on).
        // With no followed worker on its way to more news, the window is GATHER_IDLE_MS and is not drawn out.
        if (r && !gather) {
          let gathered = 0;
          let seen = news();
          const window = () => {
            const ms = moving() ? GATHER_MS : GATHER_IDLE_MS;
            gathered += ms;
            gather = setTimeout(
              () => {
                gather = null;
                const again = outcome();
                if (!again) return;
                const now = news();
                if (again === "news" && now > seen && gathered < GATHER_MAX_MS && deadline > Date.now() && moving()) {
                  seen = now;
                  return window();
                }
                finish(again);
              },
              Math.min(ms, Math.max(0, deadline - Date.now())),
            );
          };
          window();
        }
      });
    };
    const timer = setTimeout(() => finish("timeout"), Math.max(0, deadline - Date.now()));
    if (opts.lookAgainMs !== undefined) setTimeout(() => !ended && look(), Math.min(opts.lookAgainMs, Math.max(0, deadline - Date.now())));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.signal?.aborted) finish("aborted");
  });
}

/** The first event `pred` accepts ("event"), else "timeout" at the deadline or "aborted" on the signal. */
function nextEvent(src: WaitSource, pred: (e: EngineEvent) => boolean, deadline: number, signal?: AbortSignal): Promise<"event" | "timeout" | "aborted"> {
  return new Promise((resolve) => {
    let ended = false;
    const finish = (r: "event" | "timeout" | "aborted") => {
      if (ended) return;
      ended = true;
      unsubscribe();
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    const onAbort = () => finish("aborted");
    const unsubscribe = src.bus.subscribe(({ event }) => {
      if (!ended && pred(event)) finish("event");
    });
    const timer = setTimeout(() => finish("timeout"), Math.max(0, deadline - Date.now()));
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) finish("aborted");
  });
}

/** waitForNews as a stream: progress lines while it waits, then the result (workers.waitStream). */
export async function* waitStream(src: WaitSource, input: Input, signal?: AbortSignal): AsyncGenerator<WaitStreamItem> {
  const notes: WaitStreamItem[] = [];
  let wake: (() => void) | null = null;
  let done: { result: WaitResult } | { error: unknown } | null = null;
  void waitForNews(src, input, {
    signal,
    // `note` ready to show for clients that read only it (MCP bridges before `line`); `line` its parts.
    onNote: (line) => {
      notes.push({ note: noteLine(line), line });
      wake?.();
    },
    onFollow: (following) => {
      notes.push({ following });
      wake?.();
    },
  }).then(
    (result) => {
      done = { result };
      wake?.();
    },
    (error: unknown) => {
      done = { error };
      wake?.();
    },
  );
  for (;;) {
    while (notes.length) yield notes.shift()!;
    if (done) {
      const d = done as { result: WaitResult } | { error: unknown };
      if ("error" in d) throw d.error;
      yield { result: d.result };
      return;
    }
    await new Promise<void>((r) => (wake = r));
    wake = null;
  }
}
