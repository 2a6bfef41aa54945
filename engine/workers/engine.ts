import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, realpathSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { z } from "zod";
import type { BatchSummary } from "../../shared/batch";
import type { EngineEvent } from "../../shared/events";
import { firstIssue } from "../../shared/issues";
import {
  Decision,
  rejectionMessage,
  type DecidedBy,
  type Grant,
  type PermissionAsk,
  PolicyRule,
} from "../../shared/permission";
import { nextState, type WorkerTransition } from "../../shared/worker-machine";
import type { Target } from "../../shared/target";
import {
  isActive,
  isFinal,
  pendingAsks,
  reduceWorker,
  WorkerSpec,
  type TranscriptPart,
  type Worker,
  type WorkerEvent,
  type WorkerEventBody,
  type WorkerSpecInput,
  type WorkerState,
} from "../../shared/worker";
import { EventBus } from "../events";
import { grade } from "../grading/grade";
import { KeyGateway } from "../gateway/gateway";
import { endStaleServer, type OpencodeEvent } from "../harness/opencode-server";
import { opencodeHarness, type Harness, type HarnessServer } from "../harness/harness";
import { WORKER_AGENT } from "../harness/config";
import { sandboxStatus, writeWorkerShell, type SandboxKind } from "../sandbox/sandbox";
import { grantFor, grantPattern, inspectAsk, realLocation } from "../approvals/inspect";
import { chooseEndpoint, endpointsOf, isPool, probeHealth, readEndpoint, type EndpointStatus } from "../admission/capacity";
import { providerIdFor } from "../harness/config";
import { keyForProbe, resolveKey } from "../serving/keys";
import { readJson, writeJsonAtomic } from "../store/json-file";
import { TargetStore } from "../store/targets";
import { WorkerLogStore } from "../store/worker-log";
import {
  createWorkspace,
  fullDiff,
  InputError,
  inspectRepo,
  mergeBranch,
  removeWorkspace,
  type RepoInfo,
  type Workspace,
} from "../workspace/workspace";
import { preflightEndpoint, unreachable } from "./preflight";
import { resumePrompt, steerPrompt, taskPrompt } from "./prompts";
import { writesOutside } from "../approvals/worktree-guard";
import { config } from "../config";

export { InputError } from "../workspace/workspace";

export interface EngineOptions {
  stateDir: string;
  targets?: TargetStore;
  log?: (line: string) => void;
  /** Seconds without any event before a running worker is flagged stalled. */
  stallSec?: number;
  /**
   * The person's explicit opt-out of the OS sandbox (`--no-sandbox`, OCW_NO_SANDBOX=1). Without it, an engine that
   * finds no sandbox refuses to start workers and says why.
   */
  noSandbox?: boolean;
  /** How opencode servers are made: the real `opencode serve` unless a test passes a fake. */
  harness?: Harness;
}

/** Per-worker things that are not events: live handles, timers. */
interface Runtime {
  workspace?: Workspace;
  server?: HarnessServer;
  stopping?: boolean;
  lastError?: string;
  budgetTimer?: NodeJS.Timeout;
  lastEventAt: number;
  usageByMessage: Map<string, { input: number; output: number; reasoning: number; cost: number }>;
  /** The disposal of the worker's opencode instance after it finished; a resume waits for it. */
  releasing?: Promise<void>;
  /** An endpoint check after a failed model call is under way. */
  probing?: boolean;
  /** The repository as validated when the worker was created (absent for workers recovered from their log). */
  repo?: RepoInfo;
  settling?: boolean;
  resumeMessage?: string;
  /** Usage recorded before this engine run saw the session's messages (a resumed or recovered worker). */
  usageBase?: { input: number; output: number; reasoning: number; cost: number };
}

