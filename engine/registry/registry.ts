import path from "node:path";
import { quotedId } from "../../shared/ids";
import type { EngineEvent } from "../../shared/events";
import { nextState, type WorkerTransition } from "../../shared/worker-machine";
import { isAtRest, reduceWorker, type Worker, type WorkerEvent, type WorkerEventBody, type WorkerState } from "../../shared/worker";
import { InputError } from "../../shared/errors";
import { redactUrlCredentials } from "../../shared/remote-url";
import type { EventBus } from "../events";
import type { OpencodePort } from "../harness";
import type { WorkerLogStore } from "../store";
import type { Workspace } from "../workspace";
import { type Activity, WorkerRun } from "./worker-run";

interface RegistryOptions {
  stateDir: string;
  bus: EventBus;
  logs: WorkerLogStore;
  log: (line: string) => void;
  /** Called after a worker reached a state, once it is recorded (admission, budgets, release hook in here). */
  moved: (workerId: string, state: WorkerState) => void;
}

/**
 * The workers the engine knows and their live runtime: every change is an event appended to the worker's log, folded
 * into its picture and published; a state changes only by the transition table (shared/worker-machine.ts).
 */
/** What a state change records beside its reason. */
export interface StateFacts {
  /** A stop because this other attempt of the worker's task was built (its worker id). */
  lostTo?: string;
}

export class WorkerRegistry {
  readonly workers = new Map<string, Worker>();
  private readonly runtime = new Map<string, WorkerRun>();
  /** opencode session id (sub-agent children included) → worker id. */
  readonly sessions = new Map<string, string>();

  constructor(private readonly opts: RegistryOptions) {}

  /** A line of the engine's log: any URL credentials in it (an endpoint, a remote, an error quoting one) are not kept. */
  log(line: string): void {
    this.opts.log(redactUrlCredentials(line));
  }

  transient(event: EngineEvent): void {
    this.opts.bus.publish(event);
  }

  /**
   * A notice to every client. `engineWords`: the text is the engine's own words and names alone (text from elsewhere,
   * a model's or opencode's, JSON-quoted in it), so a client shows its code spans as code; never for a text that holds
   * an error's or a worker's words as they came.
   */
  notice(level: "info" | "warn" | "error", text: string, o: { engineWords?: boolean } = {}): void {
    // A notice is shown by every client and kept in the log: said without URL credentials.
    const message = redactUrlCredentials(text);
    this.opts.log(`[${level}] ${message}`);
    this.transient({ type: "notice", level, message, ...(o.engineWords ? { engineWords: true as const } : {}), ts: Date.now() });
  }

  /** The worker's live run (worker-run.ts): made on first use, one per worker. */
  rt(id: string): WorkerRun {
    let r = this.runtime.get(id);
    if (!r) {
      r = new WorkerRun();
      this.runtime.set(id, r);
    }
    return r;
  }

  /** Sets the activity under way; `end` clears it only when it is still the one that was started. */
  begin(id: string, kind: Activity["kind"]): void {
    this.rt(id).begin(kind);
  }

  end(id: string, kind: Activity["kind"]): void {
    this.rt(id).end(kind);
  }

  is(id: string, kind: Activity["kind"]): boolean {
    return this.rt(id).activity.kind === kind;
  }

