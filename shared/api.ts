import { z } from "zod";
import { AttemptOptions } from "./attempts";
import { ErrorCode } from "./errors";
import { Decision } from "./permission";
import { ReviewComment } from "./verdict";
import { WorkerSpec } from "./worker";

/** Inputs of the engine's control API, shared by every client (GUI, CLI, MCP bridge). */
export const WorkerRef = z.object({ workerId: z.string().min(1, "workerId is required") });
export const BatchRef = z.object({ batchId: z.string().min(1, "batchId is required") });
export const StartInput = WorkerSpec;
/** A task with its attempt options: `attempts` workers over `targets` in turn (shared/attempts.ts). */
export const TaskInput = WorkerSpec.extend(AttemptOptions.shape);
export const StartAttemptsInput = TaskInput;
export const StartBatchInput = z.object({ tasks: z.array(TaskInput).min(1, "give at least one task").max(64, "at most 64 tasks per batch") });
export const SteerInput = WorkerRef.extend({ text: z.string().min(1, "the steer text is empty").max(20_000) });
export const StopInput = WorkerRef.extend({ reason: z.string().max(500).optional() });
export const ResumeInput = WorkerRef.extend({ message: z.string().max(20_000).optional() });
/** A follow-up to a settled worker (built or honest-failure): a new round in the same session. */
export const ContinueInput = WorkerRef.extend({ message: z.string().trim().min(1, "the message is empty: say what the worker should do next").max(20_000, "the message is over 20,000 characters: shorten it") });
/** A review: comments on files and lines of the worker's change, sent as one follow-up. */
export const ReviewInput = WorkerRef.extend({
  comments: z.array(ReviewComment).min(1, "a review needs at least one comment").max(200, "at most 200 comments per review"),
  message: z.string().max(20_000).optional(),
});
export const DecideInput = Decision;
export const EventsInput = z.object({ lastEventId: z.string().nullish() });
export const ListInput = z.object({ batchId: z.string().optional() }).optional();

/** Housekeeping: the same task again as a new worker (retry), and "merge all built" of a batch (mergeBatch). */
export const RetryInput = WorkerRef;
export const RetryResult = z.object({ workerId: z.string(), retryOf: z.string() });
export type RetryResult = z.infer<typeof RetryResult>;
export const MergeBatchInput = BatchRef;
export const MergeBatchResult = z.object({
  batchId: z.string(),
  /** Merged, in submission order. */
  merged: z.array(z.object({ workerId: z.string(), commit: z.string(), into: z.string() })),
  /** The worker whose merge was refused (a conflict, a moved base, …) with the engine's reason; the rest were not tried. */
  stopped: z.object({ workerId: z.string(), reason: z.string(), code: ErrorCode }).nullable(),
  /** Built workers after the one that stopped it, left as they are. */
  notTried: z.array(z.string()),
  /** Workers of the batch that are not for merging: not built, still running, already merged, discarded. */
  skipped: z.array(z.object({ workerId: z.string(), reason: z.string() })),
});
export type MergeBatchResult = z.infer<typeof MergeBatchResult>;

/** The header a client names itself with; it becomes the `by` of its decisions. */
export const CLIENT_HEADER = "x-ocw-client";
export const API_PATH = "/trpc";
/** The engine's identity check (token required): answers `EngineHealth`. Clients compare it with the lock file. */
export const HEALTH_PATH = "/health";
export const EngineHealth = z.object({ ok: z.literal(true), pid: z.number().int(), instanceId: z.string() });
export type EngineHealth = z.infer<typeof EngineHealth>;

/** The lock file every client finds the engine through. */
export const EngineLock = z.object({
  pid: z.number().int(),
  /** The kernel's start time of `pid` (null where the OS gives none): a reused pid is not the engine. */
  startTime: z.string().nullable(),
  /** Random per engine process; its /health answers the same one. */
  instanceId: z.string().min(1),
  /** The process that restarts the engine when it dies (engines started by a client run under one). */
  supervisorPid: z.number().int().optional(),
  supervisorStartTime: z.string().nullable().optional(),
  port: z.number().int(),
  token: z.string(),
  version: z.string(),
  startedAt: z.number(),
});
export type EngineLock = z.infer<typeof EngineLock>;
