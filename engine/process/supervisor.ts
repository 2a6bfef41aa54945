// The one supervisor of long-running children the engine owns — `opencode serve`, the engine itself under
// `ocw serve --background`, llama-server, vLLM, SGLang (binary or container): start the child with a launch function
// that resolves once it is ready (or rejects when it exits first), restart it after a crash with the shared Backoff,
// give up after `maxRestarts` crashes within the window and say why, stop it cleanly. Each user says only how its child
// starts and stops and what an exit means. Platform layer: Node only, no business logic.
import type { ChildProcess } from "node:child_process";
import { Backoff, stopPid } from "./process";

/** A started child: its process, pid and how long it took to be ready. */
export interface Launched {
  pid: number;
  child: ChildProcess;
  readyMs: number;
}

export interface SupervisorEvents {
  /** A (re)started child is ready. */
  onReady?: (pid: number, readyMs: number) => void;
  /** The ready child exited unexpectedly (once per exit, before the restart is scheduled). */
  onDown?: (reason: string, code: number | null, signal: NodeJS.Signals | null) => void;
  /** The child crashed (or a restart failed): the `attempt`-th restart follows in `delayMs`. */
  onRestart?: (attempt: number, reason: string, delayMs: number) => void;
  /** Too many crashes within the window (or a launch that failed for good, `GiveUp`): no more restarts. */
  onGiveUp?: (reason: string) => void;
}

export interface SupervisorOptions {
  /** Crashes within `windowMs` before giving up (default 5; `Infinity`: never give up). */
  maxRestarts?: number;
  windowMs?: number;
  /** The first delay (default 1 s), doubled per crash up to `capDelayMs` (default 30 s). */
  baseDelayMs?: number;
  capDelayMs?: number;
  /** The first crash of a window restarts at once; the doubling starts at the second. */
  firstImmediate?: boolean;
  /** A start that became ready starts the count again (a crash after a good start waits only `baseDelayMs`). */
  resetOnReady?: boolean;
  /** An exit that ends the supervision instead of a restart (the engine's own clean exit, code 0). */
  cleanExit?: (code: number | null, signal: NodeJS.Signals | null) => boolean;
  /** How a child is stopped; default SIGTERM, then SIGKILL after `graceMs`. */
  end?: (child: Launched, graceMs: number) => Promise<void>;
}

/** How a supervision ended: stopped, a clean exit, given up, or another owner took the child's place (launch → null). */
type SupervisorEnd = { kind: "stopped" } | { kind: "exited"; reason: string } | { kind: "gave-up"; reason: string } | { kind: "handed-over" };

/** Thrown by a launch that failed for good: the supervisor gives up at once instead of trying again. */
export class GiveUp extends Error {}

/** Says what an exit was, as every supervisor's log says it: `exited 3`, `exited SIGKILL`. */
const exitReason = (code: number | null, signal: NodeJS.Signals | null) => `exited ${code ?? signal}`;

/**
 * Keeps one child running: `launch(attempt)` starts it (0 the first start, then each restart; ready when it resolves,
 * null when a restart finds the child's place taken by another owner); an unexpected exit restarts it with backoff.
 */
export class Supervisor {
  private current: Launched | null = null;
  private launching: Promise<Launched | null> | null = null;
  private stopping = false;
  private readonly backoff: Backoff;
  private pause: { timer: NodeJS.Timeout; resume: () => void } | null = null;
  private finish: (end: SupervisorEnd) => void = () => {};
  /** Resolves when the supervision ends (a later `start()` begins a new one). */
  done: Promise<SupervisorEnd>;
  restarts = 0;
  /** The child's pid (the last one's, once it has gone), null before the first start. */
  pid: number | null = null;

