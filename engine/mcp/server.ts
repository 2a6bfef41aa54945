// The MCP bridge's tools: each one is a thin call on the engine's control API, shaped for a model that reads only
// `structuredContent` and must never be left hanging on an approval.
import { uncommitted } from "../commands/uncommitted";
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { AttemptGroup } from "../../shared/attempts";
import { isAtRest, pendingAsks, summarizePart, type Worker } from "../../shared/worker";
import type { EngineClient } from "../api/client";
import { type MergeBatchResult, VERSION } from "../../shared/api";
import { canElicit, offerAsk } from "./elicit";
import {
  aggregateState,
  askWhat,
  asText,
  byText,
  checkOut,
  clip,
  elapsedSec,
  fitPage,
  visibleCut,
  pendingItem,
  pendingQuestions,
  scopesOverlap,
  slotsOf,
  summarize,
  titleOf,
  toolField,
  totalsOf,
  UNTRUSTED_NOTE,
  untrustedText,
} from "./format";
import { readLock } from "../api/lock";
import { idSlip } from "./ids";
import { instructionsFor } from "./instructions";
import { askView, diffChangesNothing, UNCHANGED_DIFF } from "../../shared/ask-view";
import { isConnectionError, ToolError, type EngineLink } from "./link";
import { type OlderEngine, releaseOf, selfCommand } from "../api/launcher";
import * as S from "./schemas";
import { follow } from "../api/follow";
import { baselineWarning } from "../../shared/verdict";
import { quoteUntrustedList } from "../../shared/untrusted";
import { noteLine, plainName, streamedLine, type WaitBatch, type WaitInput, type WaitResult, type WaitWorker } from "../../shared/wait";
import { counted } from "../../shared/words";

/** How long delegate looks for the checks' run on the base commit before it answers (it never delays the worker). */
const BASELINE_WAIT_MS = 8000;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface BridgeOptions {
  link: EngineLink;
  log?: (line: string) => void;
  /** Where a relative `directory` would have pointed, for the hint in the error (Claude Code's project dir). */
  baseDir?: string;
  /** Hardware summary for setup_status (detected once, lazily). */
  hardware?: () => Promise<z.infer<typeof S.SetupStatusOutput>["hardware"]>;
  /** The client's wall-clock limit per tool call in ms (Claude Code: MCP_TOOL_TIMEOUT); wait stays below it. */
  toolTimeoutMs?: number | null;
  /** How a shell runs this install's CLI (for the instructions' background wait): default `ocw`. */
  cli?: string;
}

/** Short, so Claude Code's tool names stay short: mcp__plugin_opencode-worker_ocw__delegate. */
const SERVER_NAME = "ocw";

