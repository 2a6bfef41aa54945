import { z } from "zod";
import { AttemptOptions } from "./attempts";
import { CheckResult, CheckSpec } from "./check";
import { Budget, WorkerState } from "./worker";

/** A task's name inside its batch (what `after` refers to). */
export const TaskId = z
  .string()
  .min(1, "a task id is empty")
  .max(64, "a task id is over 64 characters")
  .regex(/^[A-Za-z0-9._-]+$/, "a task id may hold letters, digits, '.', '_' and '-' only");

/** A batch's name, read by people instead of its id: one line, 1–80 characters. */
export const BatchName = z
  .string()
  .trim()
  .min(1, "the batch name is empty")
  .max(80, "a batch name is at most 80 characters")
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "a batch name is one line of text (no control characters)");

/** One task of a batch file / delegate_batch call. `dir` and `directory` are accepted alike. */
export const BatchTask = z
  .object({
    /** Its name in the batch, for `after` (default: its position, "1", "2", …). */
    id: TaskId.optional(),
    /** Tasks it starts after: only once they are built, from the base plus their graded commits. */
    after: z.array(TaskId).max(64).default([]),
    task: z.string(),
    dir: z.string().optional(),
    directory: z.string().optional(),
    checks: z.array(CheckSpec).default([]),
    scope: z.array(z.string()).default([]),
    protect: z.array(z.string()).default([]),
    budget: Budget.default({}),
    title: z.string().optional(),
    /** Fix rounds (opt-in): on honest-failure the engine sends the failing checks back, at most this many times. */
    fixRounds: z.number().int().min(0).max(10).optional(),
    /** Attempts of this task (shared/attempts.ts): `attempts` workers over `targets` in turn; the checks pick the winner. */
    ...AttemptOptions.shape,
  })
  .refine((t) => t.dir || t.directory, { message: "each task needs `dir` (absolute path to a git repository)" });
export type BatchTask = z.infer<typeof BatchTask>;

/** Checks of the batch as a whole, run on the built workers' graded commits combined (the integration commit). */
export const IntegrationSpec = z.object({ checks: z.array(CheckSpec).min(1, "integration needs at least one check").max(100) }).strict();
export type IntegrationSpec = z.infer<typeof IntegrationSpec>;

/** A batch file: the array of tasks, or `{tasks, integration?}`. */
export const BatchFile = z.union([
  z.array(BatchTask).min(1, "the batch is empty"),
  z.object({ name: BatchName.optional(), tasks: z.array(BatchTask).min(1, "the batch is empty"), integration: IntegrationSpec.optional() }).strict(),
]);
export type BatchFile = z.infer<typeof BatchFile>;

/** A task that never started, and why (a task it comes after was not built). */
export const SkippedTask = z.object({ id: z.string(), reason: z.string() });
export type SkippedTask = z.infer<typeof SkippedTask>;

/** The integration verdict of a batch: its built workers' graded commits combined in task order, checked together. */
export const IntegrationResult = z.object({
  passed: z.boolean(),
  /** The combined commit (parent: the batch's base); null when combining failed. `ocw merge --batch` lands it. */
  commit: z.string().nullable(),
  base: z.string(),
  /** The workers whose graded commits it combines, in task order. */
  workers: z.array(z.string()),
  /**
   * Their graded commits, in the same order (absent in records from before): a worker continued since (a new round) or
   * discarded no longer matches, and the integration runs again before anything lands.
   */
  commits: z.array(z.string()).optional(),
  checks: z.array(CheckResult),
  /** Combining conflicted: the worker whose commit did not combine, and the files. */
  conflict: z.object({ workerId: z.string(), files: z.array(z.string()) }).nullable(),
  /** Why it did not pass, in one line (a conflict, a failed check, no built worker). */
  reason: z.string().nullable(),
  at: z.number(),
  /** Where it landed (ocw merge --batch), or null. */
  landed: z.object({ into: z.string(), commit: z.string() }).nullable().default(null),
});
export type IntegrationResult = z.infer<typeof IntegrationResult>;

/** One task of a batch as the engine tracks it: its worker once started, or why it never will. */
export const BatchTaskStatus = z.object({
  id: z.string(),
  after: z.array(z.string()),
  title: z.string(),
  workerId: z.string().nullable(),
  skipped: z.string().nullable(),
});
export type BatchTaskStatus = z.infer<typeof BatchTaskStatus>;

export const BatchSummary = z.object({
  id: z.string(),
  /** Its name (people read it instead of the id), or null. */
  name: z.string().nullable().default(null),
  workerIds: z.array(z.string()),
  states: z.record(z.string(), WorkerState),
  settled: z.boolean(),
  built: z.number(),
  honest: z.number(),
  graded: z.number(),
  builtRate: z.number().nullable(),
  honestRate: z.number().nullable(),
  verdict: z.enum(["built", "honest-failure"]).nullable(),
  /** The batch's tasks, with their dependencies (empty for batches from before dependencies). */
  tasks: z.array(BatchTaskStatus).default([]),
  skipped: z.array(SkippedTask).default([]),
  /** Null without integration checks; `state` says where it is. */
  integration: z
    .object({ state: z.enum(["waiting", "running", "done"]), checks: z.number(), result: IntegrationResult.nullable() })
    .nullable()
    .default(null),
  /** Every task ended or skipped, and the integration (when given) done. */
  done: z.boolean().default(false),
});
export type BatchSummary = z.infer<typeof BatchSummary>;
