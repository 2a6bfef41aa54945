import { initTRPC, tracked, TRPCError } from "@trpc/server";
import { codeOf, detailOf, ERROR_MAP, InputError, OcwError } from "../../shared/errors";
import { z } from "zod";
import {
  BatchRef,
  ContinueInput,
  DecideInput,
  EventsInput,
  ListInput,
  MergeBatchInput,
  MergeInput,
  NameBatchInput,
  PruneInput,
  SearchInput,
  PushInput,
  RevertInput,
  RetryInput,
  ResumeInput,
  StartAttemptsInput,
  ReviewInput,
  StartBatchInput,
  StartInput,
  SteerInput,
  StopInput,
  WorkerRef,
} from "../../shared/api";
import type { Delivered, EngineEvent } from "../../shared/events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Grade } from "../../shared/grade";
import { AttemptGroupRef } from "../../shared/attempts";
import { ledger } from "../../shared/ledger";
import { IdRef, IdText } from "../../shared/ids";
import { firstIssue } from "../../shared/issues";
import { redactUrlCredentials, targetShown } from "../../shared/remote-url";
import { PolicyRule, type DecidedBy, type PermissionAsk } from "../../shared/permission";
import { slimWorker, WaitInput, type WaitWorker } from "../../shared/wait";
import { waitForNews, waitStream } from "./wait";
import { explainPolicy } from "../approvals";
import { hardwareSummary } from "../hardware";
import { projectRoot } from "../paths";
import { adhocUnused, SavedTargetId, Target } from "../../shared/target";
import { Price } from "../../shared/cost";
import { isActive } from "../../shared/worker";
import { seqOf } from "../events";
import { continueOnNewBase, type Engine, listWorkers, mergeBatch, pruneBranches, pushWork, retryWorker, revertLanded } from "../workers";
import { FitInput } from "../../shared/fit";
import {
  cancelLlamaBuild,
  deployK8s,
  doctor,
  fitFile,
  fitPlan,
  forgetApiKey,
  llamaBuildJob,
  providerModelsApi,
  resolveKey,
  serverDeleteApi,
  serverDeleteOf,
  serverKeepApi,
  serverRestartApi,
  serversListApi,
  serverStopApi,
  setupCancelApi,
  setupCaptureApi,
  setupCatalog,
  setupFit,
  setupHardware,
  setupJobApi,
  setupProviderApi,
  setupProviderKeyApi,
  setupStartApi,
  setTargetKey,
  setupVerify,
  startLlamaBuild,
  stopRecorded,
  stopUnkeptServing,
} from "../serving";
import { SetupCaptureInput, SetupProviderInput, SetupStartInput } from "../../shared/setup";
import { ProviderModelsInput, SetupProviderKeyInput } from "../../shared/servers";
import { config } from "../config";
import { SetupVerifyInput } from "../../shared/setup";
import { targetsWithEndpoints } from "./targets-view";
import { inspectRepo } from "../workspace";
import { LadderFinishInput, ladderFinish, LadderStartInput, ladderStart } from "./ladder";
import { notModelApi, preflightEndpoint, refusesWithoutKey, unlistedModel } from "../admission";
import { DeployK8sInput } from "../../shared/deploy";
import { FitFileInput, FitPlanInput } from "../../shared/fit";
import { counted } from "../../shared/words";

interface ApiContext {
  engine: Engine;
  by: DecidedBy;
  version: string;
  /** Ends the engine; `by`: who asked (a foreground `ocw serve` says so on its terminal). */
  shutdown: (by: DecidedBy) => void;
  clients: () => { kind: string; name: string; lastSeen: number; requests: number }[];
}

/** A target deleted with the key kept for it; a server the engine started for it serves nothing now: stopped and forgotten with it. */
async function removeTarget(engine: Engine, id: string) {
  const r = engine.targets.remove(id);
  forgetApiKey(id);
  await serverDeleteOf(id);
  return r;
}

/**
 * `ocw target remove --ad-hoc`: the ad-hoc targets no worker needs (adhocUnused), removed one by one, each asked again
 * just before it goes: a removal waits on its model server stopping, and meanwhile another client may start a worker
 * on a later one (`ocw run --endpoint` of the same URL and model) or make it active; it was removed under that worker.
 */