/** The client's tool timeout from MCP_TOOL_TIMEOUT (milliseconds), or null when unset or unreadable. */
export function toolTimeoutFromEnv(env: NodeJS.ProcessEnv = process.env): number | null {
  const n = Number(env.MCP_TOOL_TIMEOUT);
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** The longest wait that ends before the client gives up on the call: 5 s of margin (or a fifth of short limits). */
export function waitCapSec(toolTimeoutMs: number | null | undefined): number {
  if (!toolTimeoutMs) return S.WAIT_MAX_SEC;
  const sec = toolTimeoutMs / 1000;
  return Math.max(1, Math.min(S.WAIT_MAX_SEC, Math.floor(sec - Math.min(5, sec / 5))));
}

export function createMcpServer(opts: BridgeOptions): McpServer {
  const log = opts.log ?? (() => {});
  const link = opts.link;
  const baseDir = opts.baseDir ?? process.env.CLAUDE_PROJECT_DIR ?? process.cwd();
  // The release this bridge is (its install's plugin.json), else the package's version.
  const server = new McpServer(
    { name: SERVER_NAME, version: releaseOf(selfCommand().bundle) ?? VERSION },
    { capabilities: { tools: {} }, instructions: instructionsFor(opts.cli ?? "ocw") },
  );
  const clientName = () => server.server.getClientVersion()?.name ?? "mcp-client";
  const toolTimeoutMs = opts.toolTimeoutMs === undefined ? toolTimeoutFromEnv() : opts.toolTimeoutMs;
  const waitCap = waitCapSec(toolTimeoutMs);
  /** Workers this session delegated: what a wait with no ids waits on. */
  const mine = new Set<string>();
  /**
   * Batches this session delegated and not yet seen done: a task that comes after others (`after`) starts later, as a
   * worker whose id delegate_batch never returned. A wait with no ids follows them too, and is not settled before them.
   */
  const myBatches = new Set<string>();
  /** Adds the workers each of this session's batches has now to `mine`; returns the batches that are not done. */
  async function batchesGoingOn(): Promise<string[]> {
    const going: string[] = [];
    await Promise.all(
      [...myBatches].map(async (batchId) => {
        const b = await call((c) => c.workers.batch.query({ batchId })).catch(() => null);
        if (!b) return;
        for (const id of b.workerIds) mine.add(id);
        if (b.done) myBatches.delete(batchId);
        else going.push(batchId);
      }),
    );
    return going;
  }
  /** What this session's waits have shown already, so that each wait reports only what changed since the last. */
  const shown = {
    /** Asks shown, while they may still be pending (an answered one never is again): its worker and the worker's batch. */
    asks: new Map<string, { workerId: string; batchId: string | null }>(),
    /**
     * Workers shown finished, with their batch and when they finished: a worker given another round (continue, review,
     * resume, by this session or another client) finishes again later, and that is news again.
     */
    finished: new Map<string, { batchId: string | null; endedAt: number | null }>(),
  };
  /** Asks this session offered as a form: a declined form is not offered again. */
  const offered = new Set<string>();

  function register<I extends z.ZodObject, O extends z.ZodObject>(
    name: string,
    def: {
      title: string;
      description: string;
      input: I;
      output: O;
      readOnly?: boolean;
      destructive?: boolean;
      idempotent?: boolean;
      /** Runs on the raw arguments before the strict parse, for a better message than the schema's. */
      pre?: (raw: Record<string, unknown>) => string | null;
      /** Reshapes the advertised JSON schema (e.g. a shape described once, by reference). */
      shape?: (json: Record<string, unknown>) => Record<string, unknown>;
    },
    fn: (args: z.infer<I>, extra: Extra, raw: Record<string, unknown>) => Promise<z.infer<O>>,
  ) {
    server.registerTool(
      name,
      {
        title: def.title,
        description: def.description,
        inputSchema: S.advertised(def.input, def.shape),
        // Every result may carry the one-line label of worker-written text (added below).
        outputSchema: def.output.extend({ untrustedNote: z.string().optional() }),
        annotations: {
          title: def.title,
          readOnlyHint: !!def.readOnly,
          destructiveHint: !!def.destructive,
          idempotentHint: !!def.idempotent,
          openWorldHint: false,
        },
      },
      (async (raw: Record<string, unknown>, extra: Extra) => {
        const problem = idSlip(name, raw ?? {}) ?? def.pre?.(raw ?? {});
        if (problem) return failure(problem);
        const parsed = def.input.safeParse(raw ?? {});
        if (!parsed.success) return failure(S.firstIssue(parsed.error));
        try {
          let out = (await fn(parsed.data, extra, raw ?? {})) as Record<string, unknown>;
          // An older engine kept for its workers (engine/api/launcher.ts): said once, in the first answer with a `next`.
          if (typeof out.next === "string") {
            const older = link.olderNote?.();
            if (older) out = { ...out, next: `${out.next}. Note: ${older}` };
          }
          // Worker-written text travels only inside `untrusted` objects; a result holding any is labelled once, first.
          if (hasUntrusted(out)) out = { untrustedNote: UNTRUSTED_NOTE, ...out };
          return { content: [{ type: "text" as const, text: asText(out) }], structuredContent: out };
        } catch (err) {
          return failure(messageOf(err, log, name, link.older ?? null));
        }
      }) as never,
    );
  }

  const call = <T>(fn: (c: EngineClient) => Promise<T>) => link.call(fn);

  /** The attempt of `w`'s task that was merged (and not reverted), when it is not `w` itself: the task is done there. */
  async function mergedAttempt(w: Worker): Promise<Worker | null> {
    if (!w.attempt) return null;
    const g = await call((c) => c.workers.attempts.query({ groupId: w.attempt!.groupId }));
    const others = await Promise.all(g.attempts.filter((a) => a.workerId !== w.id).map((a) => call((c) => c.workers.get.query({ workerId: a.workerId }))));
    return others.find((x) => x.merged && !x.reverted) ?? null;
  }

  /** The `next` of a losing or unfinished attempt: point at the winner (or at the attempts still running). */
  async function attemptsNext(w: Worker, merged: Worker | null): Promise<string> {
    // Another attempt landed: the task is done, and this one neither merges nor retries (the engine refuses both).
    if (merged?.merged)
      return `this attempt was not the winner (${w.state}); attempt ${merged.id} won and was merged into ${merged.merged.into} (${merged.merged.commit.slice(0, 12)}): the task is done${isDiscarded(w) ? "" : `; discard {"workerId":"${w.id}"} removes this attempt`}`;
    const g = await call((c) => c.workers.attempts.query({ groupId: w.attempt!.groupId }));
    // No state reason here: it may carry text a worker or model wrote, and `next` is read as the engine's own words.
    if (g.winner)
      return `this attempt was not the winner (${w.state}); attempt ${g.winner} won: result {"workerId":"${g.winner}"}, then merge {"workerId":"${g.winner}"}`;
    if (!g.settled) return `not built; other attempts of this task are still running: wait {"workerIds":${JSON.stringify(g.attempts.map((a) => a.workerId))}}`;
    return `no attempt of this task was built and honest: read the failing checks, then delegate a targeted fix (the checks on each attempt say what failed)`;
  }

  async function slotsNow(targetId?: string | null) {
    const st = await call((c) => c.status.query());
    return { slots: slotsOf(st.slots, targetId ?? st.activeTarget?.id ?? null), status: st };
  }

  // ---------------- setup_status ----------------
  register(
    "setup_status",
    {
      title: "Setup status",
      description:
        "Is opencode-worker ready? The active target (model, endpoint, slots), whether it answers, slots free, pending approvals, hardware, gui (the dashboard URL). Call it first; if not ready, follow next (the model-setup skill).",
      input: S.EmptyInput,
      output: S.SetupStatusOutput,
      readOnly: true,
      idempotent: true,
    },
    async () => {
      const [health, st] = await Promise.all([call((c) => c.health.query()), call((c) => c.status.query())]);
      const t = st.activeTarget;
      const hardware = opts.hardware ? await opts.hardware().catch(() => null) : null;
      let activeTarget: z.infer<typeof S.SetupStatusOutput>["activeTarget"] = null;
      let problem: string | null = null;
      const warnings: string[] = [];
      if (t) {
        const reach = await reachable(t.endpoint);
        activeTarget = {
          id: t.id,
          model: t.model,
          quant: t.quant ?? null,
          endpoint: t.endpoint,
          engine: t.serving.engine,
          slots: t.serving.slots,
          perSlotCtx: t.serving.perSlotCtx ?? null,
          outcome: t.outcome ?? null,
          verifiedAt: t.verifiedAt ?? null,
          reachable: reach.ok,
          reachDetail: reach.detail,
          bench: t.bench ?? null,
        };
        // measured too slow for agents at full load (the benchmark after setup): work goes ahead, with the warning
        if (t.bench?.warning) warnings.push(`target ${t.id}: ${t.bench.warning}`);
        if (!reach.ok)
          problem = `the model endpoint ${t.endpoint} does not answer (${reach.detail}): start the model server (\`ocw setup\` manages one) or fix the target`;
        else if (t.outcome === "cannot-build")
          problem = `target ${t.id} was verified as cannot-build: a piece it needs is missing (see \`ocw targets\`); fix it or set up another model (\`ocw setup\`)`;
        // The person made an underpowered target active on purpose (--accept-underpowered): work goes ahead, with the warning.
        else if (t.outcome === "underpowered")
          warnings.push(
            `target ${t.id} was verified as underpowered and accepted anyway: expect mostly honest-failure verdicts; keep tasks small, and tell the person when a stronger model (\`ocw fit\`, \`ocw setup\`) would help`,
          );
      } else
        problem =
          "no active target: set one up with `ocw setup` in a terminal (the model-setup skill walks through it; or the GUI's setup wizard), then call setup_status again";
      const slots = slotsOf(st.slots, t?.id ?? null);
      const older = link.olderNote?.();
      if (older) warnings.push(older);
      const lock = readLock(link.stateDir);
      return {
        ready: !problem,
        problem,
        engine: { version: health.version, pid: health.pid, stateDir: link.stateDir },
        gui: lock ? `http://127.0.0.1:${lock.port}/?token=${lock.token}` : null,
        activeTarget,
        opencode: st.opencode.map((s) => ({ targetId: s.targetId, ready: s.ready, url: s.url })),
        slots,
        pendingApprovals: st.pendingApprovals,
        workers: st.workers,
        warnings,
        hardware,
        next: problem
          ? `not ready: ${problem}`
          : `ready: ${slots.free} of ${slots.total} slots free — delegate up to ${counted(Math.max(1, slots.free), "independent task")} at once${st.pendingApprovals ? `; ${counted(st.pendingApprovals, "approval")} ${st.pendingApprovals === 1 ? "is" : "are"} pending (pending_approvals)` : ""}`,
      };
    },
  );

  // ---------------- delegate ----------------
  register(
    "delegate",
    {
      title: "Delegate a task to a worker",
      description:
        "Start one worker on a task in its own git worktree; returns {workerId} at once. Give a self-contained task, the repository's ABSOLUTE path, held-back checks ({run} commands or {file} tests) that decide the verdict, scope globs it may change and protect globs it must not. Then wait and answer its asks. Several independent tasks: delegate_batch.",
      input: S.DelegateInput,
      output: S.DelegateOutput,
      pre: (raw) => directoryProblem(raw.directory, baseDir),
    },
    async (args) => {
      const group = args.attempts !== undefined || (args.targets?.length ?? 0) > 0;
      const started = group
        ? await call((c) => c.workers.startAttempts.mutate(args))
        : { groupId: null, workerIds: [(await call((c) => c.workers.start.mutate(args))).workerId] };
      const workerId = started.workerIds[0]!;
      for (const id of started.workerIds) mine.add(id);
      // The checks run once on the base commit beside the worker's start: a short look, so a check that already passes
      // is said at once (it proves nothing). The worker is never held back by it; result and wait say it later too.
      const baseline = args.checks.length ? await baselineOf(workerId, BASELINE_WAIT_MS) : { passedOnBase: [] };
      const [{ slots }, w, dirty, twins, branch] = await Promise.all([
        slotsNow(),
        call((c) => c.workers.get.query({ workerId })),
        uncommitted(args.directory),
        sameTaskRunning(args.task, args.directory, started.workerIds),
        gitOut(args.directory, ["symbolic-ref", "-q", "HEAD"]),
      ]);
      const warnings: string[] = [];
      if (branch === null && (await gitOut(args.directory, ["rev-parse", "--verify", "-q", "HEAD"])) !== null)
        warnings.push(
          `the checkout is on a detached HEAD: there is no branch to merge the worker's commit into — once built, merge {"workerId":"${workerId}","publish":true} puts it on branch ocw/${workerId} for the person to merge where they want (or check out a branch first and delegate again)`,
        );
      // A repeated call (one the person interrupted still started its worker, whose id the model never saw): said at once.
      if (twins.length)
        warnings.push(
          `the same task on this repository is already with worker ${twins.slice(0, 3).join(", ")} (not finished): this is another one — if this call repeated an earlier one, stop {"workerId":"${workerId}"}; their branches would conflict`,
        );
      const weak = baselineWarning(baseline);
      if (weak) warnings.push(weak);
      if (!args.checks.length)
        warnings.push("no checks: the verdict then rests on the scope alone and proves little — next time give checks that fail unless the work is right");
      if (!args.scope.length)
        warnings.push(
          "no scope: the worker may change any file and the verdict cannot catch a stray edit — next time give `scope` globs of the files it may change",
        );
      if (dirty) warnings.push(dirty);
      if (slots.queued > 0 && w.state === "queued") warnings.push(`all ${slots.total} slots are busy: this worker is queued until one frees`);
      if (started.groupId) {
        if (!args.checks.length)
          warnings.push(
            "attempts without checks: every attempt that changes something in scope is built, so the winner is only the smallest change — give checks that fail unless the work is right",
          );
        return {
          workerId,
          groupId: started.groupId,
          workerIds: started.workerIds,
          state: w.state,
          directory: args.directory,
          checks: args.checks.length,
          baseline,
          slots,
          warnings,
          next: `call wait {"workerIds":${JSON.stringify(started.workerIds)}} and answer their approvals (the engine stops the rest once one is built); then result {"workerId":"${workerId}"} shows every attempt and the winner — merge the winner`,
        };
      }
      return {
        workerId,
        state: w.state,
        directory: args.directory,
        checks: args.checks.length,
        baseline,
        slots,
        warnings,
        next: `call wait {"workerId":"${workerId}"} and answer its approvals; then result {"workerId":"${workerId}"}`,
      };
    },
  );

  /** Unfinished workers (other than `except`) given exactly this task on this directory's repository. */
  async function sameTaskRunning(task: string, directory: string, except: string[]): Promise<string[]> {
    const [list, root] = await Promise.all([call((c) => c.workers.list.query()).catch(() => []), repoRoot(directory).catch(() => directory)]);
    return list
      .filter((o) => !except.includes(o.id) && !isAtRest(o.state) && o.spec.task === task && sameRepo(o, root))
      .map((o) => o.id)
      .reverse();
  }

  /** The worker's base-commit check run, waiting up to `ms` for it (null when it has not finished by then). */
  async function baselineOf(workerId: string, ms: number): Promise<{ passedOnBase: string[] } | null> {
    const client = await link.client();
    const r = await follow(client, [workerId], { until: (ws) => !!ws.get(workerId)?.baseline, timeoutMs: ms }).catch(() => null);
    const b = r?.workers.get(workerId)?.baseline;
    return b ? { passedOnBase: b.passedOnBase } : null;
  }

  // ---------------- delegate_batch ----------------
  register(
    "delegate_batch",
    {
      title: "Delegate several independent tasks",
      description:
        "Start several workers at once (one batchId). Split the work into INDEPENDENT tasks with DISJOINT `scope`s (else their branches conflict); put shared interfaces in the task texts. Size it to setup_status's free slots; `name` it for people. Then wait {batchId}. A task needing another's output names it in `after`; `integration` checks the built pieces together.",
      input: S.DelegateBatchInput,
      output: S.DelegateBatchOutput,
      shape: S.batchItemsByReference,
      pre: (raw) => {
        const tasks = Array.isArray(raw.tasks) ? raw.tasks : [];
        for (const [i, t] of tasks.entries()) {
          const p = directoryProblem((t as Record<string, unknown> | null)?.directory, baseDir);
          if (p) return `task ${i + 1}: ${p}`;
        }
        return null;
      },
    },
    async (args) => {
      // Each checkout's uncommitted changes, read beside the engine's start of the batch (never rejects): `git status` of
      // a large checkout takes a while, and the answer would otherwise wait for it after the start.
      const dirty = Promise.all([...new Set(args.tasks.map((t) => path.resolve(t.directory)))].map(uncommitted));
      const before = await slotsNow();
      const { batchId, workerIds, tasks, groups } = await call((c) =>
        c.workers.startBatch.mutate({
          tasks: args.tasks,
          ...(args.integration ? { integration: args.integration } : {}),
          ...(args.name ? { name: args.name } : {}),
        }),
      );
      for (const id of workerIds) mine.add(id);
      myBatches.add(batchId);
      const { slots } = await slotsNow();
      const warnings = (await dirty).filter((w): w is string => !!w);
      const overlaps: string[] = [];
      args.tasks.forEach((a, i) =>
        args.tasks.forEach((b, j) => {
          if (j > i && path.resolve(a.directory) === path.resolve(b.directory) && scopesOverlap(a.scope, b.scope)) overlaps.push(`${i + 1}&${j + 1}`);
        }),
      );
      if (overlaps.length)
        warnings.push(
          `tasks ${overlaps.slice(0, 6).join(", ")} work on the same repository with overlapping (or missing) scopes: their branches may conflict — give each task a disjoint scope`,
        );
      const noChecks = args.tasks.map((t, i) => (t.checks.length ? 0 : i + 1)).filter(Boolean);
      if (noChecks.length)
        warnings.push(
          `${noChecks.length === 1 ? `task ${noChecks[0]} has no checks: its verdict proves` : `tasks ${noChecks.join(", ")} have no checks: their verdicts prove`} little`,
        );
      const noScope = args.tasks.map((t, i) => (t.scope.length ? 0 : i + 1)).filter(Boolean);
      if (noScope.length && !overlaps.length)
        warnings.push(
          `${noScope.length === 1 ? `task ${noScope[0]} has no scope: it may` : `tasks ${noScope.join(", ")} have no scope: they may`} change any file — give each task \`scope\` globs`,
        );
      if (args.tasks.length > before.slots.free)
        warnings.push(
          `${args.tasks.length} tasks for ${counted(before.slots.free, "free slot")}: ${args.tasks.length - before.slots.free} queue until slots free`,
        );
      const later = tasks.filter((t) => !t.workerId).map((t) => t.id);
      return {
        batchId,
        workerIds,
        tasks,
        ...(groups?.length ? { groups } : {}),
        slots,
        warnings,
        next: `call wait {"batchId":"${batchId}"} repeatedly and answer approvals${later.length ? ` (${later.length === 1 ? `task ${later[0]} starts once the tasks it comes after are` : `tasks ${later.join(", ")} start once the tasks they come after are`} built)` : ""}; then result for each worker${groups?.length ? " (for a task with attempts, result of any of its workers shows the winner: merge that one)" : ""}${args.integration ? `; the integration verdict comes in wait's batch.integration, and merge {"batchId":"${batchId}"} lands it` : ""}`,
      };
    },
  );

  // ---------------- workers ----------------
  register(
    "workers",
    {
      title: "List workers",
      description:
        "Workers the engine knows (any client or session, across restarts), newest first: state, asks, verdict, totals. directory finds a repository's workers (an earlier session's too).",
      input: S.WorkersInput,
      output: S.WorkersOutput,
      readOnly: true,
      idempotent: true,
    },
    async (args) => {
      const [list, st] = await Promise.all([
        call((c) => c.workers.list.query(args.batchId ? { batchId: args.batchId } : undefined)),
        call((c) => c.status.query()),
      ]);
      const bad = directoryProblem(args.directory, baseDir);
      if (bad) throw new ToolError(bad);
      // A batch always has workers: none is an id that names no batch, said as such (not an empty list, read as "nothing yet").
      if (args.batchId && !list.length)
        throw new ToolError(
          `unknown batch "${clip(args.batchId, 60)}": no batch has that id — delegate_batch returns a batchId, and workers {} lists every worker with its batchId`,
        );
      const repo = args.directory ? await repoRoot(args.directory) : null;
      const filtered = list.filter((w) => (!args.active || !isAtRest(w.state)) && (!repo || sameRepo(w, repo)));
      const now = Date.now();
      const counts: Record<string, number> = {};
      for (const w of filtered) counts[w.state] = (counts[w.state] ?? 0) + 1;
      const asked = filtered
        .slice()
        .reverse()
        .slice(0, args.limit ?? 30)
        .map((w) => summarize(w, now));
      // Within what a client reads whole (a summary with its asks can be a few thousand characters).
      const shownWorkers = within(asked, S.WORKERS_CHARS);
      const left = filtered.length - shownWorkers.length;
      return {
        totals: totalsOf(filtered, now),
        workers: shownWorkers,
        total: filtered.length,
        ...(left
          ? {
              next:
                shownWorkers.length < asked.length
                  ? `${counted(left, "more worker")} not shown (the result stays within what a client reads whole): narrow with directory, batchId or active, or a lower limit`
                  : `${counted(left, "more worker")} not shown: raise limit, or narrow with directory, batchId or active`,
            }
          : {}),
        counts,
        pendingApprovals: st.pendingApprovals,
        slots: slotsOf(st.slots, st.activeTarget?.id ?? null),
      };
    },
  );

  // ---------------- worker_status ----------------
  register(
    "worker_status",
    {
      title: "Worker status",
      description: "One worker in detail: state, asks, recent steps, usage, branch.",
      input: S.WorkerRefInput,
      output: S.WorkerStatusOutput,
      readOnly: true,
      idempotent: true,
    },
    async ({ workerId }) => {
      const [w, parts] = await Promise.all([call((c) => c.workers.get.query({ workerId })), call((c) => c.workers.transcript.query({ workerId }))]);
      const sum = summarize(w);
      return {
        ...sum,
        task: clip(w.spec.task, 2000),
        targetId: w.targetId,
        branch: w.branch,
        worktree: w.worktree,
        steers: w.steers.length,
        toolFailures: w.toolFailures,
        usage: w.usage,
        untrusted: { ...sum.untrusted, recent: parts.slice(-8).map((p) => untrustedText(summarizePart(p), 200)) },
        next: nextFor([w]),
      };
    },
  );

  // ---------------- wait ----------------
  register(
    "wait",
    {
      title: "Wait for workers",
      description: `Block up to timeoutSec (default ${Math.min(S.WAIT_DEFAULT_SEC, waitCap)}, max ${waitCap}) on {workerId}, {workerIds}, {batchId} or {} (this session's unfinished workers). Returns what changed since your last wait: new asks (pending: answer with approve), workers finished since (with verdicts), counts by state. Returns early on a new ask or a finished worker; call again until settled.`,
      input: S.WaitInput,
      output: S.WaitOutput,
      readOnly: true,
    },
    async (args, extra) => {
      const given = [args.workerId, args.workerIds, args.batchId].filter((x) => x !== undefined).length;
      if (given > 1) throw new ToolError("give one of workerId, workerIds or batchId (or none, to wait on the unfinished workers this session delegated)");
      const asked = args.timeoutSec ?? S.WAIT_DEFAULT_SEC;
      const timeoutSec = Math.min(waitCap, asked);
      const note =
        timeoutSec < asked
          ? toolTimeoutMs && waitCap < S.WAIT_MAX_SEC
            ? `timeoutSec capped at ${timeoutSec} s: the client ends tool calls after ${Math.round(toolTimeoutMs / 1000)} s (MCP_TOOL_TIMEOUT=${toolTimeoutMs}); call wait again to keep waiting, or raise MCP_TOOL_TIMEOUT`
            : `timeoutSec capped at ${timeoutSec} s; call wait again to keep waiting`
          : null;
      const t0 = Date.now();
      const deadline = t0 + timeoutSec * 1000;
      // What to wait on, as the engine's wait takes it: the engine resolves the ids (an unknown one is its coded error).
      let target: { workerIds: string[]; unfinished?: boolean } | { batchId: string };
      /** With no ids: this session's batches that are not done (a task that comes after others may not have started). */
      let goingOn: string[] = [];
      if (args.workerId) target = { workerIds: [args.workerId] };
      else if (args.batchId) target = { batchId: args.batchId };
      else if (args.workerIds) target = { workerIds: args.workerIds };
      else {
        goingOn = await batchesGoingOn();
        if (!mine.size)
          throw new ToolError(
            "this session has delegated no workers yet: give workerId, workerIds or batchId (workers {directory} lists the workers of a repository, from earlier sessions too)",
          );
        target = { workerIds: [...mine], unfinished: true };
      }
      // What this session's waits have shown of these workers: only that is sent (a batch's by its id, others by theirs).
      const concerns = (workerId: string, batchId: string | null) => ("batchId" in target ? batchId === target.batchId : target.workerIds.includes(workerId));
      const seen = {
        shownAsks: [...shown.asks].filter(([, s]) => concerns(s.workerId, s.batchId)).map(([id]) => id),
        shownFinished: [...shown.finished].filter(([id, s]) => concerns(id, s.batchId)).map(([id]) => id),
      };
      const token = extra._meta?.progressToken;
      let lastNote = "waiting";
      let lastProgress = 0;
      const progress = (message: string) => {
        lastNote = message;
        if (token === undefined) return;
        // Seconds waited; strictly increasing, as the spec asks of progress values.
        lastProgress = Math.max(lastProgress + 0.001, Math.round((Date.now() - t0) / 10) / 100);
        void extra
          .sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: lastProgress, total: timeoutSec, message: clip(message, 200) },
          })
          .catch(() => undefined);
      };
      const useForms = args.elicit !== false && canElicit(server.server);
      let announced = false;
      const announce = (ids: string[]) => {
        if (announced) return;
        announced = true;
        progress(`waiting on ${ids.length === 1 ? ids[0] : `${ids.length} workers`}`);
      };
      // Ids the caller named are the ones waited on: said at once (a batch's, or the session's unfinished ones, once
      // the engine says which).
      if ("workerIds" in target && !target.unfinished) announce([...new Set(target.workerIds)]);
      /** One request: the engine waits for news (its answer holds the pictures and the batch's summary). */
      const engineWait = (timeoutMs: number): Promise<WaitResult> => {
        // An ask's diff is read only by a form (wait's own output names the path): without forms, it stays in the engine.
        // blocked: a wait whose workers all wait on asks it was shown would only wait for its caller: answered at once.
        const input = { ...target, ...seen, timeoutMs: Math.max(0, timeoutMs), diffs: useForms, blocked: true, ...(mine.size ? { also: [...mine] } : {}) };
        // A deliberate stop of the engine while this wait runs ends it saying so (link.stoppedSince), never restarts it.
        // An engine older than this bridge (kept while its workers are at work) may not take `blocked`: asked again
        // without it, so a wait on those very workers still works (it then runs to its time on an ask it was shown).
        const plain = (inp: typeof input) =>
          link
            .call((c) => c.workers.wait.query(inp, { signal: extra.signal }), undefined, t0)
            .catch((err: unknown) => {
              if (!/Unrecognized key.*"blocked"/.test((err as Error)?.message ?? "")) throw err;
              const { blocked: _blocked, ...older } = inp;
              return link.call((c) => c.workers.wait.query(older, { signal: extra.signal }), undefined, t0);
            });
        if (token === undefined) return plain(input);
        // With progress wanted (an input too long for a URL, a session of very many workers, goes in the stream's POST
        // body: shared/api-client.ts): the engine streams a line per event worth showing of these workers, then the answer.
        // A stream that fails (or an engine older than this bridge, which has none: its 404 says only that) is asked
        // again as a plain wait for the time left, whose error, if any, is the engine's own coded one.
        const ends = Date.now() + input.timeoutMs;
        return link
          .client()
          .then((client) => streamWait(client, input, extra.signal, { following: announce, note: progress }))
          .catch((err: unknown) => {
            if (extra.signal.aborted) throw err;
            log(`wait: the event stream failed (${(err as Error)?.message ?? String(err)}); waiting without its lines`);
            return plain({ ...input, timeoutMs: Math.max(0, ends - Date.now()) });
          });
      };
      const heartbeat = token !== undefined ? setInterval(() => progress(lastNote), 10_000) : undefined;
      const answeredInForm: { askId: string; decision: string }[] = [];
      // News for this caller: an ask no wait of this session has shown, or a worker finished since its last wait.
      const newAsk = (w: WaitWorker) => pendingAsks(w).some((a) => !shown.asks.has(a.id));
      const newlyFinal = (w: WaitWorker) => isAtRest(w.state) && (!shown.finished.has(w.id) || shown.finished.get(w.id)!.endedAt !== w.endedAt);
      let reason: z.infer<typeof S.WaitOutput>["reason"];
      let r: WaitResult;
      try {
        for (;;) {
          try {
            r = await engineWait(deadline - Date.now());
          } catch (err) {
            // A cancelled call's result never reaches the caller: what it held stays news.
            if (extra.signal.aborted) throw new ToolError("the wait was cancelled");
            throw err;
          }
          reason =
            r.reason === "settled"
              ? "settled"
              : r.reason === "news"
                ? r.workers.some(newAsk)
                  ? "approval-pending"
                  : "worker-settled"
                : r.reason === "blocked"
                  ? "approval-pending"
                  : r.reason === "timeout"
                    ? "timeout"
                    : "cancelled";
          if (reason !== "approval-pending" || !useForms) break;
          const workers = new Map(r.workers.map((w) => [w.id, w]));
          // A form is offered once per session: a declined one is not shown again on the next wait.
          const ask = r.workers.flatMap((w) => pendingAsks(w)).find((a) => !offered.has(a.id));
          if (!ask) break;
          offered.add(ask.id);
          progress(
            noteLine(
              plainName(ask.tool)
                ? { said: `asking the person about ${ask.workerId}'s ${ask.tool}` }
                : { said: `asking the person about ${ask.workerId}'s ask`, untrusted: ask.tool },
            ),
          );
          const outcome = await offerAsk({
            server: server.server,
            client: await link.client(),
            decider: () => link.client(`person:${clientName()} (form)`),
            // The person reads repository-relative paths, not the engine's private workspace.
            ask: {
              ...ask,
              what: askWhat(ask, workers.get(ask.workerId)?.worktree),
              ...(ask.diff ? { diff: askWhat({ what: ask.diff }, workers.get(ask.workerId)?.worktree) } : {}),
            },
            title: workers.get(ask.workerId)!.title,
            timeoutMs: deadline - Date.now(),
            signal: extra.signal,
            log,
          });
          if (outcome.kind === "answered") answeredInForm.push({ askId: ask.id, decision: outcome.decision });
          if (outcome.kind === "unavailable") log(`form for ${ask.id} not shown or not answered: ${outcome.why}`);
          if (extra.signal.aborted) {
            reason = "cancelled";
            break;
          }
          if (Date.now() >= deadline) {
            // Out of time: report the picture as it is now.
            r = await engineWait(0);
            reason = r.workers.every((w) => isAtRest(w.state)) ? "settled" : r.workers.some(newAsk) ? "approval-pending" : "timeout";
            break;
          }
          // answered / resolved elsewhere / declined: keep waiting (a declined ask ends the next round at once).
        }
      } finally {
        clearInterval(heartbeat);
      }
      // The engine's answer is the picture as it was when it answered: an ask and the state change it causes both.
      const list = r!.workers;
      const ids = r!.workerIds;
      const batch = r!.batch ? batchStatsOf(r!.batch) : null;
      // A batch goes on after its workers end: tasks that come after others start, the integration checks run.
      // …and so do this session's batches a wait with no ids follows: asked again, as they may have gone on meanwhile.
      if (goingOn.length) goingOn = await batchesGoingOn();
      const settled = list.every((w) => isAtRest(w.state)) && (!batch || batch.done !== false) && !goingOn.length;
      if (((batch && batch.done === false) || goingOn.length) && reason! === "settled") reason = "worker-settled";
      const unanswered = list.flatMap((w) => pendingAsks(w).map((a) => ({ a, w })));
      // New asks a page at a time: one model answer can make hundreds at once (parallel tool calls, each up to 1,000
      // characters), and a result over the client's limit (Claude Code: 25,000 tokens) reaches Claude as nothing at all.
      // Those left out stay news: the next wait returns at once with them.
      const allFresh = unanswered.filter(({ a }) => !shown.asks.has(a.id));
      const items = allFresh.slice(0, S.PENDING_PAGE).map(({ a, w }) => {
        const item = pendingItem(a, w.worktree);
        // A question is answered with its option labels: they come with it (approve without answers is refused).
        const questions = a.kind === "question" ? pendingQuestions(a) : null;
        return questions ? { ...item, untrusted: { ...item.untrusted, questions } } : item;
      });
      const page = within(items, S.PENDING_CHARS);
      const fresh = allFresh.slice(0, page.length);
      const notShown = allFresh.length - fresh.length;
      const finished = list.filter(newlyFinal);
      // A cancelled call's result never reaches the caller: what it held stays news.
      if (!extra.signal.aborted) {
        for (const { a, w } of fresh) shown.asks.set(a.id, { workerId: w.id, batchId: w.batchId });
        for (const w of finished) shown.finished.set(w.id, { batchId: w.batchId, endedAt: w.endedAt });
        // A worker shown finished that is working again (another round) is news once it finishes again.
        for (const w of list) if (!isAtRest(w.state)) shown.finished.delete(w.id);
        // An ask shown before that is no longer pending never is again: not sent with later waits.
        const open = new Set(unanswered.map(({ a }) => a.id));
        const here = new Set(ids);
        for (const [id, s] of shown.asks) if (here.has(s.workerId) && !open.has(id)) shown.asks.delete(id);
      }
      const counts: Record<string, number> = {};
      for (const w of list) counts[w.state] = (counts[w.state] ?? 0) + 1;
      const stalled = list.filter((w) => w.stalled && !isAtRest(w.state)).map((w) => w.id);
      const now = Date.now();
      // When this wait settles and the session delegated other workers too: the whole session's totals.
      const others = [...mine].filter((id) => !ids.includes(id));
      let session: z.infer<typeof S.Totals> | null = null;
      if (settled && others.length) {
        const got = new Map(r!.also.map((w) => [w.id, w]));
        // Delegated while this wait ran (another call of this session): not in the engine's answer.
        const late = await Promise.all(others.filter((id) => !got.has(id)).map((id) => call((c) => c.workers.get.query({ workerId: id }))));
        session = totalsOf([...list, ...others.map((id) => got.get(id)).filter((w): w is WaitWorker => !!w), ...late], now);
      }
      // Asks shown by an earlier wait and still open: named by id, as the next call (approve) needs them.
      const freshIds = new Set(allFresh.map(({ a }) => a.id));
      const olderIds = unanswered.filter(({ a }) => !freshIds.has(a.id)).map(({ a }) => a.id);
      const older = olderIds.length;
      const olderText = older
        ? `${counted(older, "ask")} shown before ${older === 1 ? "is" : "are"} still unanswered (askId ${olderIds.slice(0, 5).join(", ")}${older > 5 ? ` and ${older - 5} more` : ""})`
        : "";
      const questions = fresh.some(({ a }) => a.kind === "question");
      // Blocked on asks it was shown: only the answer moves the batch (a wait on it would return at once too).
      const going =
        goingOn.length && !(r!.reason === "blocked" && !fresh.length)
          ? `; ${goingOn.length === 1 ? `batch ${goingOn[0]} is` : `batches ${goingOn.slice(0, 3).join(", ")} are`} not done (a task that comes after others starts once they are built): wait {"batchId":"${goingOn[0]}"} follows it`
          : "";
      const next =
        (fresh.length
          ? `answer the ${counted(fresh.length, "new ask")} with approve {askId, decision}${questions ? ' (a question takes answers: one array of chosen option labels per question, e.g. "answers":[["<option label>"]])' : ""}${args.batchId ? " (approve {batchId} answers the batch's in-scope edits alike)" : ""}, then wait again${notShown ? ` (${counted(notShown, "more new ask")} not shown here: the next wait returns them at once)` : ""}${older ? `; ${olderText}: pending_approvals lists them` : ""}`
          : finished.length && !settled
            ? `read result for ${finished.length === 1 ? finished[0]!.id : "the finished workers"}; wait again for the others${older ? `; ${olderText}: pending_approvals lists them` : ""}`
            : older && r!.reason === "blocked"
              ? `${olderText} and no other worker is running: nothing moves until you answer with approve {askId, decision} (pending_approvals shows ${older === 1 ? "it" : "them"} again, with diffs); until then wait returns at once`
              : older
                ? `${olderText}: answer with approve {askId, decision} (pending_approvals shows ${older === 1 ? "it" : "them"} again, with diffs); ${older === 1 ? "its worker is" : "their workers are"} blocked until then, then wait again`
                : nextFor(list, batch)) + going;
      return {
        state: aggregateState(list),
        settled,
        reason: reason!,
        pending: page,
        unanswered: unanswered.length,
        ...(older ? { stillOpen: olderIds.slice(0, 50) } : {}),
        counts,
        finished: finished.map((w) => ({
          workerId: w.id,
          state: w.state,
          verdict: w.verdict?.verdict ?? null,
          honest: w.verdict?.honest ?? null,
          totals: totalsOf([w], now),
        })),
        ...(stalled.length ? { stalled } : {}),
        ...(batch && (settled || finished.length || batch.done === false) ? { batch } : {}),
        ...(answeredInForm.length ? { answeredInForm } : {}),
        totals: totalsOf(list, now),
        ...(session ? { session } : {}),
        waitedSec: Math.round((Date.now() - t0) / 100) / 10,
        timeoutSec,
        ...(note ? { note } : {}),
        next,
      };
    },
  );

  function batchStatsOf(b: WaitBatch): z.infer<typeof S.BatchStats> {
    const r = b.integration?.result ?? null;
    return {
      batchId: b.id,
      settled: b.settled,
      built: b.built,
      honest: b.honest,
      graded: b.graded,
      total: b.total,
      // two decimals: 0.67, not 0.6666666666666666 (the counts beside them are exact)
      builtRate: b.builtRate === null ? null : Math.round(b.builtRate * 100) / 100,
      honestRate: b.honestRate === null ? null : Math.round(b.honestRate * 100) / 100,
      verdict: b.verdict,
      done: b.done,
      skipped: b.skipped,
      integration: b.integration
        ? {
            state: b.integration.state,
            passed: r ? r.passed : null,
            commit: r?.commit ?? null,
            checks: (r?.checks ?? []).map((c) => ({ name: c.name, passed: c.passed, exitCode: c.exitCode })),
            untrusted: { reason: r?.reason ? untrustedText(r.reason, 800) : null, outputs: (r?.checks ?? []).map((c) => untrustedText(c.output, 1500)) },
          }
        : null,
    };
  }
  // ---------------- pending_approvals ----------------
  register(
    "pending_approvals",
    {
      title: "Pending approvals",
      description: "Every unanswered ask (any worker, any client): tool, what (command, path, URL, question), the diff for edits. Answer with approve.",
      input: S.PendingInput,
      output: S.PendingApprovalsOutput,
      readOnly: true,
      idempotent: true,
    },
    async (args) => {
      // A worker id that names no worker is said as such (the engine's coded error), not answered with "nothing is waiting".
      const [all] = await Promise.all([
        call((c) => c.approvals.list.query()),
        args.workerId ? call((c) => c.workers.get.query({ workerId: args.workerId! })) : null,
      ]);
      let asks = all;
      if (args.workerId) asks = asks.filter((a) => a.workerId === args.workerId);
      if (args.batchId) {
        const ids = new Set((await call((c) => c.workers.batch.query({ batchId: args.batchId! }))).workerIds);
        asks = asks.filter((a) => ids.has(a.workerId));
      }
      const owners = new Map<string, Worker>();
      for (const id of new Set(asks.map((a) => a.workerId))) owners.set(id, await call((c) => c.workers.get.query({ workerId: id })));
      // A page that stays within what a client reads whole (see wait): the rest after these are answered.
      const listed = asks.slice(0, S.PENDING_PAGE);
      const u = (t: string, n: number) => untrustedText(t, n);
      const items = listed.map((a) => {
        const w = owners.get(a.workerId);
        const item = pendingItem(a, w?.worktree);
        // Exactly what "always" grants (the engine's own rule), or why it is not offered.
        const view = askView(a);
        return {
          ...item,
          kind: a.kind,
          title: w ? titleOf(w) : "",
          ageSec: a.ageSec,
          ...(view.alwaysWhy ? { alwaysWhy: view.alwaysWhy } : {}),
          // a write of what the file already holds: its diff is header lines alone, said in the engine's words
          ...(a.diff && diffChangesNothing(a.diff) ? { diffNote: UNCHANGED_DIFF } : {}),
          untrusted: {
            what: item.untrusted.what,
            ...(item.untrusted.flags ? { flags: item.untrusted.flags } : {}),
            ...(item.untrusted.tool !== undefined ? { tool: item.untrusted.tool } : {}),
            diff: a.diff ? untrustedText(askWhat({ what: a.diff }, w?.worktree), 3000, { block: true }) : null,
            patterns: a.patterns.slice(0, 20).map((x) => u(askWhat({ what: x }, w?.worktree), 300)),
            always: (view.always ?? []).map((x) => u(askWhat({ what: x }, w?.worktree), 300)),
            questions: pendingQuestions(a),
          },
        };
      });
      // …and within the result's size (an ask's diff, patterns and questions make one up to ~10,000 characters).
      const page = within(items, S.PENDING_CHARS);
      listed.length = page.length;
      return {
        pending: page,
        count: asks.length,
        next: asks.length
          ? `answer each with approve {"askId", "decision": "once"|"always"|"reject", "message"?}: allow what the task needs, reject (with a reason) what it does not${asks.length > listed.length ? `; ${asks.length - listed.length} more after these (call pending_approvals again once these are answered)` : ""}`
          : "nothing is waiting for an answer",
      };
    },
  );

  // ---------------- approve ----------------
  register(
    "approve",
    {
      title: "Answer an approval",
      description:
        'Answer a pending ask by askId: "once" allows it, "always" also the exact simple commands in its always list for the rest of the worker\'s run (each matched exactly, alone; not offered where alwaysWhy says why), "reject" refuses it (message: why, what instead). A question takes answers. {batchId, decision:"once"} answers a batch\'s in-scope edits alike. Allow what the task needs; reject the rest.',
      input: S.ApproveInput,
      output: S.ApproveOutput,
      pre: (raw) => answersProblem(raw.answers),
    },
    async (args) => {
      if (!["once", "always", "reject"].includes(args.decision))
        throw new ToolError(`decision must be "once", "always" or "reject" (got "${clip(args.decision, 40)}")`);
      if (args.askId && args.batchId) throw new ToolError("give askId (one ask) or batchId (the batch's in-scope edits), not both");
      if (args.batchId) return approveBatch(args.batchId, args.decision, args.message);
      if (!args.askId) throw new ToolError("askId is required (see wait / pending_approvals), or batchId to answer a batch's in-scope edits alike");
      const askId = args.askId;
      // One request: the answer carries the worker's picture (an engine older than this bridge leaves it out).
      const ask = await call((c) =>
        c.approvals.decide.mutate({
          askId,
          decision: args.decision as "once",
          ...(args.message ? { message: args.message } : {}),
          ...(args.answers ? { answers: args.answers } : {}),
          withWorker: true,
        }),
      ).catch((err: { message?: string; data?: { ocwCode?: string } }) => {
        // Answered already (by this session, a person or another client): nothing to do here, and where to look next.
        if (err?.data?.ocwCode === "conflict" && /no longer pending/.test(err.message ?? ""))
          throw new ToolError(`${err.message}: nothing is left to answer on it; wait or pending_approvals shows what its worker asks now`);
        // A worker's or a batch's id where an ask's belongs (the commonest slip): say which id goes where.
        if (err?.data?.ocwCode === "not-found" && /^[wb]-/.test(askId))
          throw new ToolError(
            `"${clip(askId, 60)}" is a ${askId.startsWith("w-") ? "worker" : "batch"} id, not an askId: an ask's id comes from wait's pending or pending_approvals${askId.startsWith("w-") ? ` {"workerId":"${clip(askId, 60)}"}` : ""}; approve {"batchId", "decision":"once"} answers a batch's in-scope edits`,
          );
        throw err;
      });
      if (ask.status !== "pending") shown.asks.delete(ask.id);
      const w = ask.worker ?? (await call((c) => c.workers.get.query({ workerId: ask.workerId })));
      return {
        askId: ask.id,
        workerId: ask.workerId,
        status: ask.status,
        decision: ask.decision ?? null,
        by: byText(ask.by),
        workerState: w.state,
        next: nextFor([w]),
      };
    },
  );

  /**
   * One answer for the asks a person would answer alike: a batch's pending edits inside their worker's scope, that the
   * engine flagged for nothing (outside the workspace, protected, out of scope, symlink). Anything else — commands,
   * questions, flagged edits, workers without a scope — is left for one-by-one answers. Recorded as this client's
   * decision, named as a batch answer.
   */
  async function approveBatch(batchId: string, decision: string, message?: string): Promise<z.infer<typeof S.ApproveOutput>> {
    if (decision !== "once")
      throw new ToolError('a batch answer allows each in-scope edit once: decision must be "once" (answer other asks one by one with askId)');
    const ws = await call((c) => c.workers.list.query({ batchId }));
    if (!ws.length) throw new ToolError(`batch ${clip(batchId, 60)} has no workers: use a batchId from delegate_batch or workers`);
    const by = `mcp:${clientName()} (batch answer)` as const;
    const answered: string[] = [];
    const left: { askId: string; why: string }[] = [];
    const sendable: string[] = [];
    for (const w of ws)
      for (const a of pendingAsks(w)) {
        const flags = (a.flags ?? []).map((f) => f.kind);
        const why =
          a.kind !== "permission"
            ? "a question"
            : a.tool !== "edit"
              ? plainName(a.tool)
                ? `a ${a.tool} ask`
                : "an ask of a tool whose name is not plain"
              : flags.length
                ? `flagged: ${flags.join(", ")}`
                : !w.spec.scope.length
                  ? "its worker has no scope"
                  : null;
        if (why) {
          left.push({ askId: a.id, why });
          continue;
        }
        sendable.push(a.id);
      }
    // All at once: each answer waits on opencode's HTTP reply, and one ask's wait must not hold up the next ask's answer.
    const results = await Promise.allSettled(
      sendable.map((askId) => link.call((c) => c.approvals.decide.mutate({ askId, decision: "once", ...(message ? { message } : {}) }), by)),
    );
    results.forEach((r, i) =>
      r.status === "fulfilled"
        ? answered.push(sendable[i]!)
        : left.push({ askId: sendable[i]!, why: clip((r.reason as Error)?.message ?? String(r.reason), 200) }),
    );
    return {
      by,
      answered,
      left,
      next: left.length
        ? `answered ${answered.length}; answer the ${left.length} left one by one with approve {askId, decision} (pending_approvals shows them), then wait {"batchId":"${batchId}"}`
        : `answered ${counted(answered.length, "in-scope edit")}; wait {"batchId":"${batchId}"}`,
    };
  }

  // ---------------- steer / stop / resume ----------------
  const control = (w: Worker) => ({
    workerId: w.id,
    state: w.state,
    round: w.rounds?.length || 1,
    ...(w.stateReason ? { untrusted: { reason: untrustedText(w.stateReason, 500) } } : {}),
    next: nextFor([w]),
  });
  register(
    "steer",
    {
      title: "Steer a running worker",
      description: "Send a correction to a running or waiting worker; it arrives at its next step.",
      input: S.SteerToolInput,
      output: S.ControlOutput,
    },
    async (args) => control(await call((c) => c.workers.steer.mutate(args))),
  );
  register(
    "stop",
    {
      title: "Stop a worker",
      description: "Stop a worker now (its asks are cancelled; its worktree stays).",
      input: S.StopToolInput,
      output: S.ControlOutput,
      destructive: true,
      idempotent: true,
    },
    async (args) => control(await call((c) => c.workers.stop.mutate(args))),
  );
  register(
    "resume",
    {
      title: "Resume a worker",
      description: "Continue a stopped, interrupted or errored worker in its session, optionally with a message; graded again when it settles.",
      input: S.ResumeToolInput,
      output: S.ControlOutput,
    },
    async (args) => {
      const w = await call((c) => c.workers.resume.mutate(args));
      shown.finished.delete(w.id);
      return control(w);
    },
  );
  register(
    "continue",
    {
      title: "Continue a graded worker",
      description: "A follow-up to a graded worker in its session: a new round, graded again.",
      input: S.ContinueToolInput,
      output: S.ControlOutput,
    },
    async (args) => {
      const w = await call((c) => c.workers.continue.mutate(args));
      mine.add(w.id);
      // Its new round's verdict is news for the next wait (it was shown finished after the last round).
      shown.finished.delete(w.id);
      return control(w);
    },
  );
  register(
    "review",
    {
      title: "Review a graded worker's change",
      description: "Comments on a graded worker's diff, sent as one follow-up: a new round, graded again.",
      input: S.ReviewToolInput,
      output: S.ControlOutput,
    },
    async (args) => {
      const w = await call((c) => c.workers.review.mutate(args));
      mine.add(w.id);
      shown.finished.delete(w.id);
      return control(w);
    },
  );
  register(
    "retry",
    {
      title: "Retry a worker's task from scratch",
      description:
        "Redo a not-built worker's task (honest-failure, stopped, interrupted or errored) as a new worker. newBase: a built one whose merge conflicts, from the current HEAD.",
      input: S.RetryToolInput,
      output: S.RetryOutput,
    },
    async ({ workerId, newBase }) => {
      // newBase: the engine's "continue on the new base" (the GUI's button): the task again from the base branch as it
      // is now, told which files its earlier change conflicts in.
      const r: { workerId: string; retryOf: string; files?: string[] } = newBase
        ? await call((c) => c.workers.onNewBase.mutate({ workerId }))
        : await call((c) => c.workers.retry.mutate({ workerId }));
      mine.add(r.workerId);
      const w = await call((c) => c.workers.get.query({ workerId: r.workerId }));
      const files = r.files ?? null;
      return {
        workerId: r.workerId,
        retryOf: r.retryOf,
        state: w.state,
        ...(files
          ? {
              untrusted: {
                conflicts: within(
                  files.slice(0, 50).map((f) => untrustedText(f, 300)),
                  4000,
                ),
              },
            }
          : {}),
        next: `call wait {"workerId":"${r.workerId}"} and answer its approvals; then result {"workerId":"${r.workerId}"}${newBase ? `, merge it, and discard {"workerId":"${workerId}"} (the earlier worker stays until then)` : ""}`,
      };
    },
  );

  // ---------------- result ----------------
  register(
    "result",
    {
      title: "Graded result of a worker",
      description:
        "A finished worker's graded result: verdict (built | honest-failure, from the held-back checks and scope, not from the worker), its claim and whether it was honest, each check (paged: page/pageSize; check+offset reads one output), changed files, diff stat, totals, branch, merged. Then diff, then merge.",
      input: S.ResultInput,
      output: S.ResultOutput,
      readOnly: true,
      idempotent: true,
    },
    async (args) => {
      const w = await call((c) => c.workers.get.query({ workerId: args.workerId }));
      if (!isAtRest(w.state)) {
        throw new ToolError(
          `worker ${w.id} is ${w.state}, not finished: call wait {"workerId":"${w.id}"} until it settles${pendingAsks(w).length ? ` (it is blocked on ${counted(pendingAsks(w).length, "pending approval")})` : ""}`,
        );
      }
      const v = w.verdict;
      const all = v?.checks ?? [];
      let checks: z.infer<typeof S.CheckOut>[];
      let page = 1;
      let pages = 1;
      if (args.check !== undefined) {
        const c = all[args.check];
        if (!c) throw new ToolError(`check ${args.check} does not exist: this worker has ${counted(all.length, "check")}, indexed from 0`);
        checks = [checkOut(c, args.check, args.maxChars ?? 8000, args.offset ?? 0)];
      } else {
        const pageSize = args.pageSize ?? 20;
        pages = Math.max(1, Math.ceil(all.length / pageSize));
        page = Math.min(args.page ?? 1, pages);
        const max = Math.min(args.maxChars ?? 1500, Math.floor(S.RESULT_TOTAL_CHARS / pageSize));
        checks = all.slice((page - 1) * pageSize, page * pageSize).map((c, i) => checkOut(c, (page - 1) * pageSize + i, max));
      }
      const verdict = v?.verdict ?? (w.state === "built" ? "built" : "honest-failure");
      const u = (t: string, n: number) => untrustedText(t, n);
      const baseline = w.baseline ? { passedOnBase: w.baseline.passedOnBase } : null;
      const warnings = [
        baselineWarning(baseline),
        v?.weakEvidence
          ? "weak evidence: built, but every check already passed on the base commit before any change — the checks do not tell this change from none; review the diff yourself"
          : null,
      ].filter((x): x is string => !!x);
      const rounds = (w.rounds ?? []).slice(-20).map((r) => ({
        round: r.round,
        kind: r.kind,
        verdict: r.verdict,
        claim: r.claim,
        honest: r.honest,
        commit: r.commit,
        weakEvidence: r.weakEvidence ?? false,
        changedSincePrevious: r.changed ? r.changed.length : null,
      }));
      // Another attempt at its task landed: this one is neither merged nor retried (the engine refuses both).
      const landed = w.merged ? null : await mergedAttempt(w);
      return {
        workerId: w.id,
        state: w.state,
        graded: !!v,
        verdict,
        claim: v?.claim ?? null,
        // Not graded (stopped, interrupted, errored): no claim was checked, so nothing says it was dishonest.
        honest: v ? v.honest : null,
        // Not graded: its verdict field reads honest-failure only as "not built" — said so, in the engine's words.
        verdictReason:
          v || w.state === "built" || w.state === "honest-failure"
            ? (v?.reason ?? null)
            : `not graded: the worker ended ${w.state} before any check ran; honest-failure here only means not built`,
        weakEvidence: v?.weakEvidence ?? false,
        baseline,
        warnings,
        rounds,
        checks,
        checksTotal: all.length,
        checksPassed: all.filter((c) => c.passed).length,
        page,
        pages,
        scope: { passed: v?.scope.passed ?? false, violations: v?.scope.violations.length ?? 0, changedFiles: v?.scope.changedFiles.length ?? 0 },
        // What the checks cannot rule out (engine text, not the worker's).
        caveats: v?.caveats ?? [],
        untrusted: {
          claimReason: v?.claimReason ? visibleCut(u(v.claimReason, 2000), 4000) : null,
          // The engine's failure summary when it is the verdict's own reason (a no-op): said once, in verdictReason.
          reason: w.stateReason && w.stateReason !== v?.reason ? visibleCut(u(w.stateReason, 500), 2000) : null,
          violations: within(
            (v?.scope.violations ?? []).slice(0, 50).map((x) => u(x, 300)),
            6000,
          ),
          changedFiles: within(
            (v?.scope.changedFiles ?? []).slice(0, 200).map((x) => u(x, 300)),
            8000,
          ),
          diffStat: visibleCut(untrustedText(v?.diffStat ?? "", 4000, { block: true }), 8000),
          asks: within(
            w.asks
              .slice(-50)
              .reverse()
              .map((a) => {
                // A tool name that is not a plain name of opencode's is the model's text: only here, marked.
                const tool = toolField(a.tool, "untrusted.asks");
                return { askId: a.id, what: u(askWhat(a, w.worktree), 300), ...(tool.untrusted !== undefined ? { tool: tool.untrusted } : {}) };
              }),
            6000,
          ).reverse(),
          // File names (and a symlink's target) the worker chose.
          flags: within(
            (v?.flags ?? []).slice(0, 50).map((f) => ({ kind: f.kind, path: u(f.path, 300), detail: u(f.detail, 300) })),
            6000,
          ),
        },
        totals: totalsOf([w]),
        branch: w.branch,
        worktree: w.worktree,
        baseBranch: w.baseBranch,
        // Claude merges with the tool (conflict-safe, refuses flagged files without the person's yes); the shell line
        // is the person's way by hand. Nothing once merged or discarded.
        mergeHint:
          v?.mergeHint && !w.merged && !isDiscarded(w) && !landed
            ? `use merge {"workerId":"${w.id}"${w.baseBranch ? "" : ',"publish":true'}}${v.flags?.length ? " (acceptFlagged only on the person's yes)" : ""}, not git; by hand, the person's shell: ${v.mergeHint}`
            : null,
        merged: w.merged,
        flagged: v?.flags?.length ?? 0,
        discarded: isDiscarded(w),
        approvals: w.asks
          .slice(-50)
          .map((a) => ({ askId: a.id, tool: toolField(a.tool, "untrusted.asks").plain, status: a.status, decision: a.decision ?? null, by: byText(a.by) })),
        batchId: w.batchId,
        elapsedSec: elapsedSec(w),
        attempts: w.attempt ? attemptsOut(await call((c) => c.workers.attempts.query({ groupId: w.attempt!.groupId }))) : null,
        next:
          w.attempt && !w.merged && (verdict !== "built" || landed)
            ? await attemptsNext(w, landed)
            : w.merged
              ? `merged into ${w.merged.into} (${w.merged.commit.slice(0, 12)})`
              : verdict === "built" && !w.baseBranch
                ? `built${v?.weakEvidence ? " (weak evidence: its checks already passed before any change)" : ""}, from a detached HEAD: there is no branch to merge it into. Review the change with diff {"workerId":"${w.id}"}, then merge {"workerId":"${w.id}","publish":true} puts its graded commit on branch ocw/${w.id} in ${w.repo} for the person to merge where they want`
                : verdict === "built"
                  ? `built${v?.weakEvidence ? " (weak evidence: its checks already passed before any change)" : ""}: review the change with diff {"workerId":"${w.id}"}, then merge {"workerId":"${w.id}"} (the engine merges the graded commit into ${w.baseBranch ?? "its base branch"} and refuses on conflict), or send review {"workerId":"${w.id}","comments":[{"file","line","body"}]} for another round${v?.flags?.length ? `. ${counted(v.flags.length, "FLAGGED file")} (untrusted.flags: symlinks, executables, git or tool configuration) ${v.flags.length === 1 ? "needs" : "need"} the person's explicit acceptance: show them the flags, and merge with acceptFlagged only on their yes` : ""}`
                  : nextAfterFailure(w),
      };
    },
  );

  // ---------------- diff ----------------
  register(
    "diff",
    {
      title: "Diff of a worker",
      description: `The worker's change as a unified diff, paged by offset/maxChars (default ${S.DIFF_DEFAULT_CHARS}); file narrows it. Review before merge.`,
      input: S.DiffInput,
      output: S.DiffOutput,
      readOnly: true,
      idempotent: true,
    },
    async (args) => {
      const [w, { diff: full }] = await Promise.all([
        call((c) => c.workers.get.query({ workerId: args.workerId })),
        call((c) => c.workers.diff.query({ workerId: args.workerId })),
      ]);
      let text = full;
      if (args.file) {
        const want = args.file.replace(/^\.\//, "");
        const parts = full
          .split(/^(?=diff --git )/m)
          .filter((p) => p.startsWith("diff --git ") && (p.startsWith(`diff --git a/${want} `) || p.includes(` b/${want}\n`)));
        if (!parts.length)
          throw new ToolError(
            `file "${clip(args.file, 200)}" is not in worker ${w.id}'s diff: it changed ${(w.verdict?.scope.changedFiles ?? []).length ? `(file names the worker chose, untrusted: ${JSON.stringify((w.verdict?.scope.changedFiles ?? []).slice(0, 20).map((f) => untrustedText(f, 200)))})` : "no files"}`,
          );
        text = parts.join("");
      }
      const offset = Math.min(args.offset ?? 0, text.length);
      const max = args.maxChars ?? S.DIFF_DEFAULT_CHARS;
      // A page of `max` characters of the diff, fewer where made visible it would read as more than DIFF_MAX_CHARS.
      const fitted = fitPage(text, offset, max, S.DIFF_MAX_CHARS);
      const nextOffset = fitted.end < text.length ? fitted.end : null;
      return {
        workerId: w.id,
        state: w.state,
        base: w.baseCommit,
        branch: w.branch,
        untrusted: {
          files: within(
            (w.verdict?.scope.changedFiles ?? []).slice(0, 500).map((f) => untrustedText(f, 300)),
            8000,
          ),
          diffStat: visibleCut(untrustedText(w.verdict?.diffStat ?? "", 4000, { block: true }), 8000),
          diff: fitted.shown,
        },
        chars: text.length,
        offset,
        nextOffset,
        next: !full
          ? isDiscarded(w)
            ? `worker ${w.id} was discarded: nothing is left to show`
            : isAtRest(w.state)
              ? `worker ${w.id} changed no file: nothing to review or merge (result {"workerId":"${w.id}"} says how it ended)`
              : `worker ${w.id} has no changes yet: wait {"workerId":"${w.id}"}`
          : nextOffset !== null
            ? `more: diff {"workerId":"${w.id}"${args.file ? `,"file":${JSON.stringify(args.file)}` : ""},"offset":${nextOffset}}`
            : w.state === "built" && !w.merged
              ? `merge {"workerId":"${w.id}"} when the change is right`
              : "end of the diff",
      };
    },
  );

  // ---------------- merge ----------------
  register(
    "merge",
    {
      title: "Merge a built worker",
      description:
        "Merge a built worker's graded commit (or batchId's integration commit, else its built workers) into the branch it started from. Refuses, changing nothing, on another branch, local changes in the way, a conflict or unaccepted flagged files. publish: only add branch ocw/<id>.",
      input: S.MergeInput,
      output: S.MergeOutput,
      destructive: true,
    },
    async ({ workerId, batchId, acceptFlagged, publish }) => {
      if (!workerId === !batchId)
        throw new ToolError(
          "give workerId (one worker) or batchId (a batch: its integration commit, or without integration checks each built worker), one of them",
        );
      if (publish) {
        // "Publish the branch": grading put nothing into the person's repository; this brings exactly the graded commit.
        if (!workerId) throw new ToolError("publish takes a workerId: a batch lands only by merge {batchId}");
        const p = await call((c) => c.workers.publish.mutate({ workerId }));
        return {
          workerId,
          into: p.branch,
          commit: p.commit,
          repo: p.repo,
          next: `published ${p.branch} at ${p.commit.slice(0, 12)} in ${p.repo} (${p.objects} objects copied; nothing merged): the person can review it with git (git diff HEAD...${p.branch}); merge {"workerId":"${workerId}"} lands it`,
        };
      }
      if (batchId) {
        const r = await call((c) => c.workers.mergeBatch.mutate({ batchId, acceptFlagged: !!acceptFlagged })).catch(
          (err: Error & { data?: { ocwCode?: string } }) => {
            // An unknown batch is the engine's own plain answer; a refusal names files the workers chose (a conflict,
            // flagged files): framed as untrusted.
            if (err?.data?.ocwCode === "not-found") throw err;
            throw new ToolError(
              `batch ${batchId} was not merged (the engine's words, naming the workers' files, untrusted: ${JSON.stringify(untrustedText(err.message ?? String(err), 800))})`,
            );
          },
        );
        const into = r.integration?.into ?? r.merged[0]?.into ?? "";
        const commit = r.integration?.merge ?? r.merged.at(-1)?.commit ?? "";
        if (r.stopped)
          throw new ToolError(
            `merged ${r.merged.map((m) => m.workerId).join(", ") || "nothing"}; stopped at ${r.stopped.workerId} (the engine's words, untrusted: ${JSON.stringify(untrustedText(r.stopped.reason, 800))})`,
          );
        const ws = await call((c) => c.workers.list.query({ batchId })).catch(() => [] as Worker[]);
        if (r.integration)
          return {
            workerId: batchId,
            into,
            commit,
            repo: ws[0]?.repo ?? "",
            next: `batch ${batchId} landed as one commit ${r.integration.commit.slice(0, 12)} on ${into}: run the project's tests`,
          };
        return {
          workerId: batchId,
          into: into || (ws.find((w) => w.baseBranch)?.baseBranch ?? ""),
          commit,
          repo: ws[0]?.repo ?? "",
          merged: r.merged.map((m) => m.workerId),
          ...(r.skipped.length ? { skipped: r.skipped } : {}),
          next: batchMergeNext(batchId, r, ws),
        };
      }
      const w = await call((c) => c.workers.get.query({ workerId: workerId! }));
      let merged: { commit: string; into: string; alreadyIn?: boolean; alsoLanded?: string[] };
      try {
        merged = await call((c) => c.workers.merge.mutate({ workerId: workerId!, acceptFlagged: !!acceptFlagged }));
      } catch (err) {
        const msg = (err as Error).message ?? String(err);
        if (/detached HEAD/.test(msg))
          throw new ToolError(
            `worker ${w.id} started from a detached HEAD, so there is no branch to merge it into (nothing was changed): merge {"workerId":"${w.id}","publish":true} puts its graded commit on branch ocw/${w.id} in ${w.repo}; the person then merges it into the branch they want`,
          );
        if (/flagged files/.test(msg))
          throw new ToolError(
            `the change holds flagged files that act once merged; nothing was changed (the engine's words, naming the worker's files, untrusted: ${JSON.stringify(untrustedText(msg, 800))}). Show the person the flagged files (result's untrusted.flags) and ask them; only on their explicit yes call merge {"workerId":"${w.id}","acceptFlagged":true}`,
          );
        const dirty = await blockingFiles(msg, w.repo, w.verdict?.scope.changedFiles ?? []);
        if (dirty)
          throw new ToolError(
            `${dirty.kind === "untracked" ? "move or remove" : "commit or stash"} ${quoteUntrustedList(dirty.files, "files of your checkout, named by the worker's change")} in ${w.repo}: ${dirty.kind === "untracked" ? "untracked files there" : "your uncommitted changes to them"} would be overwritten by the merge (nothing was changed). Then merge {"workerId":"${w.id}"} again`,
          );
        if (/conflict/i.test(msg))
          throw new ToolError(
            // The engine's message without its own way on (CLI commands): this one says how to go on with the tools. The
            // engine names the files as a marked list: said once, as such (else its whole message, marked).
            `the merge of ${w.branch} into ${w.baseBranch ?? "its base branch"} ${conflictFilesOf(msg) ?? `conflicts; nothing was changed (git's words, naming the worker's files, untrusted: ${JSON.stringify(untrustedText(msg.split(" To go on: ")[0]!, 800))})`}. To go on: retry {"workerId":"${w.id}","newBase":true} (its task again from the current HEAD, told which files conflict), then discard {"workerId":"${w.id}"}; or merge {"workerId":"${w.id}","publish":true} and let the person merge ${w.branch} by hand`,
          );
        throw err;
      }
      return {
        workerId: w.id,
        into: merged.into,
        commit: merged.commit,
        repo: w.repo,
        next: merged.alreadyIn
          ? `already in ${merged.into} (it came in with a worker that started from it): recorded as merged, nothing changed`
          : `merged into ${merged.into} at ${merged.commit.slice(0, 12)}${merged.alsoLanded?.length ? ` (it started from ${merged.alsoLanded.join(", ")}'s graded work, which came in with it)` : ""}: run the project's tests; discard {"workerId":"${w.id}"} removes its workspace when you no longer need it`,
      };
    },
  );

  // ---------------- push ----------------
  register(
    "push",
    {
      title: "Push graded work and open a pull request",
      description:
        "Push a built worker's graded commit (or batchId's integration commit) to a remote the person named: never forced, never the default branch; pr opens a pull request (gh). Flagged files need acceptFlagged. Only when the person asks.",
      input: S.PushInput,
      output: S.PushOutput,
      destructive: true,
    },
    async (args) => {
      if (!args.workerId === !args.batchId) throw new ToolError("give workerId (one worker) or batchId (a batch's integration commit), one of them");
      const r = await call((c) => c.workers.push.mutate({ ...args, pr: !!args.pr }));
      return {
        ...r,
        next: r.pr
          ? `${r.pr.existing ? "pull request already open" : "pull request opened"}: ${r.pr.url}${r.replaced ? ` (the branch now holds the latest graded commit, in place of the earlier ${r.replaced.slice(0, 12)})` : ""}${r.prProblem ? `; ${r.prProblem}` : ""}`
          : r.prProblem
            ? `pushed ${r.branch}; no pull request: ${r.prProblem}`
            : `pushed ${r.commit.slice(0, 12)} to ${r.remote} ${r.branch}`,
      };
    },
  );

  // ---------------- discard ----------------
  register(
    "discard",
    {
      title: "Discard a worker's work",
      description: "Remove a finished worker's workspace and branch (its record and verdict stay). Stop a running one first.",
      input: S.WorkerRefInput,
      output: S.DiscardOutput,
      destructive: true,
      idempotent: true,
    },
    async ({ workerId }) => {
      // An engine started by an older install (it outlives bridges) has no such route.
      const w = await call((c) => c.workers.discard.mutate({ workerId })).catch((err: Error) => {
        if (/No procedure found|no procedure/i.test(err.message ?? ""))
          throw new ToolError(
            `this engine has no discard (it is older than this bridge): restart it with \`ocw stop\`, or remove the worker's branch ocw/${workerId} by hand`,
          );
        throw err;
      });
      return {
        workerId: w.id,
        state: w.state,
        discarded: isDiscarded(w),
        next: w.merged ? `its work stays merged in ${w.merged.into}` : "its branch and workspace are gone; the verdict and log stay in workers/result",
      };
    },
  );

  return server;
}

