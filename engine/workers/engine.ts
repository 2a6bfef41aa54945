import { redactUrlCredentials } from "../../shared/remote-url";
import { labelledUntrusted } from "../../shared/untrusted";
import { existsSync } from "node:fs";
import path from "node:path";
import type { z } from "zod";
import type { BatchSummary, IntegrationSpec } from "../../shared/batch";
import type { BatchTaskInput, SearchResult, StartBatchResult } from "../../shared/api";
import { newId, quotedId } from "../../shared/ids";
import { firstIssue } from "../../shared/issues";
import type { Decision, DecidedBy, Grant, PermissionAsk, PolicyRule } from "../../shared/permission";
import { isPool, type Target } from "../../shared/target";
import {
  isActive,
  isAtRest,
  taskKey,
  WorkerSpec,
  workerTitle,
  type TranscriptPart,
  transcriptPlace,
  type Worker,
  type WorkerEvent,
  type WorkerSpecInput,
  type WorkerState,
} from "../../shared/worker";
import { type EndpointStatus, Pools, preflightTarget, unreachable } from "../admission";
import { Approvals } from "../approvals";
import { Budgets, type Clock, realClock } from "../budgets";
import { config } from "../config";
import { EventBus } from "../events";
import type { EgressOptions } from "../net";
import { type Harness, type HarnessServer, modelFor, noAnswer, type OpencodeEvent, OpencodeServers, Translator, WORKER_AGENT } from "../harness";
import { globProblem, heldBackProblem, shellSyntaxProblem, sweepDiscarded } from "../grading";
import { Recovery } from "../recovery";
import { limitSetup, type SandboxKind, sandboxStatus, writeRepoBinds } from "../sandbox";
import { TargetStore, WorkerLogStore } from "../store";
import { InputError, OcwError } from "../../shared/errors";
import {
  createWorkspace,
  prepareGrading,
  gradedStore,
  inspectRepo,
  mirrorsRootOf,
  moveOntoMirror,
  type PublishedBranch,
  type RepoInfo,
  workspaceMirror,
  worktreePath,
} from "../workspace";
import { type MergeOutcome, WorkspaceLifecycle } from "./lifecycle";
import { fixPrompt, followUpPrompt, resumePrompt, steerPrompt, taskPrompt } from "./prompts";
import { countsAsBuilt, reviewText, type ReviewComment, type RoundKind, type Verdict } from "../../shared/verdict";
import { workspaceToOpen } from "./open";
import { type StateFacts, WorkerRegistry } from "../registry";
import { InstanceReleaser } from "./release";
import { Settler } from "./settle";
import { BatchNames } from "./batch-names";
import { searchTranscripts } from "./search";
import { Batches } from "./batches";
import { Attempts, expandAttempts, type AttemptInput } from "./attempts";
import { stoppedForWinnerReason, type AttemptGroup, type AttemptRef } from "../../shared/attempts";

interface EngineOptions {
  stateDir: string;
  targets?: TargetStore;
  log?: (line: string) => void;
  /** Seconds without any event before a running worker is flagged stalled. */
  stallSec?: number;
  /** Seconds a worker waiting for a person keeps its model slot (default OCW_HANDOVER_SEC, 30). */
  handoverSec?: number;
  /**
   * The person's explicit opt-out of the OS sandbox (`--no-sandbox`, OCW_NO_SANDBOX=1). Without it, an engine that
   * finds no sandbox refuses to start workers and says why.
   */
  noSandbox?: boolean;
  /** How opencode servers are made: the real `opencode serve` unless a test passes a fake. */
  harness?: Harness;
  /** Time and timers of the budgets and the watchdog (a test passes a fake one). */
  clock?: Clock;
  /**
   * The network guard's stand-ins (a test's): the resolver the queue and the egress proxy look names up with, and the
   * address a checked public address is reached at (a local server playing it). Default: the system's resolver, itself.
   */
  net?: Pick<EgressOptions, "lookup" | "dial">;
}

/** How often a running engine removes the workspaces of finished workers past the retention (OCW_RETENTION_DAYS). */
export const HOUSEKEEPING_MS = 60 * 60_000;

/** The longest wait before opencode's next try of a model call a worker sits through "running" (longer: interrupted). */
const LONG_RETRY_WAIT_MS = 120_000;

/**
 * The worker engine composes the services, one concept each: the worker registry (log, picture, state machine), the
 * approvals queue, budgets and watchdog, admission (slots and pools), recovery, the opencode translation, settling and
 * grading, and the workspace lifecycle. What stays here is the public API and a worker's path through admission: queue
 * → workspace → opencode session → prompt, and stop/resume/steer.
 */
export class Engine {
  readonly bus: EventBus;
  readonly targets: TargetStore;
  /** How workers are contained; "none" only by the person's opt-out. */
  readonly sandbox: { kind: SandboxKind; reason: string | null; optedOut: boolean; limits: string };
  private readonly logs: WorkerLogStore;
  private readonly reg: WorkerRegistry;
  private readonly approvals: Approvals;
  private readonly budgets: Budgets;
  private readonly pools: Pools;
  private readonly recovery: Recovery;
  private readonly settler: Settler;
  private readonly lifecycle: WorkspaceLifecycle;
  private readonly releaser: InstanceReleaser;
  private readonly translator: Translator;
  private readonly servers: OpencodeServers;
  /** Batches' plans: task names, dependencies, skipped tasks, integration checks. */
  readonly batches: Batches;
  /** Batch names (people read them instead of ids). */
  readonly batchNames: BatchNames;
  /** Best-of-N: attempt groups, their winner, and stopping the rest once one is built. */
  private readonly attempts: Attempts;
  /** Queued workers in admission order (FIFO by submission; a resume queues at the end). */
  private readonly queue: string[] = [];
  private closed = false;
  private readonly housekeeping: NodeJS.Timeout;
  private housekeepingRun: Promise<void> | undefined;

