/**
 * Model setup on the engine's typed API (the wizard and other clients): hardware as the planner sees it, the catalog
 * with this machine's fit per entry, and the fit itself — the same code paths as `ocw fit --json`.
 */
import type { Price } from "../../shared/cost";
import { type CatalogView, FitInput, type FitResult } from "../../shared/fit";
import { randomBytes } from "node:crypto";
import { accessSync, constants, statSync } from "node:fs";
import path from "node:path";
import { noLlamaServerText, SetupCaptureInput, SetupJob, type SetupOutcome, SetupProviderInput, SetupStartInput } from "../../shared/setup";
import { SetupProviderKeyInput } from "../../shared/servers";
import { apiKeyFilePath, forgetApiKey, storeApiKey } from "./keys";
import { runStartJob } from "./start";
import { TargetStore } from "../store";
import type { LedgerRow } from "../../shared/ledger";
import { type SetupResult, SetupInputError, setupCapture, setupProvider } from "./setup";
import { detectHardware, type HardwareReport } from "../hardware";
import {
  CATALOG,
  DEFAULT_MIN_CTX,
  defaultSlots,
  devicesFromHardware,
  isSetupError,
  propose,
  rankByLedger,
  readHubSizes,
  refreshHubSizes,
  servedBy,
  SetupError,
  type SetupErrorData,
  withHubSizes,
} from "../models";
import { planFit, toolVerifiedModels } from "./fit-service";
import { findLlamaServer } from "./llama-server";

/** Bad input to a setup route: a setup error of kind "input" (code bad-input), with what was wrong as data. */
export class SetupApiInputError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("input", message, data);
    this.name = "SetupApiInputError";
  }
}

let cached: { at: number; hw: Promise<HardwareReport>; bin: string | null } | null = null;

/** Hardware detection is ~1 s of probes: shared by calls within 30 s. */
function hardware(): { hw: Promise<HardwareReport>; bin: string | null } {
  if (!cached || Date.now() - cached.at > 30_000) {
    let bin: string | null = null;
    try {
      bin = findLlamaServer();
    } catch {
      bin = null;
    }
    cached = { at: Date.now(), hw: detectHardware({ llamaServer: bin }), bin };
  }
  return cached;
}

export async function setupFit(input: FitInput, extra: { ledger?: readonly LedgerRow[] } = {}): Promise<FitResult> {
  const i = FitInput.parse(input ?? {});
  const { hw, bin } = hardware();
  try {
    const catalog = extra.ledger?.length ? rankByLedger(CATALOG, extra.ledger, targetModel()) : undefined;
    return await planFit({ model: i.model, slots: i.slots, minCtx: i.minCtx, allowSlow: i.allowSlow, mtp: i.mtp }, await hw, { llamaServer: bin, catalog });
  } catch (e) {
    if (isSetupError(e, "input")) throw new SetupApiInputError(e.message);
    throw e;
  }
}

/** A target id → the model it serves (the ledger's rows name targets). */
function targetModel(): (target: string) => string | null {
  let targets: { id: string; model: string }[] = [];
  try {
    targets = new TargetStore().list().targets;
  } catch {
    /* no store yet */
  }
  return (id) => targets.find((t) => t.id === id)?.model ?? null;
}

export async function setupHardware(): Promise<FitResult["hardware"]> {
  return (await setupFit({})).hardware;
}

export async function setupCatalog(input: { slots?: number; minCtx?: number }): Promise<CatalogView[]> {
  const { hw, bin } = hardware();
  const { dev } = devicesFromHardware(await hw, bin);
  const slots = input.slots ?? defaultSlots(dev.gpus.length);
  const minCtx = input.minCtx ?? DEFAULT_MIN_CTX;
  const verified = toolVerifiedModels();
  // real file sizes from the Hub's listing when online (kept for later plans); offline, the catalog's figures
  await refreshHubSizes(CATALOG).catch(() => null);
  return withHubSizes(CATALOG, readHubSizes()).map((e) => {
    const p =
      servedBy(e, "llama.cpp") && e.quants.length ? propose(dev, slots, minCtx, verified, [{ ...e, autoPick: true }], undefined, { named: e.name }) : null;
    return {
      id: e.id,
      name: e.name,
      repo: e.repo,
      source: e.source,
      released: e.released,
      license: e.license,
      contextLength: e.contextLength,
      totalParamsB: e.totalParamsB,
      activeParamsB: e.activeParamsB,
      quants: e.quants.map((q) => ({ quant: q.quant, bytes: q.bytes, sizeNote: q.sizeNote, derived: !!q.derived })),
      toolCalling: { ...e.toolCalling, status: verified(e.id) ? "verified" : "unverified" },
      unverified: e.unverified,
      fit: p?.pick
        ? { quant: p.pick.quant ?? "", placement: p.pick.placement, slots: p.pick.slots, ctxPerSlot: p.pick.ctxPerSlot, reason: p.pick.reason }
        : null,
      // the planner's problem, said of this entry (propose's `named`)
      fitProblem: p?.pick
        ? null
        : !p
          ? `${e.name} is served by vLLM / SGLang only (no GGUF in the catalog): ocw setup --runtime vllm --model ${e.id} on datacenter GPUs`
          : !dev.gpus.length && e.activeParamsB > 5.5
            ? `${e.name}: ${e.activeParamsB}B active parameters decode too slowly on a CPU (the planner runs only small-active MoE models there); use a GPU machine or an API provider`
            : (p.problem ?? ""),
    };
  });
}