// ---------- helpers ----------

/**
 * workers.waitStream: the engine's wait as one stream — the workers it follows, a line per event worth showing, then
 * its answer. Rejects when the stream fails, ends without an answer, or `signal` aborts (the stream is closed then).
 */
function streamWait(
  client: EngineClient,
  input: WaitInput,
  signal: AbortSignal,
  on: { following: (ids: string[]) => void; note: (line: string) => void },
): Promise<WaitResult> {
  return new Promise((resolve, reject) => {
    let ended = false;
    let sub: { unsubscribe(): void } | null = null;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const end = (fn: () => void) => {
      if (ended) return;
      ended = true;
      clearTimeout(guard);
      signal.removeEventListener("abort", onAbort);
      sub?.unsubscribe();
      fn();
    };
    const onAbort = () => end(() => reject(new Error("the wait was cancelled")));
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) return onAbort();
    sub = client.workers.waitStream.subscribe(input, {
      onData: (item) => {
        if (ended) return;
        if ("result" in item) end(() => resolve(item.result));
        // The engine's words plain, a worker's text escaped and labelled (an engine before `line`: all of it untrusted).
        else if ("note" in item) on.note(streamedLine(item));
        else on.following(item.following);
      },
      onError: (err) => end(() => reject(err)),
      onComplete: () => end(() => reject(new Error("the engine ended the wait without an answer"))),
      // The event stream reconnects on its own, forever, when the engine is gone (stopped, killed, restarting): a wait
      // left on it would never answer. A lost connection ends it; the caller asks again (the link finds or starts the
      // engine) for the time left.
      onConnectionStateChange: (st) => {
        if (st.state === "connecting" && st.error) end(() => reject(new Error(`lost the engine's event stream (${st.error!.message})`)));
      },
    });
    // …and whatever happens to the stream, it never outlives the wait by more than a margin.
    if (!ended) guard = setTimeout(() => end(() => reject(new Error("the engine's event stream gave no answer in time"))), input.timeoutMs + 15_000);
    if (ended) sub.unsubscribe();
  });
}