  constructor(private readonly opts: EngineOptions) {
    this.targets = opts.targets ?? new TargetStore(path.join(opts.stateDir, "targets.json"));
    this.logs = new WorkerLogStore(path.join(opts.stateDir, "workers"));
    this.bus = EventBus.forStateDir(opts.stateDir);
    const found = sandboxStatus();
    const optedOut = opts.noSandbox ?? config().OCW_NO_SANDBOX;
    // What binds a command's processes and memory as a whole here (cgroup v1/v2, systemd-run, or prlimit only).
    const limits = optedOut || found.kind === "none" ? "prlimit only (no sandbox)" : limitSetup().label;
    this.sandbox = { kind: optedOut ? "none" : found.kind, reason: found.reason, optedOut, limits };
    const reg = (this.reg = new WorkerRegistry({
      stateDir: opts.stateDir,
      bus: this.bus,
      logs: this.logs,
      log: (l) => this.log(l),
      moved: (id, state) => this.moved(id, state),
    }));
    this.servers = new OpencodeServers({
      stateDir: opts.stateDir,
      sandbox: this.sandbox,
      workspacesRoot: reg.workspacesRoot,
      tmpRoot: reg.workerTmpRoot,
      mirrorsRoot: mirrorsRootOf(reg.workspacesRoot),
      harness: opts.harness,
      net: opts.net,
      log: (l) => this.log(l),
      wire: (targetId, s) => {
        s.on("event", (e: OpencodeEvent) => this.translator.handle(e));
        s.on("down", (why: string) => this.recovery.onServerDown(targetId, why));
        s.on("ready", () => this.reg.transient({ type: "opencode", targetId, status: "ready", ts: Date.now() }));
        s.on("resync", () => {
          // Events were missed while the stream was down: no idle of this target settles from the stream's picture.
          for (const w of reg.workers.values()) if (w.targetId === targetId) reg.rt(w.id).dropReplies();
          void this.recovery.resync(targetId);
        });
      },
    });
    this.approvals = new Approvals({
      stateDir: opts.stateDir,
      registry: reg,
      lookup: opts.net?.lookup,
      direct: () => this.servers.direct(),
      // A question dismissed with a note: opencode's dismissal carries none, so the note goes as a steer.
      note: (id, text, by) => this.steer(id, text, by),
    });
    this.batchNames = new BatchNames(opts.stateDir, (l) => this.log(l));
    this.batches = new Batches({
      stateDir: opts.stateDir,
      sandbox: this.sandbox,
      get: (id) => reg.workers.get(id),
      create: (spec, repo, batchId, taskId) => {
        const target = this.resolveTarget(spec.targetId);
        return this.create(spec, repo, target, batchId, undefined, { startFrom: repo.head, taskId }).workerId;
      },
      changed: (batchId) => this.bus.publish({ type: "batch", batchId, ts: Date.now() }),
      log: (l) => this.log(l),
    });
    this.budgets = new Budgets({
      registry: reg,
      stop: (id, reason) => this.stop(id, reason, { kind: "engine", name: "budget" }),
      stallMs: (opts.stallSec ?? config().OCW_STALL_SEC) * 1000,
      clock: opts.clock,
    });
    this.settler = new Settler({
      stateDir: opts.stateDir,
      registry: reg,
      targets: this.targets,
      sandbox: this.sandbox,
      transcript: (id) => this.transcript(id),
      server: (t) => this.servers.for(t),
      fixRound: (id, v) => this.fixRound(id, v),
      checkConfigFrom: (id) => {
        const batchId = reg.workers.get(id)?.batchId;
        const r = batchId ? this.batches.get(batchId) : undefined;
        return r?.base ? { base: r.base, scope: r.tasks.flatMap((t) => t.spec.scope ?? []) } : null;
      },
    });
    this.attempts = new Attempts({
      list: () => this.list(),
      get: (id) => this.get(id),
      stop: (id, reason, by, facts) => this.stop(id, reason, by, facts),
      log: (l) => this.log(l),
    });
    this.lifecycle = new WorkspaceLifecycle(reg, () => config().OCW_RETENTION_DAYS);
    this.releaser = new InstanceReleaser(reg);
    this.translator = new Translator({
      registry: reg,
      ask: (id, ask) => this.approvals.onAsk(id, ask),
      askGone: (id, askId, reply) => this.approvals.onAskGone(id, askId, reply),
      usage: (id, messageId, usage) => this.budgets.onUsage(id, messageId, usage),
      retry: (id, message, next) => void this.onRetry(id, message, next),
      idle: (id) => void this.settler.onIdle(id),
    });
    this.recovery = new Recovery({
      stateDir: opts.stateDir,
      registry: reg,
      logs: this.logs,
      bus: this.bus,
      approvals: this.approvals,
      enqueue: (id) => this.queue.push(id),
      regrade: (id) => this.settler.regrade(id),
      checkIdle: (id) => this.settler.onIdle(id),
      serverOf: (targetId) => this.servers.get(targetId),
    });
    this.pools = new Pools({
      registry: reg,
      targets: this.targets,
      poolProbeMs: config().OCW_POOL_PROBE_MS,
      modelProbeMs: config().OCW_MODEL_PROBE_MS,
      endpointDown: (target, url, problem) => this.onEndpointDown(target, url, problem),
      changed: () => this.pump(),
      handoverMs: (opts.handoverSec ?? config().OCW_HANDOVER_SEC) * 1000,
    });
    this.recovery.endStaleServers();
    this.recovery.recover();
    setImmediate(() => {
      this.pump();
      this.batches.resumeAll();
    });
    setTimeout(() => {
      void this.housekeep(Date.now());
      void sweepDiscarded(path.join(opts.stateDir, "grading"));
    }, 5000).unref();
    // An engine kept running for days tidies what passed the retention while it ran, not only what had at its start.
    const clock = opts.clock ?? realClock;
    this.housekeeping = clock.setInterval(() => void this.housekeep(clock.now()), HOUSEKEEPING_MS);
    this.housekeeping.unref?.();
  }

  /** One round of workspace cleanup at a time (a round over many old workers can outlast the interval). */
  private housekeep(now: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.housekeepingRun ??= this.collectGarbage(now)
      .then(
        () => undefined,
        (err) => this.log(`[warn] workspace cleanup: ${(err as Error).message}`),
      )
      .finally(() => (this.housekeepingRun = undefined));
    return this.housekeepingRun;
  }

  private log(line: string) {
    // The engine's log file keeps no URL credentials (an endpoint, a remote, an error quoting one).
    this.opts.log?.(redactUrlCredentials(line));
  }

  /** After every state change: a settled or finished worker frees its slot; a finished one releases its opencode instance. */
  private moved(workerId: string, state: WorkerState): void {
    // First: the attempts of a winner's group still queued leave the queue before its freed slot admits one of them.
    if (state === "built") this.attempts.onBuilt(workerId);
    if (isAtRest(state) || state === "settled") this.pump();
    // A worker still waiting for a person after the hand-over time gives its model slot to the next queued one.
    if (state === "waiting-approval") setTimeout(() => this.pump(), this.pools.handoverMs + 20).unref();
    if (isAtRest(state)) this.releaser.finished(workerId);
    else this.releaser.moved(workerId);
    if (isAtRest(state)) this.batches?.onAtRest(workerId);
  }

  // ---------- public API ----------

  list(): Worker[] {
    return this.reg.list();
  }

  get(id: string): Worker {
    return this.reg.get(id);
  }

