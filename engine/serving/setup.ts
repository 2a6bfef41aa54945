/**
 * `ocw setup`: capture or provider → verify → persist a target; the serving records and supervisor of the servers
 * ocw starts (start.ts runs a model by phases). Modes: a llama.cpp server we start (start.ts),
 * a captured endpoint already serving, an API provider.
 */
import { config } from "../config";
import path from "node:path";
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { type Target, type TargetBench, targetSlug } from "../../shared/target";
import { benchBudgetSec, benchLine, benchmarkEndpoint } from "./bench";
import { stateDir, TargetStore } from "../store";
import { probeEndpoint } from "./capture";
import { readKey } from "./keys";
import { alive, type ProcessIdentity, processStartTime, Supervisor } from "../process";
import { type LoggedSizes, signalablePid, startLlamaServer, stopPid, waitHealthy } from "./llama-server";
import { startRuntimeProcess } from "./runtime-process";
import { type VerifyResult, verifyEndpoint } from "./verify";
import { SetupError, type SetupErrorData } from "../models";

/** Bad input: one line saying what to do; exit code 2. */
export class SetupInputError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("serving", message, data);
    this.name = "SetupInputError";
  }
}

// The records of the servers ocw starts have one owner (records.ts: a lock, atomic writes); re-exported here.
export { listServing, patchServing, putServing, removeServing, type ServingRecord, updateServing } from "./records";
import { listServing, patchServing, removeServing, type ServingRecord } from "./records";

/** A recorded start time as the process module takes it: a string, else unknown (null: the pid alone is judged). */
const recordedStart = (t: unknown): string | null => (typeof t === "string" ? t : null);

/** The record's server process as recorded (pid + start time); a record of an older ocw has no start time. */
function serverIdentity(r: ServingRecord): ProcessIdentity {
  return { pid: r.pid, startTime: recordedStart(r.startTime) };
}

/** The record's supervisor as recorded, or null when it has none. */
function supervisorIdentity(r: ServingRecord): ProcessIdentity | null {
  return signalablePid(r.supervisorPid) ? { pid: r.supervisorPid, startTime: recordedStart(r.supervisorStartTime) } : null;
}

/**
 * Whether the record's server still runs: its pid exists and, where the record and the OS give start times, it is the
 * process that was recorded (a pid reused by another process is not our server). Records without a start time (older
 * ocw) fall back to the pid alone.
 */
export function servingAlive(r: ServingRecord): boolean {
  return signalablePid(r.pid) && alive(serverIdentity(r));
}

/**
 * Stops servers we started (all, or one target's). Returns what was stopped; `alreadyGone` holds the records whose
 * process had ended, or whose pid now belongs to another process (`reused`, a subset of it): that one is never signalled.
 */
export async function stopServing(targetId?: string): Promise<{ stopped: ServingRecord[]; alreadyGone: ServingRecord[]; reused: ServingRecord[] }> {
  const recs = listServing();
  const pick = recs.filter((r) => !targetId || r.targetId === targetId || r.replicaOf === targetId);
  const stopped: ServingRecord[] = [];
  const alreadyGone: ServingRecord[] = [];
  const reused: ServingRecord[] = [];
  for (const r of pick) {
    // a record whose start failed may hold pid 0: never signal it (kill(0) is our own process group)
    if (!signalablePid(r.pid) && !signalablePid(r.supervisorPid)) {
      alreadyGone.push(r);
      continue;
    }
    // the supervisor first, so it does not restart what we stop; only while it is still the recorded process
    const sup = supervisorIdentity(r);
    const supAlive = !!sup && alive(sup);
    if (sup && supAlive) await stopPid(sup, 8000);
    if (!servingAlive(r)) {
      (supAlive ? stopped : alreadyGone).push(r);
      // the pid runs, but it is another process than the one recorded: left alone
      if (!supAlive && signalablePid(r.pid) && alive(r.pid)) reused.push(r);
    } else if (await stopPid(serverIdentity(r), 5000)) stopped.push(r);
  }
  // the records read above, by target and start (a record a new start wrote meanwhile is not ours to drop)
  const gone = new Set(pick.map((r) => `${r.targetId}\0${r.startedAt}`));
  removeServing((r) => gone.has(`${r.targetId}\0${r.startedAt}`));
  return { stopped, alreadyGone, reused };
}

