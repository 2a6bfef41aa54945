// Tool inputs and outputs of the MCP bridge. Inputs reuse the contract in shared/ (one shape for checks, specs and
// decisions everywhere); outputs are what the model reads, so their field names are part of the contract too.
import { z } from "zod";
import { WorkerSpec, WorkerState } from "../../shared/worker";
import { Outcome } from "../../shared/verdict";
import { DecisionKind } from "../../shared/permission";

/**
 * The schema the SDK sees for a tool's input: it advertises `strict`'s JSON Schema to the model, but accepts any
 * object, so that the handler validates with `strict` and answers with a message that says what to fix (the SDK's
 * own validation error reads "Invalid arguments for tool …: … at path").
 */
export function advertised(strict: z.ZodObject) {
  const { $schema: _drop, ...json } = z.toJSONSchema(strict, { target: "draft-7", io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return z.looseObject({}).meta(json);
}

export { firstIssue } from "../../shared/issues";

// ---------- inputs ----------

export const EmptyInput = z.object({}).strict();

/** Engine ids (w-…, b-…, a-…) are short: a long one is refused here with a message that says where real ids are. */
const ID_MAX = 200;
const id = (required?: string) => z.string().min(1, required).max(ID_MAX, `too long for an id (over ${ID_MAX} characters): use an id from workers or pending_approvals`);

const spec = WorkerSpec.shape;

export const DelegateInput = z
  .object({
    task: spec.task.describe(
      "Self-contained instructions: the goal, the exact files to create or change, the interfaces/signatures to honour, and what 'done' means. The worker sees only this text and the repository.",
    ),
    directory: spec.directory.describe("Absolute path of the git repository to work on (the worker gets its own worktree and branch; your checkout is not touched)."),
    checks: spec.checks.describe(
      'Held-back checks the worker never sees; they decide the verdict. Each is {"run": "shell command", expectExit?, timeoutSec?} (run in the worktree) or {"file": "relative/path", exists?, equals?, matches?}.',
    ),
    scope: spec.scope.describe('Globs of the files the worker may change, e.g. ["src/parser/**"]. A change outside them fails the verdict.'),
    protect: spec.protect.describe('Globs the worker must not change, e.g. ["test/**"]. A change to them fails the verdict.'),
    budget: spec.budget.describe("Limits: {wallSec?, tokens?}."),
    title: spec.title.describe("A short label shown in the dashboard."),
    targetId: spec.targetId.describe("Run on this saved target instead of the active one (setup_status shows the active target)."),
  })
  .strict();

export const DelegateBatchInput = z
  .object({
    tasks: z
      .array(DelegateInput)
      .min(1, "give at least one task")
      .max(64, "at most 64 tasks per batch")
      .describe("Independent tasks, each with its own disjoint `scope`; they run concurrently up to the target's free slots."),
  })
  .strict();

export const WorkersInput = z
  .object({
    batchId: id().optional().describe("Only the workers of this batch."),
    directory: z
      .string()
      .max(4096)
      .optional()
      .describe("Only workers on this repository (absolute path; any folder of it): finds workers delegated in earlier sessions."),
    active: z.boolean().optional().describe("Only workers that have not finished (default: all)."),
    limit: z.number().int().min(1).max(200).optional().describe("At most this many, newest first (default 30)."),
  })
  .strict();

export const WorkerRefInput = z.object({ workerId: id("workerId is required (see the workers tool)").describe("The worker's id, e.g. w-…") }).strict();

export const WAIT_MAX_SEC = 100;
export const WAIT_DEFAULT_SEC = 50;

export const WaitInput = z
  .object({
    workerId: id().optional().describe("Wait on this worker…"),
    workerIds: z.array(id()).min(1, "workerIds is empty: give at least one id, or leave it out").max(200).optional().describe("…or on several workers (returns on the first ask or the first that finishes)…"),
    batchId: id().optional().describe("…or on every worker of this batch. Give none of the three to wait on the unfinished workers this session delegated."),
    timeoutSec: z
      .number()
      .positive("timeoutSec must be a positive number of seconds")
      .meta({ maximum: WAIT_MAX_SEC })
      .optional()
      .describe(`Longest wait in seconds (default ${WAIT_DEFAULT_SEC}, at most ${WAIT_MAX_SEC}; larger values are capped). Returns earlier when an approval is pending or everything settled.`),
    elicit: z.boolean().optional().describe("When the client supports forms, show the person a form for a pending approval before returning (default true)."),
  })
  .strict();

export const PendingInput = z
  .object({
    workerId: id().optional().describe("Only this worker's asks."),
    batchId: id().optional().describe("Only this batch's asks."),
  })
  .strict();

export const ApproveInput = z
  .object({
    askId: id("askId is required (see pending_approvals)").describe("The ask's id from wait / pending_approvals."),
    decision: z
      .string()
      .meta({ enum: DecisionKind.options })
      .describe('"once" allows this request, "always" allows this pattern for the rest of the worker\'s run, "reject" refuses it (the worker is told to carry on without it).'),
    message: z.string().max(4000).optional().describe("A note to the worker, sent with the answer (with a rejection: why, and what to do instead)."),
    answers: z.array(z.array(z.string())).optional().describe("For a question ask: the chosen option labels (or free text), one array per question."),
  })
  .strict();

export const SteerToolInput = z
  .object({
    workerId: id("workerId is required"),
    text: z.string().describe("What the worker should do differently; it reaches the worker at its next step."),
  })
  .strict();

export const StopToolInput = z.object({ workerId: id("workerId is required"), reason: z.string().max(500).optional() }).strict();

export const ResumeToolInput = z
  .object({
    workerId: id("workerId is required"),
    message: z.string().max(20_000).optional().describe("Extra instructions for the continued run (e.g. what to fix)."),
  })
  .strict();

export const RESULT_TOTAL_CHARS = 40_000;

export const DIFF_DEFAULT_CHARS = 20_000;
export const DIFF_MAX_CHARS = 40_000;

export const DiffInput = z
  .object({
    workerId: id("workerId is required (see the workers tool)"),
    file: z.string().max(4096).optional().describe("Only this file's part of the diff (a path relative to the repository)."),
    offset: z.number().int().min(0).optional().describe("Character offset to read from (see nextOffset)."),
    maxChars: z.number().int().min(500).max(DIFF_MAX_CHARS).optional().describe(`Characters per page (default ${DIFF_DEFAULT_CHARS}, at most ${DIFF_MAX_CHARS}).`),
  })
  .strict();

export const ResultInput = z
  .object({
    workerId: id("workerId is required (see the workers tool)"),
    page: z.number().int().min(1).optional().describe("Page of checks, from 1 (default 1)."),
    pageSize: z.number().int().min(1).max(50).optional().describe("Checks per page (default 20)."),
    maxChars: z.number().int().min(200).max(20_000).optional().describe("Characters of each check's output (default 1500: its start and end)."),
    check: z.number().int().min(0).optional().describe("Show only this check (0-based index), with `offset` paging through its whole output."),
    offset: z.number().int().min(0).optional().describe("With `check`: the character offset to read its output from."),
  })
  .strict();

// ---------- outputs ----------

export const PendingItem = z.object({
  askId: z.string(),
  workerId: z.string(),
  tool: z.string(),
  what: z.string(),
  /** A bash command's folder as the worker gave it (absent: the worker's own folder). */
  workdir: z.string().optional(),
});
export type PendingItem = z.infer<typeof PendingItem>;

export const WorkerSummary = z.object({
  workerId: z.string(),
  title: z.string(),
  state: WorkerState,
  reason: z.string().nullable(),
  batchId: z.string().nullable(),
  directory: z.string(),
  pending: z.array(PendingItem),
  lastActivity: z.object({ summary: z.string(), agoSec: z.number() }).nullable(),
  currentTool: z.string().nullable(),
  stalled: z.boolean(),
  elapsedSec: z.number(),
  verdict: Outcome.nullable(),
  honest: z.boolean().nullable(),
});
export type WorkerSummary = z.infer<typeof WorkerSummary>;

export const Slots = z.object({
  total: z.number(),
  inUse: z.number(),
  free: z.number(),
  queued: z.number(),
});
export type Slots = z.infer<typeof Slots>;

export const SetupStatusOutput = z.object({
  ready: z.boolean(),
  problem: z.string().nullable(),
  engine: z.object({ version: z.string(), pid: z.number(), stateDir: z.string() }),
  activeTarget: z
    .object({
      id: z.string(),
      model: z.string(),
      quant: z.string().nullable(),
      endpoint: z.string(),
      engine: z.string(),
      slots: z.number(),
      perSlotCtx: z.number().nullable(),
      outcome: z.string().nullable(),
      verifiedAt: z.string().nullable(),
      reachable: z.boolean(),
      reachDetail: z.string(),
    })
    .nullable(),
  serving: z.array(z.object({ targetId: z.string(), ready: z.boolean(), url: z.string().nullable() })),
  slots: Slots,
  pendingApprovals: z.number(),
  workers: z.record(z.string(), z.number()),
  warnings: z.array(z.string()),
  hardware: z
    .object({
      cpu: z.string(),
      cores: z.number(),
      ramGiB: z.number(),
      gpus: z.array(z.object({ name: z.string(), vendor: z.string(), vramGiB: z.number(), freeGiB: z.number().nullable(), unified: z.boolean() })),
      problems: z.array(z.string()),
    })
    .nullable(),
  next: z.string(),
});

export const DelegateOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  directory: z.string(),
  checks: z.number(),
  slots: Slots,
  warnings: z.array(z.string()),
  next: z.string(),
});

