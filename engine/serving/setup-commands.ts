/**
 * The engine's side of `ocw fit`, `ocw doctor` and `ocw serving stop` (issue 31: a client imports only the API client,
 * shared/ and pure modules): what those commands used to compute in the CLI's own process, here behind the API
 * (setup.estimate, setup.plan, setup.doctor, servers.stopRecorded). The CLI reads its flags and prints; the figures,
 * the files read, the probes and the processes stopped are the engine's. Tests call these functions directly (with
 * hardware or a store of their own) as the commands' port (test/setup-port.ts).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { FitFileInput, type FitResult, FitPlanInput } from "../../shared/fit";
import { budgetsFromReport, detectHardware, type HardwareReport, parseGpuSpec } from "../hardware";
import {
  defaultSlots,
  type DeviceBudget,
  type Estimate,
  estimate,
  GiB,
  hparamsFromMetadata,
  type KvCacheType,
  loadGguf,
  loadMetadataFile,
  MiB,
  modelFromInfo,
  type ModelInfo,
  type PlanDevices,
  planModel,
  SetupError,
} from "../models";
import { limitSetup, sandboxStatus } from "../sandbox";
import type { TargetStore } from "../store";
import { planFit, safeFindLlamaServer } from "./fit-service";
import { findLlamaServer } from "./llama-server";
import { listServing, setupCapture, setupProvider, stopServing } from "./setup";
import { storeApiKey } from "./keys";
import { onPath } from "./runtime-adapters";
import { setupCapturePool } from "./pool";
import { SetupVerifyInput } from "../../shared/setup";
import { FIRST_ANSWER_TOKENS, MIN_SLOT_CTX, OPENCODE_FIRST_REQUEST_TOKENS } from "./verify";
import { counted } from "../../shared/words";

const fmt = (b: number | null) => (b === null ? "?" : b >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(2)} MiB`);

/** A flag the command cannot use: a setup error of kind "input" (exit 2). */
function inputError(message: string): never {
  throw new SetupError("input", message);
}

/** A path as the CLI gave it, read relative to its working directory (URLs and hf: refs as they are). */
function local(p: string, cwd: string | undefined): string {
  return cwd && !/^(https?:\/\/|hf:)/i.test(p) && !path.isAbsolute(p) ? path.resolve(cwd, p) : p;
}

/** The file's model info, shown as the person named it (the source and any message say the path as typed). */
async function modelInfo(i: FitFileInput): Promise<ModelInfo> {
  const given = (i.metadata ?? i.gguf)!;
  const file = local(given, i.cwd);
  try {
    const info = i.metadata ? loadMetadataFile(file) : await loadGguf(file);
    return { ...info, source: info.source === file ? given : info.source };
  } catch (e) {
    if (e instanceof Error && file !== given) e.message = e.message.split(file).join(given);
    throw e;
  }
}

interface LlamaFitParams {
  bin: string;
  args: string[];
  devices: { device: string; modelMiB: number; contextMiB: number; computeMiB: number }[];
  note: string | null;
  error: string | null;
}

/** Confirms with llama.cpp itself: `llama-fit-params -m FILE … -fitp on` prints `DEVICE model context compute` in MiB. */
async function llamaFitParams(file: string, e: Estimate, llamaServer?: string | null): Promise<LlamaFitParams | null> {
  const server = llamaServer ?? safeFindLlamaServer();
  if (!server) return null;
  const bin = path.join(path.dirname(server), process.platform === "win32" ? "llama-fit-params.exe" : "llama-fit-params");
  if (!existsSync(bin)) return null;
  // llama-fit-params has no --kv-unified: a unified pool of n_ctx cells is sized like one sequence of n_ctx
  const args = [
    "-m",
    file,
    "-c",
    String(e.nCtx),
    "-np",
    String(e.kvUnified ? 1 : e.slots),
    "-ub",
    String(e.ubatch),
    "-fa",
    e.flashAttn ? "on" : "off",
    "-fitp",
    "on",
  ];
  if (e.cacheTypeK !== "f16") args.push("-ctk", e.cacheTypeK);
  if (e.cacheTypeV !== "f16") args.push("-ctv", e.cacheTypeV);
  const r = await execa(bin, args, { reject: false, timeout: 60_000, stdin: "ignore" });
  const devices = String(r.stdout ?? "")
    .split("\n")
    .map((l) => /^(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ device: m[1]!, modelMiB: Number(m[2]), contextMiB: Number(m[3]), computeMiB: Number(m[4]) }));
  return {
    bin,
    args,
    devices,
    note: e.kvUnified && e.slots > 1 ? "unified KV checked as one sequence" : null,
    error:
      r.exitCode === 0
        ? null
        : (String(r.stderr ?? "")
            .trim()
            .split("\n")
            .at(-1) ?? `exit ${r.exitCode}`),
  };
}

