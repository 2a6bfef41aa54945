// A bounded wait done by the engine (`workers.wait`, `workers.waitStream`): the caller names its workers (or a batch)
// and what it has already been shown; the engine answers once there is news for it — a new ask, a worker finished
// since, every worker at rest — or at the timeout, with slim pictures of exactly the fields a waiting client reads.
// One request per wait, and no stream of every engine event across the socket (the MCP bridge's `wait`).
import { z } from "zod";
import { BatchSummary } from "./batch";
import type { EngineEvent } from "./events";
import { PermissionAsk } from "./permission";
import { Outcome } from "./verdict";
import { Usage, workerTitle, WorkerState } from "./worker";

const ids = (what: string) => z.array(z.string().min(1, `${what}: an id is empty`).max(200)).max(10_000);

export const WaitInput = z
  .object({
    /** These workers (ids as given; each must exist)… */
    workerIds: z.array(z.string().min(1, "workerIds: an id is empty").max(200)).min(1, "workerIds is empty: give at least one id").max(10_000).optional(),
    /** …or a batch's (its workers as the batch goes on: tasks that come after others, the integration checks). */
    batchId: z.string().min(1, "batchId is empty").max(200).optional(),
    /** With workerIds: only those not at rest (all of them when every one is), e.g. a session's own workers. */
    unfinished: z.boolean().optional(),
    /** Asks the caller was shown already: not news. */
    shownAsks: ids("shownAsks").default([]),
    /** Workers the caller was shown finished already: not news. */
    shownFinished: ids("shownFinished").default([]),
    /** How long to wait for news (0: answer with the pictures as they are now). */
    timeoutMs: z.number().int().min(0).max(600_000),
    /** The wait also ends (as news) once this ask is no longer pending: a form shown for it is withdrawn then. */
    untilGone: z.string().min(1).max(200).optional(),
    /** Whether the pending asks carry their diffs (an edit's change; a form shows it): default true. */
    diffs: z.boolean().default(true),
    /** Pictures of these workers too, when the wait ends with every waited worker at rest (a session's totals). */
    also: ids("also").optional(),
  })
  .strict()
  .refine((x) => !x.workerIds !== !x.batchId, { message: "give workerIds or batchId (one of them)" });
export type WaitInput = z.input<typeof WaitInput>;

/** The fields of a worker a wait reads: state, its pending asks, verdict, totals, title, workspace (for relative paths). */
export const WaitWorker = z.object({
  id: z.string(),
  /** Its title (shared/worker.ts workerTitle), not the whole task. */
  title: z.string(),
  batchId: z.string().nullable(),
  state: WorkerState,
  /** Its workspace while an ask is pending (what an ask's paths are made relative to); null otherwise. */
  worktree: z.string().nullable(),
  /** Pending asks only. */
  asks: z.array(PermissionAsk),
  usage: Usage,
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  stalled: z.boolean(),
  verdict: z.object({ verdict: Outcome, honest: z.boolean() }).nullable(),
});
export type WaitWorker = z.infer<typeof WaitWorker>;

/** A batch's summary as a wait reads it: its rates and state, without the per-task and per-worker lists. */
export const WaitBatch = BatchSummary.omit({ name: true, workerIds: true, states: true, tasks: true }).extend({
  /** Its tasks (its workers, for batches from before tasks were recorded). */
  total: z.number(),
});
export type WaitBatch = z.infer<typeof WaitBatch>;

export function slimBatch(b: BatchSummary): WaitBatch {
  const { name: _name, workerIds, states: _states, tasks, ...rest } = b;
  return { ...rest, total: tasks.length || workerIds.length };
}

export const WaitResult = z.object({
  /** The workers waited on (a batch's as they were when the wait began to follow them). */
  workerIds: z.array(z.string()),
  /** settled: every one at rest; news: a new ask or a worker finished since; timeout; aborted: the request was cancelled. */
  reason: z.enum(["settled", "news", "timeout", "aborted"]),
  workers: z.array(WaitWorker),
  batch: WaitBatch.nullable(),
  also: z.array(WaitWorker),
});
export type WaitResult = z.infer<typeof WaitResult>;

/** What `workers.waitStream` sends: the workers it follows, progress lines while it waits, then the result once. */
export type WaitStreamItem = { following: string[] } | { note: string } | { result: WaitResult };

export function slimWorker(
  w: {
    id: string;
    spec: { task: string; title?: string };
    batchId: string | null;
    state: WorkerState;
    worktree: string | null;
    asks: PermissionAsk[];
    usage: Usage;
    startedAt: number | null;
    endedAt: number | null;
    stalled: boolean;
    verdict: { verdict: Outcome; honest: boolean } | null;
  },
  opts: { diffs?: boolean } = {},
): WaitWorker {
  const pending = w.asks
    .filter((a) => a.status === "pending")
    .map((a) => {
      if (opts.diffs !== false || a.diff === undefined) return a;
      const { diff: _diff, ...rest } = a;
      return rest;
    });
  return {
    id: w.id,
    title: workerTitle(w.spec),
    batchId: w.batchId,
    state: w.state,
    worktree: pending.length ? w.worktree : null,
    asks: pending,
    usage: w.usage,
    startedAt: w.startedAt,
    endedAt: w.endedAt,
    stalled: w.stalled,
    verdict: w.verdict ? { verdict: w.verdict.verdict, honest: w.verdict.honest } : null,
  };
}

const byText = (by: { kind: string; name?: string } | undefined) => (by ? `${by.kind}${by.name ? ":" + by.name : ""}` : null);

/** A one-line progress note for an event of a followed worker, or null when it is not worth showing. */
export function describeEvent(e: EngineEvent, followed: { has(id: string): boolean }): string | null {
  if (!("workerId" in e) || !followed.has(e.workerId)) return null;
  switch (e.type) {
    case "worker.state":
      return `${e.workerId} ${e.state}${e.reason ? `: ${e.reason}` : ""}`;
    case "ask.opened":
      return `${e.workerId} asks ${e.ask.tool}: ${e.ask.what}`;
    case "ask.resolved":
      return `${e.workerId} ask ${e.status}${e.decision ? ` (${e.decision})` : ""}${e.by ? ` by ${byText(e.by)}` : ""}`;
    case "part":
      return e.part.kind === "tool" && e.part.status !== "running" && e.part.status !== "pending" ? `${e.workerId} ${e.part.tool} ${e.part.status}` : null;
    case "verdict":
      return `${e.workerId} verdict ${e.verdict.verdict}${e.verdict.honest ? "" : " (claim did not match)"}`;
    case "stalled":
      return `${e.workerId} idle for ${e.idleSec}s`;
    default:
      return null;
  }
}