/**
 * The head of `items` that fits `budget` characters as JSON (at least one item). A worker's names and commands are
 * bounded in source characters, but made visible they grow (an invisible character reads as ⟪U+200B⟫, ten for one):
 * 200 file names of 300 zero-width characters are ~480,000 characters, and a result over the client's limit (Claude
 * Code: 25,000 tokens) reaches Claude as nothing at all. The counts beside each list say how many there are.
 */
function within<T>(items: T[], budget: number): T[] {
  let size = 0;
  return items.filter((it, i) => (size += JSON.stringify(it).length) <= budget || i === 0);
}

/** Whether a result holds worker-written text (an `untrusted` object anywhere in it). */
function hasUntrusted(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(hasUntrusted);
  if (!v || typeof v !== "object") return false;
  return Object.entries(v).some(([k, x]) => k === "untrusted" || hasUntrusted(x));
}

/**
 * The files of the person's checkout that stopped a merge: named by git's message when it carries them, else the
 * checkout's uncommitted (or untracked) files that the worker's change also touches.
 */
async function blockingFiles(message: string, repo: string, changed: string[]): Promise<{ kind: "changed" | "untracked"; files: string[] } | null> {
  const named = blockingLocalFiles(message);
  if (named) return named;
  const kind = /commit your changes or stash them/i.test(message) ? "changed" : /move or remove them before you merge/i.test(message) ? "untracked" : null;
  if (!kind) return null;
  const status = (await gitOut(repo, ["status", "--porcelain", "--untracked-files=all"])) ?? "";
  const local = status
    .split("\n")
    .filter((l) => l && (kind === "untracked" ? l.startsWith("??") : !l.startsWith("??")))
    .map((l) => l.slice(3).replace(/^.* -> /, ""));
  const touched = local.filter((f) => changed.includes(f));
  const files = (touched.length ? touched : local).slice(0, 10);
  return files.length ? { kind, files } : null;
}

