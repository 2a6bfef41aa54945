// Tool inputs and outputs of the MCP bridge. Inputs reuse the contract in shared/ (one shape for checks, specs and
// decisions everywhere); outputs are what the model reads, so their field names are part of the contract too.
import { z } from "zod";
import { WorkerSpec, WorkerState } from "../../shared/worker";
import { Outcome } from "../../shared/verdict";
import { IntegrationSpec, TaskId } from "../../shared/batch";
import { DecisionKind } from "../../shared/permission";
import { AttemptOptions, MAX_ATTEMPTS } from "../../shared/attempts";
import { TargetBench } from "../../shared/target";

/**
 * The schema the SDK sees for a tool's input: it advertises `strict`'s JSON Schema to the model, but accepts any
 * object, so that the handler validates with `strict` and answers with a message that says what to fix (the SDK's
 * own validation error reads "Invalid arguments for tool …: … at path").
 */
export function advertised(strict: z.ZodObject, shape?: (json: Record<string, unknown>) => Record<string, unknown>) {
  const { $schema: _drop, ...json } = z.toJSONSchema(strict, { target: "draft-7", io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  const lean = lean_(json) as Record<string, unknown>;
  return z.looseObject({}).meta(shape ? shape(lean) : lean);
}

/**
 * The advertised schema without what only the handler needs: length and count limits, defaults and
 * additionalProperties:false cost the model's context on every request and are enforced (with a message that says
 * what to fix) by the strict parse anyway. Types, enums, required fields and descriptions stay.
 */
const NOT_ADVERTISED = new Set([
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "default",
  "additionalProperties",
]);
function lean_(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lean_);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (NOT_ADVERTISED.has(k) && !(k === "additionalProperties" && v !== false)) continue;
    // Inside `properties` every key is a field name, never a keyword.
    out[k] = k === "properties" && v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([f, s]) => [f, lean_(s)])) : lean_(v);
  }
  return out;
}

export { firstIssue } from "../../shared/issues";

// ---------- inputs ----------

export const EmptyInput = z.object({}).strict();

/** Engine ids (w-…, b-…, a-…) are short: a long one is refused here with a message that says where real ids are. */
const ID_MAX = 200;
const id = (required?: string) =>
  z.string().min(1, required).max(ID_MAX, `too long for an id (over ${ID_MAX} characters): use an id from workers or pending_approvals`);

const spec = WorkerSpec.shape;

export const DelegateInput = z
  .object({
    task: spec.task.describe("Self-contained: goal, exact files, interfaces, constraints, what done means. The worker sees only this and the repository."),
    directory: spec.directory.describe("Absolute path of the git repository (the worker gets its own worktree and branch)."),
    checks: spec.checks.describe(
      "Held-back checks that decide the verdict (the worker never sees them): a command run in the worktree ({run, files?: an absolute folder of held-back tests outside the repository, copied in only at grading}), or a file test.",
    ),
    scope: spec.scope.describe('Globs it may change, relative to directory, e.g. ["src/**"]; others fail the verdict.'),
    protect: spec.protect.describe('Globs it must not change, e.g. ["test/**"].'),
    budget: spec.budget.describe("Limits."),
    title: spec.title.describe("Short label."),
    targetId: spec.targetId.describe("A saved target instead of the active one."),
    fixRounds: spec.fixRounds.describe("On honest-failure, send the failing checks back up to this many times."),
    attempts: AttemptOptions.shape.attempts.describe(`Best-of-N (≤ ${MAX_ATTEMPTS}): the checks pick the winner; the rest stop once one is built.`),
    targets: AttemptOptions.shape.targets.describe("Targets the attempts use in turn."),
    allAttempts: AttemptOptions.shape.allAttempts.describe("Run every attempt to its verdict."),
  })
  .strict();

export const DelegateBatchTask = DelegateInput.extend({
  id: TaskId.optional(),
  after: z.array(TaskId).max(64).optional().describe("Task ids it starts after, from their graded commits; skipped if one is not built."),
}).strict();

export const DelegateBatchInput = z
  .object({
    tasks: z
      .array(DelegateBatchTask)
      .min(1, "give at least one task")
      .max(64, "at most 64 tasks per batch")
      .describe("Tasks with disjoint scopes; those without `after` run at once."),
    integration: IntegrationSpec.optional().describe("Checks run on the built commits combined; merge {batchId} lands that commit."),
    name: z.string().optional(),
  })
  .strict();