const newId = (prefix: string) => `${prefix}-${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;

/**
 * The worker engine: admission by the target's slots, git worktrees, opencode sessions, the approvals queue,
 * steering, grading and recovery. Every change is an event appended to the worker's log, then published.
 */
export class Engine {
  readonly bus: EventBus;
  readonly targets: TargetStore;
  private readonly logs: WorkerLogStore;
  private readonly workers = new Map<string, Worker>();
  private readonly runtime = new Map<string, Runtime>();
  private readonly servers = new Map<string, HarnessServer>();
  private readonly sessions = new Map<string, string>(); // opencode session id (incl. sub-agent children) → worker id
  private readonly queue: string[] = [];
  /** Asks whose answer this engine is sending to opencode right now. */
  private readonly deciding = new Set<string>();
  private readonly deltas = new Map<string, { workerId: string; partId: string; field: string; delta: string }>();
  private deltaTimer: NodeJS.Timeout | null = null;
  private readonly watchdog: NodeJS.Timeout;
  private closed = false;
  private readonly gateway = new KeyGateway();
  /** Live state of every endpoint of pool targets, by target id then URL (refreshed while they have work). */
  private readonly endpointState = new Map<string, Map<string, EndpointStatus>>();
  private readonly refreshing = new Set<string>();
  private readonly poolTimer: NodeJS.Timeout;
  /** Whether each target's model server answers, as the engine last saw it (the active target and those with work). */
  private readonly modelHealth = new Map<string, { healthy: boolean; problem: string | null; checkedAt: number }>();
  private readonly modelTimer: NodeJS.Timeout;
  /** How workers are contained; "none" only by the person's opt-out. */
  readonly sandbox: { kind: SandboxKind; reason: string | null; optedOut: boolean };

  constructor(private readonly opts: EngineOptions) {
    this.targets = opts.targets ?? new TargetStore(path.join(opts.stateDir, "targets.json"));
    this.logs = new WorkerLogStore(path.join(opts.stateDir, "workers"));
    this.bus = EventBus.forStateDir(opts.stateDir);
    const found = sandboxStatus();
    const optedOut = opts.noSandbox ?? config().OCW_NO_SANDBOX;
    this.sandbox = { kind: optedOut ? "none" : found.kind, reason: found.reason, optedOut };
    this.endStaleServers();
    this.recover();
    const stallMs = (opts.stallSec ?? config().OCW_STALL_SEC) * 1000;
    this.watchdog = setInterval(() => this.checkStalls(stallMs), Math.min(5000, stallMs / 2));
    this.watchdog.unref();
    this.poolTimer = setInterval(() => this.refreshPools(), config().OCW_POOL_PROBE_MS);
    this.poolTimer.unref();
    this.modelTimer = setInterval(() => void this.checkModels(), config().OCW_MODEL_PROBE_MS);
    this.modelTimer.unref();
    setImmediate(() => void this.checkModels());
    setImmediate(() => this.pump());
    setTimeout(() => void this.collectGarbage().catch((err) => this.log(`[warn] workspace cleanup: ${(err as Error).message}`)), 5000).unref();
  }

  private log(line: string) {
    this.opts.log?.(line);
  }

  // ---------- events ----------

  private rt(id: string): Runtime {
    let r = this.runtime.get(id);
    if (!r) {
      r = { lastEventAt: Date.now(), usageByMessage: new Map() };
      this.runtime.set(id, r);
    }
    return r;
  }

  /** Appends to the worker's log, folds into its picture, publishes. A failed append throws and changes nothing. */
  private record(workerId: string, body: WorkerEventBody): Worker {
    const prev = this.workers.get(workerId) ?? null;
    const event = { ...body, workerId, seq: (prev?.lastSeq ?? 0) + 1, ts: Date.now(), busSeq: this.bus.nextSeq } as WorkerEvent;
    this.logs.append(event);
    const next = reduceWorker(prev, event);
    this.workers.set(workerId, next);
    this.rt(workerId).lastEventAt = event.ts;
    this.bus.publish(event);
    return next;
  }

  /** Moves a worker by the transition table; an illegal move is logged and not applied. Returns whether it moved. */
  private fire(workerId: string, t: WorkerTransition, reason?: string): boolean {
    const { moved, error } = this.changeState(workerId, t, reason);
    if (error) this.notice("error", error.message);
    return moved;
  }

  /** fire() for a caller that reports a failed append itself (it comes back as `error`, not as a notice). */
  private changeState(workerId: string, t: WorkerTransition, reason?: string): { moved: boolean; error?: Error } {
    const w = this.workers.get(workerId);
    if (!w) return { moved: false };
    const state = nextState(w.state, t);
    if (!state) {
      this.log(`[warn] worker ${workerId}: illegal transition "${t}" from ${w.state} ignored`);
      return { moved: false };
    }
    if (state === w.state) return { moved: false };
    try {
      this.record(workerId, { type: "worker.state", state, ...(reason ? { reason } : {}) });
    } catch (err) {
      return { moved: false, error: err as Error };
    }
    if (isFinal(state) || state === "settled") {
      clearTimeout(this.rt(workerId).budgetTimer);
      this.pump();
    }
    if (isFinal(state)) this.rt(workerId).releasing = this.release(workerId);
    return { moved: true };
  }

  /**
   * opencode keeps an instance (project state, LSP, tools) per directory it has seen, and every worktree is a new
   * directory: without this, `opencode serve` grew by ~90 MB per finished worker (bench: 32 workers, 0.5 → 3.7 GB).
   * A finished worker's instance is disposed; a resume boots it again from the session stored on disk.
   */
  private async release(workerId: string): Promise<void> {
    const rt = this.rt(workerId);
    const ws = this.workspaceOf(this.workers.get(workerId)!);
    if (!ws || !rt.server?.client) return;
    const dispose = rt.server.client.instance.dispose({ directory: ws.cwd }).catch(() => undefined);
    // A hung opencode must not hold up a resume (that finds the server's state on its own).
    await Promise.race([dispose, new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  private transient(event: EngineEvent): void {
    this.bus.publish(event);
  }

  private notice(level: "info" | "warn" | "error", message: string) {
    this.log(`[${level}] ${message}`);
    this.transient({ type: "notice", level, message, ts: Date.now() });
  }

  // ---------- recovery ----------

  /** opencode servers of an engine that was killed serve nobody now: end them, whether or not their target is used again. */
  private endStaleServers(): void {
    const root = path.join(this.opts.stateDir, "opencode");
    if (!existsSync(root)) return;
    for (const dir of readdirSync(root)) endStaleServer(path.join(root, dir), (l) => this.log(l));
  }

  /** Rebuilds every worker from its log. Running ones become interrupted (resumable); settled ones are re-graded. */
  private recover(): void {
    const logged: WorkerEvent[] = [];
    for (const id of this.logs.list()) {
      const { events, skipped } = this.logs.load(id);
      logged.push(...events);
      if (skipped) this.log(`worker ${id}: skipped ${skipped} unreadable log line(s) (torn write)`);
      let w: Worker | null = null;
      for (const e of events) {
        try {
          w = reduceWorker(w, e);
        } catch {
          /* an event before worker.created: ignore */
        }
      }
      if (!w) continue;
      this.workers.set(id, w);
      if (w.sessionId) this.sessions.set(w.sessionId, id);
    }
    // Before anything new is published: clients holding a cursor of the last run resume from it.
    this.bus.restore(logged);
    for (const w of this.workers.values()) {
      for (const ask of pendingAsks(w)) {
        this.record(w.id, { type: "ask.resolved", askId: ask.id, status: "cancelled", by: { kind: "engine", name: "restart" }, message: "the engine restarted; opencode forgets pending asks on restart — resume the worker" });
      }
      if (w.state === "queued") this.queue.push(w.id);
      else if (isActive(w.state)) this.fire(w.id, "interrupt", "the engine stopped while this worker ran; resume it");
      else if (w.state === "settled" || w.state === "grading") void this.regrade(w.id);
    }
  }

  private workspaceOf(w: Worker): Workspace | null {
    if (!w.worktree || !w.branch || !w.baseCommit) return null;
    const rt = this.rt(w.id);
    if (rt.workspace) return rt.workspace;
    const sub = path.relative(w.repo, w.spec.directory);
    rt.workspace = {
      worktree: w.worktree,
      cwd: sub && !sub.startsWith("..") ? path.join(w.worktree, sub) : w.worktree,
      branch: w.branch,
      baseCommit: w.baseCommit,
      baseBranch: w.baseBranch,
      repo: w.repo,
      gitDir: this.engineGitDir(w.id),
    };
    return rt.workspace;
  }

  /** The engine's own repository for a worker (outside every sandbox). */
  private engineGitDir(workerId: string): string {
    return path.join(this.opts.stateDir, "repos", `${workerId}.git`);
  }

  private get workspacesRoot(): string {
    return path.join(this.opts.stateDir, "workspaces");
  }

  /** Private tmp folders of workers (one each, also their HOME), writable only to their own commands. */
  private get workerTmpRoot(): string {
    return path.join(this.opts.stateDir, "tmp");
  }

  // ---------- public API ----------

  list(): Worker[] {
    // Workers of one batch share a millisecond; their place in the event stream settles ties (submission order), and
    // survives a restart (which reloads the logs in directory order, not creation order).
    return [...this.workers.values()].sort((a, b) => a.createdAt - b.createdAt || a.createdSeq - b.createdSeq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  get(id: string): Worker {
    const w = this.workers.get(id);
    if (!w) throw new InputError(`unknown worker "${id}": list workers to see valid ids`, "not-found");
    return w;
  }

  pendingAsks(): (PermissionAsk & { ageSec: number })[] {
    const now = Date.now();
    return this.list()
      .flatMap((w) => pendingAsks(w))
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((a) => ({ ...a, ageSec: Math.round((now - a.createdAt) / 1000) }));
  }

  resolveTarget(targetId?: string): Target {
    if (targetId) {
      const t = this.targets.get(targetId);
      if (!t) throw new InputError(`unknown target "${targetId}": run \`ocw targets\` to list them`);
      return t;
    }
    const t = this.targets.active();
    if (!t) throw new InputError("no active target: run `ocw setup`, or pass --endpoint URL --model ID");
    return t;
  }

  /** Validates, creates the worker (queued) and returns its id at once; the work happens in the background. */
  /** Workers run only in the sandbox, unless the person opted out of it explicitly. */
  private requireSandbox(): void {
    if (this.sandbox.kind === "none" && !this.sandbox.optedOut) {
      throw new InputError(`workers cannot be contained here: ${this.sandbox.reason}. To run them unsandboxed anyway (they can then read your files and secrets), restart the engine with --no-sandbox or OCW_NO_SANDBOX=1`, "unavailable");
    }
  }

  async start(input: WorkerSpecInput, opts: { batchId?: string } = {}): Promise<{ workerId: string }> {
    this.requireSandbox();
    const spec = parseInput(WorkerSpec, input);
    const repo = await inspectRepo(spec.directory);
    const target = this.resolveTarget(spec.targetId);
    await this.preflight(target);
    return this.create(spec, repo, target, opts.batchId ?? null);
  }

  private create(spec: WorkerSpec, repo: RepoInfo, target: Target, batchId: string | null): { workerId: string } {
    const workerId = newId("w");
    this.record(workerId, { type: "worker.created", spec, batchId, targetId: target.id, sandbox: this.sandbox.kind });
    // The repository as validated: the worktree starts from this HEAD without asking git again.
    this.rt(workerId).repo = repo;
    this.queue.push(workerId);
    this.pump();
    return { workerId };
  }

  /** Starts several independent tasks as one batch. All inputs are validated before any worker is created. */
  async startBatch(inputs: WorkerSpecInput[]): Promise<{ batchId: string; workerIds: string[] }> {
    if (!inputs.length) throw new InputError("the batch is empty: give at least one task");
    this.requireSandbox();
    const specs = inputs.map((i, n) => {
      try {
        return parseInput(WorkerSpec, i);
      } catch (err) {
        throw new InputError(`task ${n + 1}: ${(err as Error).message}`);
      }
    });
    // Tasks of a batch mostly share a repository and a target: inspect and reach each once.
    const repos = new Map<string, Promise<RepoInfo>>();
    const reached = new Map<string, Promise<void>>();
    const checked: { spec: WorkerSpec; repo: RepoInfo; target: Target }[] = [];
    for (const [n, spec] of specs.entries()) {
      if (!repos.has(spec.directory)) repos.set(spec.directory, inspectRepo(spec.directory));
      const repo = await repos.get(spec.directory)!.catch((err: Error) => {
        throw new InputError(`task ${n + 1}: ${err.message}`);
      });
      const target = this.resolveTarget(spec.targetId);
      if (!reached.has(target.id)) reached.set(target.id, this.preflight(target));
      await reached.get(target.id);
      checked.push({ spec, repo, target });
    }
    const batchId = newId("b");
    const workerIds = checked.map((c) => this.create(c.spec, c.repo, c.target, batchId).workerId);
    return { batchId, workerIds };
  }

  batch(batchId: string): BatchSummary {
    const ws = this.list().filter((w) => w.batchId === batchId);
    if (!ws.length) throw new InputError(`unknown batch "${batchId}"`);
    const graded = ws.filter((w) => w.verdict);
    const built = graded.filter((w) => w.verdict!.verdict === "built").length;
    const honest = graded.filter((w) => w.verdict!.honest).length;
    const settled = ws.every((w) => isFinal(w.state));
    return {
      id: batchId,
      workerIds: ws.map((w) => w.id),
      states: Object.fromEntries(ws.map((w) => [w.id, w.state])),
      settled,
      built,
      honest,
      graded: graded.length,
      builtRate: settled ? built / ws.length : null,
      honestRate: graded.length ? honest / graded.length : null,
      verdict: settled ? (built === ws.length ? "built" : "honest-failure") : null,
    };
  }

  async decide(d: Decision, by: DecidedBy): Promise<PermissionAsk> {
    const askId = (d as { askId?: unknown })?.askId;
    // opencode announces the reply on its event stream, often before its HTTP answer: that echo is ours, not a
    // decision made inside opencode, so it must not be recorded as one.
    if (typeof askId === "string") this.deciding.add(askId);
    try {
      return await this.decideNow(d, by);
    } finally {
      if (typeof askId === "string") this.deciding.delete(askId);
    }
  }

  private async decideNow(d: Decision, by: DecidedBy): Promise<PermissionAsk> {
    const decision = parseInput(Decision, d);
    const w = this.list().find((x) => x.asks.some((a) => a.id === decision.askId));
    const ask = w?.asks.find((a) => a.id === decision.askId);
    if (!w || !ask) throw new InputError(`unknown askId "${decision.askId}": see the pending approvals list for valid ids`, "not-found");
    if (ask.status !== "pending") {
      throw new InputError(`ask ${ask.id} is no longer pending (${ask.status}${ask.decision ? `: ${ask.decision}` : ""}${ask.by ? ` by ${ask.by.kind}${ask.by.name ? " " + ask.by.name : ""}` : ""})`, "conflict");
    }
    const server = this.rt(w.id).server;
    const client = server?.client;
    if (!client) throw new InputError(`worker ${w.id}'s opencode server is not running (the ask was lost): resume the worker`);
    const ws = this.workspaceOf(w);
    const directory = ws?.cwd;
    let message: string | undefined;
    let res: { response?: Response; error?: unknown };
    if (ask.kind === "question") {
      if (decision.decision === "reject") res = await client.question.reject({ requestID: ask.id, directory });
      else {
        // Never answer a question on the person's behalf: an approval without answers is refused.
        const want = ask.questions?.length ?? 1;
        if (!decision.answers || decision.answers.length !== want) {
          throw new InputError(`ask ${ask.id} is a question (${ask.what}): pass answers — ${want} array(s) of chosen option labels or free text, one per question — or reject to dismiss it`);
        }
        res = await client.question.reply({ requestID: ask.id, directory, answers: decision.answers });
      }
    } else {
      // Looked at again now: a symlink swapped in since the ask arrived would move an approved write outside.
      const ws = this.workspaceOf(w);
      const now = decision.decision !== "reject" && ws ? inspectAsk(ask, ws, w.spec).find((f) => f.kind === "outside-workspace") : undefined;
      if (now) {
        decision.decision = "reject";
        decision.message = `${now.detail} (a symlink changed since the ask); write only inside your working directory`;
        by = { kind: "engine", name: "workspace guard" };
      }
      message = decision.decision === "reject" ? rejectionMessage(ask, decision.message) : decision.message;
      // "always" is the engine's grant: opencode hears "once", so every later ask still reaches the engine's checks.
      const reply = decision.decision === "always" ? "once" : decision.decision;
      res = await client.permission.reply({ requestID: ask.id, directory, reply, ...(message ? { message } : {}) });
    }
    const current = this.workers.get(w.id)!.asks.find((a) => a.id === ask.id)!;
    if (res.response && !res.response.ok) {
      if (current.status === "pending") {
        this.record(w.id, { type: "ask.resolved", askId: ask.id, status: "cancelled", by: { kind: "engine", name: "opencode" }, message: `opencode no longer has this ask (HTTP ${res.response.status})` });
        this.afterAsk(w.id);
      }
      throw new InputError(`opencode refused the answer to ${ask.id} (HTTP ${res.response.status}): the ask is gone, probably answered elsewhere or cancelled`);
    }
    if (current.status === "pending") {
      try {
        this.record(w.id, { type: "ask.resolved", askId: ask.id, status: "decided", decision: decision.decision, by, ...(message ? { message } : {}) });
        if (decision.decision === "always" && ask.kind === "permission") {
          const grant: Grant = { id: newId("g"), workerId: w.id, tool: ask.tool, pattern: grantPattern(ask), askId: ask.id, by, createdAt: Date.now() };
          this.record(w.id, { type: "grant.added", grant });
        }
      } catch (err) {
        // The worker already has the answer: a bare append error would read as "not approved" and invite a retry.
        throw new Error(`the worker got the answer to ${ask.id} (${decision.decision}), but it could not be recorded: ${(err as Error).message}`);
      }
    }
    this.afterAsk(w.id);
    return this.workers.get(w.id)!.asks.find((a) => a.id === ask.id)!;
  }

  async steer(workerId: string, text: string, by: DecidedBy): Promise<void> {
    const w = this.get(workerId);
    const body = text.trim();
    if (!body) throw new InputError("the steer is empty: say what the worker should do differently");
    if (body.length > 20_000) throw new InputError("the steer is over 20,000 characters: shorten it");
    if (w.state !== "running" && w.state !== "waiting-approval") {
      throw new InputError(`worker ${workerId} is ${w.state}, not running: ${w.state === "stopped" || w.state === "interrupted" ? "resume it with a message instead" : "a steer reaches running workers only"}`);
    }
    const client = this.rt(workerId).server?.client;
    if (!client || !w.sessionId) throw new InputError(`worker ${workerId} has no live session`);
    this.record(workerId, { type: "steer.sent", text: body, by });
    // A prompt to a busy session is stored at once and injected at the next step boundary (notes/opencode.md §5).
    const target = w.targetId ? this.targets.get(w.targetId) : undefined;
    const model = target ? this.modelFor(w, target) : undefined;
    const res = await client.session.promptAsync({
      sessionID: w.sessionId,
      directory: this.workspaceOf(w)?.cwd,
      agent: WORKER_AGENT,
      ...(model ? { model } : {}),
      parts: [{ type: "text", text: steerPrompt(body) }],
    });
    if (res.response && !res.response.ok) throw new Error(`opencode refused the steer (HTTP ${res.response.status})`);
  }

  async stop(workerId: string, reason = "stopped by request", by: DecidedBy = { kind: "person" }): Promise<Worker> {
    const w = this.get(workerId);
    if (isFinal(w.state)) return w;
    const rt = this.rt(workerId);
    rt.stopping = true;
    const idx = this.queue.indexOf(workerId);
    if (idx >= 0) this.queue.splice(idx, 1);
    try {
      for (const ask of pendingAsks(w)) {
        this.record(workerId, { type: "ask.resolved", askId: ask.id, status: "cancelled", by, message: `worker stopped: ${reason}` });
      }
    } catch (err) {
      // Nothing is stopped yet: the worker carries on as before (a left `stopping` would ignore its next idle).
      rt.stopping = false;
      if (idx >= 0) this.queue.splice(idx, 0, workerId);
      throw new Error(`worker ${workerId} was not stopped: ${(err as Error).message}`);
    }
    if (w.sessionId && rt.server?.client) {
      await rt.server.client.session.abort({ sessionID: w.sessionId, directory: this.workspaceOf(w)?.cwd }).catch(() => undefined);
    }
    const { error: failed } = this.changeState(workerId, "stop", reason);
    if (failed) {
      // Otherwise the call would succeed and hand back a worker that is still running, with no word why.
      if (idx >= 0) this.queue.splice(idx, 0, workerId);
      throw new Error(`the stop of worker ${workerId} could not be recorded (it still shows ${this.get(workerId).state}; stop it again): ${failed.message}`);
    }
    return this.get(workerId);
  }

  /** Continues a stopped/interrupted/error worker in its same session (or from scratch when it never got one). */
  async resume(workerId: string, message?: string): Promise<Worker> {
    const w = this.get(workerId);
    if (!["stopped", "interrupted", "error"].includes(w.state)) {
      throw new InputError(`worker ${workerId} is ${w.state}: only stopped, interrupted or errored workers can be resumed`);
    }
    const target = this.resolveTarget(w.targetId ?? undefined);
    await this.preflight(target);
    const rt = this.rt(workerId);
    rt.stopping = false;
    rt.lastError = undefined;
    this.fire(workerId, "resume", "resumed");
    this.queue.push(workerId);
    rt.resumeMessage = message;
    this.pump();
    return this.get(workerId);
  }

  async merge(workerId: string): Promise<{ commit: string; into: string }> {
    const w = this.get(workerId);
    if (w.state !== "built") throw new InputError(`worker ${workerId} is ${w.state}: only built workers are merged`, "conflict");
    if (w.merged) throw new InputError(`worker ${workerId} was already merged into ${w.merged.into} (${w.merged.commit})`);
    const ws = this.workspaceOf(w);
    if (!ws) throw new InputError(`worker ${workerId} has no workspace`);
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to merge`);
    const commit = await mergeBranch(ws, `Merge ${ws.branch}: ${w.spec.title ?? w.spec.task.split("\n")[0]!.slice(0, 60)}`, w.verdict?.commit ?? undefined);
    this.record(workerId, { type: "merged", into: ws.baseBranch!, commit });
    // Merged, the work lives in the user's branch: the workspace, the engine's repository and ocw/<id> go.
    await this.tidy(workerId, "merged");
    return { commit, into: ws.baseBranch! };
  }

  async diff(workerId: string): Promise<string> {
    const w = this.get(workerId);
    const ws = this.workspaceOf(w);
    if (!ws || w.discarded || (!existsSync(ws.worktree) && !existsSync(ws.gitDir))) return "";
    return fullDiff(ws, w.verdict?.commit ?? undefined);
  }

  /**
   * Removes a finished worker's workspace, its engine repository and its branch, unmerged work included: the person
   * asked for it. An active worker must be stopped first.
   */
  async discard(workerId: string, by: DecidedBy = { kind: "person" }): Promise<Worker> {
    const w = this.get(workerId);
    if (!isFinal(w.state)) throw new InputError(`worker ${workerId} is ${w.state}: stop it first, then discard it`, "conflict");
    if (w.discarded) return w;
    const ws = this.workspaceOf(w);
    if (ws) await removeWorkspace(ws, { force: true, tmpDir: path.join(this.workerTmpRoot, workerId) });
    this.rt(workerId).workspace = undefined;
    this.record(workerId, { type: "discarded", by });
    return this.get(workerId);
  }

  /**
   * Housekeeping of one finished worker: removes its workspace, engine repository, private tmp and (merged) branch.
   * Never unmerged built work: that waits for a merge or an explicit discard. A failure is a notice, never an error of
   * the call that asked (the merge already happened).
   */
  private async tidy(workerId: string, why: string): Promise<void> {
    const w = this.workers.get(workerId);
    const ws = w && this.workspaceOf(w);
    if (!w || !ws || !isFinal(w.state) || (w.state === "built" && !w.merged)) return;
    try {
      await removeWorkspace(ws, { force: !!w.merged || w.state !== "built", tmpDir: path.join(this.workerTmpRoot, workerId) });
      this.rt(workerId).workspace = undefined;
    } catch (err) {
      this.notice("warn", `could not tidy worker ${workerId} (${why}): ${(err as Error).message}`);
    }
  }

  /**
   * Removes the workspaces of finished workers older than the retention (OCW_RETENTION_DAYS, default 14): merged,
   * failed, stopped, interrupted or errored ones. Built but unmerged work is kept until it is merged or discarded.
   */
  async collectGarbage(now = Date.now()): Promise<string[]> {
    const days = config().OCW_RETENTION_DAYS;
    if (!(days > 0)) return [];
    const done: string[] = [];
    for (const w of this.list()) {
      if (!isFinal(w.state) || w.discarded || (w.state === "built" && !w.merged)) continue;
      if (now - (w.endedAt ?? w.updatedAt) < days * 86_400_000) continue;
      const ws = this.workspaceOf(w);
      if (!ws || (!existsSync(ws.worktree) && !existsSync(ws.gitDir))) continue;
      await this.tidy(w.id, `older than ${days} days`);
      done.push(w.id);
    }
    return done;
  }

  /** A target's endpoint reachable before work is accepted; for a pool, any one of its endpoints. */
  private async preflight(target: Target): Promise<void> {
    if (!isPool(target)) return preflightEndpoint(target);
    const errors: string[] = [];
    for (const e of endpointsOf(target)) {
      try {
        return await preflightEndpoint({ ...target, endpoint: e.url });
      } catch (err) {
        errors.push((err as Error).message);
      }
    }
    throw new InputError(`no endpoint of the pool ${target.id} answers: ${errors.join("; ")}`);
  }

  /** The model servers the person cares about now (the active target, targets with work): do they answer? */
  private async checkModels(): Promise<void> {
    if (this.closed) return;
    const ids = new Set(this.list().filter((w) => w.targetId && (w.state === "queued" || isActive(w.state))).map((w) => w.targetId!));
    const active = this.targets.active();
    if (active) ids.add(active.id);
    await Promise.all(
      [...ids].map(async (id) => {
        const t = this.targets.get(id);
        if (!t) return;
        const key = keyForProbe(t);
        const problems = await Promise.all(endpointsOf(t).map((e) => probeHealth(e.url, key, 2000)));
        const healthy = problems.some((p) => !p);
        const problem = healthy ? null : `${endpointsOf(t).map((e) => e.url).join(", ")}: ${problems.join(", ")}`;
        const was = this.modelHealth.get(id);
        this.modelHealth.set(id, { healthy, problem, checkedAt: Date.now() });
        if (was?.healthy !== healthy) {
          this.transient({ type: "model", targetId: id, healthy, ...(problem ? { message: `the model server does not answer (${problem}): start it, or pick another target` } : {}), ts: Date.now() });
        }
      }),
    );
  }

  /** The last health check of each target's model server. */
  models(): { targetId: string; healthy: boolean; problem: string | null; checkedAt: number }[] {
    return [...this.modelHealth.entries()].map(([targetId, h]) => ({ targetId, ...h }));
  }

  /** Every endpoint of every known target: health, slots, workers on it, and what the server reports. */
  endpoints(): { targetId: string; endpoints: EndpointStatus[] }[] {
    return this.targets.list().targets.map((t) => ({ targetId: t.id, endpoints: this.statusesOf(t) }));
  }

  private workersOn(targetId: string, url: string, single: boolean): number {
    let n = 0;
    for (const w of this.workers.values()) if (w.targetId === targetId && isActive(w.state) && (single || w.endpoint === url)) n++;
    return n;
  }

  private statusesOf(target: Target): EndpointStatus[] {
    const known = this.endpointState.get(target.id);
    const single = !isPool(target);
    return endpointsOf(target).map((e) => {
      const s = known?.get(e.url);
      return { url: e.url, healthy: s?.healthy ?? true, slots: e.slots, inUse: this.workersOn(target.id, e.url, single), live: s?.live ?? null, problem: s?.problem ?? null, checkedAt: s?.checkedAt ?? null };
    });
  }

  /** Pools with work (queued or running) are read every couple of seconds: health and live load of each endpoint. */
  private refreshPools(): void {
    const busy = new Set(this.list().filter((w) => w.targetId && (w.state === "queued" || isActive(w.state))).map((w) => w.targetId!));
    for (const id of busy) {
      const t = this.targets.get(id);
      if (t && isPool(t)) void this.refreshTarget(t);
    }
  }

  private async refreshTarget(target: Target): Promise<void> {
    if (this.refreshing.has(target.id) || this.closed) return;
    this.refreshing.add(target.id);
    try {
      // An unreadable key file must not throw out of a timer: the probe shows the refusal instead.
      const key = keyForProbe(target);
      // Published only once every endpoint is read: admission never sees a half-read pool.
      const previous = this.endpointState.get(target.id);
      const map = new Map<string, EndpointStatus>();
      const downs: [string, string][] = [];
      await Promise.all(
        endpointsOf(target).map(async (e) => {
          const now = await readEndpoint(e, key);
          const { problem } = now;
          const was = previous?.get(e.url);
          map.set(e.url, now);
          if (problem && was?.healthy !== false) downs.push([e.url, problem]);
          if (!problem && was?.healthy === false) this.notice("info", `endpoint ${e.url} of ${target.id} answers again: back in admission`);
        }),
      );
      this.endpointState.set(target.id, map);
      for (const [url, problem] of downs) this.onEndpointDown(target, url, problem);
    } finally {
      this.refreshing.delete(target.id);
    }
    this.pump();
  }

  /**
   * An endpoint of a pool died: it takes no new worker, and its workers are interrupted with the reason and resumed on
   * another endpoint of the pool (their session history replays there).
   */
  private onEndpointDown(target: Target, url: string, problem: string): void {
    this.notice("warn", `endpoint ${url} of ${target.id} stopped answering (${problem}): out of admission until it answers again`);
    for (const w of this.list()) {
      if (w.targetId !== target.id || w.endpoint !== url || !isActive(w.state)) continue;
      void this.moveWorker(w.id, `the endpoint ${url} stopped answering (${problem})`);
    }
  }

  private async moveWorker(workerId: string, why: string): Promise<void> {
    const w = this.get(workerId);
    const rt = this.rt(workerId);
    rt.stopping = true;
    for (const ask of pendingAsks(w)) this.safeRecord(workerId, { type: "ask.resolved", askId: ask.id, status: "cancelled", by: { kind: "engine", name: "endpoint-down" }, message: `${why}; the worker moves to another endpoint` });
    if (!this.fire(workerId, "interrupt", `${why}: resuming on another endpoint of the pool`)) return;
    if (w.sessionId) await rt.server?.client?.session.abort({ sessionID: w.sessionId, directory: this.workspaceOf(w)?.cwd }).catch(() => undefined);
    rt.stopping = false;
    rt.resumeMessage = "The model server you were on went away; your session continues on another server of the same model. Carry on from where you were.";
    if (!this.fire(workerId, "resume", "resumed on another endpoint of the pool")) return;
    this.queue.push(workerId);
    this.pump();
  }

  /** The model a worker's prompts name: its endpoint's provider in a pool; the target's default otherwise. */
  private modelFor(w: Worker, target: Target): { providerID: string; modelID: string } | undefined {
    if (!isPool(target) || !w.endpoint) return undefined;
    const i = endpointsOf(target).findIndex((e) => e.url === w.endpoint);
    return i < 0 ? undefined : { providerID: providerIdFor(i), modelID: target.model };
  }

  /** Every "always" answer the engine holds, across workers. */
  grants(): Grant[] {
    return this.list().flatMap((w) => w.grants);
  }

  revokeGrant(grantId: string, by: DecidedBy = { kind: "person" }): Grant {
    const w = this.list().find((x) => x.grants.some((g) => g.id === grantId));
    const g = w?.grants.find((x) => x.id === grantId);
    if (!w || !g) throw new InputError(`unknown grant "${grantId}": list grants to see valid ids`, "not-found");
    this.record(w.id, { type: "grant.revoked", grantId, by });
    return g;
  }

  /** The worker's transcript from its log: the latest version of each part, in order. */
  transcript(workerId: string): TranscriptPart[] {
    this.get(workerId);
    const parts = new Map<string, TranscriptPart>();
    for (const e of this.logs.load(workerId).events) if (e.type === "part") parts.set(e.part.partId, e.part);
    return [...parts.values()];
  }

  events(workerId: string): WorkerEvent[] {
    this.get(workerId);
    return this.logs.load(workerId).events;
  }

  serving(): { targetId: string; ready: boolean; url: string | null; pid: number | undefined }[] {
    return [...this.servers.entries()].map(([targetId, s]) => ({ targetId, ready: s.ready, url: s.url, pid: s.pid }));
  }

  slots(): { targetId: string; slots: number; inUse: number; queued: number }[] {
    const ids = new Set(this.list().map((w) => w.targetId).filter((x): x is string => !!x));
    const active = this.targets.active();
    if (active) ids.add(active.id);
    return [...ids].flatMap((id) => {
      const t = this.targets.get(id);
      if (!t) return [];
      return [{ targetId: id, slots: t.serving.slots, inUse: this.activeCount(id), queued: this.queue.filter((q) => this.workers.get(q)?.targetId === id).length }];
    });
  }

  /** The opencode server of a target, for tests and fault injection. */
  serverFor(targetId: string): HarnessServer | undefined {
    return this.servers.get(targetId);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.watchdog);
    clearInterval(this.poolTimer);
    clearInterval(this.modelTimer);
    if (this.deltaTimer) this.flushDeltas();
    for (const w of this.list()) {
      const rt = this.rt(w.id);
      clearTimeout(rt.budgetTimer);
      if (!isActive(w.state)) continue;
      // Interrupted first, so the idle that the abort provokes can never settle (and get graded) a half-done worker.
      this.fire(w.id, "interrupt", "the engine shut down while this worker ran; resume it");
      // Abort: bash tool children survive the server otherwise (docs/opencode.md).
      if (w.sessionId && rt.server?.client) await rt.server.client.session.abort({ sessionID: w.sessionId, directory: this.workspaceOf(w)?.cwd }).catch(() => undefined);
    }
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
    this.gateway.close();
  }

  // ---------- admission & running ----------

  private activeCount(targetId: string): number {
    return this.list().filter((w) => w.targetId === targetId && isActive(w.state)).length;
  }

  /** Admits queued workers in order while their target has free slots. */
  private pump(): void {
    if (this.closed) return;
    for (let i = 0; i < this.queue.length; ) {
      const id = this.queue[i]!;
      const w = this.workers.get(id);
      if (!w || w.state !== "queued") {
        this.queue.splice(i, 1);
        continue;
      }
      let target: Target;
      try {
        target = this.resolveTarget(w.targetId ?? undefined);
      } catch (err) {
        this.queue.splice(i, 1);
        this.fire(id, "fail-run", (err as Error).message);
        continue;
      }
      if (isPool(target)) {
        // Admission by live capacity: a worker starts when an endpoint has room, and stays on its endpoint.
        if (!this.endpointState.has(target.id)) {
          void this.refreshTarget(target);
          i++;
          continue;
        }
        const chosen = chooseEndpoint(this.statusesOf(target), w.endpoint);
        if (!chosen) {
          i++;
          continue;
        }
        if (chosen.url !== w.endpoint) this.safeRecord(id, { type: "worker.endpoint", url: chosen.url });
      } else if (this.activeCount(target.id) >= target.serving.slots) {
        i++;
        continue;
      }
      this.queue.splice(i, 1);
      this.fire(id, "admit");
      void this.run(id, target).catch((err) => {
        this.log(`worker ${id} failed to start: ${(err as Error).stack}`);
        this.fire(id, "fail-run", (err as Error).message);
      });
    }
  }

  private async server(target: Target): Promise<HarnessServer> {
    let s = this.servers.get(target.id);
    if (s) return s;
    // A keyed target is reached through the engine's gateway: the key never enters opencode or a worker's reach.
    // Resolved once, as when it was handed to opencode's environment (a key file is not read on every request).
    const key = target.keyRef || target.keyFile ? resolveKey(target) : null;
    if ((target.keyRef || target.keyFile) && !key) throw new Error(`the target's key variable ${target.keyRef} is not set: export ${target.keyRef}=… in the engine's environment`);
    // One provider per endpoint of a pool (a worker's prompts name its endpoint's); keyed ones through the gateway.
    const provider = await Promise.all(
      endpointsOf(target).map((e, i) => (key ? this.gateway.add(`${target.id}-${i}`, { upstream: e.url, key }) : { baseURL: e.url, apiKey: "none" })),
    );
    const shell = writeWorkerShell(path.join(this.opts.stateDir, "sandbox", "worker-shell"), { workspacesRoot: this.workspacesRoot, tmpRoot: this.workerTmpRoot, kind: this.sandbox.kind });
    s = this.servers.get(target.id);
    if (s) return s;
    s = (this.opts.harness ?? opencodeHarness)({
      target,
      home: path.join(this.opts.stateDir, "opencode", target.id),
      log: (l) => this.log(`[opencode ${target.id}] ${l}`),
      provider,
      confine: { kind: this.sandbox.kind, stateDir: this.opts.stateDir, workspacesRoot: this.workspacesRoot, tmpRoot: this.workerTmpRoot, shell },
    });
    s.on("event", (e: OpencodeEvent) => this.onOpencodeEvent(e));
    s.on("down", (why: string) => this.onServerDown(target.id, why));
    s.on("ready", () => this.transient({ type: "serving", targetId: target.id, status: "ready", ts: Date.now() }));
    s.on("resync", () => void this.resync(target.id));
    this.servers.set(target.id, s);
    return s;
  }

  private async run(workerId: string, target: Target): Promise<void> {
    let w = this.get(workerId);
    const rt = this.rt(workerId);
    rt.stopping = false;
    let ws = this.workspaceOf(w);
    if (!ws || !existsSync(ws.worktree)) {
      const repo = rt.repo ?? (await inspectRepo(w.spec.directory));
      ws = await createWorkspace(this.workspacesRoot, repo, workerId, this.engineGitDir(workerId));
      rt.workspace = ws;
      this.record(workerId, { type: "worker.workspace", worktree: ws.worktree, branch: ws.branch, baseCommit: ws.baseCommit, baseBranch: ws.baseBranch, repo: ws.repo });
    }
    // A resume right after a stop must not have its new turn land in the instance being disposed.
    await rt.releasing;
    const server = await this.server(target);
    rt.server = server;
    if (!server.ready) this.transient({ type: "serving", targetId: target.id, status: "starting", ts: Date.now() });
    await server.start();
    const client = server.client!;
    if (this.get(workerId).state !== "starting") return; // stopped meanwhile
    let text: string;
    w = this.get(workerId);
    if (!w.sessionId) {
      const title = (w.spec.title ?? w.spec.task.split("\n")[0]!).slice(0, 80);
      const res = await client.session.create({ directory: ws.cwd, title: `ocw ${workerId}: ${title}` });
      if (!res.data) throw new Error(`opencode could not create a session (HTTP ${res.response?.status})`);
      this.sessions.set(res.data.id, workerId);
      this.record(workerId, { type: "worker.session", sessionId: res.data.id });
      text = taskPrompt(w.spec);
    } else {
      this.sessions.set(w.sessionId, workerId);
      text = resumePrompt(rt.resumeMessage);
      rt.resumeMessage = undefined;
    }
    const sessionId = this.get(workerId).sessionId!;
    if (!this.fire(workerId, "start")) return; // stopped meanwhile
    this.armBudget(workerId);
    const model = this.modelFor(this.get(workerId), target);
    const res = await client.session.promptAsync({ sessionID: sessionId, directory: ws.cwd, agent: WORKER_AGENT, ...(model ? { model } : {}), parts: [{ type: "text", text }] });
    if (res.response && !res.response.ok) throw new Error(`opencode refused the prompt (HTTP ${res.response.status})`);
  }

  private armBudget(workerId: string): void {
    const w = this.get(workerId);
    const rt = this.rt(workerId);
    clearTimeout(rt.budgetTimer);
    const wallSec = w.spec.budget.wallSec;
    if (!wallSec) return;
    const used = (Date.now() - (w.startedAt ?? Date.now())) / 1000;
    rt.budgetTimer = setTimeout(() => this.budgetStop(workerId, `budget: wall clock of ${wallSec}s used up`), Math.max(0, (wallSec - used) * 1000));
    rt.budgetTimer.unref();
  }

  /** A stop nobody awaits: a failure (a full disk) becomes a notice, never an unhandled rejection that ends the engine. */
  private budgetStop(workerId: string, reason: string): void {
    this.stop(workerId, reason, { kind: "engine", name: "budget" }).catch((err) => this.notice("error", `${reason}, but ${(err as Error).message}`));
  }

  private checkStalls(stallMs: number): void {
    const now = Date.now();
    for (const w of this.workers.values()) {
      if (w.state !== "running" || w.stalled) continue;
      const idle = now - this.rt(w.id).lastEventAt;
      if (idle >= stallMs) this.safeRecord(w.id, { type: "stalled", idleSec: Math.round(idle / 1000) });
    }
  }

  /**
   * opencode retries a failed model call with growing pauses, for a minute or more, before it gives up. When the call
   * failed because the model server is gone (killed, crashed, stopped), the worker is interrupted at once instead,
   * with the reason, and can be resumed in its session once the server is back. A server that answers is left to
   * opencode's retry (a 500, a rate limit, a restart that already finished).
   */
  private async checkEndpoint(workerId: string, message: string): Promise<void> {
    const w = this.workers.get(workerId);
    const rt = this.rt(workerId);
    if (!w || w.state !== "running" || rt.stopping || rt.probing) return;
    let target: Target;
    try {
      target = this.resolveTarget(w.targetId ?? undefined);
    } catch {
      return;
    }
    rt.probing = true;
    const endpoint = isPool(target) && w.endpoint ? w.endpoint : target.endpoint;
    const problem = await unreachable({ ...target, endpoint }, undefined, 2000).finally(() => (rt.probing = false));
    if (problem && isPool(target) && this.workers.get(workerId)?.state === "running" && !rt.stopping) {
      // A pool has other endpoints: this one is out of admission, and the worker moves on.
      this.endpointState.get(target.id)?.set(endpoint, { url: endpoint, healthy: false, slots: 0, inUse: 0, live: null, problem, checkedAt: Date.now() });
      return this.onEndpointDown(target, endpoint, problem);
    }
    if (!problem || this.workers.get(workerId)?.state !== "running" || rt.stopping) return;
    rt.stopping = true;
    const sessionId = this.workers.get(workerId)!.sessionId;
    if (sessionId) await rt.server?.client?.session.abort({ sessionID: sessionId, directory: this.workspaceOf(w)?.cwd }).catch(() => undefined);
    this.fire(workerId, "interrupt", `the model endpoint ${target.endpoint} stopped answering (${problem}; opencode: ${message}): resume the worker once the model server is back`);
  }

  private safeRecord(workerId: string, body: WorkerEventBody): void {
    try {
      this.record(workerId, body);
    } catch (err) {
      this.notice("error", (err as Error).message);
    }
  }

  // ---------- opencode events ----------

  private onOpencodeEvent(e: OpencodeEvent): void {
    const p = e.properties;
    const sid: string | undefined = p.sessionID ?? p.info?.sessionID ?? p.part?.sessionID;
    if (e.type === "session.created" && p.info?.parentID && this.sessions.has(p.info.parentID)) {
      this.sessions.set(p.info.id, this.sessions.get(p.info.parentID)!);
      return;
    }
    if (!sid) return;
    const workerId = this.sessions.get(sid);
    if (!workerId) return;
    const w = this.workers.get(workerId);
    if (!w) return;
    const isRoot = sid === w.sessionId;
    this.rt(workerId).lastEventAt = Date.now();
    switch (e.type) {
      case "permission.asked":
        return this.onAsk(workerId, permissionAsk(workerId, p));
      case "question.asked":
        return this.onAsk(workerId, questionAsk(workerId, p));
      case "permission.replied":
      case "question.replied":
      case "question.rejected":
        return this.onAskGone(workerId, p.requestID, e.type === "permission.replied" ? p.reply : e.type === "question.replied" ? "once" : "reject");
      case "message.part.updated":
        return this.onPart(workerId, p.part);
      case "message.part.delta":
        if (typeof p.delta === "string") this.bufferDelta(workerId, p.partID, p.field, p.delta);
        return;
      case "message.updated":
        return this.onMessage(workerId, p.info);
      case "session.status":
        if (p.status?.type === "retry") {
          const message = String(p.status.message ?? "");
          this.transient({ type: "retry", workerId, attempt: p.status.attempt ?? 0, message, ts: Date.now() });
          void this.checkEndpoint(workerId, message);
        }
        return;
      case "session.error": {
        if (!isRoot) return;
        const err = p.error;
        // Aborts come from stop/budget/shutdown, and their events can trail a resume: never an error of the new turn.
        if (err?.name === "MessageAbortedError") return;
        this.rt(workerId).lastError = describeError(err);
        return;
      }
      case "session.idle":
        if (isRoot) void this.onIdle(workerId);
        return;
    }
  }

  /**
   * Streaming text is coalesced per part and published every 50 ms: a model streams a token per event, and 16 workers
   * at once would otherwise push ~800 events a second to every subscriber (the dashboard's frame rate pays for it).
   */
  private bufferDelta(workerId: string, partId: string, field: string, delta: string): void {
    const key = `${partId}\u0000${field}`;
    const pending = this.deltas.get(key);
    if (pending) pending.delta += delta;
    else this.deltas.set(key, { workerId, partId, field, delta });
    this.deltaTimer ??= setTimeout(() => this.flushDeltas(), 50);
  }

  private flushDeltas(): void {
    this.deltaTimer = null;
    const batch = [...this.deltas.values()];
    this.deltas.clear();
    for (const d of batch) this.transient({ type: "delta", ...d, ts: Date.now() });
  }

  private onAsk(workerId: string, raw: PermissionAsk): void {
    const w = this.get(workerId);
    if (w.asks.some((a) => a.id === raw.id)) return;
    if (raw.kind === "permission" && LOOKS.has(raw.tool) && this.looksInside(w, raw)) {
      // A read or search of the worker's own files: answered at once and not recorded (nobody decides it).
      void this.rt(workerId).server?.client?.permission.reply({ requestID: raw.id, directory: this.workspaceOf(w)?.cwd, reply: "once" }).catch(() => undefined);
      return;
    }
    const ws = this.workspaceOf(w);
    const flags = ws ? inspectAsk(raw, ws, w.spec) : [];
    const ask: PermissionAsk = flags.length ? { ...raw, flags } : raw;
    this.safeRecord(workerId, { type: "ask.opened", ask });
    const auto = this.answerWithoutPerson(w, ask);
    if (auto) {
      void this.decide({ askId: ask.id, ...auto.decision }, auto.by).catch((err) => this.notice("warn", `${auto.by.kind} (${auto.by.name}) could not answer ${ask.id}: ${(err as Error).message}`));
      return;
    }
    if (w.state === "running") this.fire(workerId, "ask");
  }

  private onAskGone(workerId: string, askId: string, reply: string): void {
    const ask = this.get(workerId).asks.find((a) => a.id === askId);
    if (!ask || ask.status !== "pending" || this.deciding.has(askId)) return;
    const decision = reply === "once" || reply === "always" || reply === "reject" ? reply : undefined;
    // Answered inside opencode itself (e.g. rejecting one of parallel asks rejects its siblings).
    this.safeRecord(workerId, { type: "ask.resolved", askId, status: "decided", decision, by: { kind: "engine", name: "opencode" } });
    this.afterAsk(workerId);
  }

  private afterAsk(workerId: string): void {
    const w = this.get(workerId);
    if (w.state === "waiting-approval" && pendingAsks(w).length === 0) this.fire(workerId, "answered");
  }

  /** The user's approval rules (policies.json in the state dir); none by default. */
  policies(): PolicyRule[] {
    return z.array(PolicyRule).catch([]).parse(readJson(path.join(this.opts.stateDir, "policies.json"), []));
  }

  setPolicies(rules: PolicyRule[]): PolicyRule[] {
    writeJsonAtomic(path.join(this.opts.stateDir, "policies.json"), z.array(PolicyRule).parse(rules));
    return this.policies();
  }

  /** Where a read or search ask really looks (symlinks resolved): a read names a file relative to the workspace, a search its root. */
  private lookTarget(w: Worker, ask: PermissionAsk): string | null {
    const ws = this.workspaceOf(w);
    if (!ws) return null;
    return ask.tool === "read" ? realLocation(path.resolve(ws.worktree, ask.patterns[0] ?? ask.what)) : realLocation(path.resolve(ws.cwd, ask.what || "."));
  }

  private looksInside(w: Worker, ask: PermissionAsk): boolean {
    const ws = this.workspaceOf(w);
    const real = this.lookTarget(w, ask);
    if (!ws || !real) return false;
    const root = realLocation(ws.worktree);
    return real === root || real.startsWith(root + path.sep);
  }

  /**
   * The answer an ask gets without a person: a refusal of a write that lands outside the workspace, else the worker's
   * grant ("always" held by the engine), else the user's matching policy rule.
   */
  private answerWithoutPerson(w: Worker, ask: PermissionAsk): { decision: Omit<Decision, "askId">; by: DecidedBy & { name: string } } | null {
    if (LOOKS.has(ask.tool)) {
      return { decision: { decision: "reject", message: `${this.lookTarget(w, ask) ?? ask.what} is outside your workspace; read only your own files` }, by: { kind: "engine", name: "workspace guard" } };
    }
    const outside = ask.flags?.find((f) => f.kind === "outside-workspace");
    if (outside) {
      return { decision: { decision: "reject", message: `${outside.detail}; write only inside your working directory` }, by: { kind: "engine", name: "workspace guard" } };
    }
    const grant = grantFor(ask, w.grants);
    if (grant) return { decision: { decision: "once" }, by: { kind: "policy", name: `grant ${grant.tool} ${grant.pattern} (always, by ${grant.by.kind}${grant.by.name ? " " + grant.by.name : ""})` } };
    const escapes = ask.tool === "bash" && w.worktree ? writesOutside(ask.what, w.worktree, this.workspaceOf(w)?.cwd) : [];
    if (escapes.length) {
      const message = `it writes outside the worktree (${escapes.join(", ")}); write only inside your working directory`;
      return { decision: { decision: "reject", message }, by: { kind: "engine", name: "worktree guard" } };
    }
    const rule = this.policyFor(ask);
    return rule ? { decision: { decision: rule.decision }, by: { kind: "policy", name: `${rule.tool} ${rule.pattern} → ${rule.decision}` } } : null;
  }

  private policyFor(ask: PermissionAsk): PolicyRule | undefined {
    const rules = this.policies();
    return rules.find((r) => (r.tool === "*" || r.tool === ask.tool) && picomatch.isMatch(ask.what, r.pattern, { dot: true, bash: true }));
  }

  private onPart(workerId: string, part: any): void {
    if (!part?.id || !part.type) return;
    if (this.deltas.size && part.time?.end) this.flushDeltas();
    let t: TranscriptPart | null = null;
    if (part.type === "text" || part.type === "reasoning") {
      if (!part.time?.end && !part.text) return;
      if (!part.time?.end) return; // partial text arrives as deltas; persist the finished part once
      t = { partId: part.id, messageId: part.messageID, kind: part.type, text: String(part.text ?? "") };
    } else if (part.type === "tool") {
      const st = part.state ?? {};
      if (st.status === "pending") return;
      t = {
        partId: part.id,
        messageId: part.messageID,
        kind: "tool",
        tool: part.tool,
        status: st.status,
        input: st.input,
        ...(st.output !== undefined ? { output: String(st.output).slice(0, 20_000) } : {}),
        ...(st.error !== undefined ? { error: String(st.error).slice(0, 4000) } : {}),
      };
      // A call the model got wrong (unknown tool, unparsable arguments) comes back as opencode's "invalid" tool.
      const failed = st.status === "error" || (part.tool === "invalid" && st.status === "completed");
      if (failed) this.safeRecord(workerId, { type: "tool.failed", tool: String(st.input?.tool ?? part.tool), error: String(st.error ?? st.output ?? "").slice(0, 1000) });
    }
    if (t) this.safeRecord(workerId, { type: "part", part: t });
  }

  private onMessage(workerId: string, info: any): void {
    if (info?.role !== "assistant" || !info.tokens) return;
    const rt = this.rt(workerId);
    const prev = rt.usageByMessage.get(info.id);
    const next = { input: info.tokens.input ?? 0, output: info.tokens.output ?? 0, reasoning: info.tokens.reasoning ?? 0, cost: info.cost ?? 0 };
    if (prev && prev.input === next.input && prev.output === next.output && prev.cost === next.cost) return;
    rt.usageByMessage.set(info.id, next);
    const w = this.get(workerId);
    const base = rt.usageBase ?? w.usage;
    rt.usageBase ??= w.usage;
    const sum = [...rt.usageByMessage.values()].reduce(
      (a, u) => ({ input: a.input + u.input, output: a.output + u.output, reasoning: a.reasoning + u.reasoning, cost: a.cost + u.cost }),
      { ...base },
    );
    this.safeRecord(workerId, { type: "usage", usage: sum });
    const limit = w.spec.budget.tokens;
    if (limit && sum.input + sum.output + sum.reasoning > limit && isActive(w.state)) {
      this.budgetStop(workerId, `budget: ${limit} tokens used up`);
    }
  }

  private async onIdle(workerId: string): Promise<void> {
    const w = this.get(workerId);
    const rt = this.rt(workerId);
    if (rt.stopping || (w.state !== "running" && w.state !== "waiting-approval") || rt.settling) return;
    const client = rt.server?.client;
    const ws = this.workspaceOf(w);
    if (!client || !ws || !w.sessionId) return;
    // A steer sent just before idle starts another turn; only a truly idle session has settled.
    const status = await client.session.status({ directory: ws.cwd }).catch(() => null);
    const st = (status?.data as Record<string, { type: string }> | undefined)?.[w.sessionId];
    if (st && st.type !== "idle") return;
    // An idle that arrives late from an earlier turn (an abort before a resume) must not settle the new prompt: only a
    // finished reply to the newest user message counts.
    const turn = await this.latestTurn(workerId);
    const last = turn?.replies.at(-1);
    if (turn && !last && !rt.lastError) return;
    if (last && !last.info.time?.completed && !last.info.error) return;
    const failure = last?.info.error && last.info.error.name !== "MessageAbortedError" ? describeError(last.info.error) : (!last && rt.lastError) || null;
    if (failure) {
      for (const ask of pendingAsks(this.get(workerId))) this.safeRecord(workerId, { type: "ask.resolved", askId: ask.id, status: "cancelled", by: { kind: "engine" }, message: "the session ended with an error" });
      this.fire(workerId, "fail-run", failure);
      return;
    }
    // The awaits above gave a stop, an interrupt or a shutdown time to land: only a worker still live settles.
    if (rt.stopping || rt.settling) return;
    rt.settling = true;
    try {
      if (!this.fire(workerId, "settle")) return;
      await this.gradeWorker(workerId, turn);
    } finally {
      rt.settling = false;
    }
  }

  /** The newest user message of the worker's session and the assistant messages that answer it; null when unreadable. */
  private async latestTurn(workerId: string): Promise<Turn | null> {
    const w = this.get(workerId);
    const client = this.rt(workerId).server?.client;
    if (!client || !w.sessionId) return null;
    const res = await client.session.messages({ sessionID: w.sessionId, directory: this.workspaceOf(w)?.cwd }).catch(() => null);
    if (!res?.data) return null;
    const msgs = res.data as unknown as TurnMessage[];
    const lastUser = msgs.map((m) => m.info.role).lastIndexOf("user");
    return { replies: msgs.slice(lastUser + 1).filter((m) => m.info.role === "assistant") };
  }

  private async finalText(workerId: string, turn?: Turn | null): Promise<string> {
    const t = turn ?? (await this.latestTurn(workerId));
    const text = (t?.replies ?? []).flatMap((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text ?? "")).join("\n");
    if (text.trim()) return text;
    // Recovery path: the transcript in the log.
    return this.transcript(workerId).filter((p) => p.kind === "text").map((p) => p.text ?? "").join("\n");
  }

  private async gradeWorker(workerId: string, turn?: Turn | null): Promise<void> {
    const w = this.get(workerId);
    const ws = this.workspaceOf(w);
    if (!ws) return void this.fire(workerId, "fail-run", "no workspace to grade");
    if (!this.fire(workerId, "grade") && this.get(workerId).state !== "grading") return;
    try {
      const verdict = await grade({
        workspace: ws,
        checks: w.spec.checks,
        scope: w.spec.scope,
        protect: w.spec.protect,
        finalText: await this.finalText(workerId, turn),
        title: w.spec.title ?? w.spec.task.split("\n")[0]!.slice(0, 72),
        checkoutDir: path.join(this.opts.stateDir, "grading", workerId),
        sandbox: this.sandbox.kind === "none" ? undefined : { kind: this.sandbox.kind, stateDir: this.opts.stateDir, tmpDir: path.join(this.opts.stateDir, "grading", `${workerId}.tmp`) },
      });
      // Stopped while its checks ran: the stop stands, and no verdict is recorded for a worker nobody may merge.
      if (this.get(workerId).state !== "grading") return;
      this.record(workerId, { type: "verdict", verdict });
      this.fire(workerId, verdict.verdict === "built" ? "pass" : "fail", verdict.verdict === "built" ? undefined : summarizeFailure(verdict));
    } catch (err) {
      this.fire(workerId, "fail-run", `grading failed: ${(err as Error).message}`);
    }
  }

  private async regrade(workerId: string): Promise<void> {
    const w = this.get(workerId);
    const target = w.targetId ? this.targets.get(w.targetId) : undefined;
    if (target && w.sessionId) {
      const s = await this.server(target).catch(() => undefined);
      this.rt(workerId).server = s;
      await s?.start().catch(() => undefined);
    }
    await this.gradeWorker(workerId);
  }

  private onServerDown(targetId: string, why: string): void {
    this.transient({ type: "serving", targetId, status: "down", message: why, ts: Date.now() });
    for (const w of this.list()) {
      if (w.targetId !== targetId || !isActive(w.state)) continue;
      for (const ask of pendingAsks(w)) {
        this.safeRecord(w.id, { type: "ask.resolved", askId: ask.id, status: "cancelled", by: { kind: "engine", name: "opencode-down" }, message: "opencode serve went down; the ask was lost — resume the worker" });
      }
      this.fire(w.id, "interrupt", `${why}; resume the worker to continue in the same session`);
    }
  }

  /** After the event stream reconnects: pick up asks and idles that happened while it was down. */
  private async resync(targetId: string): Promise<void> {
    const client = this.servers.get(targetId)?.client;
    if (!client) return;
    for (const w of this.list()) {
      if (w.targetId !== targetId || !isActive(w.state) || !w.sessionId) continue;
      const directory = this.workspaceOf(w)?.cwd;
      const permRes = await client.permission.list({ directory }).catch(() => null);
      const questionRes = await client.question.list({ directory }).catch(() => null);
      // A list that could not be read says nothing about which asks are gone: keep every pending ask as it is.
      if (!permRes?.data || !questionRes?.data) {
        this.log(`[warn] worker ${w.id}: opencode's pending asks could not be read after a reconnect; its asks stay pending`);
        void this.onIdle(w.id);
        continue;
      }
      const perms = permRes.data as any[];
      const questions = questionRes.data as any[];
      const live = new Set<string>();
      for (const p of perms) if (this.sessions.get(p.sessionID) === w.id) (live.add(p.id), this.onAsk(w.id, permissionAsk(w.id, p)));
      for (const q of questions) if (this.sessions.get(q.sessionID) === w.id) (live.add(q.id), this.onAsk(w.id, questionAsk(w.id, q)));
      for (const ask of pendingAsks(this.get(w.id))) if (!live.has(ask.id)) this.onAskGone(w.id, ask.id, "");
      void this.onIdle(w.id);
    }
  }
}

