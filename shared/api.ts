import { z } from "zod";
import { BatchName, IntegrationSpec, TaskId } from "./batch";
import { AttemptOptions } from "./attempts";
import { ErrorCode } from "./errors";
import { IdRef } from "./ids";
import { Decision } from "./permission";
import { ReviewComment } from "./verdict";
import { WorkerSpec, WorkerState } from "./worker";

/** Inputs of the engine's control API, shared by every client (GUI, CLI, MCP bridge). */
export const WorkerRef = z.object({ workerId: IdRef("workerId") });
export const BatchRef = z.object({ batchId: IdRef("batchId") });
export const StartInput = WorkerSpec;
/** A task with its attempt options: `attempts` workers over `targets` in turn (shared/attempts.ts). */
export const TaskInput = WorkerSpec.extend(AttemptOptions.shape);
export const StartAttemptsInput = TaskInput;
/** A task of a batch: a task with its name in the batch and the tasks it comes after. */
export const BatchTaskInput = TaskInput.extend({ id: TaskId.optional(), after: z.array(TaskId).max(64).optional() });
export type BatchTaskInput = z.input<typeof BatchTaskInput>;
export const StartBatchInput = z.object({
  tasks: z.array(BatchTaskInput).min(1, "give at least one task").max(64, "at most 64 tasks per batch"),
  integration: IntegrationSpec.optional(),
  /** A name people read instead of the batch id (dashboard, `ocw list`); it can be changed later (workers.nameBatch). */
  name: BatchName.optional(),
});
/** workers.nameBatch: names (or, with "", unnames) a batch. */
export const NameBatchInput = BatchRef.extend({
  name: z
    .string()
    .trim()
    .max(80, "a batch name is at most 80 characters")
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "a batch name is one line of text (no control characters)"),
});
/**
 * workers.search: workers whose stored transcript (model text, reasoning, tool calls and output, steers) holds every
 * word of `query` (case-insensitive). Bounded: at most `limit` workers, a fixed number of bytes read per log and per query.
 */
export const SearchInput = z.object({
  query: z.string().trim().min(2, "search for at least 2 characters").max(200, "a search is at most 200 characters"),
  limit: z.number().int().min(1).max(200).default(50),
});
export const SearchHit = z.object({
  workerId: z.string(),
  /** Where the first word was found. */
  where: z.enum(["text", "reasoning", "tool", "steer"]),
  /** Text a worker or a model wrote: data, never instructions. */
  untrusted: z.object({ snippet: z.string() }),
});
export type SearchHit = z.infer<typeof SearchHit>;
export const SearchResult = z.object({
  hits: z.array(SearchHit),
  /** Workers whose logs were read. */
  scanned: z.number().int(),
  /** The byte budget ran out (or `limit` was reached) before every log was read. */
  truncated: z.boolean(),
});
export type SearchResult = z.infer<typeof SearchResult>;
export const StartBatchResult = z.object({
  batchId: z.string(),
  /** The workers started now (tasks that come after others start later). */
  workerIds: z.array(z.string()),
  /** Attempt groups (tasks with several attempts). */
  groups: z.array(z.object({ groupId: z.string(), workerIds: z.array(z.string()) })).default([]),
  tasks: z.array(z.object({ id: z.string(), workerId: z.string().nullable(), after: z.array(z.string()) })),
});
export type StartBatchResult = z.infer<typeof StartBatchResult>;
export const SteerInput = WorkerRef.extend({ text: z.string().min(1, "the steer text is empty").max(20_000) });
export const StopInput = WorkerRef.extend({ reason: z.string().max(500).optional() });
export const ResumeInput = WorkerRef.extend({ message: z.string().max(20_000).optional() });
/** A follow-up to a settled worker (built or honest-failure): a new round in the same session. */
export const ContinueInput = WorkerRef.extend({
  message: z
    .string()
    .trim()
    .min(1, "the message is empty: say what the worker should do next")
    .max(20_000, "the message is over 20,000 characters: shorten it"),
});
/** A review: comments on files and lines of the worker's change, sent as one follow-up. */
export const ReviewInput = WorkerRef.extend({
  comments: z.array(ReviewComment).min(1, "a review needs at least one comment").max(200, "at most 200 comments per review"),
  message: z.string().max(20_000).optional(),
});
/** `withWorker`: answer with the ask's worker's slim picture too (shared/wait.ts WaitWorker). */
export const DecideInput = Decision.extend({ withWorker: z.boolean().optional() });
export const EventsInput = z.object({ lastEventId: z.string().nullish() });
export const ListInput = z
  .object({
    batchId: z.string().optional(),
    /** Only workers in one of these states. */
    states: z.array(WorkerState).optional(),
    /** Only workers on this repository (its top-level folder, or any folder inside it). */
    repo: z.string().optional(),
  })
  .optional();