/**
 * The files of the person's checkout that stopped a merge, from git's own message: local changes ("Your local changes
 * to the following files would be overwritten by merge") or untracked files ("The following untracked working tree
 * files would be overwritten by merge"). Null when git refused for another reason (a real conflict).
 */
export function blockingLocalFiles(message: string): { kind: "changed" | "untracked"; files: string[] } | null {
  // The engine's own refusal (engine/workspace/land.ts), before git is asked to write anything.
  // It names the files as a quoted list (`(files …, untrusted: ["a","b"] and 3 more)`): the names are a worker's.
  const own = /(commit or stash|move or remove) \([^"[]*?, untrusted: (\[.*\])(?: and \d+ more)?\) first, then merge again/.exec(message);
  if (own) {
    let files: string[] = [];
    try {
      files = (JSON.parse(own[2]!) as unknown[]).filter((f): f is string => typeof f === "string").slice(0, 10);
    } catch {
      return null;
    }
    return files.length ? { kind: own[1] === "move or remove" ? "untracked" : "changed", files } : null;
  }
  const m = /(local changes to the following files|untracked working tree files) would be (?:overwritten|removed) by merge:\s*\n((?:[ \t]+\S[^\n]*\n?)+)/.exec(
    message,
  );
  if (!m) return null;
  const files = m[2]!
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(0, 10);
  return files.length ? { kind: m[1]!.startsWith("untracked") ? "untracked" : "changed", files } : null;
}

/**
 * "conflicts in (…, untrusted: [names]); nothing was changed" from the engine's refused merge (engine/workspace/land.ts),
 * its names parsed and quoted again, or null when the message is not that one.
 */
function conflictFilesOf(message: string): string | null {
  const m = /conflicts in \(file names from the worker's change, untrusted: (\[.*\])(?: and (\d+) more)?\); nothing was changed\./.exec(message);
  if (!m) return null;
  let files: unknown;
  try {
    files = JSON.parse(m[1]!);
  } catch {
    return null;
  }
  if (!Array.isArray(files) || !files.length || !files.every((f) => typeof f === "string")) return null;
  // Quoted again (each name made visible, at most 20): what the engine sent is never passed on unread.
  const list = quoteUntrustedList(files as string[], "file names from the worker's change");
  return `conflicts in ${m[2] ? `${list.slice(0, -1)} and ${Number(m[2])} more)` : list}; nothing was changed`;
}

/** The engine marks a discarded worker (workspace and branch removed). */
function attemptsOut(g: AttemptGroup): z.infer<typeof S.AttemptsOut> {
  return {
    groupId: g.groupId,
    winner: g.winner,
    settled: g.settled,
    attempts: g.attempts.map((a) => ({
      workerId: a.workerId,
      target: a.target,
      state: a.state,
      verdict: a.verdict,
      claim: a.claim,
      honest: a.honest,
      changedLines: a.changedLines,
      tokens: a.tokens,
      durationSec: a.durationSec,
      stoppedForWinner: a.stoppedForWinner,
    })),
  };
}

function isDiscarded(w: Worker): boolean {
  return !!w.discarded;
}

const run = promisify(execFile);
async function gitOut(cwd: string, args: string[]): Promise<string | null> {
  try {
    return (await run("git", ["-C", cwd, ...args], { timeout: 10_000, maxBuffer: 4 * 1024 * 1024 })).stdout;
  } catch {
    return null;
  }
}

/** The repository root of a folder (realpath'd), or the folder itself when git cannot say. */
async function repoRoot(dir: string): Promise<string> {
  if (!path.isAbsolute(dir)) throw new ToolError(`directory must be an absolute path (got "${clip(dir, 200)}")`);
  const top = (await gitOut(dir, ["rev-parse", "--show-toplevel"]))?.trim();
  return path.resolve(top || dir);
}

function sameRepo(w: Worker, root: string): boolean {
  const r = path.resolve(w.repo);
  return r === root || path.resolve(w.spec.directory) === root || path.resolve(w.spec.directory).startsWith(root + path.sep);
}

function failure(message: string) {
  return { content: [{ type: "text" as const, text: message }], isError: true };
}

/**
 * A question's answers given flat (["Red"]: one label, not one array per question), the commonest slip: said with the
 * shape that works (the schema's own words were "answers.0: expected array, received string").
 */
function answersProblem(answers: unknown): string | null {
  if (!Array.isArray(answers) || !answers.some((a) => typeof a === "string")) return null;
  const fixed = JSON.stringify(answers.map((a) => (typeof a === "string" ? [a] : a))).slice(0, 200);
  return `answers is one array per question, each holding that question's chosen labels (or free text): e.g. "answers":${fixed}`;
}

function directoryProblem(dir: unknown, baseDir: string): string | null {
  if (typeof dir !== "string" || !dir) return null;
  if (path.isAbsolute(dir) || /^[A-Za-z]:[\\/]/.test(dir)) return null;
  return `directory must be an absolute path to a git repository (got "${clip(dir, 200)}"): pass e.g. "${absoluteFor(dir, baseDir)}"`;
}

/** Where a relative path the model wrote most likely points: `~/x` in the home folder (no shell expands it here), else under the project. */
function absoluteFor(dir: string, baseDir: string): string {
  const home = process.env.HOME || process.env.USERPROFILE;
  if (home && (dir === "~" || dir.startsWith("~/") || dir.startsWith("~\\"))) return path.join(home, dir.slice(1));
  return path.resolve(baseDir, dir);
}

export function messageOf(err: unknown, log: (l: string) => void, tool: string, older: OlderEngine | null = null): string {
  if (err instanceof ToolError) return err.message;
  // the engine's coded errors (shared/errors.ts): acted on by code and kind, never by matching the message
  const e = err as { message?: string; data?: { code?: string; ocwCode?: string; ocwKind?: string; ocwData?: Record<string, unknown> } };
  const said = kindWords(tool, e?.data?.ocwKind, e?.data?.ocwData);
  if (said) return said;
  // An engine older than this bridge refuses an input field it does not know yet (its inputs are strict): a raw
  // BAD_REQUEST naming the key, said as the missing route is, never as the schema's words.
  if (e?.data?.code === "BAD_REQUEST" && (!e.data.ocwCode || e.data.ocwCode === "bad-input") && unrecognizedKey(e.message)) {
    const which = older ? ` (${older.engine}; this bridge is ${older.client})` : "";
    return `${tool}: the running engine${which} is older than this bridge (it does not take an input this bridge sends): restart it with \`ocw stop\` (the next tool call starts the current one; running workers become interrupted and can be resumed)${older ? "; it is also replaced by itself once no worker is at work" : ""}`;
  }
  if (e?.data?.ocwKind === "no-target")
    return "no active target: the person sets one up (the model-setup skill; `ocw setup` in a terminal, or the GUI wizard) — or pass `targetId` of a saved target; call setup_status to see where things stand";
  // An engine started by an older install (engines outlive bridges) lacks the route this tool needs: tRPC's NOT_FOUND
  // for the path, which is none of the engine's own not-found errors (those carry ocwCode "not-found").
  if (e?.data?.code === "NOT_FOUND" && e.data.ocwCode !== "not-found")
    return `${tool}: the running engine is older than this bridge (it has no such route): restart it with \`ocw stop\` (the next tool call starts the current one; running workers become interrupted and can be resumed)`;
  if (isConnectionError(err)) return `the opencode-worker engine is unreachable (${e.message}): check \`ocw serve\` in a terminal, then retry`;
  if (e?.data?.code) {
    if (e.data.code === "BAD_REQUEST" || e.data.code === "NOT_FOUND") return e.message ?? "bad request";
    // A refusal the engine explains (the state forbids it now, something it needs is down) is said as it is; only an
    // internal error is the engine failing.
    if (e.data.ocwCode && e.data.ocwCode !== "internal" && e.message) return e.message;
    return `the engine failed: ${e.message}`;
  }
  log(`${tool}: ${(err as Error)?.stack ?? String(err)}`);
  return `${tool} failed: ${e?.message ?? String(err)}`;
}

/** The engine's refusals a client acts on by kind, in the tools' words (the engine's name the CLI's commands). */
function kindWords(tool: string, kind: string | undefined, data: Record<string, unknown> | undefined): string | null {
  const str = (k: string) => (typeof data?.[k] === "string" ? (data[k] as string) : null);
  const id = str("workerId");
  if (!id) return null;
  if (kind === "attempt-merged") {
    const [sib, into, commit] = [str("merged"), str("into"), str("commit")];
    if (!sib || !into || !commit) return null;
    return `worker ${id} is not ${tool === "merge" ? "merged" : "run again"}: another attempt at its task, ${sib}, was merged into ${into} (${commit.slice(0, 12)}), so the task is done. discard {"workerId":"${id}"} removes this attempt. To take it instead all the same, the person reverts that merge first (their shell: ocw revert ${sib}), then ${tool === "merge" ? "merge" : "retry"} {"workerId":"${id}"}`;
  }
  if (kind === "merges-cleanly")
    return `worker ${id} merges cleanly into ${str("into") ?? "its base branch"} as it is now: merge {"workerId":"${id}"} lands it; newBase is for a merge that conflicts`;
  return null;
}

/** Whether an input refusal is zod's for a key the schema does not have ("Unrecognized key", code unrecognized_keys). */
function unrecognizedKey(message: string | undefined): boolean {
  return /unrecognized_keys|Unrecognized keys?\b/i.test(message ?? "");
}

async function reachable(endpoint: string): Promise<{ ok: boolean; detail: string }> {
  try {
    const res = await fetch(`${endpoint.replace(/\/$/, "")}/models`, { signal: AbortSignal.timeout(3000) });
    return { ok: true, detail: `HTTP ${res.status}` };
  } catch (err) {
    return { ok: false, detail: (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name };
  }
}

/** What to do with a worker that is not built: verbs that work in its state. */
function nextAfterFailure(w: Worker): string {
  // The reason itself is the worker's to shape (file names, check output): it stays in untrusted.reason.
  const why = w.stateReason ? " (untrusted.reason says why it ended)" : "";
  if (w.state === "honest-failure")
    return `not built${why}: read the failing checks, then continue {"workerId":"${w.id}","message":"…what to fix…"} (same session and files, a new round), or retry {"workerId":"${w.id}"} (a fresh start); discard {"workerId":"${w.id}"} removes what is left`;
  if (["stopped", "interrupted", "error"].includes(w.state))
    return `not built${why}: resume {"workerId":"${w.id}","message":"…"} continues it in its session, or retry {"workerId":"${w.id}"} starts the task again; discard {"workerId":"${w.id}"} removes what is left`;
  return `not built${why}: wait {"workerId":"${w.id}"} until it settles`;
}

/**
 * What merge {batchId} of a batch without integration checks did, and what is left: it merges the workers built so far
 * and leaves the rest, so a batch merged while workers still run, or with some not built, is said as such (it said
 * "merged nothing", or named what it merged and nothing of what it left).
 */
function batchMergeNext(batchId: string, r: Pick<MergeBatchResult, "merged" | "skipped">, ws: Pick<Worker, "id" | "state" | "merged">[]): string {
  const byId = new Map(ws.map((w) => [w.id, w]));
  const ids = (list: string[]) => (list.length > 6 ? `${list.slice(0, 6).join(", ")} and ${list.length - 6} more` : list.join(", "));
  const skipped = r.skipped.map((s) => ({ id: s.workerId, w: byId.get(s.workerId) }));
  const working = skipped.filter((s) => s.w && !isAtRest(s.w.state)).map((s) => s.id);
  const failed = skipped.filter((s) => s.w && isAtRest(s.w.state) && s.w.state !== "built").map((s) => s.id);
  const earlier = skipped.filter((s) => s.w?.state === "built" && s.w.merged).length;
  const other = skipped.length - working.length - failed.length - earlier;
  const into = r.merged[0]?.into;
  const parts = [
    r.merged.length
      ? `merged ${counted(r.merged.length, "built worker")} (${ids(r.merged.map((m) => m.workerId))}) into ${into} (the last at ${r.merged.at(-1)!.commit.slice(0, 12)})`
      : `nothing was merged: batch ${batchId} has no built worker that is not merged yet`,
  ];
  if (working.length)
    parts.push(
      `${counted(working.length, "worker")} still working (${ids(working)}): wait {"batchId":"${batchId}"} until settled, then merge {"batchId":"${batchId}"} again for the ones built`,
    );
  if (failed.length)
    parts.push(
      `${counted(failed.length, "worker")} not built (${ids(failed)}): result {"workerId"} says why; continue or retry them, then merge {"batchId":"${batchId}"} again`,
    );
  if (earlier) parts.push(`${counted(earlier, "worker")} merged before`);
  if (other > 0) parts.push(`${counted(other, "worker")} left out (skipped says why)`);
  if (r.merged.length) parts.push("run the project's tests");
  return parts.join("; ");
}

function nextFor(ws: (Pick<Worker, "id" | "state" | "asks"> & { batchId?: string | null })[], batch?: z.infer<typeof S.BatchStats> | null): string {
  const pending = ws.flatMap((w) => pendingAsks(w));
  if (pending.length)
    return `answer ${counted(pending.length, "pending approval")} with approve {"askId", "decision"} (pending_approvals shows diffs), then wait again`;
  if (ws.every((w) => isAtRest(w.state))) {
    const rates =
      batch && batch.builtRate !== null
        ? ` Batch: built ${batch.built}/${batch.total} (builtRate ${batch.builtRate.toFixed(2)}), honestRate ${batch.honestRate === null ? "n/a" : batch.honestRate.toFixed(2)}.`
        : "";
    return `settled: read result {"workerId"} for ${ws.length === 1 ? ws[0]!.id : "each worker"} before trusting anything.${rates}`;
  }
  // One worker of a batch: the batch is what to wait on (its other workers' asks would go unseen on this one's wait).
  const one = ws.length === 1 ? ws[0]! : null;
  if (one?.batchId) return `still working: call wait {"batchId":"${one.batchId}"} (its batch: the other workers' asks show there too)`;
  return `still working: call wait again${one ? ` {"workerId":"${one.id}"}` : ""}`;
}
