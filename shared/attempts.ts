import { z } from "zod";
import { countsAsBuilt as verdictCounts, type Verdict } from "./verdict";
import { MAX_ATTEMPTS } from "./attempt-ref";
import { IdRef } from "./ids";
import { isAtRest, WorkerState, type Worker } from "./worker";

/**
 * Attempts: N workers on one task (over one or several targets in turn) form an attempt group. The engine picks the
 * winner with the checks (a built, honest attempt that changed something: fewest changed lines, then earliest
 * verdict) and, once one is built, stops the others still running unless the person asked for all of them.
 * The group lives on its workers (each carries its `AttemptRef` from its creation), so it survives restarts and every
 * client derives the same picture from the same workers with `attemptGroup()`.
 */

export { AttemptRef, MAX_ATTEMPTS, stoppedForWinnerReason } from "./attempt-ref";

/** The attempt options of one task (API, batch file, MCP). `attempts` defaults to the number of `targets` (else 1). */
export const AttemptOptions = z.object({
  attempts: z.number().int().min(1, "attempts must be at least 1").max(MAX_ATTEMPTS, `at most ${MAX_ATTEMPTS} attempts per task`).optional(),
  targets: z.array(z.string().min(1)).max(MAX_ATTEMPTS, `at most ${MAX_ATTEMPTS} targets per task`).optional(),
  allAttempts: z.boolean().optional(),
});
export type AttemptOptions = z.infer<typeof AttemptOptions>;

/** How many attempts the options ask for; 1 (no group) when neither attempts nor several targets were given. */
export function attemptCount(o: AttemptOptions): number {
  return o.attempts ?? (o.targets?.length || 1);
}

/** The target of attempt `i` (0-based): targets are used in turn; undefined = the task's own target or the active one. */
export function targetOfAttempt(o: AttemptOptions, i: number): string | undefined {
  return o.targets?.length ? o.targets[i % o.targets.length] : undefined;
}

export const AttemptRow = z.object({
  workerId: z.string(),
  index: z.number().int(),
  target: z.string().nullable(),
  state: WorkerState,
  verdict: z.enum(["built", "honest-failure"]).nullable(),
  claim: z.enum(["built", "honest-failure"]).nullable(),
  honest: z.boolean().nullable(),
  /** The verdict says the worker changed nothing (or the verdict helper flagged it a no-op): never a winner. */
  noop: z.boolean(),
  /** Built, but its checks also passed on the base: they prove little. */
  weakEvidence: z.boolean(),
  changedLines: z.number().int().nullable(),
  tokens: z.number(),
  /** Seconds from its start to its end (null while it runs or when it never started). */
  durationSec: z.number().nullable(),
  gradedAt: z.number().nullable(),
  /** The engine stopped it because another attempt was built (`lostTo` names it). */
  stoppedForWinner: z.boolean(),
  /** The attempt whose build made the engine stop it (a worker id), or null. */
  lostTo: z.string().nullable(),
});
export type AttemptRow = z.infer<typeof AttemptRow>;

export const AttemptGroup = z.object({
  groupId: z.string(),
  all: z.boolean(),
  attempts: z.array(AttemptRow),
  /** Every attempt is final. */
  settled: z.boolean(),
  /** The built, honest attempt the checks picked; null while none is. */
  winner: z.string().nullable(),
});
export type AttemptGroup = z.infer<typeof AttemptGroup>;

export const AttemptGroupRef = z.object({ groupId: IdRef("groupId") });

/**
 * The attempt of `w`'s task that was merged (and not reverted), when it is not `w` itself: its task is done there, so
 * `w` is neither merged nor retried (engine/workers/lifecycle.ts, housekeeping.ts). Null for a worker of no group.
 */
export function mergedSibling<W extends Pick<Worker, "id" | "attempt" | "merged" | "reverted">>(w: W, workers: Iterable<W>): W | null {
  if (!w.attempt) return null;
  for (const x of workers) if (x.id !== w.id && x.attempt?.groupId === w.attempt.groupId && x.merged && !x.reverted) return x;
  return null;
}

type LooseVerdict = Omit<Verdict, "flags"> & { noop?: unknown; noOp?: unknown; weakEvidence?: unknown; flags?: unknown; weak?: unknown; baseline?: unknown };

function flagsOf(v: LooseVerdict): string[] {
  const f = v.flags;
  if (Array.isArray(f)) return f.filter((x): x is string => typeof x === "string");
  if (f && typeof f === "object")
    return Object.entries(f)
      .filter(([, on]) => on === true)
      .map(([k]) => k);
  return [];
}