export const DelegateBatchOutput = z.object({
  batchId: z.string(),
  workerIds: z.array(z.string()),
  slots: Slots,
  warnings: z.array(z.string()),
  next: z.string(),
});

export const BatchStats = z.object({
  batchId: z.string(),
  settled: z.boolean(),
  built: z.number(),
  honest: z.number(),
  graded: z.number(),
  total: z.number(),
  builtRate: z.number().nullable(),
  honestRate: z.number().nullable(),
  verdict: Outcome.nullable(),
});

export const WorkersOutput = z.object({
  workers: z.array(WorkerSummary),
  total: z.number(),
  counts: z.record(z.string(), z.number()),
  pendingApprovals: z.number(),
  slots: Slots,
});

export const WorkerStatusOutput = WorkerSummary.extend({
  task: z.string(),
  targetId: z.string().nullable(),
  branch: z.string().nullable(),
  worktree: z.string().nullable(),
  steers: z.number(),
  toolFailures: z.number(),
  usage: z.object({ input: z.number(), output: z.number(), reasoning: z.number(), cost: z.number() }),
  recent: z.array(z.string()),
  next: z.string(),
});

export const WaitOutput = z.object({
  state: z.string(),
  settled: z.boolean(),
  reason: z.enum(["settled", "approval-pending", "worker-settled", "timeout", "cancelled"]),
  pending: z.array(PendingItem),
  workers: z.array(WorkerSummary),
  batch: BatchStats.nullable(),
  answeredInForm: z.array(z.object({ askId: z.string(), decision: z.string() })),
  waitedSec: z.number(),
  timeoutSec: z.number(),
  /** Set when timeoutSec was lowered (the cap, or the client's own tool timeout). */
  note: z.string().nullable(),
  next: z.string(),
});