/** The engine reads keys from its own environment: say so when a named variable is missing there. */
function inputError(e: unknown): never {
  if (e instanceof SetupInputError) {
    const m = e.message
      .replace(
        /environment variable (\w+) is not set; export it with the endpoint's key, or omit --api-key-env/,
        "environment variable $1 is not set in the engine's environment: export it where the engine starts (then `ocw stop` and start it again), or leave the key field empty for a server without a key",
      )
      .replace(/pass --api-key-env VAR with VAR holding it/, "name the environment variable that holds its key")
      .replace(/; pass one of those with --model/, "; pick one of those");
    throw new SetupApiInputError(m);
  }
  throw e;
}

function outcome(r: SetupResult): SetupOutcome {
  return {
    outcome: r.outcome,
    saved: r.saved ?? true,
    active: r.active,
    target: r.target,
    checks: r.checks,
    summary: r.summary,
    observed: r.observed ?? null,
    ms: Math.round(r.timings.totalMs),
    ...(r.bench !== undefined ? { bench: r.bench } : {}),
  };
}

/**
 * What every setup route passes alike: the person's choices from the input, no cannot-build save, no prompts, the
 * target store, and the engine's own environment.
 */
function routeOptions(i: { url: string; slots?: number; id?: string; acceptUnderpowered: boolean; unverified: boolean }, store: TargetStore) {
  return {
    url: i.url,
    slots: i.slots,
    id: i.id,
    acceptUnderpowered: i.acceptUnderpowered,
    unverified: i.unverified,
    saveCannotBuild: false,
    yes: true,
    store,
    env: process.env,
  };
}

/** setup.capture: verify a running server, then save it (a cannot-build result saves nothing); or save it unverified by choice. */
export async function setupCaptureApi(input: SetupCaptureInput, store: TargetStore): Promise<SetupOutcome> {
  const i = SetupCaptureInput.parse(input);
  try {
    return outcome(await setupCapture({ ...routeOptions(i, store), model: i.model, apiKeyEnv: i.apiKeyEnv, ctx: i.ctx, benchSec: i.benchSec }));
  } catch (e) {
    inputError(e);
  }
}

/** setup.provider: verify an API provider with the key named, then save it; or save it unverified by choice. */
export async function setupProviderApi(input: SetupProviderInput, store: TargetStore): Promise<SetupOutcome> {
  const i = SetupProviderInput.parse(input);
  try {
    return outcome(withPrice(store, i.price, await setupProvider({ ...routeOptions(i, store), model: i.model, apiKeyEnv: i.apiKeyEnv })));
  } catch (e) {
    inputError(e);
  }
}

/** A saved provider target keeps the price the wizard read from the provider's model list (costs use it). */
function withPrice(store: TargetStore, price: Price | undefined, r: SetupResult): SetupResult {
  if (!price || !r.saved) return r;
  return { ...r, target: store.save({ ...r.target, price }, r.active) };
}

/** The variable a typed key is handed to verify under: the engine's own environment is not changed. */
const TYPED_KEY_VAR = "OCW_WIZARD_TYPED_KEY";

/**
 * setup.providerKey: an API provider verified with a key the person typed; once saved, the key is stored (the OS
 * keychain, else a 0600 file in the state dir; engine/serving/keys.ts) and the target refers to it (`keyStore` /
 * `keyFile`) — no environment variable needed,
 * the key never in targets.json, argv, a log or an event. A cannot-build result saves nothing, the key included.
 */
export async function setupProviderKeyApi(input: SetupProviderKeyInput, store: TargetStore): Promise<SetupOutcome> {
  const i = SetupProviderKeyInput.parse(input);
  let r: SetupResult;
  try {
    r = await setupProvider({
      ...routeOptions(i, store),
      model: i.model,
      apiKeyEnv: TYPED_KEY_VAR,
      keyHint: "the key typed",
      env: { ...process.env, [TYPED_KEY_VAR]: i.key },
    });
  } catch (e) {
    if (e instanceof SetupInputError) throw new SetupApiInputError(e.message.replaceAll(TYPED_KEY_VAR, "the key typed"));
    throw e;
  }
  if (r.saved) {
    // the OS keychain where one answers, else a 0600 file in the state dir (the same store as targets.setKey)
    const where = storeApiKey(r.target.id, i.key);
    r = { ...r, target: store.save({ ...r.target, keyRef: null, ...where }, r.active) };
  }
  return outcome(withPrice(store, i.price, r));
}

/** The model starts the engine runs (setup.start): the latest few, one running at a time. */
const jobs = new Map<string, { job: SetupJob; abort: AbortController }>();