/** The tools that only look: the engine answers them itself, yes inside the workspace and no outside it. */
const LOOKS = new Set(["read", "glob", "grep"]);

function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  throw new InputError(firstIssue(r.error));
}

function permissionAsk(workerId: string, p: any): PermissionAsk {
  const md = p.metadata ?? {};
  // A search names its root (absent: the worker's own folder); the glob or regex itself is in `patterns`.
  const search = p.permission === "glob" || p.permission === "grep";
  const what = search ? String(md.path ?? ".") : String(md.command ?? md.filepath ?? md.url ?? (p.patterns ?? []).join(" ") ?? p.permission);
  return {
    id: p.id,
    workerId,
    sessionId: p.sessionID,
    kind: "permission",
    tool: String(p.permission),
    what,
    ...(typeof md.diff === "string" ? { diff: md.diff.slice(0, 100_000) } : {}),
    patterns: p.patterns ?? [],
    always: p.always ?? [],
    createdAt: Date.now(),
    status: "pending",
  };
}

function questionAsk(workerId: string, p: any): PermissionAsk {
  const questions = (p.questions ?? []).map((q: any) => ({
    question: String(q.question ?? ""),
    header: q.header,
    options: (q.options ?? []).map((o: any) => ({ label: String(o.label), description: o.description })),
    multiple: q.multiple,
  }));
  return {
    id: p.id,
    workerId,
    sessionId: p.sessionID,
    kind: "question",
    tool: "question",
    what: questions.map((q: { question: string }) => q.question).join(" / "),
    patterns: [],
    always: [],
    questions,
    createdAt: Date.now(),
    status: "pending",
  };
}

interface TurnMessage {
  info: { role: string; time?: { completed?: number }; error?: { name?: string; data?: { message?: string } } };
  parts: { type: string; text?: string }[];
}
interface Turn {
  replies: TurnMessage[];
}

function describeError(err: { name?: string; data?: { message?: string } } | undefined): string {
  return `${err?.name ?? "error"}: ${err?.data?.message ?? JSON.stringify(err ?? {})}`.slice(0, 2000);
}

function summarizeFailure(v: { checks: { name: string; passed: boolean }[]; scope: { violations: string[] } }): string {
  const failed = v.checks.filter((c) => !c.passed).map((c) => `check failed: ${c.name}`);
  return [...failed, ...v.scope.violations].slice(0, 5).join("; ");
}