export interface SetupResult {
  /** "unverified": saved without checks, by the person's choice (API only). */
  outcome: VerifyResult["outcome"] | "unverified";
  /** False when nothing was written (a cannot-build capture/provider through the API). */
  saved?: boolean;
  /** What the server reported (capture/provider). */
  observed?: { engine: string; totalSlots: number | null; perSlotCtx: number | null } | null;
  target: Target;
  checks: Target["checks"];
  summary: string;
  active: boolean;
  server?: { pid: number; port: number; logFile: string; readyMs: number; logged: LoggedSizes; args: string[] };
  /** The benchmark after verify (capture); null when none ran. */
  bench?: TargetBench | null;
  timings: { totalMs: number; detectMs?: number; startMs?: number; verifyMs: number };
}

interface CommonSetupOptions {
  yes?: boolean;
  acceptUnderpowered?: boolean;
  slots?: number;
  /** For interactive confirmation (tests inject). */
  confirm?: (question: string) => Promise<boolean>;
  store?: TargetStore;
  log?: (line: string) => void;
  /** Target id (default derived from the model). */
  id?: string;
  /** Save a cannot-build capture/provider target (default true: the CLI records it, not active; the API does not). */
  saveCannotBuild?: boolean;
  /** Save without verifying, by the person's explicit choice (no request is made; recorded with no outcome). */
  unverified?: boolean;
}

function positiveInt(v: unknown, flag: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isInteger(n) || n < 1) throw new SetupInputError(`${flag} must be a positive integer (got ${JSON.stringify(v)})`);
  return n;
}

export function finish(store: TargetStore, target: Target, v: VerifyResult, o: CommonSetupOptions): { target: Target; active: boolean; saved: boolean } {
  const t: Target = { ...target, outcome: v.outcome, verifiedAt: new Date().toISOString(), checks: v.checks };
  if (v.outcome === "cannot-build" && o.saveCannotBuild === false) return { target: t, active: false, saved: false };
  const activate = v.outcome === "built" || (v.outcome === "underpowered" && !!o.acceptUnderpowered);
  const saved = store.save(t, activate);
  // the target in use set up again stays in use (the store keeps it active): said so, not "not active"
  return { target: saved, active: activate || store.list().active === saved.id, saved: true };
}

/** Saves a capture/provider target without any request, by the person's choice; it is made active. */
function saveUnverified(store: TargetStore, target: Target, t0: number): SetupResult {
  const t: Target = { ...target, outcome: undefined, verifiedAt: null, checks: [] };
  const saved = store.save(t, true);
  return {
    outcome: "unverified",
    saved: true,
    observed: null,
    target: saved,
    checks: [],
    active: true,
    summary: `saved ${saved.id} without verifying it (your choice): nothing was checked — not the URL, the key, the context, nor tool calls`,
    timings: { totalMs: performance.now() - t0, verifyMs: 0 },
  };
}

/**
 * How to run `ocw serving supervise`: $OCW_SUPERVISOR_CMD (a JSON array, tests) or this very CLI when it runs
 * from the ocw bundle; null (unsupervised, detached server) otherwise or when OCW_SUPERVISE=0.
 */
export function supervisorCommand(env: NodeJS.ProcessEnv = process.env): string[] | null {
  const c = config(env);
  if (c.OCW_SUPERVISE === "0") return null;
  if (c.OCW_SUPERVISOR_CMD) return JSON.parse(c.OCW_SUPERVISOR_CMD) as string[];
  const entry = process.argv[1] ?? "";
  return /ocw(\.mjs)?$/.test(path.basename(entry)) ? [process.execPath, entry] : null;
}