/** delegate_batch's task items, advertised once: each item is delegate's input (described there), not a second copy. */
export function batchItemsByReference(json: Record<string, unknown>): Record<string, unknown> {
  const props = json.properties as Record<string, { items?: unknown }>;
  props.tasks = {
    ...props.tasks,
    items: {
      type: "object",
      description:
        'One task: delegate\'s fields (task, directory, checks: [{run: "shell command"} or {file, equals|matches}], scope, protect, budget, title, targetId), id (its name here) and after (ids it starts after once built)',
      properties: { id: { type: "string" }, after: { type: "array", items: { type: "string" } } },
      required: ["task", "directory"],
    },
  };
  // The integration's checks are delegate's checks: advertised by reference too.
  if (props.integration) props.integration = { type: "object", description: (props.integration as { description?: string }).description } as never;
  return json;
}

export const WorkersInput = z
  .object({
    batchId: id().optional().describe("Only the workers of this batch."),
    directory: z.string().max(4096).optional().describe("Only workers on this repository (absolute path), earlier sessions' included."),
    active: z.boolean().optional().describe("Only unfinished workers."),
    limit: z.number().int().min(1).max(200).optional().describe("At most this many, newest first (default 30)."),
  })
  .strict();

export const WorkerRefInput = z.object({ workerId: id("workerId is required (see the workers tool)").describe("w-…") }).strict();

export const WAIT_MAX_SEC = 100;
export const WAIT_DEFAULT_SEC = 50;

export const WaitInput = z
  .object({
    workerId: id().optional().describe("Wait on this worker…"),
    workerIds: z.array(id()).min(1, "workerIds is empty: give at least one id, or leave it out").max(200).optional().describe("…or several…"),
    batchId: id().optional().describe("…or a batch's workers."),
    timeoutSec: z
      .number()
      .positive("timeoutSec must be a positive number of seconds")
      .meta({ maximum: WAIT_MAX_SEC })
      .optional()
      .describe(`Seconds (default ${WAIT_DEFAULT_SEC}, at most ${WAIT_MAX_SEC}).`),
    elicit: z.boolean().optional().describe("Show the person a form for a new ask when the client supports forms (default true)."),
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
    askId: id().optional().describe("The ask's id from wait / pending_approvals…"),
    batchId: id().optional().describe('…or a batch: its unflagged in-scope edits, answered alike ("once"); commands, questions and flagged asks are left.'),
    decision: z.string().meta({ enum: DecisionKind.options }).describe("once | always | reject."),
    message: z.string().max(4000).optional().describe("A note to the worker (with a rejection: why, what instead)."),
    answers: z.array(z.array(z.string())).optional().describe("A question's chosen labels (or free text), one array per question."),
  })
  .strict();

export const SteerToolInput = z
  .object({
    workerId: id("workerId is required"),
    text: z.string().describe("What to do differently."),
  })
  .strict();

export const StopToolInput = z.object({ workerId: id("workerId is required"), reason: z.string().max(500).optional() }).strict();

export const ResumeToolInput = z
  .object({
    workerId: id("workerId is required"),
    message: z.string().max(20_000).optional().describe("What to do next (e.g. what to fix)."),
  })
  .strict();

export const ContinueToolInput = z
  .object({
    workerId: id("workerId is required"),
    message: z.string().min(1, "message is required: say what the worker should do next").max(20_000).describe("What to do next."),
  })
  .strict();

export const ReviewToolInput = z
  .object({
    workerId: id("workerId is required"),
    comments: z
      .array(
        z
          .object({
            file: z.string().min(1, "a comment needs `file`").max(1000),
            line: z.number().int().positive().optional(),
            body: z.string().min(1, "a comment's `body` is empty").max(10_000),
          })
          .strict(),
      )
      .min(1, "give at least one comment")
      .max(200, "at most 200 comments per review")
      .describe("line: of the new version; none for the whole file."),
    message: z.string().max(20_000).optional(),
  })
  .strict();

export const RetryToolInput = z.object({ workerId: id("workerId is required"), newBase: z.boolean().optional() }).strict();

