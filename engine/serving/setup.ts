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
import { generateKey, keyFilePath, readKey, storeKey } from "./keys";
import { buildLlamaArgs, findLlamaServer, freePort, LlamaSupervisor, type LoggedSizes, parseServerLog, pidAlive, signalablePid, startLlamaServer, stopPid, waitHealthy } from "./llama-server";
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { type VerifyResult, verifyEndpoint } from "./verify";
import { existsSync, readFileSync } from "node:fs";
import { downloadFile } from "../models/download";
import { hubHeaders, resolveUrl } from "../models/hf";
import { chooseFromRepo, localPathFor, parseRepoRef } from "../models/resolve";
import { hfUrl } from "../models/source";
import { installPrebuilt } from "./get-llama";

/** Bad input: one line saying what to do; exit code 2. */
export class SetupInputError extends Error {}

export interface ServingRecord {
  targetId: string;
  pid: number;
  /** The `ocw serving supervise` process that restarts the server after a crash (absent when unsupervised). */
  supervisorPid?: number | null;
  restarts?: number;
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

export function saveServing(recs: ServingRecord[]): void {
  writeJsonAtomic(servingFile(), recs);
}

/** Stops servers we started (all, or one target's). Returns what was stopped. */
export async function stopServing(targetId?: string): Promise<{ stopped: ServingRecord[]; alreadyGone: ServingRecord[] }> {
  const recs = listServing();
  const pick = recs.filter((r) => !targetId || r.targetId === targetId);
  const stopped: ServingRecord[] = [];
  const alreadyGone: ServingRecord[] = [];
  for (const r of pick) {
    // a record whose start failed may hold pid 0: never signal it (kill(0) is our own process group)
    if (!signalablePid(r.pid) && !signalablePid(r.supervisorPid)) {
      alreadyGone.push(r);
      continue;
    }
    // the supervisor first, so it does not restart what we stop
    if (signalablePid(r.supervisorPid) && pidAlive(r.supervisorPid)) await stopPid(r.supervisorPid, 8000);
    if (!pidAlive(r.pid)) (r.supervisorPid ? stopped : alreadyGone).push(r);
    else if (await stopPid(r.pid)) stopped.push(r);
  }
  saveServing(recs.filter((r) => !pick.includes(r)));
  return { stopped, alreadyGone };
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
  /** Target id (default derived from the model). */
  id?: string;
  /** Save a cannot-build capture/provider target (default true: the CLI records it, not active; the API does not). */
  saveCannotBuild?: boolean;
  /** Save without verifying, by the person's explicit choice (no request is made; recorded with no outcome). */
  unverified?: boolean;
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

export function finish(
  store: TargetStore, target: Target, v: VerifyResult, o: CommonSetupOptions,
): { target: Target; active: boolean; saved: boolean } {
  const t: Target = { ...target, outcome: v.outcome, verifiedAt: new Date().toISOString(), checks: v.checks };
  if (v.outcome === "cannot-build" && o.saveCannotBuild === false) return { target: t, active: false, saved: false };
  const activate = v.outcome === "built" || (v.outcome === "underpowered" && !!o.acceptUnderpowered);
  return { target: store.save(t, activate), active: activate, saved: true };
}

/** Saves a capture/provider target without any request, by the person's choice; it is made active. */
function saveUnverified(store: TargetStore, target: Target, t0: number): SetupResult {
  const t: Target = { ...target, outcome: undefined, verifiedAt: null, checks: [] };
  const saved = store.save(t, true);
  return {
    outcome: "unverified", saved: true, observed: null, target: saved, checks: [], active: true,
    summary: `saved ${saved.id} without verifying it (your choice): nothing was checked — not the URL, the key, the context, nor tool calls`,
    timings: { totalMs: performance.now() - t0, verifyMs: 0 },
  };
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
  if (!bin) {
    const remedy = "pass --llama-server PATH, set LLAMA_SERVER, or build one with scripts/build-llama-server.sh";
    if (!o.yes && !(await (o.confirm ?? defaultConfirm)("No llama-server found. Download the official prebuilt llama.cpp release for this machine?"))) {
      throw new SetupInputError(`no llama-server found: ${remedy}`);
    }
    try {
      const hw0 = o.hardware ?? (await detectHardware());
      const got = await installPrebuilt({ root: path.join(stateDir(), "llama"), gpus: hw0.gpus, onProgress: (a, p) => p.total && log(`download ${a}: ${((p.received / p.total) * 100).toFixed(0)} %`) });
      log(`installed llama.cpp ${got.tag} (${got.variant}, ${got.verified}) → ${got.bin}`);
      bin = got.bin;
    } catch (e) {
      throw new SetupInputError(`no llama-server found and ${(e as Error).message.replace(/^no prebuilt/, "no prebuilt")}; or ${remedy}`);
    }
  }
  if (!existsSync(o.model) && !parseRepoRef(o.model) && !hfUrl(o.model) && !/^https?:\/\//i.test(o.model)) {
    throw new SetupInputError(`no such file: ${o.model} (pass a .gguf path, hf:owner/repo/file.gguf, owner/repo[:QUANT] or an http(s) URL)`);
  }
  const td = performance.now();
  const hw = o.hardware ?? (await detectHardware({ llamaServer: bin }));
  const detectMs = performance.now() - td;
  const budgets = budgetsFromReport(hw);
  const want = {
    slots, minCtxPerSlot: ctx ?? 4096, maxCtxPerSlot: ctx ?? 131072,
    gpus: budgets.gpus, hostFreeBytes: budgets.hostFreeBytes,
  };
  let info: ModelInfo;
  let choice: FitChoice;
  let localModel: string;
  const downloads: { url: string; dest: string; size: number | null; sha256: string | null }[] = [];
  const repoRef = !existsSync(o.model) ? parseRepoRef(o.model) : null;
  try {
    if (repoRef) {
      const r = await chooseFromRepo(o.model, want);
      info = r.info;
      choice = r.choice;
      for (const f of r.quant.files) downloads.push({ url: resolveUrl(r.repo, f.path, r.rev), dest: localPathFor(stateDir(), r.repo, f.path), size: f.size, sha256: f.sha256 });
      localModel = downloads[0]!.dest;
      log(`${r.repo}: ${r.considered.map((c) => `${c.quant} ${c.fits ? c.placement : "no fit"}`).join(", ")} → ${r.quant.quant}`);
    } else {
      info = await loadGguf(o.model);
      localModel = o.model;
      const url = hfUrl(o.model) ?? (/^https?:\/\//i.test(o.model) ? o.model : null);
      if (url) {
        localModel = path.join(stateDir(), "models", path.basename(new URL(url).pathname));
        downloads.push({ url, dest: localModel, size: null, sha256: null });
      }
      const h0 = hparamsFromMetadata(info.metadata);
      choice = fit({ hparams: h0, tensors: info.tensors, fileBytes: info.fileBytes ?? undefined, ...want,
        minCtxPerSlot: ctx ?? Math.min(4096, h0.nCtxTrain), maxCtxPerSlot: ctx ?? Math.min(h0.nCtxTrain, 131072) });
    }
  } catch (e) {
    throw new SetupInputError(`${o.model}: ${(e as Error).message}`);
  }
  const h = hparamsFromMetadata(info.metadata);
  if (!choice.fits) throw new SetupInputError(`${path.basename(o.model)} cannot fit: ${choice.reason}. Try ${choice.suggestions.join("; ")}`);
  log(`fit: ${choice.reason}; llama-server ${choice.args.join(" ")}`);
  const dlBytes = downloads.reduce((a, d) => a + (d.size ?? 0), 0);
  const question = downloads.length
    ? `Download ${downloads.length} file(s)${dlBytes ? ` (${(dlBytes / 1024 ** 3).toFixed(1)} GiB)` : ""} and start llama-server with ${choice.reason}?`
    : `Start llama-server with ${choice.reason}?`;
  if (!o.yes && !(await (o.confirm ?? defaultConfirm)(question))) {
    throw new SetupInputError("not confirmed; nothing downloaded or started (pass --yes to skip the question)");
  }
  for (const d of downloads) {
    let last = 0;
    await downloadFile({ url: d.url, dest: d.dest, expectedSize: d.size, sha256: d.sha256, headers: hubHeaders(),
      onProgress: (p) => {
        if (p.total && p.received - last > p.total / 20) {
          last = p.received;
          log(`download ${path.basename(d.dest)}: ${((p.received / p.total) * 100).toFixed(0)} % (${(p.bytesPerSec / 1024 ** 2).toFixed(1)} MiB/s)`);
        }
      } }).catch((e) => {
      throw new SetupInputError((e as Error).message);
    });
  }

  const store = o.store ?? new TargetStore();
  const model = h.name ?? path.basename(o.model).replace(/\.gguf$/i, "");
  const id = `llamacpp-${targetSlug({ model: path.basename(localModel).replace(/\.gguf$/i, ""), quant: null })}`;
  const keyFile = keyFilePath(id);
  const key = generateKey();
  storeKey(keyFile, key);
  // one server per target: replace a previous one
  await stopServing(id);
  const port = await freePort();
  const alias = targetSlug({ model, quant: info.quant });
  const args = buildLlamaArgs({
    model: path.resolve(localModel), alias, nGpuLayers: choice.nGpuLayers, ctx: choice.nCtx, parallel: slots, kvUnified: choice.kvUnified,
    cacheTypeK: choice.cacheTypeK, cacheTypeV: choice.cacheTypeV, flashAttn: choice.flashAttn, tensorSplit: choice.tensorSplit, port, noMmproj: true,
  });
  const logFile = path.join(stateDir(), "logs", `${id}.log`);
  const ts = performance.now();
  const record: ServingRecord = { targetId: id, pid: 0, supervisorPid: null, port, bin, args, logFile, keyFile, startedAt: new Date().toISOString() };
  const sup = supervisorCommand();
  let started: { pid: number; readyMs: number };
  if (sup) {
    // a detached `ocw serving supervise` owns the server and restarts it after a crash
    saveServing([...listServing().filter((r) => r.targetId !== id), record]);
    try {
      started = await startSupervised(sup, record, o.readyTimeoutMs ?? 120_000);
    } catch (e) {
      // never leave a record without a live server: a later `ocw serving stop` must have nothing to signal
      await stopServing(id);
      throw e;
    }
  } else {
    started = await startLlamaServer({ bin, args, apiKey: key, logFile, port, detached: true, readyTimeoutMs: o.readyTimeoutMs });
    saveServing([...listServing().filter((r) => r.targetId !== id), { ...record, pid: started.pid }]);
  }
  const startMs = performance.now() - ts;
  log(`llama-server pid ${started.pid} on 127.0.0.1:${port}${sup ? " (supervised)" : ""}, healthy in ${Math.round(started.readyMs)} ms`);

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

/**
 * How to run `ocw serving supervise`: $OCW_SUPERVISOR_CMD (a JSON array, tests) or this very CLI when it runs
 * from the ocw bundle; null (unsupervised, detached server) otherwise or when OCW_SUPERVISE=0.
 */
export function supervisorCommand(env: NodeJS.ProcessEnv = process.env): string[] | null {
  if (env.OCW_SUPERVISE === "0") return null;
  if (env.OCW_SUPERVISOR_CMD) return JSON.parse(env.OCW_SUPERVISOR_CMD) as string[];
  const entry = process.argv[1] ?? "";
  return /ocw(\.mjs)?$/.test(path.basename(entry)) ? [process.execPath, entry] : null;
}

export async function startSupervised(cmd: string[], rec: ServingRecord, timeoutMs: number): Promise<{ pid: number; readyMs: number }> {
  const t0 = performance.now();
  mkdirSync(path.dirname(rec.logFile), { recursive: true, mode: 0o700 });
  const logFd = openSync(rec.logFile.replace(/\.log$/, ".supervisor.log"), "a", 0o600);
  const child = spawn(cmd[0]!, [...cmd.slice(1), "serving", "supervise", "--target", rec.targetId], {
    detached: true, stdio: ["ignore", logFd, logFd], env: { ...process.env, OCW_STATE_DIR: stateDir() },
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
  if (!r?.pid) throw new Error("the supervisor started llama-server but did not record it");
  return { pid: r.pid, readyMs: performance.now() - t0 };
}

/** `ocw serving supervise --target ID` (hidden): run and restart the recorded server until SIGTERM. */
export async function superviseServing(targetId: string): Promise<number> {
  const rec = listServing().find((r) => r.targetId === targetId);
  if (!rec) throw new SetupInputError(`no recorded server for target ${targetId}`);
  const update = (patch: Partial<ServingRecord>) => saveServing(listServing().map((r) => (r.targetId === targetId ? { ...r, ...patch } : r)));
  const apiKey = rec.keyFile ? readKey(rec.keyFile) : null;
  let sup: LlamaSupervisor | null = null;
  const done = new Promise<number>((resolve) => {
    sup = new LlamaSupervisor(
      { bin: rec.bin, args: rec.args, apiKey, logFile: rec.logFile, port: rec.port },
      {
        onReady: (pid) => update({ pid, supervisorPid: process.pid, restarts: sup?.restarts ?? 0 }),
        onRestart: (n, why, delay) => console.error(`supervise ${targetId}: restart #${n} in ${delay} ms (${why})`),
        onGiveUp: (why) => {
          console.error(`supervise ${targetId}: ${why}`);
          update({ supervisorPid: null });
          resolve(1);
        },
      },
    );
  });
  const stop = async () => {
    await sup?.stop();
    update({ supervisorPid: null });
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  await sup!.start();
  return done;
}

export interface CaptureSetupOptions extends CommonSetupOptions {
  url: string;
  apiKeyEnv?: string;
  env?: NodeJS.ProcessEnv;
  /** Intended per-slot context to check (optional). */
  ctx?: number;
  /** The served model to capture (default: the first /v1/models lists). */
  model?: string;
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
  const store = o.store ?? new TargetStore();
  const idFor = (model: string, endpoint: string) => o.id ?? `capture-${targetSlug({ model: path.basename(model), quant: null })}-${new URL(endpoint).port || "80"}`;
  if (o.unverified) {
    if (!o.model) throw new SetupInputError("name the served model to save a target without verifying it (nothing is asked of the server)");
    const endpoint = /\/v1$/.test(url) ? url : `${url}/v1`;
    const slots = slotsOpt ?? 1;
    return saveUnverified(store, {
      id: idFor(o.model, endpoint), model: o.model, quant: null, endpoint, keyRef: o.apiKeyEnv ?? null, contextLimit: ctx,
      serving: { engine: "capture", endpoints: [{ url: endpoint, slots }], slots, perSlotCtx: ctx ?? null }, checks: [],
    }, t0);
  }
  const ep = await probeEndpoint(url, key, 5000);
  if (!ep) throw new SetupInputError(`nothing OpenAI-compatible answers at ${url}; start the server or fix the URL`);
  if (ep.needsKey && !key) throw new SetupInputError(`${url} requires a key: pass --api-key-env VAR with VAR holding it`);
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
  const target: Target = {
    id: idFor(model, ep.url), model, quant: null, endpoint: ep.url, keyRef: o.apiKeyEnv ?? null,
    contextLimit: perSlotCtx ?? undefined,
    serving: { engine, endpoints: [{ url: ep.url, slots }], slots, perSlotCtx },
    checks: [],
  };
  const saved = finish(store, target, v, o);
  return {
    outcome: v.outcome, saved: saved.saved, target: saved.target, checks: v.checks, summary: `${ep.engine} at ${ep.url}: ${v.summary}`, active: saved.active,
    observed: { engine: ep.engine, totalSlots: v.observed.totalSlots ?? ep.totalSlots, perSlotCtx },
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
  const store = o.store ?? new TargetStore();
  const target: Target = {
    id: o.id ?? `api-${targetSlug({ model: o.model, quant: null })}`, model: o.model, quant: null, endpoint: base, keyRef: o.apiKeyEnv,
    serving: { engine: "api", endpoints: [{ url: base, slots }], slots, perSlotCtx: null }, checks: [],
  };
  if (o.unverified) return saveUnverified(store, target, t0);
  const tv = performance.now();
  const v = await verifyEndpoint({ url: base, model: o.model, key, engine: "api", slots, perSlotCtx: null, llamaExtensions: false });
  if (v.checks[0] && !v.checks[0].passed) throw new SetupInputError(`${url} is not reachable with that key: ${v.checks[0].evidence}`);
  const saved = finish(store, target, v, o);
  return {
    outcome: v.outcome, saved: saved.saved, target: saved.target, checks: v.checks, summary: v.summary, active: saved.active,
    observed: { engine: "api", totalSlots: null, perSlotCtx: v.observed.perSlotCtx },
    timings: { totalMs: performance.now() - t0, verifyMs: performance.now() - tv },
  };
}