/**
 * setup.start: runs the phases in the background and returns the job as it begins; every change is `publish`ed
 * (the engine sends it as a `setup` event). One start at a time: a second is refused while one runs.
 */
export function setupStartApi(input: SetupStartInput, store: TargetStore, publish: (job: SetupJob) => void, opts: { readyTimeoutMs?: number } = {}): SetupJob {
  const i = SetupStartInput.parse(input ?? {});
  if (i.llamaServer) checkLlamaServerPath(i.llamaServer);
  const running = [...jobs.values()].find((j) => j.job.state === "running");
  if (running)
    throw new SetupApiInputError(
      `a model start is already running (job ${running.job.jobId}, ${running.job.model ?? "planning"}); wait for it or cancel it (Ctrl-C in the \`ocw setup\` that started it, or Cancel in Setup)`,
    );
  const jobId = randomBytes(6).toString("hex");
  const abort = new AbortController();
  let first: SetupJob | null = null;
  const entry = { job: null as unknown as SetupJob, abort };
  const update = (job: SetupJob) => {
    entry.job = job;
    // a start may have installed a runtime (or loaded GPUs): the next plan detects afresh
    if (job.state !== "running") cached = null;
    first ??= job;
    publish(job);
  };
  // the first update is synchronous (the plan phase begins before any await)
  void runStartJob({
    input: i,
    store,
    ...(i.llamaServer ? { llamaServer: i.llamaServer } : {}),
    onUpdate: update,
    signal: abort.signal,
    jobId,
    readyTimeoutMs: opts.readyTimeoutMs,
  }).then(update, (e) => {
    update({
      ...entry.job,
      state: "failed",
      failure: { phase: "plan", kind: "other", cause: (e as Error).message, logLine: null, remedy: "report this with the engine's log", logFile: null },
    });
  });
  jobs.set(jobId, entry);
  for (const k of [...jobs.keys()].slice(0, -10)) jobs.delete(k);
  return SetupJob.parse(first ?? entry.job);
}

/** A llama-server path the person typed: an absolute path to an executable file on the engine's machine, or a clear error. */
function checkLlamaServerPath(p: string): void {
  if (!path.isAbsolute(p)) throw new SetupApiInputError(`the llama-server path must be absolute on the engine's machine (got "${p}")`);
  let st;
  try {
    st = statSync(p);
  } catch {
    // how to do without the path is each client's to say (missingLlamaServer / noLlamaServerText, shared/setup.ts)
    throw new SetupApiInputError(noLlamaServerText(p), { field: "llamaServer", missing: p });
  }
  if (!st.isFile())
    throw new SetupApiInputError(
      `${p} is ${st.isDirectory() ? "a folder" : "not a file"}: give the llama-server binary itself (e.g. …/build/bin/llama-server)`,
    );
  try {
    accessSync(p, constants.X_OK);
  } catch {
    throw new SetupApiInputError(`${p} is not executable: chmod +x it, or give the llama-server binary`);
  }
}

/** setup.job: one job (by id) or the latest; null when none ran since the engine started. */
export function setupJobApi(jobId?: string): SetupJob | null {
  if (jobId) {
    const j = jobs.get(jobId);
    if (!j) throw new SetupApiInputError(`no model start ${jobId} (jobs are kept while the engine runs)`);
    return j.job;
  }
  return [...jobs.values()].at(-1)?.job ?? null;
}

/** setup.cancel: stops a running start between phases (a download stops at once; its bytes stay for a resume). */
export function setupCancelApi(jobId: string): SetupJob {
  const j = jobs.get(jobId);
  if (!j) throw new SetupApiInputError(`no model start ${jobId}`);
  if (j.job.state !== "running") throw new SetupApiInputError(`job ${jobId} is not running (${j.job.state})`);
  j.abort.abort();
  return j.job;
}

/**
 * targets.setKey (Setup's key field, `ocw target key`): stores the API key given for a target — the OS keychain, else a
 * 0600 file of the state dir — or, empty, forgets it. The key is never returned, logged, put in targets.json or an
 * event; a running opencode server's key gateway sends it from its next worker on.
 */
export function setTargetKey(store: TargetStore, id: string, given: string): { stored: "keychain" | "file" | "none" } {
  const t = store.get(id);
  if (!t) throw new SetupApiInputError(`no target "${id}". Run \`ocw targets\` to list them.`);
  if (t.keyFile && t.keyFile !== apiKeyFilePath(t.id))
    throw new SetupApiInputError(`target "${t.id}" is a server the engine started with its own generated key: no key to set`);
  const key = given.trim();
  if (/[\r\n]/.test(key)) throw new SetupApiInputError("the key must be one line");
  if (!key) {
    forgetApiKey(t.id);
    const typed = t.keyFile && t.keyFile === apiKeyFilePath(t.id);
    store.save({ ...t, keyStore: null, ...(typed ? { keyFile: null } : {}) });
    return { stored: "none" };
  }
  const where = storeApiKey(t.id, key);
  store.save({ ...t, ...where });
  return { stored: where.keyStore === "keychain" ? "keychain" : "file" };
}