  /** The worker's workspace, for a client to open on the desktop (engine/workers/open.ts): validated, never a client's path. */
  workspaceToOpen(id: string): { workerId: string; path: string; gitRuns: string[] } {
    return workspaceToOpen(this.reg.get(id), this.reg.workspacesRoot);
  }

  pendingAsks(): (PermissionAsk & { ageSec: number })[] {
    return this.approvals.pending();
  }

  resolveTarget(targetId?: string): Target {
    if (targetId) {
      const t = this.targets.get(targetId);
      if (!t) throw new InputError(`unknown target ${quotedId(targetId)}: run \`ocw targets\` to list them`);
      return t;
    }
    const t = this.targets.active();
    // coded by kind: the MCP bridge answers `no-target` with its own pointer to setup (never by matching this text)
    if (!t) throw new OcwError("bad-input", "no active target: run `ocw setup`, or pass --endpoint URL --model ID", { kind: "no-target", data: {} });
    return t;
  }

  /** Workers run only in the sandbox, unless the person opted out of it explicitly. */
  private requireSandbox(): void {
    if (this.sandbox.kind === "none" && !this.sandbox.optedOut) {
      throw new InputError(
        `workers cannot be contained here: ${this.sandbox.reason}. To run them unsandboxed anyway (they can then read your files and secrets), restart the engine with --no-sandbox or OCW_NO_SANDBOX=1`,
        "unavailable",
      );
    }
  }

  /** Validates, creates the worker (queued) and returns its id at once; the work happens in the background. */
  async start(input: WorkerSpecInput, opts: { batchId?: string; retryOf?: string } = {}): Promise<{ workerId: string }> {
    this.requireSandbox();
    const spec = parseInput(WorkerSpec, input);
    const repo = await inspectRepo(spec.directory);
    const heldBack =
      heldBackProblem(spec.checks, repo.root) ?? globProblem(spec.scope, spec.protect, repo.root, repo.subdir) ?? (await shellSyntaxProblem(spec.checks));
    if (heldBack) throw new InputError(heldBack);
    const target = this.resolveTarget(spec.targetId);
    await preflightTarget(target);
    return this.create(spec, repo, target, opts.batchId ?? null, undefined, opts.retryOf ? { retryOf: opts.retryOf } : {});
  }

  private create(
    spec: WorkerSpec,
    repo: RepoInfo,
    target: Target,
    batchId: string | null,
    attempt?: AttemptRef,
    extra: { startFrom?: string; taskId?: string; retryOf?: string } = {},
  ): { workerId: string } {
    const workerId = newId("w");
    this.reg.record(workerId, {
      type: "worker.created",
      spec,
      batchId,
      targetId: target.id,
      sandbox: this.sandbox.kind,
      ...(attempt ? { attempt } : {}),
      ...(extra.startFrom ? { startFrom: extra.startFrom } : {}),
      ...(extra.taskId ? { taskId: extra.taskId } : {}),
      ...(extra.retryOf ? { retryOf: extra.retryOf } : {}),
    });
    // The repository as validated: the worktree starts from this HEAD without asking git again.
    this.reg.rt(workerId).setRepo(repo);
    // The held-back checks run once on the base commit now, beside the worker's start (never awaited by it): a check
    // that already passes there proves nothing. The engine's own repository for the worker is all it needs. File checks
    // only are read in the workspace as soon as it is made instead (run: no checkout, no process).
    if (spec.checks.some((c) => "run" in c)) {
      const worktree = worktreePath(this.reg.workspacesRoot, repo.root, workerId);
      void this.settler.baseline(workerId, {
        worktree,
        cwd: path.join(worktree, repo.subdir),
        branch: `ocw/${workerId}`,
        baseCommit: repo.head,
        baseBranch: repo.branch,
        repo: repo.root,
        gitDir: this.reg.engineGitDir(workerId),
      });
    } else if (!spec.checks.length) this.reg.safeRecord(workerId, { type: "worker.baseline", baseline: { passedOnBase: [] } });
    this.queue.push(workerId);
    this.pump();
    return { workerId };
  }

  /**
   * N attempts of one task (over `targets` in turn, else its own target): one attempt group, validated whole before any
   * worker is created. The engine picks the winner and stops the rest once one is built (engine/workers/attempts.ts).
   */
  async startAttempts(input: AttemptInput): Promise<{ groupId: string | null; workerIds: string[] }> {
    const r = await this.createTasks([input], false);
    return { groupId: r.groups[0]?.groupId ?? null, workerIds: r.workerIds };
  }

  /** An attempt group: its attempts side by side and the winner the checks picked. */
  attemptGroup(groupId: string): AttemptGroup {
    return this.attempts.group(groupId);
  }

  attemptGroups(): AttemptGroup[] {
    return this.attempts.groups();
  }

  /**
   * Starts several tasks as one batch. All inputs are validated before any worker is created. A task that comes `after`
   * others starts only once they are built, from the base plus their graded commits; with integration checks, the
   * built workers' commits are combined and checked together once every task has ended (engine/workers/batches.ts).
   */
  async startBatch(inputs: (AttemptInput & { id?: string; after?: string[] })[], integration?: IntegrationSpec, name?: string): Promise<StartBatchResult> {
    if (!inputs.length) throw new InputError("the batch is empty: give at least one task");
    const r = await this.createTasks(inputs, true, integration, name);
    return { batchId: r.batchId!, workerIds: r.workerIds, groups: r.groups, tasks: r.tasks };
  }

