import { z } from "zod";
import { countsAsBuilt, isNoop, isWeakEvidence, tokensOf } from "./attempts";
import { isAtRest, taskKey, type Worker } from "./worker";

/**
 * The ledger per target, from the engine's real runs (not the ladder: `packs/<target>/grade.json` is earned only by
 * `ocw grade`). A task is one worker, or one attempt group (its attempts on that target). A no-op "built" never
 * counts as built. Pure: the engine answers it on the API and the GUI folds the same workers with it.
 */
export const LedgerRow = z.object({
  target: z.string(),
  /** Tasks with at least one verdict on this target. */
  tasks: z.number().int(),
  /** Workers with a verdict (attempts stopped for a winner have none and are not counted). */
  graded: z.number().int(),
  /** Built attempts / graded attempts. */
  passAt1: z.number().nullable(),
  /** The most attempts one task had on this target (1 when every task ran once). */
  k: z.number().int(),
  /** Tasks with a built attempt / tasks (with up to k attempts each). */
  passAtK: z.number().nullable(),
  /** Built tasks. */
  built: z.number().int(),
  /** Mean round at which built workers were first built (1 when a worker has no later rounds). */
  roundsToBuilt: z.number().nullable(),
  /** Honest claims / graded. */
  honestRate: z.number().nullable(),
  /** Tokens (input + output + reasoning) of every finished worker on this target / built tasks. */
  tokensPerBuilt: z.number().nullable(),
  /** Seconds of worker time (start → end, every finished worker) / built tasks. */
  secPerBuilt: z.number().nullable(),
  /** Verdicts "built" that changed nothing: shown, never counted. */
  noopBuilt: z.number().int(),
  /** Built with checks that already passed on the base. */
  weakEvidence: z.number().int(),
  /** The workers behind the row, oldest first. */
  workerIds: z.array(z.string()),
});
export type LedgerRow = z.infer<typeof LedgerRow>;
export const Ledger = z.array(LedgerRow);
export type Ledger = z.infer<typeof Ledger>;

type Round = { verdict?: unknown };

/** The round (1-based) at which a worker was first built; null when it never was. Reads the worker's rounds if it has them. */
function roundOfFirstBuilt(w: Worker): number | null {
  const rounds = (w as Worker & { rounds?: unknown }).rounds;
  if (Array.isArray(rounds) && rounds.length) {
    const i = (rounds as Round[]).findIndex((r) => {
      const v = r?.verdict;
      return v === "built" || (typeof v === "object" && v !== null && (v as { verdict?: unknown }).verdict === "built");
    });
    if (i >= 0) return i + 1;
  }
  return countsAsBuilt(w.verdict) ? 1 : null;
}

const ratio = (a: number, b: number) => (b > 0 ? a / b : null);

export function ledger(workers: Worker[]): Ledger {
  const byTarget = new Map<string, Worker[]>();
  for (const w of workers) {
    if (!isAtRest(w.state)) continue;
    const t = w.targetId ?? "(none)";
    byTarget.set(t, [...(byTarget.get(t) ?? []), w]);
  }
  const rows: LedgerRow[] = [];
  for (const [target, ws] of byTarget) {
    const graded = ws.filter((w) => w.verdict);
    if (!graded.length) continue;
    const tasks = new Map<string, Worker[]>();
    // a task's attempts, and its retries, are one task (shared/worker.ts taskKey)
    const byId = new Map(ws.map((w) => [w.id, w]));
    for (const w of graded) {
      const key = taskKey(w, byId);
      tasks.set(key, [...(tasks.get(key) ?? []), w]);
    }
    const builtAttempts = graded.filter((w) => countsAsBuilt(w.verdict));
    const builtTasks = [...tasks.values()].filter((t) => t.some((w) => countsAsBuilt(w.verdict))).length;
    const rounds = builtAttempts.map(roundOfFirstBuilt).filter((r): r is number => r !== null);
    const tokens = ws.reduce((s, w) => s + tokensOf(w), 0);
    const sec = ws.reduce((s, w) => s + (w.startedAt !== null && w.endedAt !== null ? Math.max(0, w.endedAt - w.startedAt) / 1000 : 0), 0);
    rows.push({
      target,
      tasks: tasks.size,
      graded: graded.length,
      passAt1: ratio(builtAttempts.length, graded.length),
      k: Math.max(1, ...[...tasks.keys()].map((key) => ws.filter((w) => taskKey(w, byId) === key).length)),
      passAtK: ratio(builtTasks, tasks.size),
      built: builtTasks,
      roundsToBuilt: rounds.length ? rounds.reduce((a, b) => a + b, 0) / rounds.length : null,
      honestRate: ratio(graded.filter((w) => w.verdict!.honest).length, graded.length),
      tokensPerBuilt: ratio(tokens, builtTasks),
      secPerBuilt: ratio(sec, builtTasks),
      noopBuilt: graded.filter((w) => w.verdict!.verdict === "built" && isNoop(w.verdict)).length,
      weakEvidence: builtAttempts.filter((w) => isWeakEvidence(w.verdict)).length,
      workerIds: [...ws].sort((a, b) => a.createdAt - b.createdAt).map((w) => w.id),
    });
  }
  return rows.sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
}