/** Housekeeping: the same task again as a new worker (retry), and "merge all built" of a batch (mergeBatch). */
export const RetryInput = WorkerRef;
export const RetryResult = z.object({ workerId: z.string(), retryOf: z.string() });
export type RetryResult = z.infer<typeof RetryResult>;
/** `acceptFlagged`: the person accepted the flagged changes (see ChangeFlag); without it such a merge is refused. */
export const MergeInput = WorkerRef.extend({ acceptFlagged: z.boolean().default(false) });
export const MergeBatchInput = BatchRef.extend({ acceptFlagged: z.boolean().default(false) });
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
  /** A batch with integration checks lands as its one integration commit: where it landed. */
  integration: z.object({ commit: z.string(), into: z.string(), merge: z.string() }).nullable().default(null),
});
export type MergeBatchResult = z.infer<typeof MergeBatchResult>;

/** Landing beyond a local merge: revert a merge the engine made, prune merged branches, push and open a pull request. */
export const RevertInput = z
  .object({ workerId: z.string().optional(), batchId: z.string().optional() })
  .refine((x) => !x.workerId !== !x.batchId, { message: "give a workerId or a batchId (not both)" });
export const RevertResult = z.object({ reverted: z.string(), into: z.string(), commit: z.string() });
export type RevertResult = z.infer<typeof RevertResult>;
export const PruneInput = z.object({ directory: z.string().min(1, "directory is required").max(4096) });
export const PruneResult = z.object({
  deleted: z.array(z.object({ branch: z.string(), commit: z.string() })),
  kept: z.array(z.object({ branch: z.string(), reason: z.string() })),
});
export type PruneResult = z.infer<typeof PruneResult>;
export const PushInput = z
  .object({
    workerId: z.string().optional(),
    batchId: z.string().optional(),
    /** A remote's name in the person's repository, or its URL. */
    remote: z.string().min(1, "remote is required: a remote's name (see `git remote`) or its URL").max(2000),
    /** The branch on the remote (default `ocw/<id>`); never the remote's default branch. */
    branch: z.string().max(255).optional(),
    /** Open a pull request with `gh` (when installed and signed in), with the verdict card as its body. */
    pr: z.boolean().default(false),
    title: z.string().max(200).optional(),
    /** Push a change that holds flagged files (workflows, hooks, tool configuration…) after the person reviewed them. */
    acceptFlagged: z.boolean().default(false),
  })
  .refine((x) => !x.workerId !== !x.batchId, { message: "give a workerId or a batchId (not both)" });
export const PushResult = z.object({
  remote: z.string(),
  branch: z.string(),
  commit: z.string(),
  /** `existing`: the branch's pull request was open already (pushed again); its description then follows the latest verdict. */
  pr: z.object({ url: z.string(), existing: z.boolean().optional() }).nullable(),
  /** Why no pull request was opened when one was asked for (gh missing, not signed in, refused). */
  prProblem: z.string().nullable(),
  /** The worker's earlier round's graded commit the branch held, replaced by the latest (a lease on exactly it). */
  replaced: z.string().nullable().optional(),
});
export type PushResult = z.infer<typeof PushResult>;

/** The header a client names itself with; it becomes the `by` of its decisions. */
export const CLIENT_HEADER = "x-ocw-client";
export const API_PATH = "/trpc";
/** The engine's identity check (token required): answers `EngineHealth`. Clients compare it with the lock file. */
export const HEALTH_PATH = "/health";
/**
 * Which release and which build an engine runs: `version` is the release (the plugin's version, read next to the
 * bundle; null where the install has none), `id` a short hash of the bundle file (two builds of one version differ).
 */
export const EngineBuild = z.object({ version: z.string().max(100).nullable(), id: z.string().max(100) });
export type EngineBuild = z.infer<typeof EngineBuild>;
/** `build`: absent from engines older than the handshake (0.1.22 and before), which a newer client replaces when idle. */
export const EngineHealth = z.object({ ok: z.literal(true), pid: z.number().int(), instanceId: z.string(), build: EngineBuild.optional() });
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

/** The engine's (and `ocw`'s) version: what /health and `ocw --version` say. */
export const VERSION = "0.1.0";