/** `ocw fit --gguf/--metadata`: the estimate of one file on this machine (or --gpus), llama.cpp's own fit, the planner's pick. */
export async function fitFile(input: FitFileInput, o: { hardware?: HardwareReport } = {}) {
  const i = FitFileInput.parse(input);
  if (!!i.metadata === !!i.gguf) inputError("pass exactly one of --metadata FILE.json or --gguf PATH_OR_URL");
  let gpus: DeviceBudget[];
  let hostFree: number;
  let hwNote: string;
  if (i.gpus && i.gpus !== "auto") {
    let spec: ReturnType<typeof parseGpuSpec>;
    try {
      spec = parseGpuSpec(i.gpus);
    } catch (e) {
      return inputError((e as Error).message);
    }
    gpus = budgetsFromReport({ gpus: spec, ram: { totalBytes: 0, freeBytes: 0 } }).gpus;
    const hw = o.hardware ?? (await detectHardware());
    hostFree = hw.ram.freeBytes;
    hwNote = `--gpus ${i.gpus}`;
  } else {
    const hw = o.hardware ?? (await detectHardware({ llamaServer: safeFindLlamaServer() }));
    const b = budgetsFromReport(hw);
    gpus = b.gpus;
    hostFree = b.hostFreeBytes;
    hwNote = gpus.length ? gpus.map((g) => `${g.name} ${fmt(g.freeBytes)} free`).join(", ") : `CPU only, ${fmt(hostFree)} RAM free`;
  }
  let info: ModelInfo;
  try {
    info = await modelInfo(i);
  } catch (e) {
    return inputError((e as Error).message);
  }
  const h = hparamsFromMetadata(info.metadata);
  // no --parallel (or -1, auto): the slots `ocw fit` and `ocw setup` plan here — 1 on a CPU only, where llama-server's
  // own auto would take 4 — so that the estimate, the recommendation and setup agree
  const cpuDefault = (i.parallel === undefined || i.parallel < 0) && !gpus.length;
  const e: Estimate = estimate(h, info.tensors, {
    ctx: i.ctx,
    parallel: cpuDefault ? defaultSlots(0) : i.parallel,
    kvUnified: i.kvUnified,
    cacheTypeK: i.cacheTypeK as KvCacheType | undefined,
    cacheTypeV: i.cacheTypeV as KvCacheType | undefined,
    ubatch: i.ubatch,
    flashAttn: i.flashAttn,
    gpus,
  });
  if (cpuDefault) e.warnings.push(`CPU only: ${e.slots} slot by default, as \`ocw setup\` plans (decode speed is shared by all slots); --parallel N for more`);
  const slots = e.slots;
  // a slot below OpenCode's first request + its answer is one verify fails (no worker can start): never recommended
  const minCtx = i.minCtx ?? MIN_SLOT_CTX;
  // the planner's answer for this file on this machine (or --gpus): the same chooser as `ocw fit --model FILE`
  const dev: PlanDevices = { gpus: gpus.map((g, n) => ({ ...g, runtimeId: /^[A-Za-z]+\d+$/.test(g.name) ? g.name : `GPU${n}` })), hostFreeBytes: hostFree };
  const gguf = i.gguf ? local(i.gguf, i.cwd) : null;
  const m = modelFromInfo(info, i.gguf ?? i.metadata!, i.gguf ? [existsSync(gguf!) ? "-m" : "-hf", i.gguf] : ["-m", `${h.name ?? "model"}.gguf`]);
  const pick = planModel(m, dev, slots, minCtx, false);
  const llamaCpp = i.llamaFit !== false && gguf && existsSync(gguf) ? await llamaFitParams(gguf, e) : null;
  return {
    model: {
      source: info.source,
      arch: h.arch,
      name: h.name,
      quant: info.quant,
      kind: h.kind,
      nLayer: h.nLayerAll,
      nCtxTrain: h.nCtxTrain,
      fileBytes: info.fileBytes,
    },
    ...e,
    hardware: hwNote,
    llamaCpp,
    recommendation: pick,
    recommendationProblem: pick
      ? null
      : minCtx > h.nCtxTrain
        ? `the model was trained for ${h.nCtxTrain} tokens of context; ${minCtx} per slot is beyond it${i.minCtx === undefined ? ` (what a worker's first turn needs: OpenCode's first request ≈ ${OPENCODE_FIRST_REQUEST_TOKENS} tokens plus ${FIRST_ANSWER_TOKENS} for its answer)` : ""}`
        : `does not fit ${counted(slots, "slot")} × ${minCtx} tokens here even with layers in RAM and a q4_0 cache: a smaller quant, fewer slots (--parallel ${Math.max(1, Math.floor(slots / 2))}), more memory, or an API provider (ocw setup --provider URL --model ID --api-key-env VAR)`,
  };
}