export const RetryOutput = z.object({
  workerId: z.string(),
  retryOf: z.string(),
  state: WorkerState,
  /** newBase: the files the earlier change conflicts in on the base as it is now (the worker's file names). */
  untrusted: z.object({ conflicts: z.array(z.string()) }).optional(),
  next: z.string(),
});

export const RESULT_TOTAL_CHARS = 40_000;
/** Asks in one wait or pending_approvals result (each up to ~5,000 characters with its diff): the rest come after. */
export const PENDING_PAGE = 20;
/** …and at most this many characters of them (an ask made visible can be ~10 times its source). */
export const PENDING_CHARS = 24_000;
/** …and at most this many characters of worker summaries in one `workers` result (the rest: narrow the list). */
export const WORKERS_CHARS = 30_000;

export const DIFF_DEFAULT_CHARS = 20_000;
export const DIFF_MAX_CHARS = 40_000;

export const DiffInput = z
  .object({
    workerId: id("workerId is required (see the workers tool)"),
    file: z.string().max(4096).optional().describe("Only this file (repository-relative)."),
    offset: z.number().int().min(0).optional().describe("From nextOffset."),
    maxChars: z.number().int().min(500).max(DIFF_MAX_CHARS).optional().describe(`Page size (default ${DIFF_DEFAULT_CHARS}).`),
  })
  .strict();

export const ResultInput = z
  .object({
    workerId: id("workerId is required (see the workers tool)"),
    page: z.number().int().min(1).optional().describe("Page of checks (from 1)."),
    pageSize: z.number().int().min(1).max(50).optional().describe("Checks per page (default 20)."),
    maxChars: z.number().int().min(200).max(20_000).optional().describe("Output characters per check (default 1500; 8000 with check)."),
    check: z.number().int().min(0).optional().describe("Only this check (0-based), paged by offset."),
    offset: z.number().int().min(0).optional().describe("With check: output offset."),
  })
  .strict();

// ---------- outputs ----------

/** Text a worker or its model wrote (or printed through the checks): always inside this envelope. */
export const untrusted = <T extends z.ZodRawShape>(shape: T) => z.object(shape);

export const PendingItem = z.object({
  askId: z.string(),
  workerId: z.string(),
  tool: z.string(),
  /** What the engine found about the ask: outside-workspace, protected, out-of-scope, symlink. */
  flags: z.array(z.string()).optional(),
  /** Characters cut from the middle of `what` (absent: shown whole); a cut ask is never offered "always". */
  whatCut: z.number().optional(),
  /** A question ask's questions not shown (at most QUESTIONS_SHOWN are, shared/ask-view.ts): it is for dismissing, with a note to ask fewer. */
  questionsCut: z.number().optional(),
  /** What of a question ask was cut (questions, options), in the engine's words. */
  questionsNote: z.string().optional(),
  /**
   * `what`: the command, the repository-relative path, the URL or the question — line breaks shown as ⏎, bidi /
   * zero-width / control characters as ⟪U+XXXX⟫ (shared/untrusted.ts); `flags`: each flag with its detail.
   */
  untrusted: untrusted({
    what: z.string(),
    /** A bash command's folder (its workdir), absent: the worker's own. */ workdir: z.string().optional(),
    flags: z.array(z.string()).optional(),
    /** The tool's name, when it is not a plain name of opencode's (then `tool` only points here). */
    tool: z.string().optional(),
    /** A question ask's questions in wait (bounded as pending_approvals shows them): approve takes their labels as answers. */
    questions: z.array(z.object({ question: z.string(), options: z.array(z.string()), multiple: z.boolean(), optionsCut: z.number().optional() })).optional(),
  }),
});

export const Totals = z.object({ tokens: z.number(), cost: z.number(), sec: z.number() });
export type Totals = z.infer<typeof Totals>;
export type PendingItem = z.infer<typeof PendingItem>;