export async function startSupervised(cmd: string[], rec: ServingRecord, timeoutMs: number): Promise<{ pid: number; readyMs: number }> {
  const t0 = performance.now();
  mkdirSync(path.dirname(rec.logFile), { recursive: true, mode: 0o700 });
  const logFd = openSync(rec.logFile.replace(/\.log$/, ".supervisor.log"), "a", 0o600);
  const child = spawn(cmd[0]!, [...cmd.slice(1), "serving", "supervise", "--target", rec.targetId], {
    detached: true,
    stdio: ["ignore", logFd, logFd],
    env: { ...process.env, OCW_STATE_DIR: stateDir() },
  });
  closeSync(logFd);
  child.unref();
  try {
    await waitHealthy(`http://127.0.0.1:${rec.port}`, child, rec.logFile, timeoutMs);
  } catch (e) {
    if (child.pid) await stopPid(child.pid, 3000);
    throw e;
  }
  // The supervisor records the pid once it sees the server healthy too, which can trail our own health check.
  let r = listServing().find((x) => x.targetId === rec.targetId);
  for (const deadline = Date.now() + 10_000; !r?.pid && Date.now() < deadline; r = listServing().find((x) => x.targetId === rec.targetId)) {
    await new Promise((res) => setTimeout(res, 100));
  }
  if (!r?.pid)
    throw new SetupError("serving", `the supervisor started ${path.basename(rec.bin)} but did not record it`, { targetId: rec.targetId }, "unavailable");
  return { pid: r.pid, readyMs: performance.now() - t0 };
}

