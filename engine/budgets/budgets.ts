import { isActive, type Worker } from "../../shared/worker";
import type { Usage, WorkerRegistry } from "../registry";
import { config } from "../config";

/**
 * Budgets and the watchdog. A worker's spec carries `budget: { tokens?, wallSec? }`; its usage is the sum over its
 * session's assistant messages (plus what was recorded before this engine run saw them), recorded as `usage` events.
 * Over a budget, the worker is stopped with the reason (by "engine budget"). A running worker with no event for
 * `stallMs` is flagged `stalled` once (a `stalled` event), never stopped for it.
 */
interface BudgetsOptions {
  registry: WorkerRegistry;
  /** Stops a worker (the engine's stop: asks cancelled, session aborted, state stopped). */
  stop: (workerId: string, reason: string) => Promise<unknown>;
  stallMs: number;
  clock?: Clock;
}

/** Time and timers, replaceable in tests. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): NodeJS.Timeout;
  setInterval(fn: () => void, ms: number): NodeJS.Timeout;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  setInterval: (fn, ms) => setInterval(fn, ms),
};

const total = (u: Usage) => u.input + u.output + u.reasoning;

export class Budgets {
  private readonly reg: WorkerRegistry;
  private readonly clock: Clock;
  private readonly watchdog: NodeJS.Timeout;

  constructor(private readonly opts: BudgetsOptions) {
    this.reg = opts.registry;
    this.clock = opts.clock ?? realClock;
    this.watchdog = this.clock.setInterval(() => this.checkStalls(), Math.min(5000, opts.stallMs / 2));
    this.watchdog.unref?.();
  }

  /** Starts (or restarts, after a resume) the worker's wall-clock budget, counting from when it first started. */
  armWall(workerId: string): void {
    const w = this.reg.get(workerId);
    const rt = this.reg.rt(workerId);
    // A task that names no budget still has one (OCW_WORKER_WALL_SEC, 4 h by default; 0: none).
    const fallback = config().OCW_WORKER_WALL_SEC;
    const wallSec = w.spec.budget.wallSec ?? (fallback > 0 ? fallback : undefined);
    if (!wallSec) return rt.armBudget(undefined);
    const used = (this.clock.now() - (w.startedAt ?? this.clock.now())) / 1000;
    rt.armBudget(this.clock.setTimeout(() => this.over(workerId, `budget: wall clock of ${wallSec}s used up`), Math.max(0, (wallSec - used) * 1000)));
  }

  /** An assistant message's usage as opencode reports it (again and again while it streams): recorded when it changed. */
  onUsage(workerId: string, messageId: string, next: Usage): void {
    const w = this.reg.get(workerId);
    const sum = this.reg.rt(workerId).countUsage(messageId, next, w.usage);
    if (!sum) return;
    this.reg.safeRecord(workerId, { type: "usage", usage: sum });
    const limit = w.spec.budget.tokens;
    if (limit && total(sum) > limit && isActive(w.state)) this.over(workerId, `budget: ${limit} tokens used up`);
  }

  /** A stop nobody awaits: a failure (a full disk) becomes a notice, never an unhandled rejection that ends the engine. */
  private over(workerId: string, reason: string): void {
    this.opts.stop(workerId, reason).catch((err) => this.reg.notice("error", `${reason}, but ${(err as Error).message}`));
  }

  /** Flags running workers that sent no event for the stall time (once each, until they move again). */
  checkStalls(): void {
    const now = this.clock.now();
    for (const w of this.reg.workers.values() as Iterable<Worker>) {
      if (w.state !== "running" || w.stalled) continue;
      const idle = now - this.reg.rt(w.id).lastEventAt;
      if (idle >= this.opts.stallMs) this.reg.safeRecord(w.id, { type: "stalled", idleSec: Math.round(idle / 1000) });
    }
  }

  close(): void {
    clearInterval(this.watchdog);
    for (const w of this.reg.workers.values()) this.reg.rt(w.id).clearBudget();
  }
}