  list(): Worker[] {
    // Workers of one batch share a millisecond; their place in the event stream settles ties (submission order), and
    // survives a restart (which reloads the logs in directory order, not creation order).
    return [...this.workers.values()].sort((a, b) => a.createdAt - b.createdAt || a.createdSeq - b.createdSeq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  get(id: string): Worker {
    const w = this.workers.get(id);
    if (!w) throw new InputError(`unknown worker ${quotedId(id)}: no worker has that id (\`ocw list\` or the workers tool lists them)`, "not-found");
    return w;
  }

  /** Appends to the worker's log, folds into its picture, publishes. A failed append throws and changes nothing. */
  record(workerId: string, body: WorkerEventBody): Worker {
    const prev = this.workers.get(workerId) ?? null;
    const event = { ...body, workerId, seq: (prev?.lastSeq ?? 0) + 1, ts: Date.now(), busSeq: this.opts.bus.nextSeq } as WorkerEvent;
    this.opts.logs.append(event);
    const next = reduceWorker(prev, event);
    // An event of a worker at rest (a merge, a discard, a landing) opened its log again: close it, or every finished
    // worker a person merges or discards keeps a file open for as long as the engine runs.
    if (prev && isAtRest(prev.state) && isAtRest(next.state)) this.opts.logs.release(workerId);
    this.workers.set(workerId, next);
    this.rt(workerId).heard(event.ts);
    this.opts.bus.publish(event);
    return next;
  }

  /** record() where a failed append is a notice, not an error of the caller. */
  safeRecord(workerId: string, body: WorkerEventBody): void {
    try {
      this.record(workerId, body);
    } catch (err) {
      // The platform's words alone ("ENOSPC: no space left on device") name neither the worker nor what was lost.
      this.notice(
        "error",
        `worker ${workerId}: its log could not be written (${(err as Error).message}), so this change was not kept: free disk space or fix the state folder's permissions`,
      );
    }
  }

  /** Moves a worker by the transition table; an illegal move is logged and not applied. Returns whether it moved. */
  fire(workerId: string, t: WorkerTransition, reason?: string, o: StateFacts = {}): boolean {
    const { moved, error } = this.changeState(workerId, t, reason, o);
    if (error) this.notice("error", error.message);
    return moved;
  }

  /** fire() for a caller that reports a failed append itself (it comes back as `error`, not as a notice). */
  changeState(workerId: string, t: WorkerTransition, reason?: string, o: StateFacts = {}): { moved: boolean; error?: Error } {
    const w = this.workers.get(workerId);
    if (!w) return { moved: false };
    const state = nextState(w.state, t);
    if (!state) {
      this.log(`[warn] worker ${workerId}: illegal transition "${t}" from ${w.state} ignored`);
      return { moved: false };
    }
    if (state === w.state) return { moved: false };
    try {
      // A reason (a failed model call, an endpoint that stopped answering) is kept and shown: without URL credentials.
      // A stop says whether it was for another attempt's build (null: any other cause), in the record, whatever its words.
      this.record(workerId, {
        type: "worker.state",
        state,
        ...(reason ? { reason: redactUrlCredentials(reason) } : {}),
        ...(state === "stopped" ? { lostTo: o.lostTo ?? null } : {}),
      });
    } catch (err) {
      return { moved: false, error: err as Error };
    }
    if (isAtRest(state) || state === "settled") this.rt(workerId).clearBudget();
    // A worker at rest appends rarely (a later round, a landing): its log need not stay open.
    if (isAtRest(state)) this.opts.logs.release(workerId);
    this.opts.moved(workerId, state);
    return { moved: true };
  }

  /** The worker's workspace as its log describes it (the engine's own repository included); null before it has one. */
  workspaceOf(w: Worker): Workspace | null {
    if (!w.worktree || !w.branch || !w.baseCommit) return null;
    const rt = this.rt(w.id);
    if (rt.workspace) return rt.workspace;
    const sub = path.relative(w.repo, w.spec.directory);
    const ws: Workspace = {
      worktree: w.worktree,
      cwd: sub && !sub.startsWith("..") ? path.join(w.worktree, sub) : w.worktree,
      branch: w.branch,
      baseCommit: w.baseCommit,
      baseBranch: w.baseBranch,
      repo: w.repo,
      gitDir: this.engineGitDir(w.id),
    };
    rt.setWorkspace(ws);
    return ws;
  }

  /** The engine's own repository for a worker (outside every sandbox). */
  engineGitDir(workerId: string): string {
    return path.join(this.opts.stateDir, "repos", `${workerId}.git`);
  }

  get workspacesRoot(): string {
    return path.join(this.opts.stateDir, "workspaces");
  }

  /** Private tmp folders of workers (one each, also their HOME), writable only to their own commands. */
  get workerTmpRoot(): string {
    return path.join(this.opts.stateDir, "tmp");
  }

  /** The live opencode port of a worker and the folder its session runs in (null when its server is not up). */
  portOf(workerId: string): { port: OpencodePort; directory: string | undefined } | null {
    const port = this.rt(workerId).server?.port;
    const w = this.workers.get(workerId);
    return port && w ? { port, directory: this.workspaceOf(w)?.cwd } : null;
  }

  /**
   * Deletes the worker's session in opencode (its messages, parts and events: ~25 KB of opencode's database a worker,
   * kept for good otherwise), then disposes the instance the deletion loaded for its folder. Failures are ignored.
   */
  async deleteSession(workerId: string): Promise<void> {
    const w = this.workers.get(workerId);
    const c = this.portOf(workerId);
    if (!w?.sessionId || !c) return;
    await c.port.deleteSession({ sessionID: w.sessionId, directory: c.directory });
    if (c.directory) await c.port.dispose({ directory: c.directory });
  }

  /** Aborts the worker's session in opencode, if it has one (its bash children end with it); failures are ignored. */
  async abortSession(workerId: string): Promise<void> {
    const w = this.workers.get(workerId);
    const c = this.portOf(workerId);
    if (w?.sessionId && c) await c.port.abort({ sessionID: w.sessionId, directory: c.directory });
  }
}