export async function removeUnusedAdhoc(
  engine: Pick<Engine, "targets" | "list">,
  removeOne: (id: string) => Promise<unknown>,
): Promise<{ removed: string[]; kept: { id: string; active: boolean; workers: string[] }[] }> {
  const first = engine.targets.list();
  const { remove, kept } = adhocUnused(first.targets, first.active, engine.list());
  const removed: string[] = [];
  for (const id of remove) {
    const { active, targets } = engine.targets.list();
    const now = adhocUnused(
      targets.filter((t) => t.id === id),
      active,
      engine.list(),
    );
    if (!now.remove.includes(id)) {
      kept.push(now.kept[0] ?? { id, active: false, workers: [] }); // gone meanwhile, or taken by a worker just started
      continue;
    }
    try {
      await removeOne(id);
      removed.push(id);
    } catch {
      kept.push({ id, active: false, workers: [] });
    }
  }
  return { removed, kept };
}

/** Every target's earned ladder grade: packs/<slug>/grade.json. */
function readGrades(): Grade[] {
  const dir = config().OCW_PACKS_DIR ?? path.join(projectRoot(), "packs");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const file = path.join(dir, d.name, "grade.json");
    if (!d.isDirectory() || !existsSync(file)) return [];
    const g = Grade.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return g.success ? [g.data] : [];
  });
}

/**
 * One line a person can act on, from a zod error or an engine InputError. A URL's credentials in it (an endpoint or a
 * remote given as `https://user:secret@host/…`, quoted back by the message that refuses it) never leave the engine.
 */
function humanMessage(error: unknown): string {
  // tRPC's own words for a body over the limit are its code name, "PAYLOAD_TOO_LARGE"
  if (error instanceof TRPCError && error.code === "PAYLOAD_TOO_LARGE")
    return `the request is over ${MAX_BODY_BYTES / 1024 / 1024} MiB, the most the engine reads of one: send less (a long task can point at a file in its repository)`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof z.ZodError) return redactUrlCredentials(firstIssue(cause));
  // A JavaScript runtime error is never one the engine throws on purpose: said as the engine's bug, not as if it
  // were the answer ("Cannot read properties of undefined (reading 'state')" alone reads like a refusal of the request).
  if (cause instanceof Error && RUNTIME_ERRORS.has(cause.name))
    return redactUrlCredentials(
      `the engine failed on an internal error (${cause.name}: ${cause.message}): a bug in opencode-worker, not a fault of the request; please report it with what you did`,
    );
  return redactUrlCredentials((error as Error).message);
}

/** The most of a request's body the engine reads (the HTTP server's limit). */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** The names of JavaScript's own runtime errors (a SyntaxError is left out: JSON.parse of bad input throws one). */
const RUNTIME_ERRORS = new Set(["TypeError", "RangeError", "ReferenceError"]);

/** The event stream's keep-alive: a ping after this long without a message; a client reconnects after `reconnectAfterInactivityMs` of silence. */
export const SSE_PING_MS = 15_000;
export const SSE_CLIENT = { reconnectAfterInactivityMs: 40_000 };

const t = initTRPC.context<ApiContext>().create({
  sse: { ping: { enabled: true, intervalMs: SSE_PING_MS }, client: SSE_CLIENT },
  // `ocwCode` is the error model's code (shared/errors.ts): clients map it, not the message text.
  errorFormatter: ({ shape, error }) => ({
    ...shape,
    message: humanMessage(error),
    data: {
      code: shape.data.code,
      httpStatus: shape.data.httpStatus,
      ocwCode: error.cause instanceof z.ZodError || shape.data.code === "BAD_REQUEST" ? "bad-input" : codeOf(error.cause),
      // the kind and typed data of a coded error (model setup's, no-target): clients act on them, never on the message
      ...(detailOf(error.cause) ? { ocwKind: detailOf(error.cause)!.kind, ocwData: detailOf(error.cause)!.data } : {}),
    },
  }),
});