/** `ocw serving supervise --target ID` (hidden): run and restart the recorded server until SIGTERM. */
export async function superviseServing(targetId: string): Promise<number> {
  const rec = listServing().find((r) => r.targetId === targetId);
  if (!rec) throw new SetupInputError(`no recorded server for target ${targetId}`, { targetId });
  const update = (patch: Partial<ServingRecord>) => patchServing(targetId, patch);
  const apiKey = rec.keyFile ? readKey(rec.keyFile) : null;
  // what is started: llama-server (LLAMA_API_KEY), or vLLM / SGLang — binary or container — as start-runtimes launched it
  const runtime = rec.runtime ?? "llama.cpp";
  const launch =
    runtime === "llama.cpp"
      ? () => startLlamaServer({ bin: rec.bin, args: rec.args, env: rec.env, apiKey, logFile: rec.logFile, port: rec.port, detached: false })
      : () =>
          startRuntimeProcess({
            cmd: rec.bin,
            args: rec.args,
            // vLLM reads its key from the environment (a container gets `-e VLLM_API_KEY`); SGLang from its config file
            env: { ...rec.env, ...(runtime === "vllm" && apiKey ? { VLLM_API_KEY: apiKey } : {}) },
            logFile: rec.logFile,
            port: rec.port,
            key: apiKey,
            readyTimeoutMs: 1_800_000,
          });
  const sup: Supervisor = new Supervisor(launch, {
    onReady: (pid) =>
      update({
        pid,
        startTime: processStartTime(pid),
        supervisorPid: process.pid,
        supervisorStartTime: processStartTime(process.pid),
        restarts: sup.restarts,
        gaveUp: null,
      }),
    onRestart: (n, why, delay) => {
      console.error(`supervise ${targetId}: restart #${n} in ${delay} ms (${why})`);
      update({ lastCrash: `${new Date().toISOString()} ${why}` });
    },
    onGiveUp: (why) => {
      console.error(`supervise ${targetId}: ${why}`);
      // reported where the servers panel, `ocw serving list` and the next setup read it
      update({ supervisorPid: null, supervisorStartTime: null, gaveUp: `${new Date().toISOString()} ${why}` });
    },
  });
  const stop = async () => {
    await sup.stop();
    update({ supervisorPid: null, supervisorStartTime: null });
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  await sup.start();
  return (await sup.done).kind === "gave-up" ? 1 : 0;
}

export interface CaptureSetupOptions extends CommonSetupOptions {
  url: string;
  apiKeyEnv?: string;
  env?: NodeJS.ProcessEnv;
  /** Intended per-slot context to check (optional). */
  ctx?: number;
  /** The served model to capture (default: the first /v1/models lists). */
  model?: string;
  /** Seconds the benchmark after verify may take (default OCW_SETUP_BENCH_SEC); 0 skips it. */
  benchSec?: number;
}

function keyFromEnv(name: string | undefined, env: NodeJS.ProcessEnv): string | null {
  if (!name) return null;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    throw new SetupInputError(`--api-key-env takes the NAME of an environment variable (got "${name.slice(0, 4)}…"), not the key itself`);
  const v = env[name];
  if (!v) throw new SetupInputError(`environment variable ${name} is not set; export it with the endpoint's key, or omit --api-key-env`);
  return v;
}

function checkUrl(url: string, flag: string): string {
  try {
    const u = new URL(url);
    if (!/^https?:$/.test(u.protocol)) throw new Error();
    // the base URL, also when a whole request URL was pasted (…/v1/chat/completions, …/v1/models)
    return url.replace(/\/+$/, "").replace(/\/(chat\/completions|models)$/, "");
  } catch {
    throw new SetupInputError(`${flag} needs an http(s) URL like http://127.0.0.1:8080 (got "${url}")`);
  }
}

/**
 * An API provider's base URL as given — the part before /chat/completions, which need not end in /v1 (Gemini's
 * https://generativelanguage.googleapis.com/v1beta/openai, Azure's https://NAME.openai.azure.com/openai/v1,
 * OpenRouter's https://openrouter.ai/api/v1) — with /v1 added only to a bare origin (https://api.openai.com). A query
 * or fragment is refused: opencode and the gateway append /chat/completions to the base, which would land after it.
 */
function providerBase(url: string): string {
  const u = new URL(url);
  if (u.search || u.hash)
    throw new SetupInputError(
      `--provider takes the API's base URL without a query or fragment (got "${u.origin}${u.pathname}${u.search ? "?…" : "#…"}"): the request path is appended to it; for Azure OpenAI use its v1 API, https://NAME.openai.azure.com/openai/v1`,
    );
  return u.pathname.replace(/\/+$/, "") === "" ? `${url.replace(/\/+$/, "")}/v1` : url.replace(/\/+$/, "");
}

export async function setupCapture(o: CaptureSetupOptions): Promise<SetupResult> {
  const t0 = performance.now();
  const env = o.env ?? process.env;
  const url = checkUrl(o.url, "--capture");
  const key = keyFromEnv(o.apiKeyEnv, env);
  const slotsOpt = positiveInt(o.slots, "--slots");
  const ctx = positiveInt(o.ctx, "--ctx");
  const store = o.store ?? new TargetStore();
  const idFor = (model: string, endpoint: string) =>
    o.id ?? `capture-${targetSlug({ model: path.basename(model), quant: null })}-${new URL(endpoint).port || "80"}`;
  if (o.unverified) {
    if (!o.model) throw new SetupInputError("name the served model to save a target without verifying it (nothing is asked of the server)");
    const endpoint = /\/v1$/.test(url) ? url : `${url}/v1`;
    const slots = slotsOpt ?? 1;
    return saveUnverified(
      store,
      {
        id: idFor(o.model, endpoint),
        model: o.model,
        quant: null,
        endpoint,
        keyRef: o.apiKeyEnv ?? null,
        contextLimit: ctx,
        serving: { engine: "capture", endpoints: [{ url: endpoint, slots }], slots, perSlotCtx: ctx ?? null },
        checks: [],
      },
      t0,
    );
  }
  const ep = await probeEndpoint(url, key, 5000);
  if (!ep) throw new SetupInputError(`nothing OpenAI-compatible answers at ${url}; start the server or fix the URL`);
  if (ep.loading !== undefined)
    throw new SetupInputError(
      ep.loading
        ? `${url} is still loading its model (503 "Loading model"): capture it once GET /health answers 200`
        : `${url} answers 503 (unavailable): capture it once it serves`,
    );
  if (ep.needsKey && !key) throw new SetupInputError(`${url} requires a key: pass --api-key-env VAR with VAR holding it`);
  // a key was sent and refused: said as such (its models list came back empty, which read as "lists no model")
  if (ep.needsKey)
    throw new SetupInputError(
      `${url} refused the key in ${o.apiKeyEnv} (HTTP ${ep.keyStatus ?? 401}): export ${o.apiKeyEnv} with the key the server was started with (llama-server's --api-key or LLAMA_API_KEY)`,
    );
  if (o.model && ep.models.length && !ep.models.includes(o.model)) {
    throw new SetupInputError(`${url} serves ${ep.models.join(", ")}, not ${o.model}; pass one of those with --model`);
  }
  const model = o.model ?? ep.models[0];
  if (!model) throw new SetupInputError(`${url}/v1/models lists no model; load one in the server first`);
  const slots = slotsOpt ?? ep.totalSlots ?? 1;
  const engine = ep.engine === "lmstudio" ? "capture" : ep.engine;
  const tv = performance.now();
  const v = await verifyEndpoint({ url: ep.url, model, key, engine: ep.engine, slots, perSlotCtx: ctx ?? null });
  const perSlotCtx = v.observed.perSlotCtx ?? ep.perSlotCtx;
  // the benchmark: what this server gives one stream and all its slots at once (not for one verify found unusable)
  const budget = o.benchSec ?? benchBudgetSec(env);
  const bench =
    budget > 0 && v.outcome !== "cannot-build"
      ? await benchmarkEndpoint({ url: ep.url, model, key, engine: ep.engine, slots, perSlotCtx, budgetSec: budget })
      : null;
  if (bench) o.log?.(benchLine(bench));
  const target: Target = {
    id: idFor(model, ep.url),
    model,
    quant: null,
    endpoint: ep.url,
    keyRef: o.apiKeyEnv ?? null,
    contextLimit: perSlotCtx ?? undefined,
    serving: { engine, endpoints: [{ url: ep.url, slots }], slots, perSlotCtx },
    checks: [],
    ...(bench ? { bench } : {}),
  };
  const saved = finish(store, target, v, o);
  return {
    outcome: v.outcome,
    saved: saved.saved,
    target: saved.target,
    checks: v.checks,
    summary: `${ep.engine} at ${ep.url}: ${v.summary}`,
    active: saved.active,
    observed: { engine: ep.engine, totalSlots: v.observed.totalSlots ?? ep.totalSlots, perSlotCtx },
    bench,
    timings: { totalMs: performance.now() - t0, verifyMs: performance.now() - tv },
  };
}

interface ProviderSetupOptions extends CommonSetupOptions {
  url: string;
  model: string;
  apiKeyEnv: string;
  /** How a refused key's message names where it came from (default "the value of VAR"). */
  keyHint?: string;
  env?: NodeJS.ProcessEnv;
}

export async function setupProvider(o: ProviderSetupOptions): Promise<SetupResult> {
  const t0 = performance.now();
  const env = o.env ?? process.env;
  const url = checkUrl(o.url, "--provider");
  if (!o.model) throw new SetupInputError("--provider needs --model ID (the provider's model name)");
  if (!o.apiKeyEnv) throw new SetupInputError("--provider needs --api-key-env VAR (the variable holding the provider key)");
  const key = keyFromEnv(o.apiKeyEnv, env);
  const slots = positiveInt(o.slots ?? 4, "--slots")!;
  const base = providerBase(url);
  const store = o.store ?? new TargetStore();
  const target: Target = {
    id: o.id ?? `api-${targetSlug({ model: o.model, quant: null })}`,
    model: o.model,
    quant: null,
    endpoint: base,
    keyRef: o.apiKeyEnv,
    serving: { engine: "api", endpoints: [{ url: base, slots }], slots, perSlotCtx: null },
    checks: [],
  };
  if (o.unverified) return saveUnverified(store, target, t0);
  const tv = performance.now();
  const v = await verifyEndpoint({
    url: base,
    model: o.model,
    key,
    engine: "api",
    slots,
    perSlotCtx: null,
    llamaExtensions: false,
    keyHint: o.keyHint ?? `the value of ${o.apiKeyEnv}`,
  });
  // nothing answered a chat completion: the reason (key, credit, model id, URL, rate limit, provider) and what to do
  if (v.checks[0] && !v.checks[0].passed) throw new SetupInputError(`verifying ${url} failed: ${v.checks[0].evidence}`);
  // the model's context as the provider lists it (OpenRouter, Together, Groq): opencode compacts by it (else 32,768)
  const listed = v.observed.perSlotCtx;
  const saved = finish(store, listed ? { ...target, contextLimit: listed } : target, v, o);
  return {
    outcome: v.outcome,
    saved: saved.saved,
    target: saved.target,
    checks: v.checks,
    summary: v.summary,
    active: saved.active,
    observed: { engine: "api", totalSlots: null, perSlotCtx: v.observed.perSlotCtx },
    timings: { totalMs: performance.now() - t0, verifyMs: performance.now() - tv },
  };
}