export const WorkerSummary = z.object({
  workerId: z.string(),
  title: z.string(),
  state: WorkerState,
  batchId: z.string().nullable(),
  directory: z.string(),
  pending: z.array(PendingItem),
  /** Pending asks left out of `pending` (they would make the result too long): pending_approvals lists them all. */
  pendingMore: z.number().optional(),
  lastActivityAgoSec: z.number().nullable(),
  currentTool: z.string().nullable(),
  stalled: z.boolean(),
  elapsedSec: z.number(),
  verdict: Outcome.nullable(),
  honest: z.boolean().nullable(),
  /** Built, but every check already passed before any change: the checks prove nothing about it. */
  weakEvidence: z.boolean(),
  /** Rounds so far (1 + follow-ups, reviews and fix rounds). */
  rounds: z.number(),
  totals: Totals,
  /** `currentTool`: the running tool's name when it is not a plain name of opencode's (then `currentTool` points here). */
  untrusted: untrusted({ reason: z.string().optional(), lastActivity: z.string().optional(), currentTool: z.string().optional() }).optional(),
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
  /** The dashboard's URL (with its token), for the person: open it in a browser. */
  gui: z.string().nullable(),
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
      /** What the benchmark after setup measured (tokens/s at 1 and N streams); absent when none ran. */
      bench: TargetBench.nullable().optional(),
    })
    .nullable(),
  /** Each target's opencode server (the workers' harness), not its model server. */
  opencode: z.array(z.object({ targetId: z.string(), ready: z.boolean(), url: z.string().nullable() })),
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

/** The attempts of a task side by side, and the winner the checks picked (null while none is built and honest). */
export const AttemptsOut = z.object({
  groupId: z.string(),
  winner: z.string().nullable(),
  settled: z.boolean(),
  attempts: z.array(
    z.object({
      workerId: z.string(),
      target: z.string().nullable(),
      state: WorkerState,
      verdict: Outcome.nullable(),
      claim: Outcome.nullable(),
      honest: z.boolean().nullable(),
      changedLines: z.number().nullable(),
      tokens: z.number(),
      durationSec: z.number().nullable(),
      stoppedForWinner: z.boolean(),
    }),
  ),
});

export const DelegateOutput = z.object({
  /** The first attempt's id when `attempts` were asked for (all of them are in workerIds). */
  workerId: z.string(),
  /** With attempts: the attempt group and every attempt's worker. */
  groupId: z.string().nullable().optional(),
  workerIds: z.array(z.string()).optional(),
  state: WorkerState,
  directory: z.string(),
  checks: z.number(),
  /** Which checks already pass on the base commit, when their run there finished before this answer (else null). */
  baseline: z.object({ passedOnBase: z.array(z.string()) }).nullable(),
  slots: Slots,
  warnings: z.array(z.string()),
  next: z.string(),
});

export const DelegateBatchOutput = z.object({
  batchId: z.string(),
  workerIds: z.array(z.string()),
  /** Each task with its worker (null until it starts: it comes after others). */
  tasks: z.array(z.object({ id: z.string(), workerId: z.string().nullable(), after: z.array(z.string()) })).optional(),
  /** The tasks given `attempts`: each one's attempt group and its workers (a group counts once in the batch's builtRate). */
  groups: z.array(z.object({ groupId: z.string(), workerIds: z.array(z.string()) })).optional(),
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
  /** Every task ended or skipped, and the integration (when given) done. */
  done: z.boolean().optional(),
  skipped: z.array(z.object({ id: z.string(), reason: z.string() })).optional(),
  integration: z
    .object({
      state: z.string(),
      passed: z.boolean().nullable(),
      commit: z.string().nullable(),
      checks: z.array(z.object({ name: z.string(), passed: z.boolean(), exitCode: z.number().nullable().optional() })),
      /** Why it failed (may name the workers' files) and each check's output, in order. */
      untrusted: untrusted({ reason: z.string().nullable(), outputs: z.array(z.string()) }),
    })
    .nullable()
    .optional(),
});

export const WorkersOutput = z.object({
  workers: z.array(WorkerSummary),
  total: z.number(),
  totals: Totals,
  counts: z.record(z.string(), z.number()),
  pendingApprovals: z.number(),
  slots: Slots,
  /** Set when workers were left out (limit, or the result's size): how to see them. */
  next: z.string().optional(),
});

export const WorkerStatusOutput = WorkerSummary.extend({
  task: z.string(),
  targetId: z.string().nullable(),
  branch: z.string().nullable(),
  worktree: z.string().nullable(),
  steers: z.number(),
  toolFailures: z.number(),
  usage: z.object({ input: z.number(), output: z.number(), reasoning: z.number(), cost: z.number() }),
  untrusted: untrusted({ reason: z.string().optional(), lastActivity: z.string().optional(), recent: z.array(z.string()) }),
  next: z.string(),
});