/** An engine error as the tRPC error of its code (any other error as it is). */
const coded = (err: unknown) => (err instanceof OcwError ? new TRPCError({ code: ERROR_MAP[err.code].trpc, message: err.message, cause: err }) : err);

/**
 * A subscription's stream with its engine errors coded: one thrown while it streams (an unknown worker or batch in
 * workers.waitStream) reached the client as INTERNAL_SERVER_ERROR, since tRPC sees it after the procedure returned.
 */
async function* codedStream<T>(stream: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* stream;
  } catch (err) {
    throw coded(err);
  }
}

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> => !!v && typeof (v as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";

/** Maps engine errors to 4xx so every client shows the message instead of a stack, a subscription's while it streams too. */
const proc = t.procedure.use(async ({ next, type }) => {
  const res = await next();
  if (!res.ok) {
    if (res.error.cause instanceof OcwError) throw coded(res.error.cause);
    return res;
  }
  if (type === "subscription" && isAsyncIterable(res.data)) return { ...res, data: codedStream(res.data) };
  return res;
});

/**
 * The engine's events for one subscriber, in order, each once: those after `lastEventId` first (or `reset` when they
 * can no longer be replayed), then each new one as it is published. Served by tRPC (`events` below) and, for a plain
 * subscription, straight by the HTTP server (event-stream.ts), which writes the same frames for less.
 */
export async function* engineEvents(
  engine: Engine,
  lastEventId: string | null | undefined,
  signal: AbortSignal | undefined,
  opts: { maxBacklog?: number; onOverflow?: () => void } = {},
): AsyncGenerator<Delivered> {
  const buffer: Delivered[] = [];
  let wake: (() => void) | null = null;
  const max = opts.maxBacklog ?? Number.POSITIVE_INFINITY;
  let overflowed = false;
  const unsubscribe = engine.bus.subscribe((d) => {
    if (overflowed) return;
    // A subscriber that reads nothing holds no more than `max` events: past it, it is let go (its reconnect resumes
    // from the ring, or is a reset), instead of the engine keeping every event for it.
    if (buffer.length >= max) {
      overflowed = true;
      buffer.length = 0;
      opts.onOverflow?.();
      wake?.();
      return;
    }
    buffer.push(d);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const { events, reset } = engine.bus.since(lastEventId);
    if (reset) yield { cursor: engine.bus.cursor, event: { type: "reset", ts: Date.now() } as EngineEvent };
    let last = 0;
    for (const d of events) {
      last = seqOf(d.cursor);
      yield d;
    }
    while (!signal?.aborted && !overflowed) {
      while (buffer.length) {
        const d = buffer.shift()!;
        if (seqOf(d.cursor) <= last) continue;
        last = seqOf(d.cursor);
        yield d;
      }
      if (signal?.aborted || overflowed || buffer.length) continue;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    unsubscribe();
  }
}

async function* eventStream(engine: Engine, lastEventId: string | null | undefined, signal: AbortSignal | undefined) {
  for await (const d of engineEvents(engine, lastEventId, signal)) yield tracked(d.cursor, d.event);
}

const shownOrNull = (t: Target | undefined) => (t ? targetShown(t) : null);
/** A target's live endpoints as listed: their URLs without credentials. */
const endpointsShown = <E extends { url: string }>(endpoints: E[]): E[] => endpoints.map((e) => ({ ...e, url: redactUrlCredentials(e.url) }));

export const appRouter = t.router({
  health: proc.query(({ ctx }) => ({
    ok: true,
    version: ctx.version,
    pid: process.pid,
    epoch: ctx.engine.bus.epoch,
    cursor: ctx.engine.bus.cursor,
    root: projectRoot(),
  })),
  /** GPUs, CPU and RAM as the engine's machine sees them (the wizard's first step). */
  hardware: proc.query(() => hardwareSummary()),
  /** Clients that called the API recently (GUI tabs, CLI runs, MCP bridges), newest first. */
  clients: proc.query(({ ctx }) => ctx.clients()),
  status: proc.query(({ ctx }) => {
    const workers = ctx.engine.list();
    const counts: Record<string, number> = {};
    for (const w of workers) counts[w.state] = (counts[w.state] ?? 0) + 1;
    return {
      activeTarget: shownOrNull(ctx.engine.targets.active()),
      opencode: ctx.engine.opencodeServers(),
      slots: ctx.engine.slots(),
      pendingApprovals: ctx.engine.pendingAsks().length,
      /** How workers are contained: kind "none" means unsandboxed (the person opted out, or workers are refused). */
      sandbox: ctx.engine.sandbox,
      /** Whether each target's model server answered the engine's last probe (every few seconds). */
      models: ctx.engine.models(),
      workers: counts,
      cursor: ctx.engine.bus.cursor,
    };
  }),
  workers: t.router({
    list: proc.input(ListInput).query(({ ctx, input }) => listWorkers(ctx.engine.list(), input ?? {})),
    get: proc.input(WorkerRef).query(({ ctx, input }) => ctx.engine.get(input.workerId)),
    /** Whether a directory can be a task's (an existing, committed git repository or a folder committed in one). */
    inspect: proc.input(z.object({ directory: z.string().min(1).max(4096) })).query(async ({ input }) => {
      const r = await inspectRepo(input.directory);
      return { root: r.root, subdir: r.subdir, head: r.head, branch: r.branch };
    }),
    /** The worker's workspace path to open on the desktop (folder, editor, terminal) or copy: only ever a workspace of the engine's. */
    workspace: proc.input(WorkerRef).query(({ ctx, input }) => ctx.engine.workspaceToOpen(input.workerId)),
    start: proc.input(StartInput).mutation(({ ctx, input }) => ctx.engine.start(input)),
    startBatch: proc.input(StartBatchInput).mutation(({ ctx, input }) => ctx.engine.startBatch(input.tasks, input.integration, input.name)),
    /** Names (or with "" unnames) a batch: people read the name instead of its id. */
    nameBatch: proc.input(NameBatchInput).mutation(({ ctx, input }) => ctx.engine.nameBatch(input.batchId, input.name)),
    /** Every named batch: {batchId: name}. */
    batchNames: proc.query(({ ctx }) => ctx.engine.batchNames.all()),
    /** Workers whose stored transcript holds every word of the query, each with a snippet (untrusted); bounded. */
    search: proc.input(SearchInput).query(({ ctx, input }) => ctx.engine.search(input.query, input.limit)),
    /** N attempts of one task over `targets` in turn: one attempt group; the engine picks the winner and stops the rest. */
    startAttempts: proc.input(StartAttemptsInput).mutation(({ ctx, input }) => ctx.engine.startAttempts(input)),
    /** An attempt group: its attempts side by side (verdict, claim, tokens, time, changed lines) and the winner. */
    attempts: proc.input(AttemptGroupRef).query(({ ctx, input }) => ctx.engine.attemptGroup(input.groupId)),
    attemptGroups: proc.query(({ ctx }) => ctx.engine.attemptGroups()),
    batch: proc.input(BatchRef).query(({ ctx, input }) => ctx.engine.batch(input.batchId)),
    /**
     * Waits (bounded) until there is news for the caller — an ask or a finished worker it was not shown — or every
     * worker is at rest; answers slim pictures and the batch's summary (shared/wait.ts). One request per wait.
     */
    wait: proc.input(WaitInput).query(({ ctx, input, signal }) => waitForNews(ctx.engine, input, { signal })),
    /** wait, with a progress line per event worth showing while it waits; the result comes last. */
    waitStream: proc.input(WaitInput).subscription(({ ctx, input, signal }) => waitStream(ctx.engine, input, signal)),
    steer: proc.input(SteerInput).mutation(async ({ ctx, input }) => {
      await ctx.engine.steer(input.workerId, input.text, ctx.by);
      return ctx.engine.get(input.workerId);
    }),
    stop: proc
      .input(StopInput)
      .mutation(({ ctx, input }) => ctx.engine.stop(input.workerId, input.reason ?? `stopped by ${ctx.by.name ?? ctx.by.kind}`, ctx.by)),
    resume: proc.input(ResumeInput).mutation(({ ctx, input }) => ctx.engine.resume(input.workerId, input.message)),
    /** A follow-up to a graded worker (built or honest-failure) in its same session: a new round, graded again. */
    continue: proc.input(ContinueInput).mutation(({ ctx, input }) => ctx.engine.continue(input.workerId, input.message, ctx.by)),
    /** A review of a graded worker's change: its comments sent as one follow-up that quotes each file:line (a new round). */
    review: proc.input(ReviewInput).mutation(({ ctx, input }) => ctx.engine.review(input.workerId, input.comments, input.message, ctx.by)),
    merge: proc.input(MergeInput).mutation(({ ctx, input }) => ctx.engine.merge(input.workerId, { acceptFlagged: input.acceptFlagged })),
    /** "Publish the branch": the graded commit as ocw/<id> in the person's repository (grading publishes nothing). */
    publish: proc.input(WorkerRef).mutation(({ ctx, input }) => ctx.engine.publish(input.workerId)),
    /** A built worker whose merge conflicts: its task again as a new worker from the current HEAD, told the files. */
    onNewBase: proc.input(WorkerRef).mutation(({ ctx, input }) => continueOnNewBase(ctx.engine, input.workerId)),
    /** Undoes a merge the engine made (a worker's, or a batch's integration commit) as a new commit; refuses on conflict. */
    revert: proc.input(RevertInput).mutation(({ ctx, input }) => revertLanded(ctx.engine, input)),
    /** Deletes merged ocw/* branches of a repository; keeps unmerged built work and running workers' branches. */
    prune: proc.input(PruneInput).mutation(({ ctx, input }) => pruneBranches(ctx.engine, input.directory)),
    /** Pushes a graded (or integration) commit to a branch on a remote (never forced, never the default branch); a PR with gh. */
    push: proc.input(PushInput).mutation(({ ctx, input }) => pushWork(ctx.engine, input)),
    /** Removes a finished worker's workspace and branch, unmerged work included (the person asked for it). */
    discard: proc.input(WorkerRef).mutation(({ ctx, input }) => ctx.engine.discard(input.workerId, ctx.by)),
    /** The same task again as a new worker in a fresh workspace, on the same target (not part of the old batch). */
    retry: proc.input(RetryInput).mutation(({ ctx, input }) => retryWorker(ctx.engine, input.workerId)),
    /** "Merge all built" of a batch: one by one in submission order, stopping at the first refused merge. */
    mergeBatch: proc.input(MergeBatchInput).mutation(({ ctx, input }) => mergeBatch(ctx.engine, input.batchId, { acceptFlagged: input.acceptFlagged })),
    diff: proc.input(WorkerRef).query(async ({ ctx, input }) => ({ diff: await ctx.engine.diff(input.workerId) })),
    transcript: proc.input(WorkerRef).query(({ ctx, input }) => ctx.engine.transcript(input.workerId)),
    events: proc.input(WorkerRef).query(({ ctx, input }) => ctx.engine.events(input.workerId)),
  }),
  approvals: t.router({
    list: proc.query(({ ctx }) => ctx.engine.pendingAsks()),
    /** `withWorker`: the answer carries its worker's slim picture too (shared/wait.ts), so a caller needs no second request. */
    decide: proc.input(DecideInput).mutation(async ({ ctx, input }): Promise<PermissionAsk & { worker?: WaitWorker }> => {
      const { withWorker, ...decision } = input;
      const ask = await ctx.engine.decide(decision, ctx.by);
      return withWorker ? { ...ask, worker: slimWorker(ctx.engine.get(ask.workerId)) } : ask;
    }),
    /** "always" answers the engine holds (opencode only ever hears "once"); each is revocable. */
    grants: proc.query(({ ctx }) => ctx.engine.grants()),
    revokeGrant: proc
      .input(z.object({ grantId: z.string().min(1, "grantId is required (see the grants list)") }))
      .mutation(({ ctx, input }) => ctx.engine.revokeGrant(input.grantId, ctx.by)),
  }),
  grades: proc.query(() => readGrades()),
  /** `ocw grade`: the five-rung ladder as one batch on a target (start), then its grade written to packs/ (finish). */
  ladder: t.router({
    start: proc.input(LadderStartInput).mutation(({ ctx, input }) => ladderStart(ctx.engine, input)),
    finish: proc.input(LadderFinishInput).mutation(({ ctx, input }) => ladderFinish(ctx.engine, input)),
  }),
  /** The ledger per target from this engine's real runs: pass@1, pass@k, rounds to built, honest rate, cost per built task. */
  ledger: proc.query(({ ctx }) => ledger(ctx.engine.list())),
  policies: t.router({
    get: proc.query(({ ctx }) => ctx.engine.policies()),
    set: proc.input(z.object({ rules: z.array(PolicyRule).max(200) })).mutation(({ ctx, input }) => ctx.engine.setPolicies(input.rules)),
    /** The rule builder's check: which of these (unsaved) rules would answer a sample ask, as the engine decides. */
    explain: proc
      .input(z.object({ rules: z.array(PolicyRule).max(200), tool: z.string().min(1).max(100), what: z.string().max(8000) }))
      .query(({ input }) => explainPolicy(input.rules, { tool: input.tool, what: input.what })),
  }),
  /** Model setup (issue 13): hardware as the planner sees it, the catalog with this machine's fit, the fit itself. */
  setup: t.router({
    hardware: proc.query(() => setupHardware()),
    catalog: proc
      .input(z.object({ slots: z.number().int().min(1).max(256).optional(), minCtx: z.number().int().min(1024).optional() }).optional())
      .query(({ input }) => setupCatalog(input ?? {})),
    fit: proc.input(FitInput.optional()).query(async ({ ctx, input }) => {
      // the catalog's rank reordered by this engine's own ledger where it has measured models (issue 27)
      return await setupFit(input ?? {}, { ledger: ledger(ctx.engine.list()) });
    }),
    /** Verify a running server, then save it as a target (cannot-build saves nothing); `unverified: true` saves without checks. */
    capture: proc.input(SetupCaptureInput).mutation(async ({ ctx, input }) => {
      return await setupCaptureApi(input, ctx.engine.targets);
    }),
    /**
     * Run a model on the engine's machine: plan → runtime → download → load → warm-up → verify → placement, in the
     * background. Returns the job as it begins; each change arrives as a `setup` event (and from setup.job).
     */
    start: proc.input(SetupStartInput).mutation(({ ctx, input }) => {
      return setupStartApi(input, ctx.engine.targets, (job) => ctx.engine.bus.publish({ type: "setup", job, ts: Date.now() }));
    }),
    /** A model start by id, or the latest (null when none ran since the engine started). */
    /** "Build one": scripts/build-llama-server.sh as a job; progress arrives as `llama-build` events (and from buildJob). */
    buildLlama: proc.mutation(({ ctx }) => startLlamaBuild((job) => ctx.engine.bus.publish({ type: "llama-build", job, ts: Date.now() }))),
    buildJob: proc.input(z.object({ jobId: IdText().optional() }).optional()).query(({ input }) => llamaBuildJob(input?.jobId)),
    buildCancel: proc.input(z.object({ jobId: IdRef("jobId") })).mutation(({ input }) => cancelLlamaBuild(input.jobId)),
    job: proc.input(z.object({ jobId: IdText().optional() }).optional()).query(({ input }) => {
      return setupJobApi(input?.jobId);
    }),
    cancel: proc.input(z.object({ jobId: IdRef("jobId") })).mutation(({ input }) => {
      return setupCancelApi(input.jobId);
    }),
    /** Verify an API provider with the key the named variable holds, then save it; `unverified: true` saves without checks. */
    provider: proc.input(SetupProviderInput).mutation(async ({ ctx, input }) => {
      return await setupProviderApi(input, ctx.engine.targets);
    }),
    /** Verify an API provider with a key typed in the wizard, then save it with the key stored by the engine (never returned). */
    providerKey: proc.input(SetupProviderKeyInput).mutation(async ({ ctx, input }) => {
      return await setupProviderKeyApi(input, ctx.engine.targets);
    }),
    /** `ocw fit --gguf/--metadata`: one file estimated in detail on the engine's machine (paths relative to `cwd`). */
    estimate: proc.input(FitFileInput).query(({ input }) => fitFile(input)),
    /** `ocw setup --capture/--provider`: verify and save as the command always did, its log lines returned with the result. */
    verify: proc.input(SetupVerifyInput).mutation(({ ctx, input }) => setupVerify(input, ctx.engine.targets)),
    /** `ocw deploy k8s`: the plan sized for a node's GPUs (given, or the engine's machine's) and its manifests. */
    k8s: proc.input(DeployK8sInput).query(({ input }) => deployK8s(input)),
    /** `ocw fit`: the planner with the CLI's options (runtime, exact context per slot) on freshly detected hardware. */
    plan: proc.input(FitPlanInput).query(({ input }) => fitPlan(input)),
    /** `ocw doctor`: hardware, the llama-server found, the model servers ocw started, and how workers are contained. */
    doctor: proc
      .input(z.object({ llamaServer: z.string().min(1).max(4096).optional(), cwd: z.string().max(4096).optional() }).optional())
      .query(({ input }) => doctor(input ?? {})),
    /** The models an OpenAI-compatible provider lists (GET {url}/models), with the key the named variable holds. */
    models: proc.input(ProviderModelsInput).query(({ input }) => providerModelsApi(input)),
  }),
  /** Model servers the engine started: list, stop, restart, delete; keep one running after `ocw stop`. */
  servers: t.router({
    list: proc.query(() => serversListApi()),
    stop: proc.input(z.object({ id: z.string().min(1).max(200) })).mutation(({ input }) => serverStopApi(input.id)),
    restart: proc.input(z.object({ id: z.string().min(1).max(200) })).mutation(({ input }) => serverRestartApi(input.id)),
    delete: proc.input(z.object({ id: z.string().min(1).max(200) })).mutation(({ input }) => serverDeleteApi(input.id)),
    keep: proc.input(z.object({ id: z.string().min(1).max(200), keep: z.boolean() })).mutation(({ input }) => serverKeepApi(input.id, input.keep)),
    /** `ocw serving stop [--target ID]`: every recorded server ocw started (or one target's), stopped. */
    stopRecorded: proc.input(z.object({ target: z.string().min(1).max(200).optional() }).optional()).mutation(({ input }) => stopRecorded(input?.target)),
  }),
  targets: t.router({
    // Every listing shows a target's URLs without credentials (a target saved before they were refused may hold some).
    list: proc.query(({ ctx }) => {
      const { active, targets } = ctx.engine.targets.list();
      return { active, targets: targets.map(targetShown) };
    }),
    /** Each target's endpoints as admission sees them: health, slots, workers on each, the server's own load report. */
    endpoints: proc.query(({ ctx }) => ctx.engine.endpoints().map((t) => ({ ...t, endpoints: endpointsShown(t.endpoints) }))),
    /**
     * Whether a target's endpoint answers with the key the engine holds for it (before a client saves an ad-hoc one),
     * or with the key the client gives (`ocw run --api-key-env VAR` where the engine's environment lacks VAR);
     * `keyHeld`: whether the engine itself resolves that same key for the target.
     */
    preflight: proc.input(z.object({ target: Target, key: z.string().min(1).max(8192).optional() })).mutation(async ({ input }) => {
      await preflightEndpoint(input.target, undefined, input.key);
      let held: string | null = null;
      try {
        held = resolveKey(input.target);
      } catch {
        held = null;
      }
      // No key at all, and the endpoint wants one: refused here, before a worker starts only to end in error on its
      // first model call ("refused the target's key" — there was none to set again).
      if (input.key === undefined && held === null && (await refusesWithoutKey(input.target.endpoint)))
        throw new InputError(
          `the model endpoint ${redactUrlCredentials(input.target.endpoint)} refuses requests without a key (HTTP 401): export its key in a variable and pass --api-key-env VAR (the variable's name, never the key)`,
        );
      // A web server that is not a model API (a static file server, a web app) answers too: refused here, before a
      // worker starts only to fail on its first model call with "HTTP 405".
      const notApi = await notModelApi(input.target.endpoint, input.key ?? held);
      if (notApi)
        throw new InputError(
          `the model endpoint ${redactUrlCredentials(input.target.endpoint)} answered, but is not an OpenAI-compatible API (${redactUrlCredentials(notApi)}): check the URL is the model API's base — llama-server, vLLM, Ollama: http://HOST:PORT/v1; a provider: its OpenAI-compatible base URL — and not a web page or another service on that port`,
        );
      // A model the endpoint does not list: said, not refused (unlistedModel).
      const unlisted = await unlistedModel(input.target.endpoint, input.key ?? held, input.target.model);
      return { ok: true as const, keyHeld: input.key === undefined || held === input.key, ...(unlisted ? { unlisted } : {}) };
    }),
    /** `ocw targets --json`: every target with its endpoints' live state (health, slots, workers on each). */
    withEndpoints: proc.query(async ({ ctx }) => {
      const r = await targetsWithEndpoints(ctx.engine.targets, new Map((await ctx.engine.endpoints()).map((x) => [x.targetId, x.endpoints])));
      return {
        active: r.active,
        targets: r.targets.map((t) => ({ ...targetShown(t), endpoints: endpointsShown(t.endpoints) })),
      };
    }),
    save: proc
      .input(z.object({ target: Target.extend({ id: SavedTargetId }), activate: z.boolean().default(false) }))
      .mutation(({ ctx, input }) => ctx.engine.targets.save(input.target, input.activate)),
    /** Sets (or with null clears) an API target's price per million tokens: costs are computed from it (shared/cost.ts). */
    setPrice: proc.input(z.object({ id: z.string().min(1).max(200), price: Price.nullable() })).mutation(({ ctx, input }) => {
      const t = ctx.engine.targets.get(input.id);
      if (!t) throw new InputError(`no target "${input.id}". Run \`ocw targets\` to list them.`);
      return ctx.engine.targets.save({ ...t, price: input.price });
    }),
    use: proc.input(z.object({ id: z.string() })).mutation(({ ctx, input }) => {
      try {
        return ctx.engine.targets.use(input.id);
      } catch (err) {
        throw new InputError((err as Error).message);
      }
    }),
    /**
     * Stores the API key a person typed in for a target: the OS keychain, else a 0600 file in the state dir. The key
     * is never returned, logged, put in targets.json or an event; opencode reaches the endpoint through the engine's
     * key gateway, so no worker sees it either. An empty key forgets it.
     */
    setKey: proc
      .input(z.object({ id: z.string().min(1).max(200), key: z.string().max(4096) }))
      .mutation(({ ctx, input }) => setTargetKey(ctx.engine.targets, input.id, input.key)),
    /** Deletes a target; refused while a worker of it is queued or live (stop those first). Workers keep their records. */
    remove: proc.input(z.object({ id: z.string().min(1).max(200) })).mutation(async ({ ctx, input }) => {
      const busy = ctx.engine
        .list()
        .filter((w) => w.targetId === input.id && (w.state === "queued" || isActive(w.state) || w.state === "settled" || w.state === "grading"));
      if (busy.length)
        throw new InputError(
          `target "${input.id}" has ${counted(busy.length, "worker")} queued or running (${busy
            .slice(0, 3)
            .map((w) => w.id)
            .join(", ")}${busy.length > 3 ? ", …" : ""}): stop them before deleting it`,
        );
      try {
        return await removeTarget(ctx.engine, input.id);
      } catch (err) {
        throw new InputError((err as Error).message);
      }
    }),
    /**
     * `ocw target remove --ad-hoc`: the targets `ocw run --endpoint` saved (one per URL, model and key variable) that no
     * worker needs any more (adhocUnused), removed with their kept keys; the rest said with the workers that hold them.
     */
    removeAdhoc: proc.mutation(({ ctx }) => removeUnusedAdhoc(ctx.engine, (id) => removeTarget(ctx.engine, id))),
  }),
  events: proc.input(EventsInput).subscription(({ ctx, input, signal }) => eventStream(ctx.engine, input.lastEventId, signal)),
  shutdown: proc.mutation(({ ctx }) => {
    // `ocw stop`: the model servers the engine started stop with it, unless the person chose to keep one
    setImmediate(
      () =>
        void stopUnkeptServing()
          .catch(() => [])
          .finally(() => ctx.shutdown(ctx.by)),
    );
    return { stopping: true };
  }),
});

export type AppRouter = typeof appRouter;