  private async createTasks(
    inputs: (AttemptInput & { id?: string; after?: string[] })[],
    asBatch: boolean,
    integration?: IntegrationSpec,
    name?: string,
  ): Promise<{ batchId: string | null; workerIds: string[]; groups: { groupId: string; workerIds: string[] }[]; tasks: StartBatchResult["tasks"] }> {
    this.requireSandbox();
    const where = (n: number, msg: string) => (asBatch ? `task ${n + 1}: ${msg}` : msg);
    const plan = inputs.map((i) => ({ id: (i as BatchTaskInput).id, after: (i as BatchTaskInput).after ?? [] }));
    const planned = asBatch && (plan.some((x) => x.id || x.after.length) || !!integration);
    // A task with attempts is several workers of one group (each carrying its attempt); each is validated like a task.
    const expanded = inputs.flatMap((input, n) => {
      try {
        return expandAttempts(input).map((x) => ({ ...x, n }));
      } catch (err) {
        throw new InputError(where(n, (err as Error).message));
      }
    });
    const specs = expanded.map((x) => {
      try {
        return parseInput(WorkerSpec, x.spec);
      } catch (err) {
        throw new InputError(where(x.n, (err as Error).message));
      }
    });
    // Tasks of a batch mostly share a repository and a target: inspect and reach each once.
    const repos = new Map<string, Promise<RepoInfo>>();
    const reached = new Map<string, Promise<void>>();
    const checked: { spec: WorkerSpec; repo: RepoInfo; target: Target }[] = [];
    for (const [i, spec] of specs.entries()) {
      const n = expanded[i]!.n;
      if (!repos.has(spec.directory)) repos.set(spec.directory, inspectRepo(spec.directory));
      const repo = await repos.get(spec.directory)!.catch((err: Error) => {
        throw new InputError(where(n, err.message));
      });
      const heldBack =
        heldBackProblem(spec.checks, repo.root) ?? globProblem(spec.scope, spec.protect, repo.root, repo.subdir) ?? (await shellSyntaxProblem(spec.checks));
      if (heldBack) throw new InputError(where(n, heldBack));
      let target: Target;
      try {
        target = this.resolveTarget(spec.targetId);
      } catch (err) {
        throw new InputError(where(n, (err as Error).message));
      }
      if (!reached.has(target.id)) reached.set(target.id, preflightTarget(target));
      await reached.get(target.id);
      checked.push({ spec, repo, target });
    }
    const batchId = asBatch ? newId("b") : null;
    // Named before its first worker is announced, so every client shows the name from the start.
    if (batchId && name?.trim()) this.batchNames.set(batchId, name.trim());
    if (!planned) {
      const workerIds = checked.map((c, i) => this.create(c.spec, c.repo, c.target, batchId, expanded[i]!.attempt).workerId);
      const groups = new Map<string, string[]>();
      expanded.forEach((x, i) => x.attempt && groups.set(x.attempt.groupId, [...(groups.get(x.attempt.groupId) ?? []), workerIds[i]!]));
      return { batchId, workerIds, groups: [...groups].map(([groupId, ids]) => ({ groupId, workerIds: ids })), tasks: [] };
    }
    if (expanded.some((x) => x.attempt))
      throw new InputError("a task with attempts cannot take part in `after` or integration checks: give those tasks one attempt each");
    const ids = Batches.validate(
      specs.map((sp, i) => ({ ...plan[i]!, directory: sp.directory })),
      checked.map((c) => c.repo),
      integration,
    );
    const unreadable = integration && (await shellSyntaxProblem(integration.checks));
    if (unreadable) throw new InputError(`integration: ${unreadable}`);
    const first = checked[0]!.repo;
    const record = {
      id: batchId!,
      createdAt: Date.now(),
      repo: first.root,
      base: first.head,
      branch: first.branch,
      subdir: first.subdir,
      tasks: specs.map((spec, i) => ({ id: ids[i]!, after: plan[i]!.after, spec, workerId: null as string | null, skipped: null as string | null })),
      integration: integration ? { checks: integration.checks, state: "waiting" as const, result: null } : null,
    };
    this.batches.add(record);
    const workerIds: string[] = [];
    for (const [i, c] of checked.entries()) {
      if (plan[i]!.after.length) continue;
      const id = this.create(c.spec, c.repo, c.target, batchId, undefined, { taskId: ids[i]! }).workerId;
      record.tasks[i]!.workerId = id;
      workerIds.push(id);
    }
    this.batches.add(record);
    return { batchId, workerIds, groups: [], tasks: record.tasks.map((t) => ({ id: t.id, workerId: t.workerId, after: t.after })) };
  }

  batch(batchId: string): BatchSummary {
    const ws = this.list().filter((w) => w.batchId === batchId);
    if (!ws.length) throw new InputError(`unknown batch ${quotedId(batchId)}`, "not-found");
    const graded = ws.filter((w) => w.verdict);
    const honest = graded.filter((w) => w.verdict!.honest).length;
    const settled = ws.every((w) => isAtRest(w.state));
    // A task with attempts counts once: built when its group has a winner (its losers are not failures of the batch).
    // A retried task counts once too, as its latest retry (retryOf chains back to the first worker of the task).
    const byId = new Map(ws.map((w) => [w.id, w]));
    const tasks = new Map<string, Worker[]>();
    for (const w of ws) tasks.set(taskKey(w, byId), [...(tasks.get(taskKey(w, byId)) ?? []), w]);
    // A no-op is never built (old logs may say otherwise): it does not count toward the built rate.
    const built = [...tasks.entries()].filter(([key, t]) =>
      t[0]!.attempt ? this.attempts.group(key).winner !== null : countsAsBuilt(t.reduce((a, b) => (b.createdAt >= a.createdAt ? b : a)).verdict),
    ).length;
    const summary: BatchSummary = {
      id: batchId,
      name: this.batchNames.get(batchId),
      workerIds: ws.map((w) => w.id),
      states: Object.fromEntries(ws.map((w) => [w.id, w.state])),
      settled,
      built,
      honest,
      graded: graded.length,
      builtRate: settled ? built / tasks.size : null,
      honestRate: graded.length ? honest / graded.length : null,
      verdict: settled ? (built === tasks.size ? "built" : "honest-failure") : null,
      tasks: [],
      skipped: [],
      integration: null,
      done: settled,
    };
    return this.batches.extend(batchId, summary);
  }

  /** Names a batch ("" takes the name away); every client hears it as a `batch` event. */
  nameBatch(batchId: string, name: string): { batchId: string; name: string | null } {
    if (!this.list().some((w) => w.batchId === batchId)) throw new InputError(`unknown batch ${quotedId(batchId)}`, "not-found");
    this.batchNames.set(batchId, name.trim());
    this.bus.publish({ type: "batch", batchId, ts: Date.now() });
    return { batchId, name: this.batchNames.get(batchId) };
  }

  /** Workers whose stored transcript holds every word of `query` (engine/workers/search.ts). */
  search(query: string, limit: number): SearchResult {
    return searchTranscripts(
      {
        workers: this.list(),
        logFile: (id) => this.logs.file(id),
        streaming: (id) => [...(this.translator.streaming.get(id)?.values() ?? [])].map((s) => s.part),
      },
      query,
      limit,
    );
  }

  decide(d: Decision, by: DecidedBy): Promise<PermissionAsk> {
    return this.approvals.decide(d, by);
  }

  /** The answers on their way to opencode (a wait's `blocked` leaves out a worker whose ask is being answered). */
  get answers(): Approvals["answers"] {
    return this.approvals.answers;
  }

  grants(): Grant[] {
    return this.approvals.grants();
  }

  revokeGrant(grantId: string, by: DecidedBy = { kind: "person" }): Grant {
    return this.approvals.revokeGrant(grantId, by);
  }

  policies(): PolicyRule[] {
    return this.approvals.policies();
  }

  setPolicies(rules: PolicyRule[]): PolicyRule[] {
    return this.approvals.setPolicies(rules);
  }

