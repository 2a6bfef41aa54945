import { z } from "zod";
import { AttemptOptions } from "./attempts";
import { CheckSpec } from "./check";
import { Budget, WorkerState } from "./worker";

/** One task of a batch file / delegate_batch call. `dir` and `directory` are accepted alike. */
export const BatchTask = z
  .object({
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

export const BatchSummary = z.object({
  id: z.string(),
  workerIds: z.array(z.string()),
  states: z.record(z.string(), WorkerState),
  settled: z.boolean(),
  built: z.number(),
  honest: z.number(),
  graded: z.number(),
  builtRate: z.number().nullable(),
  honestRate: z.number().nullable(),
  verdict: z.enum(["built", "honest-failure"]).nullable(),
});
export type BatchSummary = z.infer<typeof BatchSummary>;