export const PendingApprovalsOutput = z.object({
  pending: z.array(
    PendingItem.extend({
      kind: z.enum(["permission", "question"]),
      title: z.string(),
      ageSec: z.number(),
      diff: z.string().nullable(),
      patterns: z.array(z.string()),
      always: z.array(z.string()),
      questions: z.array(z.object({ question: z.string(), options: z.array(z.string()), multiple: z.boolean() })).nullable(),
    }),
  ),
  count: z.number(),
  next: z.string(),
});

export const ApproveOutput = z.object({
  askId: z.string(),
  workerId: z.string(),
  status: z.string(),
  decision: z.string().nullable(),
  by: z.string().nullable(),
  workerState: WorkerState,
  next: z.string(),
});

export const ControlOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  reason: z.string().nullable(),
  next: z.string(),
});

export const CheckOut = z.object({
  index: z.number(),
  name: z.string(),
  passed: z.boolean(),
  exitCode: z.number().nullable(),
  timedOut: z.boolean(),
  output: z.string(),
  outputChars: z.number(),
  truncated: z.boolean(),
  nextOffset: z.number().nullable(),
});

export const ResultOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  reason: z.string().nullable(),
  graded: z.boolean(),
  verdict: Outcome,
  claim: Outcome.nullable(),
  claimReason: z.string().nullable(),
  honest: z.boolean(),
  checks: z.array(CheckOut),
  checksTotal: z.number(),
  checksPassed: z.number(),
  page: z.number(),
  pages: z.number(),
  scope: z.object({ passed: z.boolean(), violations: z.array(z.string()), changedFiles: z.array(z.string()) }),
  diffStat: z.string(),
  branch: z.string().nullable(),
  worktree: z.string().nullable(),
  baseBranch: z.string().nullable(),
  mergeHint: z.string().nullable(),
  merged: z.object({ into: z.string(), commit: z.string() }).nullable(),
  discarded: z.boolean(),
  approvals: z.array(z.object({ askId: z.string(), tool: z.string(), what: z.string(), status: z.string(), decision: z.string().nullable(), by: z.string().nullable() })),
  batchId: z.string().nullable(),
  elapsedSec: z.number(),
  next: z.string(),
});

export const DiffOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  base: z.string().nullable(),
  branch: z.string().nullable(),
  files: z.array(z.string()),
  diffStat: z.string(),
  diff: z.string(),
  chars: z.number(),
  offset: z.number(),
  nextOffset: z.number().nullable(),
  next: z.string(),
});

export const MergeOutput = z.object({
  workerId: z.string(),
  into: z.string(),
  commit: z.string(),
  repo: z.string(),
  next: z.string(),
});

export const DiscardOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  discarded: z.boolean(),
  next: z.string(),
});
