/**
 * `ocw setup`: fit → start (or capture) → verify → persist a target. Three modes: a llama.cpp server we start,
 * a captured endpoint already serving, an API provider.
 */
import path from "node:path";
import { createInterface } from "node:readline/promises";
import { type Target, targetSlug } from "../../shared/target";
import { budgetsFromReport, detectHardware, type HardwareReport } from "../hardware/detect";
import { hparamsFromMetadata } from "../models/hparams";
import { fit, type FitChoice } from "../models/fit";
import { loadGguf, type ModelInfo } from "../models/source";
import { readJson, writeJsonAtomic } from "../store/json-file";
import { stateDir } from "../store/paths";
import { TargetStore } from "../store/targets";
import { probeEndpoint } from "./capture";
import { generateKey, keyFilePath, storeKey } from "./keys";
import { buildLlamaArgs, findLlamaServer, freePort, type LoggedSizes, parseServerLog, pidAlive, startLlamaServer, stopPid } from "./llama-server";
import { isLoopback } from "./http";
import { type VerifyResult, verifyEndpoint } from "./verify";
import { readFileSync } from "node:fs";

/** Bad input: one line saying what to do; exit code 2. */
export class SetupInputError extends Error {}

export interface ServingRecord {
  targetId: string;
  pid: number;
  port: number;
  bin: string;
  args: string[];
  logFile: string;
  keyFile: string | null;
  startedAt: string;
}

const servingFile = () => path.join(stateDir(), "serving.json");

export function listServing(): ServingRecord[] {
  return readJson<ServingRecord[]>(servingFile(), []);
}

function saveServing(recs: ServingRecord[]): void {
  writeJsonAtomic(servingFile(), recs);
}

/** Stops servers we started (all, or one target's). Returns what was stopped. */
export async function stopServing(targetId?: string): Promise<{ stopped: ServingRecord[]; alreadyGone: ServingRecord[] }> {
  const recs = listServing();
  const pick = recs.filter((r) => !targetId || r.targetId === targetId);
  const stopped: ServingRecord[] = [];
  const alreadyGone: ServingRecord[] = [];
  for (const r of pick) {
    if (!pidAlive(r.pid)) alreadyGone.push(r);
    else if (await stopPid(r.pid)) stopped.push(r);
  }
  saveServing(recs.filter((r) => !pick.includes(r)));
  return { stopped, alreadyGone };
}

export interface SetupResult {
  outcome: VerifyResult["outcome"];
  target: Target;
  checks: Target["checks"];
  summary: string;
  active: boolean;
  fit?: Omit<FitChoice, "estimate"> & { estimate?: unknown };
  server?: { pid: number; port: number; logFile: string; readyMs: number; logged: LoggedSizes; args: string[] };
  timings: { totalMs: number; detectMs?: number; startMs?: number; verifyMs: number };
}

export interface CommonSetupOptions {
  yes?: boolean;
  acceptUnderpowered?: boolean;
  slots?: number;
  /** For interactive confirmation (tests inject). */
  confirm?: (question: string) => Promise<boolean>;
  store?: TargetStore;
  log?: (line: string) => void;
}

export interface LlamaSetupOptions extends CommonSetupOptions {
  model: string;
  ctx?: number;
  llamaServer?: string;
  hardware?: HardwareReport;
  readyTimeoutMs?: number;
}

function positiveInt(v: unknown, flag: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isInteger(n) || n < 1) throw new SetupInputError(`${flag} must be a positive integer (got ${JSON.stringify(v)})`);
  return n;
}