/** A worker that finished since the caller's last wait. */
export const Finished = z.object({ workerId: z.string(), state: WorkerState, verdict: Outcome.nullable(), honest: z.boolean().nullable(), totals: Totals });

/**
 * What changed since this caller's last wait (per MCP session): asks not yet shown, workers settled since, counts by
 * state — never every worker again.
 */
export const WaitOutput = z.object({
  state: z.string(),
  settled: z.boolean(),
  reason: z.enum(["settled", "approval-pending", "worker-settled", "timeout", "cancelled"]),
  /** Asks this caller has not been shown by an earlier wait. */
  pending: z.array(PendingItem),
  /** Every unanswered ask of these workers, the ones shown before included. */
  unanswered: z.number(),
  /** Asks an earlier wait showed that are still unanswered (their ids, up to 50): they wait for approve. */
  stillOpen: z.array(z.string()).optional(),
  counts: z.record(z.string(), z.number()),
  finished: z.array(Finished),
  stalled: z.array(z.string()).optional(),
  batch: BatchStats.optional(),
  answeredInForm: z.array(z.object({ askId: z.string(), decision: z.string() })).optional(),
  /** These workers' totals; `session`: every worker this session delegated. */
  totals: Totals,
  session: Totals.optional(),
  waitedSec: z.number(),
  timeoutSec: z.number(),
  /** Set when timeoutSec was lowered (the cap, or the client's own tool timeout). */
  note: z.string().optional(),
  next: z.string(),
});

export const PendingApprovalsOutput = z.object({
  pending: z.array(
    PendingItem.extend({
      kind: z.enum(["permission", "question"]),
      title: z.string(),
      ageSec: z.number(),
      /** Why "always" is not offered (a command that cannot be split with certainty, a cut or flagged ask, a question); absent when it is. */
      alwaysWhy: z.string().optional(),
      /** Present when the edit changes nothing (its diff is header lines alone): says so. */
      diffNote: z.string().optional(),
      untrusted: untrusted({
        what: z.string(),
        flags: z.array(z.string()).optional(),
        diff: z.string().nullable(),
        patterns: z.array(z.string()),
        /** Exactly what "always" grants: one simple command each (or the path / URL), matched exactly; empty when not offered. */
        always: z.array(z.string()),
        questions: z
          .array(z.object({ question: z.string(), options: z.array(z.string()), multiple: z.boolean(), optionsCut: z.number().optional() }))
          .nullable(),
        /** The tool's name, when it is not a plain name of opencode's (then `tool` only points here). */
        tool: z.string().optional(),
      }),
    }),
  ),
  count: z.number(),
  next: z.string(),
});

export const ApproveOutput = z.object({
  askId: z.string().optional(),
  workerId: z.string().optional(),
  status: z.string().optional(),
  decision: z.string().nullable().optional(),
  by: z.string().nullable(),
  workerState: WorkerState.optional(),
  /** A batch answer: the asks it answered, and those left for one-by-one answers (and why). */
  answered: z.array(z.string()).optional(),
  left: z.array(z.object({ askId: z.string(), why: z.string() })).optional(),
  next: z.string(),
});

export const ControlOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  /** The round the worker is on (continue and review start a new one). */
  round: z.number().optional(),
  untrusted: untrusted({ reason: z.string() }).optional(),
  next: z.string(),
});

export const CheckOut = z.object({
  index: z.number(),
  name: z.string(),
  passed: z.boolean(),
  exitCode: z.number().nullable(),
  timedOut: z.boolean(),
  outputChars: z.number(),
  truncated: z.boolean(),
  nextOffset: z.number().nullable(),
  untrusted: untrusted({ output: z.string() }),
});