/** `ocw fit` (the planner): planFit with the CLI's options on freshly detected hardware (no ledger reordering). */
export async function fitPlan(input: FitPlanInput, o: { hardware?: HardwareReport; store?: TargetStore } = {}): Promise<FitResult> {
  const i = FitPlanInput.parse(input);
  const runtime = i.runtime ?? "llama.cpp";
  const bin = runtime === "vllm" || runtime === "sglang" ? null : safeFindLlamaServer();
  const hw = o.hardware ?? (await detectHardware({ llamaServer: bin }));
  return await planFit(
    { model: i.model, slots: i.slots, minCtx: i.minCtx, ctxPerSlot: i.ctxPerSlot, runtime: i.runtime, allowSlow: i.allowSlow, mtp: i.mtp },
    hw,
    {
      llamaServer: bin,
      store: o.store,
    },
  );
}

/** `ocw doctor`: hardware, the llama-server found, the model servers ocw started, and how workers are contained. */
export async function doctor(input: { llamaServer?: string; cwd?: string }, o: { hardware?: HardwareReport; env?: NodeJS.ProcessEnv } = {}) {
  // the engine's environment: the one its setup starts llama-server from (a client's own LLAMA_SERVER is not seen here)
  const env = o.env ?? process.env;
  let bin: string | null = null;
  let binNote = "";
  try {
    bin = findLlamaServer(input.llamaServer ? local(input.llamaServer, input.cwd) : undefined, env);
  } catch (e) {
    binNote = (e as Error).message;
  }
  const engineLlamaServer = env.LLAMA_SERVER || null;
  const llamaServerFrom = !bin
    ? null
    : input.llamaServer
      ? "--llama-server"
      : engineLlamaServer && path.resolve(engineLlamaServer) === path.resolve(bin)
        ? "the engine's LLAMA_SERVER"
        : `the engine's PATH, llama.cpp build cache or installed release${engineLlamaServer ? ` (the engine's LLAMA_SERVER, ${engineLlamaServer}, is not there)` : ""}`;
  const hw = o.hardware ?? (await detectHardware({ llamaServer: bin }));
  const serving = listServing();
  // How worker commands and checks are contained here, and what binds their processes and memory as a whole.
  const sb = sandboxStatus();
  const sandbox = { kind: sb.kind, reason: sb.reason, limits: sb.kind === "none" ? "prlimit only (no sandbox)" : limitSetup().label };
  // opencode's grep and glob tools run ripgrep: the one on its PATH (the engine's), else one it downloaded into its data
  // folder, else it downloads one from GitHub the first time a worker greps or globs: offline, those tools fail.
  const ripgrep = onPath("rg", env);
  return {
    hardware: hw,
    llamaServer: bin,
    /** ripgrep on the engine's PATH (opencode's grep and glob tools use it), or null. */
    ripgrep,
    ripgrepNote: ripgrep
      ? "found (opencode's grep and glob tools use it)"
      : "not on the engine's PATH: opencode downloads ripgrep from GitHub the first time a worker greps or globs; offline or behind a proxy a worker's grep and glob fail. Install ripgrep (apt install ripgrep, brew install ripgrep, dnf install ripgrep), then `ocw stop` so the engine starts again with it",
    /** Where the engine found it: --llama-server, its LLAMA_SERVER, or its search (PATH, build cache, installed release). */
    llamaServerFrom,
    /** The engine's own LLAMA_SERVER (null: unset); a client's may differ, and the engine's is the one that counts. */
    engineLlamaServer,
    llamaServerNote:
      binNote ||
      (bin
        ? "found"
        : "not found (the engine looked at its $LLAMA_SERVER, PATH and the build cache): `ocw setup` installs a pinned llama.cpp release, or pass --llama-server PATH"),
    serving,
    sandbox,
  };
}

/** `ocw serving stop [--target ID]`: the recorded model servers ocw started, stopped (a reused pid is left alone). */
export async function stopRecorded(target?: string) {
  const r = await stopServing(target);
  const line = (s: (typeof r.stopped)[number]) => ({ pid: s.pid, targetId: s.targetId, port: s.port });
  return { stopped: r.stopped.map(line), alreadyGone: r.alreadyGone.map((s) => ({ ...line(s), reused: r.reused.includes(s) })) };
}

/**
 * `ocw setup --capture URL… | --provider URL`: verify the endpoint(s) and save the target, on `store`; the lines
 * the verification logs, returned with its result (the command prints them).
 */
export async function setupVerify(input: SetupVerifyInput, store: TargetStore, baseEnv: NodeJS.ProcessEnv = process.env, log?: (l: string) => void) {
  const i = SetupVerifyInput.parse(input);
  const logs: string[] = [];
  const say = (l: string) => (log ? log(l) : logs.push(l));
  const env = i.apiKeyEnv && i.apiKey !== undefined ? { ...baseEnv, [i.apiKeyEnv]: i.apiKey } : baseEnv;
  const common = { model: i.model, apiKeyEnv: i.apiKeyEnv, slots: i.slots, yes: i.yes, acceptUnderpowered: i.acceptUnderpowered, store, env, log: say };
  const result =
    i.mode === "provider"
      ? await setupProvider({ ...common, url: i.urls[0]!, model: i.model ?? "", apiKeyEnv: i.apiKeyEnv ?? "" })
      : i.urls.length > 1
        ? await setupCapturePool(i.urls, { ...common, ctx: i.ctx, benchSec: i.benchSec })
        : await setupCapture({ ...common, url: i.urls[0]!, ctx: i.ctx, benchSec: i.benchSec });
  // The key was exported where `ocw` ran, not where the engine runs (an engine the desktop app or an earlier command
  // started): a target naming only the variable would be saved "built" yet start no worker. The engine keeps the key
  // verified as a typed one is kept (the OS keychain, else a 0600 file of its state dir; never targets.json).
  if (i.apiKeyEnv && i.apiKey && baseEnv[i.apiKeyEnv] !== i.apiKey && result.saved !== false) {
    const where = storeApiKey(result.target.id, i.apiKey);
    const target = store.save({ ...result.target, keyRef: null, ...where }, result.active);
    say(
      `the key in ${i.apiKeyEnv} is kept by the engine for ${target.id} (${where.keyStore === "keychain" ? "the OS keychain" : `a 0600 file, ${where.keyFile}`}): the engine's own environment ${baseEnv[i.apiKeyEnv] === undefined ? "does not hold" : "holds another value of"} ${i.apiKeyEnv}; change it with \`ocw target key ${target.id}\` (or Setup's key field)`,
    );
    return { result: { ...result, target }, logs };
  }
  return { result, logs };
}