  async steer(workerId: string, text: string, by: DecidedBy): Promise<void> {
    const w = this.get(workerId);
    const body = text.trim();
    if (!body) throw new InputError("the steer is empty: say what the worker should do differently");
    if (body.length > 20_000) throw new InputError("the steer is over 20,000 characters: shorten it");
    if (w.state !== "running" && w.state !== "waiting-approval") {
      throw new InputError(
        `worker ${workerId} is ${w.state}, not running: ${w.state === "stopped" || w.state === "interrupted" ? "resume it with a message instead" : w.state === "built" || w.state === "honest-failure" ? "it was graded: continue it with a message (a new round) instead" : "a steer reaches running workers only"}`,
      );
    }
    const c = this.reg.portOf(workerId);
    if (!c || !w.sessionId) throw new InputError(`worker ${workerId} has no live session`);
    this.reg.record(workerId, { type: "steer.sent", text: body, by });
    this.reg.rt(workerId).replies?.promptSent();
    // A prompt to a busy session is stored at once and injected at the next step boundary (shared/notes/opencode.md).
    const target = w.targetId ? this.targets.get(w.targetId) : undefined;
    const model = target ? modelFor(w.endpoint, target) : undefined;
    const res = await c.port.prompt({ sessionID: w.sessionId, directory: c.directory, agent: WORKER_AGENT, model, text: steerPrompt(body) });
    if (!res.ok && res.kind === "status") throw new Error(`opencode refused the steer (HTTP ${res.status})`);
  }

