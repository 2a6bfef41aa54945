import { z } from "zod";
import { AttemptRef, lostToFromOldReason } from "./attempt-ref";
import { CheckSpec } from "./check";
import { DecidedBy, DecisionKind, Grant, PermissionAsk } from "./permission";
import { Baseline, ReviewComment, Round, RoundKind, Verdict } from "./verdict";

export const WorkerState = z.enum([
  "queued",
  "starting",
  "running",
  "waiting-approval",
  "settled",
  "grading",
  "built",
  "honest-failure",
  "stopped",
  "interrupted",
  "error",
]);
export type WorkerState = z.infer<typeof WorkerState>;

/**
 * The states a worker rests in, never leaving them by itself: nothing runs for it until someone acts (graded, stopped, interrupted or failed). Not
 * final: stopped and interrupted resume, built and honest-failure continue with a new round, an error retries.
 */
export const AT_REST_STATES: readonly WorkerState[] = ["built", "honest-failure", "stopped", "interrupted", "error"];
const ACTIVE_STATES: readonly WorkerState[] = ["starting", "running", "waiting-approval"];
export const isAtRest = (s: WorkerState) => AT_REST_STATES.includes(s);
/**
 * The task a worker works on, for counting tasks (a batch's rate, the ledger): its attempt group, else the first worker
 * of its retry chain (a retry runs the same task again), else itself. `byId`: the workers counted together.
 */
export function taskKey(w: Pick<Worker, "id" | "retryOf" | "attempt">, byId: ReadonlyMap<string, Pick<Worker, "id" | "retryOf" | "attempt">>): string {
  let x = w;
  for (let i = 0; x.retryOf && byId.has(x.retryOf) && i < 1000; i++) x = byId.get(x.retryOf)!;
  return x.attempt?.groupId ?? x.id;
}

/** A worker's grants expire when its run ends: settled (its turn is over), stopped or failed. Not when interrupted by an engine restart (resumed, it goes on). */
const GRANT_ENDS: ReadonlySet<WorkerState> = new Set<WorkerState>(["settled", "built", "honest-failure", "stopped", "error"]);
export const isActive = (s: WorkerState) => ACTIVE_STATES.includes(s);

const Glob = z.string().min(1).max(500);

export const Budget = z
  .object({
    wallSec: z
      .number()
      .positive()
      .max(7 * 24 * 3600)
      .optional(),
    tokens: z.number().int().positive().optional(),
  })
  .strict();
export type Budget = z.infer<typeof Budget>;

/**
 * What makes a typed directory not absolute when it reads as one to a person: quotes pasted around it ("Copy as path",
 * a shell line), or a `~` that no shell expands here. Said after the rule, so the fix is in the message.
 */