export const ResultOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  graded: z.boolean(),
  verdict: Outcome,
  claim: Outcome.nullable(),
  /** Whether the worker's claim matched the verdict; null when it was not graded (stopped, interrupted, errored). */
  honest: z.boolean().nullable(),
  /** Why the verdict is what it is when the checks alone do not say it (e.g. no change: nothing was shown). */
  verdictReason: z.string().nullable(),
  /** Built, but every check already passed on the base commit before any change: weak evidence. */
  weakEvidence: z.boolean(),
  /** Which checks already passed on the base commit (null until they ran there). */
  baseline: z.object({ passedOnBase: z.array(z.string()) }).nullable(),
  warnings: z.array(z.string()),
  rounds: z.array(
    z.object({
      round: z.number(),
      kind: z.string(),
      verdict: Outcome.nullable(),
      claim: Outcome.nullable(),
      honest: z.boolean().nullable(),
      commit: z.string().nullable(),
      weakEvidence: z.boolean(),
      /** How many files changed since the previous round's commit (null for round 1). */
      changedSincePrevious: z.number().nullable(),
    }),
  ),
  checks: z.array(CheckOut),
  checksTotal: z.number(),
  checksPassed: z.number(),
  page: z.number(),
  pages: z.number(),
  scope: z.object({ passed: z.boolean(), violations: z.number(), changedFiles: z.number() }),
  /** What the checks cannot rule out (said with every verdict). */
  caveats: z.array(z.string()).optional(),
  /** The worker's words and what its change names: its claim's reason, the state reason, file names, diff stat. */
  untrusted: untrusted({
    claimReason: z.string().nullable(),
    reason: z.string().nullable(),
    violations: z.array(z.string()),
    changedFiles: z.array(z.string()),
    diffStat: z.string(),
    /** tool: the ask's tool name when it is not a plain name of opencode's (approvals' tool then points here). */
    asks: z.array(z.object({ askId: z.string(), what: z.string(), tool: z.string().optional() })),
    flags: z.array(z.object({ kind: z.string(), path: z.string(), detail: z.string() })).optional(),
  }),
  totals: Totals,
  branch: z.string().nullable(),
  worktree: z.string().nullable(),
  baseBranch: z.string().nullable(),
  mergeHint: z.string().nullable(),
  merged: z.object({ into: z.string(), commit: z.string() }).nullable(),
  /** How many changes need the person's explicit acceptance before a merge (merge acceptFlagged); untrusted.flags names them. */
  flagged: z.number().optional(),
  discarded: z.boolean(),
  approvals: z.array(z.object({ askId: z.string(), tool: z.string(), status: z.string(), decision: z.string().nullable(), by: z.string().nullable() })),
  batchId: z.string().nullable(),
  elapsedSec: z.number(),
  /** When the worker is one of several attempts at its task: all of them, and the winner. */
  attempts: AttemptsOut.nullable().optional(),
  next: z.string(),
});

export const DiffOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  base: z.string().nullable(),
  branch: z.string().nullable(),
  untrusted: untrusted({ files: z.array(z.string()), diffStat: z.string(), diff: z.string() }),
  chars: z.number(),
  offset: z.number(),
  nextOffset: z.number().nullable(),
  next: z.string(),
});

export const MergeInput = z
  .object({
    workerId: id().optional(),
    batchId: id().optional().describe("A batch: its integration commit, else each built worker."),
    acceptFlagged: z.boolean().optional().describe("Only on the person's explicit yes to result's flagged files."),
    publish: z.boolean().optional(),
  })
  .strict();

export const PushInput = z
  .object({
    workerId: id().optional(),
    batchId: id().optional(),
    remote: z.string().min(1).max(2000).describe("A remote name or URL the person gave."),
    branch: z.string().max(255).optional(),
    pr: z.boolean().optional(),
    title: z.string().max(200).optional(),
    acceptFlagged: z.boolean().optional(),
  })
  .strict();

export const PushOutput = z.object({
  remote: z.string(),
  branch: z.string(),
  commit: z.string(),
  pr: z.object({ url: z.string(), existing: z.boolean().optional() }).nullable(),
  prProblem: z.string().nullable(),
  replaced: z.string().nullable().optional(),
  next: z.string(),
});

export const MergeOutput = z.object({
  workerId: z.string(),
  into: z.string(),
  commit: z.string(),
  repo: z.string(),
  /** merge {batchId} of a batch without integration checks: the workers it merged, and those it left, with why. */
  merged: z.array(z.string()).optional(),
  skipped: z.array(z.object({ workerId: z.string(), reason: z.string() })).optional(),
  next: z.string(),
});

export const DiscardOutput = z.object({
  workerId: z.string(),
  state: WorkerState,
  discarded: z.boolean(),
  next: z.string(),
});