  async stop(workerId: string, reason = "stopped by request", by: DecidedBy = { kind: "person" }, facts: StateFacts = {}): Promise<Worker> {
    const w = this.get(workerId);
    if (isAtRest(w.state)) return w;
    const was = this.reg.rt(workerId).activity;
    this.reg.begin(workerId, "stopping");
    const idx = this.queue.indexOf(workerId);
    if (idx >= 0) this.queue.splice(idx, 1);
    try {
      this.approvals.cancelAll(workerId, by, `worker stopped: ${reason}`);
    } catch (err) {
      // Nothing is stopped yet: the worker carries on as before (a left `stopping` would ignore its next idle).
      this.reg.rt(workerId).restore(was);
      if (idx >= 0) this.queue.splice(idx, 0, workerId);
      throw new Error(`worker ${workerId} was not stopped: ${(err as Error).message}`);
    }
    await this.reg.abortSession(workerId);
    const { error: failed } = this.reg.changeState(workerId, "stop", reason, facts);
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
    // Its workspace and opencode session went with the discard, and a discarded worker's work is never merged.
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to resume; retry it to start the task again`, "conflict");
    if (!["stopped", "interrupted", "error"].includes(w.state)) {
      const graded = w.state === "built" || w.state === "honest-failure";
      throw new InputError(
        `worker ${workerId} is ${w.state}: only stopped, interrupted or errored workers can be resumed${graded ? "; a graded worker takes a follow-up instead: continue it with a message (a new round in the same session)" : ""}`,
        "conflict",
      );
    }
    const { target, now } = await this.checkedTarget(workerId, w, "resume");
    if (now.state !== w.state) throw new InputError(`worker ${workerId} is ${now.state} now (it was ${w.state}): nothing to resume`, "conflict");
    // a person's resume tries the model API again now, even while it asked its workers to wait (a limit lifted early)
    this.pools.release(target.id);
    this.requeue(workerId, "resumed", message);
    return this.get(workerId);
  }

  /**
   * A follow-up to a settled worker (built or honest-failure) in its same session: a new round, admitted in its turn
   * and graded again from a fresh checkout when it settles. `resume` stays for stopped / interrupted / error.
   */
  async continue(
    workerId: string,
    message: string,
    by: DecidedBy = { kind: "person" },
    opts: { kind?: RoundKind; comments?: ReviewComment[] } = {},
  ): Promise<Worker> {
    const w = this.get(workerId);
    const body = message.trim();
    if (!body) throw new InputError("the message is empty: say what the worker should do next");
    if (body.length > 60_000) throw new InputError("the follow-up is over 60,000 characters: shorten it");
    if (w.state !== "built" && w.state !== "honest-failure") {
      const hint = ["stopped", "interrupted", "error"].includes(w.state)
        ? "resume it (with a message) instead"
        : isAtRest(w.state)
          ? ""
          : "wait until it is graded, or steer it while it runs";
      // Refused by the worker's state, as a merged or discarded one is below (the CLI's exit 1, not bad input's 2).
      throw new InputError(
        `worker ${workerId} is ${w.state}: only a graded worker (built or honest-failure) takes a follow-up${hint ? `; ${hint}` : ""}`,
        "conflict",
      );
    }
    if (w.merged)
      throw new InputError(
        `worker ${workerId} was merged into ${w.merged.into} and its workspace removed: delegate a new task from the merged code`,
        "conflict",
      );
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to continue; retry it to start the task again`, "conflict");
    if (!w.sessionId) throw new InputError(`worker ${workerId} never got a session: retry it to start the task again`, "conflict");
    this.requireSandbox();
    const { now } = await this.checkedTarget(workerId, w, "continue");
    if (now.merged) throw new InputError(`worker ${workerId} was merged into ${now.merged.into}: delegate a new task from the merged code`, "conflict");
    if (now.state !== w.state)
      throw new InputError(`worker ${workerId} is ${now.state} now (it was ${w.state}): send the follow-up once it is graded`, "conflict");
    this.startRound(workerId, opts.kind ?? "continue", body, opts.comments ?? [], by);
    return this.get(workerId);
  }

  /**
   * The worker's target, its model checked (preflight), and the worker as it is after that check: a discard, a merge
   * or another resume or follow-up may have come meanwhile (a discard under way, or done, refuses here).
   */
  private async checkedTarget(workerId: string, w: Worker, verb: "resume" | "continue"): Promise<{ target: Target; now: Worker }> {
    this.notDiscarding(workerId, verb);
    const target = this.resolveTarget(w.targetId ?? undefined);
    await preflightTarget(target);
    this.notDiscarding(workerId, verb);
    const now = this.get(workerId);
    if (now.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to ${verb}; retry it to start the task again`, "conflict");
    return { target, now };
  }

  /** A review: its comments become one follow-up that quotes each `file:line` with its comment. */
  review(workerId: string, comments: ReviewComment[], message: string | undefined, by: DecidedBy = { kind: "person" }): Promise<Worker> {
    if (!comments.length) throw new InputError("a review needs at least one comment");
    return this.continue(workerId, reviewText(comments, message), by, { kind: "review", comments });
  }

  /** Records the new round and moves the worker back to the queue (continue from a verdict, or fix from grading). */
  private startRound(workerId: string, kind: RoundKind, message: string, comments: ReviewComment[], by: DecidedBy): boolean {
    const w = this.get(workerId);
    const from = w.state;
    this.reg.record(workerId, { type: "round.started", round: (w.rounds?.length ?? 1) + 1, kind, message, comments, by });
    this.reg.rt(workerId).newTurn({ followUp: message, followUpKind: kind });
    if (
      !this.reg.fire(
        workerId,
        from === "grading" ? "fix" : "continue",
        kind === "fix" ? "fix round: the failing checks were sent back" : `round ${(w.rounds?.length ?? 1) + 1}: ${kind}`,
      )
    )
      return false;
    this.queue.push(workerId);
    this.pump();
    return true;
  }

  /**
   * Fix rounds (opt-in, `fixRounds` in the spec): an honest-failure goes back to the worker with the failing checks'
   * names and trimmed output, never their source, at most `fixRounds` times. Called while the worker is still grading,
   * so it never rests in honest-failure in between.
   */
  private fixRound(workerId: string, v: Verdict): boolean {
    const w = this.get(workerId);
    const allowed = w.spec.fixRounds ?? 0;
    const used = (w.rounds ?? []).filter((r) => r.kind === "fix").length;
    if (this.closed || used >= allowed || !w.sessionId || w.discarded) return false;
    try {
      return this.startRound(workerId, "fix", fixPrompt(w.spec.checks, v, used + 1, allowed), [], { kind: "engine", name: "fix-rounds" });
    } catch (err) {
      this.reg.notice("warn", `worker ${workerId}: the fix round could not start (${(err as Error).message})`);
      return false;
    }
  }

  /** resume → queued, with a new turn that carries the message; admitted in its turn. */
  private requeue(workerId: string, reason: string, message?: string): boolean {
    this.reg.rt(workerId).newTurn({ resumeMessage: message });
    if (!this.reg.fire(workerId, "resume", reason)) return false;
    this.queue.push(workerId);
    this.pump();
    return true;
  }

  merge(workerId: string, opts: { acceptFlagged?: boolean } = {}): Promise<MergeOutcome> {
    return this.lifecycle.merge(workerId, opts);
  }

  /** "Publish the branch": the graded commit as `ocw/<id>` in the person's repository (nothing else lands it but a merge or push). */
  publish(workerId: string): Promise<PublishedBranch> {
    return this.lifecycle.publish(workerId);
  }

  /** Undoes a merge the engine made (a new commit on the branch it landed on). */
  revert(workerId: string): Promise<{ commit: string; into: string }> {
    return this.lifecycle.revert(workerId);
  }

  /** A batch's integration commit landed (or was reverted): the workers it combines are recorded so. */
  recordLanded(workerId: string, into: string, commit: string): Promise<void> {
    return this.lifecycle.recordLanded(workerId, into, commit);
  }

  recordReverted(workerId: string, into: string, commit: string): void {
    this.lifecycle.recordReverted(workerId, into, commit);
  }

  diff(workerId: string): Promise<string> {
    return this.lifecycle.diff(workerId);
  }

  /** Refuses to start a worker again while its discard is under way. */
  private notDiscarding(workerId: string, what: "resume" | "continue"): void {
    if (this.lifecycle.discarding(workerId))
      throw new InputError(`worker ${workerId} is being discarded: nothing is left to ${what}; retry it to start the task again`, "conflict");
  }

  /** Removes a finished worker's workspace, engine repository and branch, unmerged work included (the person asked). */
  discard(workerId: string, by: DecidedBy = { kind: "person" }): Promise<Worker> {
    return this.lifecycle.discard(workerId, by);
  }

  /** Removes the workspaces of finished workers older than the retention; never built work nobody merged. */
  collectGarbage(now = Date.now()): Promise<string[]> {
    return this.lifecycle.collectGarbage(now);
  }

  /** The last health check of each target's model server. */
  models(): { targetId: string; healthy: boolean; problem: string | null; checkedAt: number }[] {
    return this.pools.models();
  }

  /** Every endpoint of every known target: health, slots, workers on it, and what the server reports. */
  endpoints(): { targetId: string; endpoints: EndpointStatus[] }[] {
    return this.pools.endpoints();
  }

  /**
   * An endpoint of a pool died: it takes no new worker, and its workers are interrupted with the reason and resumed on
   * another endpoint of the pool (their session history replays there).
   */
  private onEndpointDown(target: Target, url: string, problem: string): void {
    // Said without credentials (a target saved before they were refused in its URLs may hold some): notices and
    // reasons are events, shown by every client and kept in the log.
    const shown = redactUrlCredentials(url);
    const why = redactUrlCredentials(problem);
    this.reg.notice("warn", `endpoint ${shown} of ${target.id} stopped answering (${why}): out of admission until it answers again`);
    for (const w of this.list()) {
      if (w.targetId !== target.id || w.endpoint !== url || !isActive(w.state)) continue;
      void this.moveWorker(w.id, `the endpoint ${shown} stopped answering (${why})`);
    }
  }

  private async moveWorker(workerId: string, why: string): Promise<void> {
    this.reg.begin(workerId, "stopping");
    this.approvals.cancelAll(workerId, { kind: "engine", name: "endpoint-down" }, `${why}; the worker moves to another endpoint`, { safe: true });
    if (!this.reg.fire(workerId, "interrupt", `${why}: resuming on another endpoint of the pool`)) return;
    await this.reg.abortSession(workerId);
    this.requeue(
      workerId,
      "resumed on another endpoint of the pool",
      "The model server you were on went away; your session continues on another server of the same model. Carry on from where you were.",
    );
  }

  /**
   * The worker's transcript from its log: the latest version of each part, in the order they began (a streamed part is
   * logged once it ends, after a tool call that began later: it comes first, as it did live).
   */
  transcript(workerId: string): TranscriptPart[] {
    this.get(workerId);
    const parts = new Map<string, TranscriptPart>();
    const place = new Map<string, number>();
    for (const e of this.logs.load(workerId).events)
      if (e.type === "part") {
        parts.set(e.part.partId, e.part);
        if (!place.has(e.part.partId)) place.set(e.part.partId, transcriptPlace(e.part, e.seq));
      }
    // Parts still streaming are not in the log yet: their text so far.
    for (const { part } of this.translator.streaming.get(workerId)?.values() ?? [])
      if (!parts.has(part.partId)) {
        parts.set(part.partId, { ...part });
        place.set(part.partId, part.after !== undefined ? part.after + 0.5 : Number.POSITIVE_INFINITY);
      }
    // A stable sort: parts with the same place keep the log's order.
    return [...parts.values()].sort((a, b) => place.get(a.partId)! - place.get(b.partId)! || 0);
  }

  events(workerId: string): WorkerEvent[] {
    this.get(workerId);
    return this.logs.load(workerId).events;
  }

  /** The targets' opencode servers (the workers' harness; model servers are setup's). */
  opencodeServers(): { targetId: string; ready: boolean; url: string | null; pid: number | undefined }[] {
    return this.servers.list();
  }

  /**
   * Per target: its slots, those in use by workers on the model, workers waiting for a person (slot handed over),
   * queued, and until when (epoch ms) its model API asked its workers to wait (a rate limit's long Retry-After), or null.
   */
  slots(): { targetId: string; slots: number; inUse: number; queued: number; waiting: number; heldUntil: number | null }[] {
    const ids = new Set(
      this.list()
        .map((w) => w.targetId)
        .filter((x): x is string => !!x),
    );
    const active = this.targets.active();
    if (active) ids.add(active.id);
    return [...ids].flatMap((id) => {
      const t = this.targets.get(id);
      if (!t) return [];
      return [
        {
          targetId: id,
          slots: t.serving.slots,
          inUse: this.pools.activeCount(id),
          queued: this.queue.filter((q) => this.reg.workers.get(q)?.targetId === id).length,
          waiting: this.pools.waitingCount(id),
          heldUntil: this.pools.heldUntil(id)?.until ?? null,
        },
      ];
    });
  }

  /** The opencode server of a target, for tests and fault injection. */
  serverFor(targetId: string): HarnessServer | undefined {
    return this.servers.get(targetId);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.housekeeping);
    this.budgets.close();
    this.pools.close();
    this.translator.deltas.flush();
    for (const w of this.list()) {
      if (!isActive(w.state)) continue;
      // Interrupted first, so the idle that the abort provokes can never settle (and get graded) a half-done worker.
      this.reg.fire(w.id, "interrupt", "the engine shut down while this worker ran; resume it");
      // Abort: bash tool children survive the server otherwise (docs/opencode.md).
      await this.reg.abortSession(w.id);
    }
    await this.servers.close();
    this.logs.close();
  }

  // ---------- admission & running ----------

  /** Admits queued workers in order while their target has room (slots, or live capacity of a pool's endpoints). */
  private pump(): void {
    if (this.closed) return;
    for (let i = 0; i < this.queue.length; ) {
      const id = this.queue[i]!;
      const w = this.reg.workers.get(id);
      if (!w || w.state !== "queued") {
        this.queue.splice(i, 1);
        continue;
      }
      let target: Target;
      try {
        target = this.resolveTarget(w.targetId ?? undefined);
      } catch (err) {
        this.queue.splice(i, 1);
        this.reg.fire(id, "fail-run", (err as Error).message);
        continue;
      }
      // An attempt that never started, of a group that already has its winner (a restart between the winner's verdict
      // and the stop of the rest): stopped here instead of started.
      const winner = this.attempts.winnerBeforeStart(w);
      if (winner) {
        this.queue.splice(i, 1);
        this.reg.fire(id, "stop", stoppedForWinnerReason(winner), { lostTo: winner });
        continue;
      }
      const admitted = this.pools.admit(w, target);
      if (!admitted.go) {
        i++;
        continue;
      }
      if (admitted.url && admitted.url !== w.endpoint) this.reg.safeRecord(id, { type: "worker.endpoint", url: admitted.url });
      this.queue.splice(i, 1);
      this.reg.fire(id, "admit");
      this.startRun(id, target);
    }
  }

  /**
   * One run of a worker at a time. A worker stopped and resumed, or moved off a dead endpoint, while its run is still
   * starting gets a new run: the old one stops at its next step (it never creates a session or prompts for the new
   * one), and the new one begins after it, reusing the workspace it made.
   */
  private startRun(workerId: string, target: Target): void {
    const rt = this.reg.rt(workerId);
    const token = {};
    const current = () => rt.run?.token === token;
    const done = (rt.run?.done ?? Promise.resolve())
      .then(() => this.run(workerId, target, current))
      .catch((err) => {
        if (!current()) return this.log(`worker ${workerId}: a superseded start failed: ${(err as Error).message}`);
        this.log(`worker ${workerId} failed to start: ${(err as Error).stack}`);
        this.reg.fire(workerId, "fail-run", (err as Error).message);
      });
    rt.supersede({ token, done });
  }

  /** An admitted worker: its workspace (made once), its target's opencode server, its session, and the prompt. */
  private async run(workerId: string, target: Target, current: () => boolean): Promise<void> {
    if (!current()) return;
    let w = this.get(workerId);
    const rt = this.reg.rt(workerId);
    rt.admitted();
    let ws = this.reg.workspaceOf(w);
    let made = false;
    if (!ws || !existsSync(ws.worktree)) {
      const found = rt.repo ?? (await inspectRepo(w.spec.directory));
      // A task after others starts from the base plus their graded commits, recorded at its creation.
      const repo = w.startFrom ? { ...found, head: w.startFrom } : found;
      made = !existsSync(worktreePath(this.reg.workspacesRoot, repo.root, workerId));
      // Its base (graded commits of the tasks before it) is in the engine's graded store only: the workspace gets a copy
      // of exactly the objects of it that the person's repository lacks.
      const importFrom = w.startFrom ? await gradedStore(path.dirname(this.reg.engineGitDir(workerId)), found.root) : undefined;
      ws = await createWorkspace(this.reg.workspacesRoot, repo, workerId, this.reg.engineGitDir(workerId), { importFrom });
      rt.setWorkspace(ws);
      // What its grading will read of the base, made now beside its start (once per base commit).
      prepareGrading(ws);
      this.reg.record(workerId, {
        type: "worker.workspace",
        worktree: ws.worktree,
        branch: ws.branch,
        baseCommit: ws.baseCommit,
        baseBranch: ws.baseBranch,
        repo: ws.repo,
      });
      if (!current()) return;
    } else {
      // A resumed workspace keeps working when its mirror cannot be made again (the user's repository gone): its files
      // are all there, only its git history is not.
      await moveOntoMirror(this.reg.workspacesRoot, ws).catch((err) => this.log(`worker ${workerId}: its object mirror: ${(err as Error).message}`));
    }
    // The worker shell's trusted view of this repository: the engine's mirror of its objects, read-only.
    if (this.sandbox.kind !== "none")
      await writeRepoBinds(path.join(this.opts.stateDir, "sandbox", "binds"), ws.worktree, workspaceMirror(this.reg.workspacesRoot, ws.repo, ws.baseCommit));
    // The held-back checks run once on the base commit: file checks in the workspace just made, read before the prompt
    // is sent (its session is made meanwhile: that touches none of its files); others beside the worker's start
    // (never awaited here).
    const baselined = made ? this.settler.baselineAtCreation(workerId, ws) : undefined;
    if (!made && !this.get(workerId).baseline) void this.settler.baseline(workerId);
    // A resume right after a stop must not have its new turn land in the instance being disposed.
    this.releaser.cancel(workerId);
    await rt.releasing;
    if (!current()) return;
    const server = await this.servers.for(target);
    rt.attach(server);
    if (!server.ready) this.reg.transient({ type: "opencode", targetId: target.id, status: "starting", ts: Date.now() });
    await server.start();
    const port = server.port!;
    if (!current() || this.get(workerId).state !== "starting") return; // stopped or superseded meanwhile
    let text: string;
    w = this.get(workerId);
    if (!w.sessionId) {
      const title = workerTitle(w.spec);
      const create = () => port.createSession({ directory: ws.cwd, title: `ocw ${workerId}: ${title}` });
      // A request that got no HTTP answer at all (seen under load: several at once, "HTTP undefined") is tried again;
      // a wrong answer is not. An unused session left by a lost answer (or a superseded run) is harmless.
      let res = await create();
      for (let i = 1; i <= 3 && !res.ok && res.kind === "no-answer" && current() && this.get(workerId).state === "starting"; i++) {
        await new Promise((r) => setTimeout(r, 1000 * i));
        res = await create();
      }
      if (!current()) return;
      if (!res.ok)
        throw new Error(
          `opencode could not create a session (${res.kind === "status" ? `HTTP ${res.status}` : `no answer in 4 tries: ${noAnswer(res.error)}`}); resume the worker to try again`,
        );
      this.reg.sessions.set(res.value.id, workerId);
      this.reg.record(workerId, { type: "worker.session", sessionId: res.value.id });
      text = taskPrompt(w.spec);
    } else {
      this.reg.sessions.set(w.sessionId, workerId);
      // A round's follow-up that never reached the session (the engine restarted while it was queued) is sent now.
      const round = w.rounds?.at(-1);
      if (!rt.turn.followUp && !rt.turn.resumeMessage && round && round.kind !== "task" && !round.ran && round.message)
        rt.setFollowUp(round.message, round.kind);
      text = rt.turn.followUp ? followUpPrompt(rt.turn.followUp, rt.turn.followUpKind) : resumePrompt(rt.turn.resumeMessage);
      rt.promptTaken();
    }
    await baselined;
    if (!current()) return;
    const sessionId = this.get(workerId).sessionId!;
    if (!this.reg.fire(workerId, "start")) return; // stopped meanwhile
    this.budgets.armWall(workerId);
    const model = modelFor(this.get(workerId).endpoint, target);
    rt.trackReplies();
    const res = await port.prompt({ sessionID: sessionId, directory: ws.cwd, agent: WORKER_AGENT, model, text });
    if (!res.ok && res.kind === "status") throw new Error(`opencode refused the prompt (HTTP ${res.status})`);
    // No answer at all: opencode may never have seen the prompt, and the worker would wait for an idle that never comes.
    if (!res.ok) throw new Error(`opencode did not answer the prompt (${noAnswer(res.error)}); resume the worker to send it again`);
  }

  /**
   * opencode is about to wait before its next try of a model call. A wait longer than LONG_RETRY_WAIT_MS (a provider's
   * Retry-After, which opencode honours however long: an hour for a daily quota) would hold the worker "running" and its
   * slot with nothing happening: it is interrupted instead, saying until when, and resumes in its session when asked.
   */
  private async onRetry(workerId: string, message: string, next: number | null): Promise<void> {
    const wait = next === null ? 0 : next - Date.now();
    if (wait <= LONG_RETRY_WAIT_MS) return this.checkEndpoint(workerId, message);
    const w = this.reg.workers.get(workerId);
    if (!w || w.state !== "running" || !this.reg.is(workerId, "none")) return;
    const until = new Date(next!).toISOString().replace(/\.\d+Z$/, "Z");
    // the limit is the target's (its key's), not this worker's: its queued workers wait too
    if (w.targetId && !this.pools.heldUntil(w.targetId))
      // The engine's words, opencode's quoted: its `ocw resume` shows as code in the GUI.
      this.reg.notice(
        "warn",
        `target ${w.targetId}: the model API asks to wait until ${until} (${labelledUntrusted(message, "opencode's words", 200)}): its workers start again then; resuming one of them (\`ocw resume ${workerId}\`) tries now`,
        { engineWords: true },
      );
    if (w.targetId) this.pools.hold(w.targetId, next!, message);
    this.reg.begin(workerId, "stopping");
    await this.reg.abortSession(workerId);
    this.reg.fire(
      workerId,
      "interrupt",
      `the model API asks to wait ${Math.round(wait / 60_000) >= 2 ? `${Math.round(wait / 60_000)} min` : `${Math.round(wait / 1000)} s`} before the next try (until ${until}; opencode: ${message.slice(0, 300)}): resume the worker after that — it goes on in its session`,
    );
  }

  /**
   * opencode retries a failed model call with growing pauses, for a minute or more, before it gives up. When the call
   * failed because the model server is gone (killed, crashed, stopped), the worker is interrupted at once instead,
   * with the reason, and can be resumed in its session once the server is back. A server that answers is left to
   * opencode's retry (a 500, a rate limit, a restart that already finished). In a pool, the worker moves on.
   */
  private async checkEndpoint(workerId: string, message: string): Promise<void> {
    const w = this.reg.workers.get(workerId);
    if (!w || w.state !== "running" || !this.reg.is(workerId, "none")) return;
    let target: Target;
    try {
      target = this.resolveTarget(w.targetId ?? undefined);
    } catch {
      return;
    }
    this.reg.begin(workerId, "probing");
    const endpoint = isPool(target) && w.endpoint ? w.endpoint : target.endpoint;
    const problem = await unreachable({ ...target, endpoint }, undefined, 2000).finally(() => this.reg.end(workerId, "probing"));
    const live = () => this.reg.workers.get(workerId)?.state === "running" && !this.reg.is(workerId, "stopping");
    if (problem && isPool(target) && live()) {
      // A pool has other endpoints: this one is out of admission, and the worker moves on.
      this.pools.markDown(target.id, endpoint, problem);
      return this.onEndpointDown(target, endpoint, problem);
    }
    if (!problem || !live()) return;
    this.reg.begin(workerId, "stopping");
    await this.reg.abortSession(workerId);
    this.reg.fire(
      workerId,
      "interrupt",
      `the model endpoint ${target.endpoint} stopped answering (${problem}; opencode: ${message}): resume the worker once the model server is back`,
    );
  }
}

function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  throw new InputError(firstIssue(r.error));
}