function notAbsoluteHint(p: string): string {
  const t = p.trim();
  if (/^(["'`]).+\1$/s.test(t)) return `: leave out the quotes around it (${t.slice(1, -1)})`;
  if (t === "~" || /^~[\\/]/.test(t)) return ': "~" is not expanded here, write the home folder out (e.g. /home/you/repo)';
  return "";
}

/** What `start` takes. `directory` must be an absolute path to a git repository. */
export const WorkerSpec = z.object({
  task: z
    .string()
    .trim()
    .min(1, "the task is empty: say what the worker should do")
    .max(100_000, "the task is over 100,000 characters: shorten it or point at a file"),
  directory: z
    .string()
    .min(1, "directory is required")
    .max(4096)
    .refine((p) => p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p), {
      error: (iss) => `directory must be an absolute path to a git repository${notAbsoluteHint(String(iss.input))}`,
    }),
  checks: z.array(CheckSpec).max(100).default([]),
  scope: z.array(Glob).max(200).default([]),
  protect: z.array(Glob).max(200).default([]),
  budget: Budget.default({}),
  targetId: z.string().optional(),
  title: z.string().max(200).optional(),
  /**
   * Fix rounds (opt-in): on honest-failure the engine continues the worker with the failing checks' names and trimmed
   * output (never a check's source), at most this many times.
   */
  fixRounds: z.number().int().min(0).max(10, "at most 10 fix rounds").optional(),
});
export type WorkerSpec = z.infer<typeof WorkerSpec>;
export type WorkerSpecInput = z.input<typeof WorkerSpec>;

export const Usage = z.object({
  input: z.number(),
  output: z.number(),
  reasoning: z.number(),
  cost: z.number(),
});
export type Usage = z.infer<typeof Usage>;

export const TranscriptPart = z.object({
  partId: z.string(),
  messageId: z.string(),
  kind: z.enum(["text", "reasoning", "tool", "user"]),
  text: z.string().optional(),
  tool: z.string().optional(),
  /** A tool part's call (opencode's callID): the ask that holds it names the same one. */
  callId: z.string().max(200).optional(),
  status: z.string().optional(),
  input: z.unknown().optional(),
  output: z.string().optional(),
  /** Characters cut from the middle of a long tool output (its head and tail are kept in `output`). */
  outputCut: z.number().int().optional(),
  error: z.string().optional(),
  /**
   * The worker's log position when this part began streaming (the `seq` of its latest event then). A text or reasoning
   * part is logged once it ends: a steer, ask or decision logged while it streamed came after its start, and the
   * transcript shows it after the part (`transcriptPlace`). Absent: the part began where it is logged.
   */
  after: z.number().int().nonnegative().optional(),
});
export type TranscriptPart = z.infer<typeof TranscriptPart>;

/**
 * Where a part sits among its worker's logged events: just after the event it began after, else where it is logged
 * (`seq`). Steers, asks and decisions logged at or before the place show before the part, later ones after it.
 */
export const transcriptPlace = (part: TranscriptPart, seq: number): number => (part.after !== undefined && part.after < seq ? part.after + 0.5 : seq);

/** `seq` counts the worker's own events; `busSeq` is the event's place in the engine's stream (its cursor). */
const base = { workerId: z.string(), seq: z.number().int(), ts: z.number(), busSeq: z.number().int().optional() };

/** Everything that happens to a worker, appended to its log and fanned out to subscribers. */
export const WorkerEvent = z.discriminatedUnion("type", [
  z.object({
    ...base,
    type: z.literal("worker.created"),
    spec: WorkerSpec,
    batchId: z.string().nullable(),
    targetId: z.string().nullable(),
    /** How the worker is contained: "bwrap", or "none" when the person opted out of the sandbox. */
    sandbox: z.enum(["bwrap", "none"]).optional(),
    /** The commit it starts from when not the repository's HEAD (a task after others: the base plus their graded commits). */
    startFrom: z.string().optional(),
    /** Its task's name in its batch. */
    taskId: z.string().optional(),
    /** One attempt of several at the same task (shared/attempts.ts). */
    attempt: AttemptRef.optional(),
    /** The worker whose task this one runs again (retry): it stays in that worker's batch, as the same task. */
    retryOf: z.string().optional(),
  }),
  z.object({
    ...base,
    type: z.literal("worker.state"),
    state: WorkerState,
    reason: z.string().optional(),
    /**
     * On a stop: the worker id of the other attempt of its task whose build made the engine stop it, else null. Absent
     * in the logs of older engines, which named that attempt only in `reason` (read there for those alone).
     */
    lostTo: z.string().nullable().optional(),
  }),
  z.object({
    ...base,
    type: z.literal("worker.workspace"),
    worktree: z.string(),
    branch: z.string(),
    baseCommit: z.string(),
    baseBranch: z.string().nullable(),
    repo: z.string(),
  }),
  z.object({ ...base, type: z.literal("worker.session"), sessionId: z.string() }),
  /** The endpoint of a pool target the worker runs on (it stays there unless that endpoint dies). */
  z.object({ ...base, type: z.literal("worker.endpoint"), url: z.string() }),
  z.object({ ...base, type: z.literal("ask.opened"), ask: PermissionAsk }),
  z.object({
    ...base,
    type: z.literal("ask.resolved"),
    askId: z.string(),
    status: z.enum(["decided", "cancelled"]),
    decision: DecisionKind.optional(),
    by: DecidedBy.optional(),
    message: z.string().optional(),
  }),
  z.object({ ...base, type: z.literal("steer.sent"), text: z.string(), by: DecidedBy }),
  z.object({ ...base, type: z.literal("part"), part: TranscriptPart }),
  z.object({ ...base, type: z.literal("usage"), usage: Usage }),
  z.object({ ...base, type: z.literal("stalled"), idleSec: z.number() }),
  z.object({ ...base, type: z.literal("tool.failed"), tool: z.string(), error: z.string() }),
  z.object({ ...base, type: z.literal("verdict"), verdict: Verdict }),
  /** The held-back checks ran on the base commit (beside the worker's start): which already pass there. */
  z.object({ ...base, type: z.literal("worker.baseline"), baseline: Baseline }),
  /** A settled worker took a follow-up (continue, review, fix round): a new round begins in the same session. */
  z.object({
    ...base,
    type: z.literal("round.started"),
    round: z.number().int().positive(),
    kind: RoundKind,
    message: z.string(),
    comments: z.array(ReviewComment).default([]),
    by: DecidedBy,
  }),
  z.object({ ...base, type: z.literal("merged"), into: z.string(), commit: z.string() }),
  /** The engine reverted its merge: `commit` is the revert commit on `into`. */
  z.object({ ...base, type: z.literal("reverted"), into: z.string(), commit: z.string() }),
  z.object({ ...base, type: z.literal("grant.added"), grant: Grant }),
  z.object({ ...base, type: z.literal("grant.revoked"), grantId: z.string(), by: DecidedBy }),
  z.object({ ...base, type: z.literal("discarded"), by: DecidedBy }),
]);
export type WorkerEvent = z.infer<typeof WorkerEvent>;
/** An event before the store stamps it with seq/ts/workerId. */
export type WorkerEventBody = WorkerEvent extends infer E ? (E extends WorkerEvent ? Omit<E, "seq" | "ts" | "workerId"> : never) : never;

/** The current picture of a worker, derived from its events (see reduceWorker). */
export const Worker = z.object({
  id: z.string(),
  spec: WorkerSpec,
  batchId: z.string().nullable(),
  targetId: z.string().nullable(),
  state: WorkerState,
  stateReason: z.string().nullable(),
  createdAt: z.number(),
  /** The engine stream position of its creation: orders workers created in the same millisecond (a batch). */
  createdSeq: z.number().default(0),
  updatedAt: z.number(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  sessionId: z.string().nullable(),
  worktree: z.string().nullable(),
  branch: z.string().nullable(),
  baseCommit: z.string().nullable(),
  baseBranch: z.string().nullable(),
  repo: z.string(),
  asks: z.array(PermissionAsk),
  steers: z.array(z.object({ text: z.string(), ts: z.number(), by: DecidedBy })),
  usage: Usage,
  lastActivity: z.object({ ts: z.number(), summary: z.string() }).nullable(),
  currentTool: z.string().nullable(),
  /** The call `currentTool` names (opencode's callID): a pending ask that names it holds that call, waiting for approval. */
  currentCall: z.string().nullable().default(null),
  stalled: z.boolean(),
  toolFailures: z.number(),
  /** The latest round's verdict (null while a round runs); every round's is in `rounds`. */
  verdict: Verdict.nullable(),
  /** Which held-back checks already pass on the base commit; null until they ran there. */
  baseline: Baseline.nullable().default(null),
  /** Round 1 is the task; each follow-up (continue, review, fix round) adds one, graded again from a fresh checkout. */
  rounds: z.array(Round).default([]),
  merged: z.object({ into: z.string(), commit: z.string() }).nullable(),
  /** Its merge was reverted by the engine (the revert commit). */
  reverted: z.object({ into: z.string(), commit: z.string() }).nullable().default(null),
  /** "bwrap" when the worker runs in the OS sandbox; "none" when the person opted out; null for workers from before. */
  sandbox: z.enum(["bwrap", "none"]).nullable().default(null),
  /** The endpoint of its target it runs on (pool targets); null for single-endpoint targets. */
  endpoint: z.string().nullable().default(null),
  grants: z.array(Grant).default([]),
  /** The commit it starts from when not the repository's HEAD (it comes after other tasks of its batch). */
  startFrom: z.string().nullable().default(null),
  /** Its task's name in its batch (what `after` names), or null. */
  taskId: z.string().nullable().default(null),
  /** Its workspace and branch were removed on request. */
  discarded: z.boolean().default(false),
  /** Its attempt group when it is one of several attempts at one task (shared/attempts.ts); null otherwise. */
  attempt: AttemptRef.nullable().default(null),
  /** The worker whose task it runs again (a retry), or null. */
  retryOf: z.string().nullable().default(null),
  /**
   * A losing attempt: the engine stopped it because this other attempt of its task was built (its worker id). Null when
   * it is no losing attempt, and again once it runs on (resumed anyway).
   */
  lostTo: z.string().nullable().default(null),
  /**
   * Time on the model (ms): spent running with no ask waiting for a person. Queued, starting, waiting for a person,
   * settled and grading time are not in it (shared/metrics.ts turns tokens over it into tok/s).
   */
  modelMs: z.number().default(0),
  /** Since when it is on the model now (running, no pending ask); null when it is not. */
  modelSince: z.number().nullable().default(null),
  lastSeq: z.number(),
});
export type Worker = z.infer<typeof Worker>;

export function summarizePart(part: TranscriptPart): string {
  if (part.kind === "tool") return `${part.tool ?? "tool"} ${part.status ?? ""}`.trim();
  const line = (part.text ?? "").split("\n").find((l) => l.trim());
  if (line === undefined) return part.kind;
  // Cut to 160 characters, and said to be cut: a card that shows it must not pass a cut word off as the whole line.
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

/** A round as it starts: nothing ran, nothing graded yet. */
function newRound(round: number, kind: Round["kind"], message: string | null, comments: Round["comments"], ts: number): Round {
  return {
    round,
    kind,
    message,
    comments,
    startedAt: ts,
    ran: false,
    verdict: null,
    claim: null,
    honest: null,
    commit: null,
    reason: null,
    weakEvidence: false,
    changed: null,
    gradedAt: null,
  };
}

/** Folds one event into a worker picture. Pure: used by the engine on recovery and by clients. */
export function reduceWorker(w: Worker | null, e: WorkerEvent): Worker {
  if (e.type === "worker.created") {
    return {
      id: e.workerId,
      spec: e.spec,
      batchId: e.batchId,
      targetId: e.targetId,
      state: "queued",
      stateReason: null,
      createdAt: e.ts,
      createdSeq: e.busSeq ?? 0,
      updatedAt: e.ts,
      startedAt: null,
      endedAt: null,
      sessionId: null,
      worktree: null,
      branch: null,
      baseCommit: null,
      baseBranch: null,
      repo: e.spec.directory,
      asks: [],
      steers: [],
      usage: { input: 0, output: 0, reasoning: 0, cost: 0 },
      lastActivity: null,
      currentTool: null,
      currentCall: null,
      stalled: false,
      toolFailures: 0,
      verdict: null,
      baseline: null,
      rounds: [newRound(1, "task", null, [], e.ts)],
      merged: null,
      reverted: null,
      startFrom: e.startFrom ?? null,
      taskId: e.taskId ?? null,
      sandbox: e.sandbox ?? null,
      endpoint: null,
      grants: [],
      discarded: false,
      attempt: e.attempt ?? null,
      retryOf: e.retryOf ?? null,
      lostTo: null,
      modelMs: 0,
      modelSince: null,
      lastSeq: e.seq,
    };
  }
  if (!w) throw new Error(`event ${e.type} for unknown worker ${e.workerId}`);
  const next: Worker = { ...w, updatedAt: e.ts, lastSeq: e.seq };
  switch (e.type) {
    case "worker.state":
      next.state = e.state;
      next.stateReason = e.reason ?? null;
      // The winner it lost to, as recorded; an older engine's log names it only in its reason.
      next.lostTo = e.state !== "stopped" ? null : e.lostTo !== undefined ? e.lostTo : lostToFromOldReason(e.reason);
      if (e.state === "starting" && next.startedAt === null) next.startedAt = e.ts;
      next.endedAt = isAtRest(e.state) ? e.ts : null;
      if (!isActive(e.state)) {
        next.currentTool = null;
        next.currentCall = null;
      }
      if (e.state === "running") next.stalled = false;
      // A grant lasts one run of its worker: once the run ends (settled, stopped, failed) it expires (shared/grants.ts).
      if (GRANT_ENDS.has(e.state) && w.grants.some((g) => g.expiredAt === undefined))
        next.grants = w.grants.map((g) => (g.expiredAt === undefined ? { ...g, expiredAt: e.ts } : g));
      if (e.state === "running" && w.rounds.length && !w.rounds.at(-1)!.ran) next.rounds = [...w.rounds.slice(0, -1), { ...w.rounds.at(-1)!, ran: true }];
      break;
    case "worker.workspace":
      Object.assign(next, { worktree: e.worktree, branch: e.branch, baseCommit: e.baseCommit, baseBranch: e.baseBranch, repo: e.repo });
      break;
    case "worker.session":
      next.sessionId = e.sessionId;
      break;
    case "worker.endpoint":
      next.endpoint = e.url;
      break;
    case "ask.opened":
      next.asks = [...w.asks.filter((a) => a.id !== e.ask.id), e.ask];
      break;
    case "ask.resolved":
      next.asks = w.asks.map((a) => (a.id === e.askId ? { ...a, status: e.status, decision: e.decision, by: e.by, message: e.message, decidedAt: e.ts } : a));
      break;
    case "steer.sent":
      next.steers = [...w.steers, { text: e.text, ts: e.ts, by: e.by }];
      break;
    case "part":
      next.lastActivity = { ts: e.ts, summary: summarizePart(e.part) };
      next.stalled = false;
      if (e.part.kind === "tool") {
        const unfinished = e.part.status === "running" || e.part.status === "pending";
        next.currentTool = unfinished ? (e.part.tool ?? null) : null;
        next.currentCall = unfinished ? (e.part.callId ?? null) : null;
      }
      break;
    case "usage":
      next.usage = e.usage;
      break;
    case "stalled":
      next.stalled = true;
      break;
    case "tool.failed":
      next.toolFailures = w.toolFailures + 1;
      break;
    case "verdict": {
      next.verdict = e.verdict;
      const v = e.verdict;
      const rounds = w.rounds ?? [];
      const graded = {
        verdict: v.verdict,
        claim: v.claim,
        honest: v.honest,
        commit: v.commit,
        reason: v.reason ?? null,
        weakEvidence: v.weakEvidence ?? false,
        changed: v.sincePrevious ?? null,
        gradedAt: v.gradedAt,
      };
      // A regrade (after a restart) replaces the round's verdict; it never adds a round.
      next.rounds = rounds.length
        ? [...rounds.slice(0, -1), { ...rounds.at(-1)!, ...graded }]
        : [{ round: 1, kind: "task", message: null, comments: [], startedAt: e.ts, ran: true, ...graded }];
      break;
    }
    case "worker.baseline":
      next.baseline = e.baseline;
      break;
    case "round.started":
      // The latest round's verdict is the worker's: none until this round is graded (earlier ones stay in rounds).
      next.verdict = null;
      next.rounds = [...(w.rounds ?? []), newRound(e.round, e.kind, e.message, e.comments ?? [], e.ts)];
      break;
    case "merged":
      next.merged = { into: e.into, commit: e.commit };
      break;
    case "reverted":
      next.reverted = { into: e.into, commit: e.commit };
      break;
    case "grant.added":
      next.grants = [...w.grants.filter((g) => g.id !== e.grant.id), e.grant];
      break;
    case "grant.revoked":
      next.grants = w.grants.filter((g) => g.id !== e.grantId);
      break;
    case "discarded":
      next.discarded = true;
      if (w.grants.some((g) => g.expiredAt === undefined)) next.grants = w.grants.map((g) => (g.expiredAt === undefined ? { ...g, expiredAt: e.ts } : g));
      break;
  }
  // Model time: an interval opens when the worker is running with no ask pending, and closes when either changes.
  const was = w.modelSince != null;
  const is = onModel(next);
  if (was && !is) {
    next.modelMs = (w.modelMs ?? 0) + Math.max(0, e.ts - w.modelSince!);
    next.modelSince = null;
  } else if (!was && is) next.modelSince = e.ts;
  return next;
}

/** Running with no ask waiting for a person: the time its tokens are made in. */
export const onModel = (w: Pick<Worker, "state" | "asks">) => w.state === "running" && !w.asks.some((a) => a.status === "pending");

/**
 * A worker's title, the one way every client and the engine derive it: the spec's title, else the task's first
 * non-blank line, cut at `max` characters (with "…" when cut).
 */
export function workerTitle(spec: { title?: string; task: string }, max = 100): string {
  const t =
    spec.title?.trim() ||
    spec.task
      .split("\n")
      .find((l) => l.trim())
      ?.trim() ||
    "(untitled task)";
  return t.length <= max ? t : `${t.slice(0, Math.max(0, max - 1))}…`;
}

export const pendingAsks = (w: Pick<Worker, "asks">) => w.asks.filter((a) => a.status === "pending");

/** The pending ask that holds the worker's current tool call (the call waits for its approval, it does not run), or null. */
export const askHoldingCall = (w: Pick<Worker, "asks" | "currentCall">): PermissionAsk | null =>
  (w.currentCall && w.asks.find((a) => a.status === "pending" && a.callId === w.currentCall)) || null;
