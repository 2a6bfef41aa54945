// One supervisor for a long-running child the engine owns (llama-server, vLLM, SGLang — binary or container): start it
// with a launch function that resolves once the child is ready (or rejects when it exits first), restart it after a
// crash with the shared Backoff (1 s, 2 s, 4 s … capped at 30 s), give up after `max` crashes within the window and
// say why, stop it cleanly. Platform layer: Node only, no business logic.
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
  /** The child crashed (or a restart failed): the `attempt`-th restart follows in `delayMs`. */
  onRestart?: (attempt: number, reason: string, delayMs: number) => void;
  /** Too many crashes within the window: no more restarts. */
  onGiveUp?: (reason: string) => void;
}

export interface SupervisorOptions {
  maxRestarts?: number;
  windowMs?: number;
  baseDelayMs?: number;
}

/** Keeps one child running: `launch` starts it (ready when it resolves); an unexpected exit restarts it with backoff. */
export class Supervisor {
  private child: ChildProcess | null = null;
  private stopping = false;
  private readonly backoff: Backoff;
  restarts = 0;
  pid: number | null = null;

  constructor(
    private readonly launch: () => Promise<Launched>,
    private readonly ev: SupervisorEvents = {},
    private readonly o: SupervisorOptions = {},
  ) {
    this.backoff = new Backoff({ baseMs: o.baseDelayMs ?? 1000, capMs: 30_000, windowMs: o.windowMs ?? 300_000, max: o.maxRestarts ?? 5 });
  }

  /** The first start; rejects when the child never becomes ready (nothing is restarted then). */
  async start(): Promise<Launched> {
    const s = await this.launch();
    this.attach(s.child);
    this.ev.onReady?.(s.pid, s.readyMs);
    return s;
  }

  private attach(child: ChildProcess): void {
    this.child = child;
    this.pid = child.pid ?? null;
    child.once("exit", (code, sig) => {
      if (this.stopping || this.child !== child) return;
      void this.crashed(`exited ${code ?? sig}`);
    });
  }

  private async crashed(reason: string): Promise<void> {
    const delay = this.backoff.crashed();
    if (delay === null) {
      this.ev.onGiveUp?.(`${reason}; ${this.backoff.count} crashes in ${(this.o.windowMs ?? 300_000) / 1000} s — giving up`);
      return;
    }
    this.ev.onRestart?.(this.backoff.count, reason, delay);
    await new Promise((r) => setTimeout(r, delay));
    if (this.stopping) return;
    try {
      const s = await this.launch();
      this.restarts++;
      this.attach(s.child);
      this.ev.onReady?.(s.pid, s.readyMs);
    } catch (e) {
      await this.crashed((e as Error).message);
    }
  }

  /** Stops the child (SIGTERM, then SIGKILL after `graceMs`); no restart follows. */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true;
    if (this.pid) await stopPid(this.pid, graceMs);
  }
}
