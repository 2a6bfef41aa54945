import {
  attemptCount,
  AttemptOptions,
  attemptGroup,
  canWin,
  stoppedForWinnerReason,
  targetOfAttempt,
  type AttemptGroup,
  type AttemptRef,
} from "../../shared/attempts";
import { InputError } from "../../shared/errors";
import { newId, quotedId } from "../../shared/ids";
import { firstIssue } from "../../shared/issues";
import type { DecidedBy } from "../../shared/permission";
import { isActive, type Worker, type WorkerSpecInput } from "../../shared/worker";

/**
 * Best-of-N in the engine: a task with attempts becomes N workers of one attempt group (targets used in turn); when
 * one of them is built and honest, the others still queued or running are stopped (unless the person asked for all),
 * and the group's winner is picked by the checks (shared/attempts.ts), so the GUI, the CLI and MCP all see the same.
 */

export type AttemptInput = WorkerSpecInput & AttemptOptions;

/** One task with its attempt options → the worker specs to create (one without a group when it is a single attempt). */
export function expandAttempts(input: AttemptInput): { spec: WorkerSpecInput; attempt?: AttemptRef }[] {
  const { attempts, targets, allAttempts, ...spec } = input as AttemptInput & Record<string, unknown>;
  const parsed = AttemptOptions.safeParse({ attempts, targets, allAttempts });
  if (!parsed.success) throw new InputError(firstIssue(parsed.error));
  const o = parsed.data;
  if (o.targets?.length && spec.targetId) throw new InputError("give either targetId or targets (the attempts' targets, used in turn), not both");
  const n = attemptCount(o);
  if (n === 1 && !o.attempts) return [{ spec: o.targets?.length ? { ...spec, targetId: o.targets[0] } : spec }];
  const groupId = newId("a");
  return Array.from({ length: n }, (_, i) => {
    const target = targetOfAttempt(o, i);
    return { spec: target ? { ...spec, targetId: target } : spec, attempt: { groupId, index: i + 1, of: n, all: !!o.allAttempts } };
  });
}

interface AttemptsDeps {
  list: () => Worker[];
  get: (id: string) => Worker;
  stop: (id: string, reason: string, by: DecidedBy, facts: { lostTo: string }) => Promise<unknown>;
  log: (line: string) => void;
}

export class Attempts {
  constructor(private readonly deps: AttemptsDeps) {}

  group(groupId: string): AttemptGroup {
    const g = attemptGroup(groupId, this.deps.list());
    if (!g.attempts.length) throw new InputError(`unknown attempt group ${quotedId(groupId)}`, "not-found");
    return g;
  }

  /** Every attempt group the engine knows, newest first. */
  groups(): AttemptGroup[] {
    const ids: string[] = [];
    for (const w of this.deps.list()) if (w.attempt && !ids.includes(w.attempt.groupId)) ids.push(w.attempt.groupId);
    return ids.reverse().map((id) => attemptGroup(id, this.deps.list()));
  }

  /**
   * The winner of a queued attempt's group when the attempt has waited in the queue since its creation (never started,
   * never stopped and resumed by a person: its state has no reason yet), so it may be stopped for it; else null.
   */
  winnerBeforeStart(w: Worker): string | null {
    if (!w.attempt || w.attempt.all || w.startedAt !== null || w.stateReason !== null) return null;
    return attemptGroup(w.attempt.groupId, this.deps.list()).winner;
  }

  /** A worker reached `built`: when it can win, the attempts of its group still queued or running are stopped. */
  onBuilt(workerId: string): void {
    const w = this.deps.get(workerId);
    if (!w.attempt || w.attempt.all || !canWin(w)) return;
    for (const other of this.deps.list()) {
      if (other.id === w.id || other.attempt?.groupId !== w.attempt.groupId) continue;
      // Settled and grading attempts have done their work: their verdicts still count for the winner.
      if (other.state !== "queued" && !isActive(other.state)) continue;
      this.deps
        .stop(other.id, stoppedForWinnerReason(w.id), { kind: "engine", name: "attempts" }, { lostTo: w.id })
        .catch((err) => this.deps.log(`[warn] attempt ${other.id} was not stopped: ${(err as Error).message}`));
    }
  }
}