/**
 * A verdict that shows nothing was done: no file changed, or flagged a no-op. Read defensively: the verdict's
 * evidence fields (no-op, weak evidence) may be named differently by the grading side; an unknown shape is not a no-op.
 */
export function isNoop(v: Verdict | null | undefined): boolean {
  if (!v) return false;
  const lv = v as LooseVerdict;
  if (lv.noop === true || lv.noOp === true) return true;
  if (flagsOf(lv).some((f) => /^no-?op$/i.test(f))) return true;
  return Array.isArray(v.scope?.changedFiles) && v.scope.changedFiles.length === 0;
}

/** Built, but every check also passed on the base commit. */
export function isWeakEvidence(v: Verdict | null | undefined): boolean {
  if (!v) return false;
  const lv = v as LooseVerdict;
  if (lv.weakEvidence === true || lv.weak === true) return true;
  return flagsOf(lv).some((f) => /^weak[-_ ]?evidence$/i.test(f) || f === "weak");
}

/** A verdict that counts as built: built, and not a no-op (the verdict's own rule, plus a no-op flag however it is named). */
export const countsAsBuilt = (v: Verdict | null | undefined): boolean => verdictCounts(v) && !isNoop(v);

/** Lines added + removed, from the verdict's diff stat ("N files changed, X insertions(+), Y deletions(-)"). */
export function changedLines(v: Verdict | null | undefined): number | null {
  if (!v) return null;
  const lv = v as Verdict & { changedLines?: unknown };
  if (typeof lv.changedLines === "number") return lv.changedLines;
  if (!v.diffStat?.trim()) return isNoop(v) ? 0 : null;
  const last = v.diffStat.trim().split("\n").at(-1)!;
  const ins = /(\d+) insertions?\(\+\)/.exec(last);
  const del = /(\d+) deletions?\(-\)/.exec(last);
  if (!ins && !del) return /files? changed/.test(last) ? 0 : null;
  return Number(ins?.[1] ?? 0) + Number(del?.[1] ?? 0);
}

export const tokensOf = (w: Worker): number => w.usage.input + w.usage.output + w.usage.reasoning;

/** Whether this worker may win: built by its (latest) verdict, honest, and changed something. */
export function canWin(w: Worker): boolean {
  return w.state === "built" && !!w.verdict && w.verdict.honest && countsAsBuilt(w.verdict);
}

/**
 * The winner among attempts: built and honest; fewest changed lines, then earliest verdict, then lowest index. One
 * already merged stays the winner (a loser resumed later and built smaller does not take its place).
 */
export function pickWinner(workers: Worker[]): Worker | null {
  const cands = workers.filter(canWin);
  const merged = cands.find((w) => w.merged);
  if (merged) return merged;
  cands.sort(
    (a, b) =>
      (changedLines(a.verdict) ?? Number.MAX_SAFE_INTEGER) - (changedLines(b.verdict) ?? Number.MAX_SAFE_INTEGER) ||
      a.verdict!.gradedAt - b.verdict!.gradedAt ||
      (a.attempt?.index ?? 0) - (b.attempt?.index ?? 0),
  );
  return cands[0] ?? null;
}

/** The picture of one attempt group from its workers (any order). */
export function attemptGroup(groupId: string, workers: Worker[]): AttemptGroup {
  const ws = workers.filter((w) => w.attempt?.groupId === groupId).sort((a, b) => a.attempt!.index - b.attempt!.index);
  const winner = pickWinner(ws);
  return {
    groupId,
    all: ws.some((w) => w.attempt!.all),
    attempts: ws.map((w) => ({
      workerId: w.id,
      index: w.attempt!.index,
      target: w.targetId,
      state: w.state,
      verdict: w.verdict?.verdict ?? null,
      claim: w.verdict?.claim ?? null,
      honest: w.verdict ? w.verdict.honest : null,
      noop: isNoop(w.verdict),
      weakEvidence: isWeakEvidence(w.verdict),
      changedLines: changedLines(w.verdict),
      tokens: tokensOf(w),
      durationSec: w.startedAt !== null && w.endedAt !== null ? Math.max(0, (w.endedAt - w.startedAt) / 1000) : null,
      gradedAt: w.verdict?.gradedAt ?? null,
      stoppedForWinner: w.lostTo !== null,
      lostTo: w.lostTo,
    })),
    settled: ws.length > 0 && ws.every((w) => isAtRest(w.state)),
    winner: winner?.id ?? null,
  };
}
