import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { isActive, pendingAsks, reduceWorker, type Worker, type WorkerEvent } from "../../shared/worker";
import type { EventBus } from "../events";
import type { Approvals } from "../approvals";
import { endStaleServer, type HarnessServer, permissionAsk, questionAsk } from "../harness";
import type { WorkerLogStore } from "../store";
import type { WorkerRegistry } from "../registry";
import { counted } from "../../shared/words";

/**
 * Recovery: what the engine does when something under it went away. At start-up, from the workers' logs (the only
 * state there is): a queued worker queues again, a live one becomes interrupted (resumable; opencode forgot its pending
 * asks), a settled or grading one is graded again. When an opencode server dies, its live workers are interrupted;
 * when its event stream reconnects, the asks and idles missed meanwhile are picked up.
 */
interface RecoveryOptions {
  stateDir: string;
  registry: WorkerRegistry;
  logs: WorkerLogStore;
  bus: EventBus;
  approvals: Approvals;
  /** Queues a worker for admission (in this order). */
  enqueue: (workerId: string) => void;
  /** Grades a settled worker again. */
  regrade: (workerId: string) => Promise<void>;
  /** Looks whether a worker's session went idle (and settles it if so). */
  checkIdle: (workerId: string) => Promise<void>;
  /** The opencode server of a target, when there is one. */
  serverOf: (targetId: string) => HarnessServer | undefined;
}

export class Recovery {
  private readonly reg: WorkerRegistry;

  constructor(private readonly opts: RecoveryOptions) {
    this.reg = opts.registry;
  }

  /** opencode servers of an engine that was killed serve nobody now: end them, whether or not their target is used again. */
  endStaleServers(): void {
    const root = path.join(this.opts.stateDir, "opencode");
    if (!existsSync(root)) return;
    for (const dir of readdirSync(root)) endStaleServer(path.join(root, dir), (l) => this.reg.log(l));
  }

  /** Rebuilds every worker from its log, then sets each on its way (queued again, interrupted, or graded again). */
  recover(): void {
    const logged: WorkerEvent[] = [];
    for (const id of this.opts.logs.list()) {
      const { events, skipped } = this.opts.logs.load(id);
      logged.push(...events);
      if (skipped) this.reg.log(`worker ${id}: skipped ${counted(skipped, "unreadable log line")} (torn write)`);
      let w: Worker | null = null;
      for (const e of events) {
        try {
          w = reduceWorker(w, e);
        } catch {
          /* an event before worker.created: ignore */
        }
      }
      if (!w) continue;
      this.reg.workers.set(id, w);
      if (w.sessionId) this.reg.sessions.set(w.sessionId, id);
    }
    // Before anything new is published: clients holding a cursor of the last run resume from it.
    this.opts.bus.restore(logged);
    for (const w of this.reg.workers.values()) {
      this.opts.approvals.cancelAll(
        w.id,
        { kind: "engine", name: "restart" },
        "the engine restarted; opencode forgets pending asks on restart — resume the worker",
      );
      if (w.state === "queued") this.opts.enqueue(w.id);
      else if (isActive(w.state)) this.reg.fire(w.id, "interrupt", "the engine stopped while this worker ran; resume it");
      else if (w.state === "settled" || w.state === "grading") void this.opts.regrade(w.id);
    }
  }

  /** A target's opencode server died: its pending asks are lost, and its live workers interrupted (resumable). */
  onServerDown(targetId: string, why: string): void {
    this.reg.transient({ type: "opencode", targetId, status: "down", message: why, ts: Date.now() });
    for (const w of this.reg.list()) {
      if (w.targetId !== targetId || !isActive(w.state)) continue;
      this.opts.approvals.cancelAll(w.id, { kind: "engine", name: "opencode-down" }, "opencode serve went down; the ask was lost — resume the worker", {
        safe: true,
      });
      this.reg.fire(w.id, "interrupt", `${why}; resume the worker to continue in the same session`);
    }
  }

  /** After the event stream reconnects: pick up asks and idles that happened while it was down. */
  async resync(targetId: string): Promise<void> {
    const port = this.opts.serverOf(targetId)?.port;
    if (!port) return;
    for (const w of this.reg.list()) {
      if (w.targetId !== targetId || !isActive(w.state) || !w.sessionId) continue;
      const directory = this.reg.workspaceOf(w)?.cwd;
      const [permRes, questionRes] = [await port.permissions({ directory }), await port.questions({ directory })];
      // A list that could not be read says nothing about which asks are gone: keep every pending ask as it is.
      if (!permRes.ok || !questionRes.ok) {
        this.reg.log(`[warn] worker ${w.id}: opencode's pending asks could not be read after a reconnect; its asks stay pending`);
        void this.opts.checkIdle(w.id);
        continue;
      }
      const live = new Set<string>();
      const mine = (sessionID: string) => this.reg.sessions.get(sessionID) === w.id;
      for (const p of permRes.value) if (mine(p.sessionID)) live.add(p.id), this.opts.approvals.onAsk(w.id, permissionAsk(w.id, p));
      for (const q of questionRes.value) if (mine(q.sessionID)) live.add(q.id), this.opts.approvals.onAsk(w.id, questionAsk(w.id, q));
      for (const ask of pendingAsks(this.reg.get(w.id))) if (!live.has(ask.id)) this.opts.approvals.onAskGone(w.id, ask.id, "");
      void this.opts.checkIdle(w.id);
    }
  }
}