  constructor(
    private readonly launch: (attempt: number) => Promise<Launched | null>,
    private readonly ev: SupervisorEvents = {},
    private readonly o: SupervisorOptions = {},
  ) {
    this.backoff = new Backoff({
      baseMs: o.baseDelayMs ?? 1000,
      capMs: o.capDelayMs ?? 30_000,
      windowMs: o.windowMs ?? 300_000,
      max: o.maxRestarts ?? 5,
      firstImmediate: o.firstImmediate,
    });
    this.done = this.newRun();
  }

  /** The running child, null while none is up (starting, restarting, stopped). */
  get running(): Launched | null {
    return this.current;
  }

  private newRun(): Promise<SupervisorEnd> {
    let settled = false;
    return new Promise<SupervisorEnd>((resolve) => {
      this.finish = (end) => {
        if (settled) return;
        settled = true;
        resolve(end);
      };
    });
  }

  /**
   * Starts the child, or joins the start (or restart) under way; resolves at once while one runs. Rejects when it never
   * becomes ready (nothing is restarted then). After `stop()` it starts anew.
   */
  async start(): Promise<Launched> {
    if (this.current) return this.current;
    if (this.stopping) {
      this.stopping = false;
      this.done = this.newRun();
    }
    const l = await (this.launching ??= this.launchOnce(0).finally(() => (this.launching = null)));
    if (!l) throw new Error("another owner took the child's place");
    return l;
  }

  private async launchOnce(attempt: number): Promise<Launched | null> {
    const l = await this.launch(attempt);
    if (!l) return null;
    if (this.stopping) {
      await this.endChild(l, 5000);
      throw new Error("stopped while starting");
    }
    if (attempt > 0) this.restarts++;
    this.attach(l);
    return l;
  }

  private attach(l: Launched): void {
    this.current = l;
    this.pid = l.pid;
    if (this.o.resetOnReady) this.backoff.reset();
    this.ev.onReady?.(l.pid, l.readyMs);
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      if (this.current !== l) return;
      this.current = null;
      if (this.stopping) return;
      const reason = exitReason(code, signal);
      if (this.o.cleanExit?.(code, signal)) return this.finish({ kind: "exited", reason });
      this.ev.onDown?.(reason, code, signal);
      void this.crashed(reason);
    };
    // an exit before this listener existed (between the launch's last look and now) is not missed
    if (l.child.exitCode !== null || l.child.signalCode !== null) exited(l.child.exitCode, l.child.signalCode);
    else l.child.once("exit", exited);
  }

  private giveUp(reason: string): void {
    this.ev.onGiveUp?.(reason);
    this.finish({ kind: "gave-up", reason });
  }

  private async crashed(reason: string): Promise<void> {
    const delay = this.backoff.crashed();
    if (delay === null) return this.giveUp(`${reason}; ${this.backoff.count} crashes in ${(this.o.windowMs ?? 300_000) / 1000} s — giving up`);
    this.ev.onRestart?.(this.backoff.count, reason, delay);
    if (delay > 0) await new Promise<void>((resume) => (this.pause = { timer: setTimeout(resume, delay), resume }));
    this.pause = null;
    // stopped meanwhile, or a caller's start() brought it back already
    if (this.stopping || this.current) return;
    try {
      const l = await (this.launching ??= this.launchOnce(this.backoff.count).finally(() => (this.launching = null)));
      if (!l) this.finish({ kind: "handed-over" });
    } catch (e) {
      if (this.stopping) return;
      if (e instanceof GiveUp) return this.giveUp(e.message);
      await this.crashed((e as Error).message);
    }
  }

  private endChild(l: Launched, graceMs: number): Promise<void> {
    if (l.child.exitCode !== null || l.child.signalCode !== null) return Promise.resolve();
    return this.o.end ? this.o.end(l, graceMs) : stopPid(l.pid, graceMs).then(() => {});
  }

  /** Stops the child (by `end`, default SIGTERM then SIGKILL after `graceMs`); no restart follows. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.pause) {
      clearTimeout(this.pause.timer);
      this.pause.resume();
    }
    const l = this.current;
    this.current = null;
    if (l) await this.endChild(l, graceMs);
    this.finish({ kind: "stopped" });
  }
}