async function defaultConfirm(q: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new SetupInputError("not a terminal: pass --yes to proceed without confirmation");
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${q} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

function finish(
  store: TargetStore, target: Target, v: VerifyResult, o: CommonSetupOptions,
): { target: Target; active: boolean } {
  const t: Target = { ...target, outcome: v.outcome, verifiedAt: new Date().toISOString(), checks: v.checks };
  const activate = v.outcome === "built" || (v.outcome === "underpowered" && !!o.acceptUnderpowered);
  return { target: store.save(t, activate), active: activate };
}

export async function setupLlamaCpp(o: LlamaSetupOptions): Promise<SetupResult> {
  const t0 = performance.now();
  const log = o.log ?? (() => {});
  const slots = positiveInt(o.slots ?? 1, "--slots")!;
  const ctx = positiveInt(o.ctx, "--ctx");
  let bin: string | null;
  try {
    bin = findLlamaServer(o.llamaServer);
  } catch (e) {
    throw new SetupInputError((e as Error).message);
  }
  if (!bin) throw new SetupInputError("no llama-server found: pass --llama-server PATH, set LLAMA_SERVER, or run scripts/build-llama-server.sh");
  let info: ModelInfo;
  try {
    info = await loadGguf(o.model);
  } catch (e) {
    throw new SetupInputError((e as Error).message);
  }
  let h;
  try {
    h = hparamsFromMetadata(info.metadata);
  } catch (e) {
    throw new SetupInputError(`${o.model}: ${(e as Error).message}`);
  }
  const td = performance.now();
  const hw = o.hardware ?? (await detectHardware({ llamaServer: bin }));
  const detectMs = performance.now() - td;
  const budgets = budgetsFromReport(hw);
  const choice = fit({
    hparams: h, tensors: info.tensors, fileBytes: info.fileBytes ?? undefined, slots,
    minCtxPerSlot: ctx ?? Math.min(4096, h.nCtxTrain), maxCtxPerSlot: ctx ?? Math.min(h.nCtxTrain, 131072),
    gpus: budgets.gpus, hostFreeBytes: budgets.hostFreeBytes,
  });
  if (!choice.fits) throw new SetupInputError(`${path.basename(o.model)} cannot fit: ${choice.reason}. Try ${choice.suggestions.join("; ")}`);
  log(`fit: ${choice.reason}; llama-server ${choice.args.join(" ")}`);
  if (!o.yes && !(await (o.confirm ?? defaultConfirm)(`Start llama-server with ${choice.reason}?`))) {
    throw new SetupInputError("not confirmed; nothing started (pass --yes to skip the question)");
  }

  const store = o.store ?? new TargetStore();
  const model = h.name ?? path.basename(o.model).replace(/\.gguf$/i, "");
  const id = `llamacpp-${targetSlug({ model: path.basename(o.model).replace(/\.gguf$/i, ""), quant: null })}`;
  const keyFile = keyFilePath(id);
  const key = generateKey();
  storeKey(keyFile, key);
  // one server per target: replace a previous one
  await stopServing(id);
  const port = await freePort();
  const alias = targetSlug({ model, quant: info.quant });
  const args = buildLlamaArgs({
    model: path.resolve(o.model), alias, nGpuLayers: choice.nGpuLayers, ctx: choice.nCtx, parallel: slots, kvUnified: choice.kvUnified,
    cacheTypeK: choice.cacheTypeK, cacheTypeV: choice.cacheTypeV, flashAttn: choice.flashAttn, tensorSplit: choice.tensorSplit, port, noMmproj: true,
  });
  const logFile = path.join(stateDir(), "logs", `${id}.log`);
  const ts = performance.now();
  const started = await startLlamaServer({ bin, args, apiKey: key, logFile, port, detached: true, readyTimeoutMs: o.readyTimeoutMs });
  const startMs = performance.now() - ts;
  const recs = listServing().filter((r) => r.targetId !== id);
  saveServing([...recs, { targetId: id, pid: started.pid, port, bin, args, logFile, keyFile, startedAt: new Date().toISOString() }]);
  log(`llama-server pid ${started.pid} on 127.0.0.1:${port}, healthy in ${Math.round(started.readyMs)} ms`);

  const url = `http://127.0.0.1:${port}/v1`;
  const tv = performance.now();
  const v = await verifyEndpoint({ url, model: alias, key, engine: "llama.cpp", slots, perSlotCtx: choice.ctxPerSlot });
  const verifyMs = performance.now() - tv;
  const target: Target = {
    id, model: alias, quant: info.quant, endpoint: url, keyRef: "OCW_TARGET_API_KEY", keyFile,
    contextLimit: choice.ctxPerSlot,
    serving: { engine: "llama.cpp", endpoints: [{ url, slots }], slots, perSlotCtx: choice.ctxPerSlot },
    checks: [],
  };
  const saved = finish(store, target, v, o);
  const logged = parseServerLog(readFileSync(logFile, "utf8"));
  const { estimate, ...fitRest } = choice;
  return {
    outcome: v.outcome, target: saved.target, checks: v.checks, summary: v.summary, active: saved.active,
    fit: { ...fitRest, estimate: estimate ? { kvBytes: estimate.kvBytes, recurrentBytes: estimate.recurrentBytes, weightsBytes: estimate.weightsBytes, computeBytes: estimate.computeBytes, nCtx: estimate.nCtx, nCtxPerSlot: estimate.nCtxPerSlot } : undefined },
    server: { pid: started.pid, port, logFile, readyMs: started.readyMs, logged, args },
    timings: { totalMs: performance.now() - t0, detectMs, startMs, verifyMs },
  };
}

export interface CaptureSetupOptions extends CommonSetupOptions {
  url: string;
  apiKeyEnv?: string;
  env?: NodeJS.ProcessEnv;
  /** Intended per-slot context to check (optional). */
  ctx?: number;
}

function keyFromEnv(name: string | undefined, env: NodeJS.ProcessEnv): string | null {
  if (!name) return null;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new SetupInputError(`--api-key-env takes the NAME of an environment variable (got "${name.slice(0, 4)}…"), not the key itself`);
  const v = env[name];
  if (!v) throw new SetupInputError(`environment variable ${name} is not set; export it with the endpoint's key, or omit --api-key-env`);
  return v;
}

function checkUrl(url: string, flag: string): string {
  try {
    const u = new URL(url);
    if (!/^https?:$/.test(u.protocol)) throw new Error();
    return url.replace(/\/+$/, "");
  } catch {
    throw new SetupInputError(`${flag} needs an http(s) URL like http://127.0.0.1:8080 (got "${url}")`);
  }
}

export async function setupCapture(o: CaptureSetupOptions): Promise<SetupResult> {
  const t0 = performance.now();
  const env = o.env ?? process.env;
  const url = checkUrl(o.url, "--capture");
  const key = keyFromEnv(o.apiKeyEnv, env);
  const slotsOpt = positiveInt(o.slots, "--slots");
  const ctx = positiveInt(o.ctx, "--ctx");
  const ep = await probeEndpoint(url, key, 5000);
  if (!ep) throw new SetupInputError(`nothing OpenAI-compatible answers at ${url}; start the server or fix the URL`);
  if (ep.needsKey && !key) throw new SetupInputError(`${url} requires a key: pass --api-key-env VAR with VAR holding it`);
  const model = ep.models[0];
  if (!model) throw new SetupInputError(`${url}/v1/models lists no model; load one in the server first`);
  const slots = slotsOpt ?? ep.totalSlots ?? 1;
  const engine = ep.engine === "lmstudio" ? "capture" : ep.engine;
  const tv = performance.now();
  const v = await verifyEndpoint({ url: ep.url, model, key, engine, slots, perSlotCtx: ctx ?? null });
  const store = o.store ?? new TargetStore();
  const id = `capture-${targetSlug({ model: path.basename(model), quant: null })}-${new URL(ep.url).port || "80"}`;
  const target: Target = {
    id, model, quant: null, endpoint: ep.url, keyRef: o.apiKeyEnv ?? null,
    contextLimit: v.observed.perSlotCtx ?? ep.perSlotCtx ?? undefined,
    serving: { engine, endpoints: [{ url: ep.url, slots }], slots, perSlotCtx: v.observed.perSlotCtx ?? ep.perSlotCtx },
    checks: [],
  };
  const saved = finish(store, target, v, o);
  return {
    outcome: v.outcome, target: saved.target, checks: v.checks, summary: `${ep.engine} at ${ep.url}: ${v.summary}`, active: saved.active,
    timings: { totalMs: performance.now() - t0, verifyMs: performance.now() - tv },
  };
}

export interface ProviderSetupOptions extends CommonSetupOptions {
  url: string;
  model: string;
  apiKeyEnv: string;
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
  const base = /\/v1$/.test(url) ? url : `${url}/v1`;
  const tv = performance.now();
  const v = await verifyEndpoint({ url: base, model: o.model, key, engine: "api", slots, perSlotCtx: null, llamaExtensions: false });
  if (v.checks[0] && !v.checks[0].passed) throw new SetupInputError(`${url} is not reachable with that key: ${v.checks[0].evidence}`);
  const store = o.store ?? new TargetStore();
  const id = `api-${targetSlug({ model: o.model, quant: null })}`;
  const target: Target = {
    id, model: o.model, quant: null, endpoint: base, keyRef: o.apiKeyEnv,
    serving: { engine: "api", endpoints: [{ url: base, slots }], slots, perSlotCtx: null }, checks: [],
  };
  const saved = finish(store, target, v, o);
  return {
    outcome: v.outcome, target: saved.target, checks: v.checks, summary: v.summary, active: saved.active,
    timings: { totalMs: performance.now() - t0, verifyMs: performance.now() - tv },
  };
}

export { isLoopback };
