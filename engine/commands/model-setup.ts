/**
 * CLI contract for model setup (issue 3):
 *   ocw fit --metadata FILE.json | --gguf PATH_OR_URL [--ctx N] [--parallel N] [--kv-unified|--no-kv-unified]
 *           [--cache-type-k T] [--cache-type-v T] [--ubatch N] [--flash-attn on|off] [--gpus auto|SPEC] [--json]
 *   ocw setup --runtime llama.cpp [--model FILE_OR_HF --slots N] [--ctx N]   (no --model: the planner's pick) [--llama-server PATH] [--no-mtp] [--yes] [--accept-underpowered] [--json]
 *   ocw setup --capture URL [--api-key-env VAR] [--slots N] [--yes] [--accept-underpowered] [--json]
 *   ocw setup --provider URL --model ID --api-key-env VAR [--yes] [--json]
 *   ocw targets [--json] · ocw target use ID · ocw serving stop · ocw doctor [--json]
 * Exit codes: 0 ok/built, 3 underpowered, 2 bad input (one line saying what to do).
 */
import type { Command } from "commander";
import { type FitFileInput, type FitPlanInput, MAX_CTX_PER_SLOT, MAX_SLOTS } from "../../shared/fit";
import { existsSync } from "node:fs";
import path from "node:path";
import { missingLlamaServer, noLlamaServerText, type SetupJob, type SetupStartInput, type SetupVerifyInput } from "../../shared/setup";
import { benchText, isAdhocTarget } from "../../shared/target";
import { type ApiOutputs, type ClientKind, connect, type EngineClient } from "../api/client";
import { nextEvent } from "../api/follow";
import { ensureEngine, stateDir } from "../api/launcher";
import { checkEndpointUrl } from "./target-flags";
import { parseGpuSpec } from "../hardware/parse";
import { SetupError } from "../models/errors";
import { MiB, GiB } from "../models/estimate";
import { isKvCacheType, type KvCacheType } from "../models/ggml-types";
import { counted } from "../../shared/words";
import { showUntrusted } from "../../shared/untrusted";

interface CommandOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * What these commands ask the engine: its API (`enginePort`, the engine started when none runs). Tests give the
 * engine's own functions instead (engine/serving/setup-commands.ts), with hardware or a store of their own.
 */
export interface SetupPort {
  estimate(i: FitFileInput): Promise<ApiOutputs["setup"]["estimate"]>;
  plan(i: FitPlanInput): Promise<ApiOutputs["setup"]["plan"]>;
  doctor(i: { llamaServer?: string; cwd?: string }): Promise<ApiOutputs["setup"]["doctor"]>;
  targets(): Promise<ApiOutputs["targets"]["list"]>;
  targetsWithEndpoints(): Promise<ApiOutputs["targets"]["withEndpoints"]>;
  useTarget(id: string): Promise<ApiOutputs["targets"]["use"]>;
  /** A target's API key set (the engine keeps it: the OS keychain, else a 0600 file) or, empty, forgotten. */
  setKey(id: string, key: string): Promise<ApiOutputs["targets"]["setKey"]>;
  removeTarget(id: string): Promise<unknown>;
  /** `ocw target remove --ad-hoc`: the ad-hoc targets no worker needs any more removed; the rest with who holds them. */
  removeAdhocTargets(): Promise<ApiOutputs["targets"]["removeAdhoc"]>;
  stopServing(target?: string): Promise<ApiOutputs["servers"]["stopRecorded"]>;
  servers(): Promise<ApiOutputs["servers"]["list"]>;
  restartServer(id: string): Promise<ApiOutputs["servers"]["restart"]>;
  keepServer(id: string, keep: boolean): Promise<unknown>;
  /**
   * `ocw setup --runtime`: the start by phases, each change of the job to `onUpdate`, the job at its end. Unless
   * `yes`, `confirm` is asked with the plan (what will be downloaded and started) before anything is.
   */
  start(input: SetupStartInput, o: { yes: boolean; confirm: (j: StartQuestion) => Promise<boolean>; onUpdate: (j: SetupJob) => void }): Promise<SetupJob>;
  /** `ocw setup --capture/--provider`: verified and saved; its log lines to `log` (as they come, or after). */
  verify(input: SetupVerifyInput, log: (l: string) => void): Promise<ApiOutputs["setup"]["verify"]["result"]>;
}

/** What the question before a start shows: the planned model, quant, slots and context per slot. */
type StartQuestion = Pick<SetupJob, "model" | "quant" | "slots" | "ctxPerSlot">;

/** The start's answer when the person says no (as the engine's own start says it). */
const NOT_CONFIRMED = "not confirmed; nothing downloaded or started (pass --yes to skip the question)";

/**
 * The engine's start (setup.start), followed on its event stream until it ends. The question, when there is one, is
 * asked first with the engine's plan for the same flags (setup.plan), and the start keeps that plan's cache type.
 */
async function startOnEngine(
  client: EngineClient,
  input: SetupStartInput,
  o: { yes: boolean; confirm: (j: StartQuestion) => Promise<boolean>; onUpdate: (j: SetupJob) => void },
): Promise<SetupJob> {
  let i = input;
  if (!o.yes) {
    // the plan's refusal (a file that is not there, a context beyond the model's) is said before any question
    const { pick } = await client.setup.plan
      .query({ model: i.model, slots: i.slots, minCtx: i.minCtx, ctxPerSlot: i.ctx, runtime: i.runtime, allowSlow: i.allowSlow, mtp: i.mtp })
      .catch((e: Error) => {
        throw new InputError(e.message);
      });
    // no pick: the start itself ends in its plan phase with the planner's words, before any download
    if (pick) {
      const ok = await o.confirm({ model: pick.model, quant: pick.quant ?? null, slots: pick.slots, ctxPerSlot: pick.ctxPerSlot }).catch((e: Error) => {
        throw new InputError(e.message);
      });
      if (!ok) throw new InputError(NOT_CONFIRMED);
      if (pick.cacheType) i = { ...i, cacheType: pick.cacheType as SetupStartInput["cacheType"] };
    }
  }
  const { cursor } = await client.health.query();
  const first = await client.setup.start.mutate(i);
  o.onUpdate(first);
  if (first.state !== "running") return first;
  // Ctrl-C ends the start in the engine too (it would otherwise go on downloading for a command that is gone)
  const cancel = () => {
    // said, so the person knows what became of the server being started (the command used to end without a word)
    process.stderr.write("\nocw: Ctrl-C: the start is cancelled in the engine; a server it launched is stopped and no target is saved\n");
    void client.setup.cancel
      .mutate({ jobId: first.jobId })
      .catch(() => undefined)
      .finally(() => process.exit(130));
  };
  process.once("SIGINT", cancel);
  let last: SetupJob = first;
  try {
    await nextEvent(client, cursor, (e) => {
      if (e.type !== "setup" || e.job.jobId !== first.jobId) return false;
      o.onUpdate(e.job);
      last = e.job;
      return e.job.state !== "running";
    });
    return last;
  } finally {
    process.removeListener("SIGINT", cancel);
  }
}

/** The engine's API as a SetupPort: the user's engine, started when none runs, with `name` on every call. */
function enginePort(name: ClientKind): SetupPort {
  let client: Promise<EngineClient> | null = null;
  const c = () => (client ??= ensureEngine(stateDir()).then((lock) => connect(lock, name)));
  return {
    estimate: async (i) => (await c()).setup.estimate.query(i),
    plan: async (i) => (await c()).setup.plan.query(i),
    doctor: async (i) => (await c()).setup.doctor.query(i),
    targets: async () => (await c()).targets.list.query(),
    targetsWithEndpoints: async () => (await c()).targets.withEndpoints.query(),
    useTarget: async (id) => (await c()).targets.use.mutate({ id }),
    setKey: async (id, key) => (await c()).targets.setKey.mutate({ id, key }),
    removeTarget: async (id) => (await c()).targets.remove.mutate({ id }),
    removeAdhocTargets: async () => (await c()).targets.removeAdhoc.mutate(),
    stopServing: async (target) => (await c()).servers.stopRecorded.mutate(target ? { target } : {}),
    servers: async () => (await c()).servers.list.query(),
    restartServer: async (id) => (await c()).servers.restart.mutate({ id }),
    keepServer: async (id, keep) => (await c()).servers.keep.mutate({ id, keep }),
    start: async (input, o) => startOnEngine(await c(), input, o),
    verify: async (input, log) => {
      const { result, logs } = await (await c()).setup.verify.mutate(input);
      for (const l of logs) log(l);
      return result;
    },
  };
}

/**
 * The first line of a setup error's message when it is one of these kinds (any kind when none given): thrown here or
 * by the engine's own functions (a SetupError), or answered by the API (its `ocwKind`; a rejected input is "input").
 */
function setupFailure(err: unknown, kinds: string[] = []): string | null {
  const data = (err as { data?: { ocwKind?: string; code?: string } } | null)?.data;
  const kind = err instanceof SetupError ? err.kind : (data?.ocwKind ?? (data?.code === "BAD_REQUEST" ? "input" : undefined));
  if (!kind || (kinds.length && !kinds.includes(kind))) return null;
  // a --llama-server that names nothing: the engine leaves how to do without it to the client (the GUI says its field)
  const missing = missingLlamaServer(err);
  if (missing !== null) return noLlamaServerText(missing, "leave out --llama-server");
  return String((err as Error).message ?? err).split("\n")[0]!;
}

/** A flag the CLI cannot use: a setup error of kind "input" (exit 2). */
class InputError extends SetupError {
  constructor(message: string) {
    super("input", message);
    this.name = "InputError";
  }
}

function int(v: string | undefined, flag: string, min = 1, max?: number, unit = ""): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InputError(`${flag} must be an integer ≥ ${min} (got "${v}")`);
  if (max !== undefined && n > max) throw new InputError(`${flag} must be at most ${max}${unit} (got "${v}")`);
  return n;
}

function cacheType(v: string | undefined, flag: string): KvCacheType | undefined {
  if (v === undefined) return undefined;
  if (!isKvCacheType(v)) throw new InputError(`${flag} must be one of f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 (got "${v}")`);
  return v;
}

const fmt = (b: number | null) => (b === null ? "?" : b >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(2)} MiB`);

interface FitCommandOptions {
  metadata?: string;
  gguf?: string;
  ctx?: string;
  parallel?: string;
  kvUnified?: boolean;
  cacheTypeK?: string;
  cacheTypeV?: string;
  ubatch?: string;
  flashAttn?: string;
  gpus?: string;
  minCtx?: string;
  /** The planner's runtime: llama.cpp (default), or vllm / sglang (tensor × data parallel over the GPUs). */
  runtime?: string;
  /** The planner (no --metadata/--gguf): a catalog id, Hub repo[:QUANT], hf:/URL or local .gguf; absent = propose one. */
  model?: string;
  slots?: string;
  json?: boolean;
  /** `ocw setup --ctx`: exactly this context per slot (the planner still chooses quant, cache and placement). */
  ctxPerSlot?: string;
  /** Confirm with llama-fit-params when a llama.cpp build is found (default true). */
  llamaFit?: boolean;
  /** Plan models too slow for an agent (below 8 tokens/s per slot, estimated) instead of refusing them. */
  allowSlow?: boolean;
  /** commander's `--no-mtp`: false — no speculative decoding with the model's own MTP head (default true: on where it has one). */
  mtp?: boolean;
}

/** `ocw fit --gguf/--metadata`: the flags checked here, the estimate made by the engine (setup.estimate), printed here. */
export async function runFit(o: FitCommandOptions, port: SetupPort = enginePort("cli:ocw fit")): Promise<CommandOutput> {
  if (!o.metadata && !o.gguf) return runFitPlan(o, port);
  try {
    if (o.model) throw new InputError("--model goes without --metadata/--gguf (those print the detailed estimate of one file)");
    if (o.runtime && o.runtime !== "llama.cpp") throw new InputError("--runtime goes without --metadata/--gguf (those estimate one GGUF file for llama.cpp)");
    if (!!o.metadata === !!o.gguf) throw new InputError("pass exactly one of --metadata FILE.json or --gguf PATH_OR_URL");
    const parallelRaw = o.parallel === undefined ? undefined : Number(o.parallel);
    if (parallelRaw !== undefined && !(Number.isInteger(parallelRaw) && (parallelRaw >= 1 || parallelRaw === -1))) {
      throw new InputError(`--parallel must be a positive integer or -1 for auto (got "${o.parallel}")`);
    }
    const ctx = o.ctx === undefined ? undefined : int(o.ctx, "--ctx", 0);
    const ubatch = int(o.ubatch, "--ubatch");
    const cacheTypeK = cacheType(o.cacheTypeK, "--cache-type-k");
    const cacheTypeV = cacheType(o.cacheTypeV, "--cache-type-v");
    if (o.flashAttn !== undefined && !["on", "off", "auto"].includes(o.flashAttn))
      throw new InputError(`--flash-attn must be on, off or auto (got "${o.flashAttn}")`);
    if (o.gpus && o.gpus !== "auto") {
      try {
        parseGpuSpec(o.gpus);
      } catch (e) {
        throw new InputError((e as Error).message);
      }
    }
    const out = await port.estimate({
      metadata: o.metadata,
      gguf: o.gguf,
      cwd: process.cwd(),
      ctx,
      parallel: parallelRaw,
      kvUnified: o.kvUnified,
      cacheTypeK,
      cacheTypeV,
      ubatch,
      flashAttn: o.flashAttn as "on" | "off" | "auto" | undefined,
      gpus: o.gpus,
      minCtx: int(o.minCtx, "--min-ctx"),
      llamaFit: o.llamaFit,
    });
    if (o.json) return { code: 0, stdout: JSON.stringify(out, null, 2) + "\n", stderr: "" };
    const e = out;
    const h = out.model;
    const llamaCpp = out.llamaCpp;
    const pick = out.recommendation;
    const lines = [
      `${h.name ?? h.source} (${h.arch}, ${h.kind}${h.quant ? `, ${h.quant}` : ""})`,
      // one slot holds the whole context: its KV is neither unified nor split between slots
      `context: n_ctx ${e.nCtx}, ${e.slots === 1 ? "1 slot holds all of it" : `${counted(e.slots, "slot")} × ${e.nCtxPerSlot} per slot, KV ${e.kvUnified ? "unified" : "split"}`}${e.swaCells ? `, SWA window ${e.swaCells} cells` : ""}`,
      `KV cache ${fmt(e.kvBytes)} (K ${e.cacheTypeK} ${fmt(e.kvBytesK)}, V ${e.cacheTypeV} ${fmt(e.kvBytesV)}), recurrent state ${fmt(e.recurrentBytes)}`,
      `weights ${fmt(e.weightsBytes)}, compute ≈ ${fmt(e.computeBytes)} (estimate), output ${fmt(e.outputBytes)}`,
      ...e.perDevice
        .filter((d) => d.totalBytes > 0)
        .map(
          (d) =>
            `  ${d.device.padEnd(8)} ${String(d.layers).padStart(3)} layers${d.hasOutput ? " +out" : "     "}  ${fmt(d.totalBytes).padStart(11)}${d.freeBytes !== null ? ` of ${fmt(d.freeBytes)} free` : ""}`,
        ),
      ...(llamaCpp?.devices.length
        ? [
            `llama.cpp's own fit (llama-fit-params${llamaCpp.note ? `, ${llamaCpp.note}` : ""}): ${llamaCpp.devices.map((d) => `${d.device} model ${d.modelMiB} + context ${d.contextMiB} + compute ${d.computeMiB} MiB`).join("; ")} — ours: model ${fmt(e.weightsBytes)}, context ${fmt(e.kvBytes + e.recurrentBytes)}, compute ${fmt(e.computeBytes)} (llama-fit-params reserves compute for a full ubatch of logits, an upper bound)`,
          ]
        : []),
      `hardware: ${out.hardware}`,
      pick ? `recommended: ${pick.command}  (${pick.reason})` : `does not fit: ${out.recommendationProblem}`,
      ...e.warnings.map((w) => `note: ${w}`),
    ];
    return { code: 0, stdout: lines.join("\n") + "\n", stderr: "" };
  } catch (err) {
    const line = setupFailure(err, ["input", "model-source", "metadata", "estimate"]);
    if (line !== null) return { code: 2, stdout: "", stderr: `ocw: ${line}\n` };
    throw err;
  }
}

/**
 * `ocw fit [--model REPO|FILE] [--slots N] [--min-ctx TOKENS] --json` → {hardware, pick, alternatives, problem};
 * exit 0 with a pick, 3 with none (problem says what to change), 2 on bad input. The plan is the engine's
 * (setup.plan: `planFit`, fit-service.ts); this only reads the flags and prints.
 */
async function runFitPlan(o: FitCommandOptions, port: SetupPort = enginePort("cli:ocw fit")): Promise<CommandOutput> {
  try {
    const slots = int(o.slots ?? (o.parallel !== undefined && o.parallel !== "-1" ? o.parallel : undefined), "--slots", 1, MAX_SLOTS);
    // `--ctx` without --gguf/--metadata is the context per slot, as `ocw setup --ctx` (it was read from a field no flag
    // sets, so `ocw fit --ctx 65536`, or `--ctx abc`, was silently ignored).
    const ctxPerSlot = int(o.ctxPerSlot ?? o.ctx, "--ctx", 1024, MAX_CTX_PER_SLOT, " tokens");
    const minCtx = int(o.minCtx, "--min-ctx", 1024, MAX_CTX_PER_SLOT, " tokens");
    if (o.gpus && o.gpus !== "auto") throw new InputError("--gpus goes with --metadata/--gguf; the planner uses the detected hardware");
    const runtime = o.runtime ?? "llama.cpp";
    if (!["llama.cpp", "vllm", "sglang"].includes(runtime)) throw new InputError(`--runtime ${runtime} is not supported; use llama.cpp, vllm or sglang`);
    const out = await port.plan({
      // a file here is named to the engine by its absolute path (the engine's working directory is not this shell's)
      model: o.model && existsSync(o.model) ? path.resolve(o.model) : o.model,
      slots,
      minCtx,
      ctxPerSlot,
      runtime: o.runtime ? (runtime as "llama.cpp" | "vllm" | "sglang") : undefined,
      allowSlow: o.allowSlow,
      ...(o.mtp === false ? { mtp: false } : {}),
    });
    const code = out.pick ? 0 : 3;
    if (o.json) return { code, stdout: JSON.stringify(out, null, 2) + "\n", stderr: "" };
    const p = out.pick;
    const lines = [
      `hardware: ${out.hardware.gpus.length ? out.hardware.gpus.map((g) => `${g.name} ${fmt(g.freeBytes)} free`).join(", ") : "no GPU"}; RAM ${fmt(out.hardware.ramFreeBytes)} free`,
      ...out.hardware.notes.map((n) => `note: ${n}`),
      ...(p
        ? [
            `pick: ${p.model} ${p.quant ?? ""} — ${p.runtime}, ${counted(p.slots, "slot")} × ${p.ctxPerSlot} tokens, tool calling ${p.toolCalling}`,
            `  ${p.reason}`,
            ...(p.speed
              ? [
                  `  speed (estimated): ≈ ${p.speed.decodeTokPerSecPerSlot} tokens/s per slot with ${p.slots} busy, ${p.speed.decodeTokPerSecSingle ?? "?"} alone; prompt ≈ ${p.speed.prefillTokPerSec ?? "?"} tokens/s`,
                ]
              : []),
            ...p.devices.map((d) => `  ${d.name.padEnd(32)} ${fmt(d.plannedBytes).padStart(11)} of ${fmt(d.budgetBytes)}`),
            `  ${p.command}`,
            ...out.alternatives.map(
              (a) =>
                `alternative: ${a.model} ${a.quant ?? ""} (${a.runtime !== "llama.cpp" ? `${a.runtime}, tensor parallel ${a.parallel?.tensor} × data parallel ${a.parallel?.data}` : a.pool ? `${a.pool.replicas} replicas` : a.placement}, ${a.slots} × ${a.ctxPerSlot})`,
            ),
          ]
        : [`no fit: ${out.problem}`]),
      ...(out.refused ?? []).map(
        (r) => `refused as too slow: ${r.model} ${r.quant ?? ""} (≈ ${r.speed?.decodeTokPerSecPerSlot} tokens/s per slot × ${r.slots}; --allow-slow plans it)`,
      ),
    ];
    return { code, stdout: lines.join("\n") + "\n", stderr: "" };
  } catch (err) {
    const line = setupFailure(err);
    if (line !== null) return { code: 2, stdout: "", stderr: `ocw: ${line}\n` };
    throw err;
  }
}

/** --bench-sec: a whole number of seconds, 0 to 600 (undefined: the default). */
function benchSecOf(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 600) throw new InputError(`--bench-sec takes whole seconds from 0 to 600 (got "${v}")`);
  return n;
}

interface SetupCommandOptions {
  runtime?: string;
  model?: string;
  slots?: string;
  ctx?: string;
  llamaServer?: string;
  /** At least this context per slot (the planner may give more); --ctx is exactly. */
  minCtx?: string;
  /** One URL, or several: a pool target of endpoints serving the same model. */
  capture?: string | string[];
  provider?: string;
  apiKeyEnv?: string;
  yes?: boolean;
  acceptUnderpowered?: boolean;
  /** Plan a model too slow for an agent instead of refusing it. */
  allowSlow?: boolean;
  /** commander's `--no-mtp`: false — no speculative decoding with the model's own MTP head (default true: on where it has one). */
  mtp?: boolean;
  json?: boolean;
  /** Seconds the benchmark after start / capture may take (default OCW_SETUP_BENCH_SEC, 30); 0 skips it. */
  benchSec?: string;
}

/**
 * `ocw setup --runtime llama.cpp` without --model, and `--runtime vllm|sglang --model REPO`: the engine's start by
 * phases (engine/serving/start.ts), logged as it goes; the exit code as for setup (0 built, 3 underpowered, 2 otherwise).
 */
async function runStartCommand(
  o: SetupCommandOptions,
  slots: number | undefined,
  ctx: number | undefined,
  log: (l: string) => void,
  port: SetupPort,
): Promise<CommandOutput> {
  const minCtx = int(o.minCtx, "--min-ctx", 1024, MAX_CTX_PER_SLOT, " tokens");
  const fromEnv = !o.llamaServer && o.runtime === "llama.cpp" && process.env.LLAMA_SERVER ? process.env.LLAMA_SERVER : undefined;
  if (fromEnv && !existsSync(fromEnv))
    throw new InputError(`LLAMA_SERVER (${fromEnv}, from this shell) names no file: fix or unset it, or pass --llama-server PATH`);
  const llamaServer = o.llamaServer ?? fromEnv;
  if (ctx !== undefined && ctx < 1024) throw new InputError(`--ctx must be ≥ 1024 tokens per slot (got ${ctx})`);
  if (ctx !== undefined && minCtx !== undefined) throw new InputError("pass --ctx (exactly this per slot) or --min-ctx (at least this per slot), not both");
  // asked once the plan is known (what will be downloaded and started), before any download
  const confirm = async (j: StartQuestion): Promise<boolean> => {
    if (o.yes) return true;
    if (!process.stdin.isTTY) throw new InputError("not a terminal: pass --yes to download and start without a question");
    const { createInterface } = await import("node:readline/promises");
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const what = `${j.model}${j.quant ? ` ${j.quant}` : ""}${j.slots ? ` (${counted(j.slots, "slot")} × ${j.ctxPerSlot} tokens)` : ""} with ${o.runtime}`;
    try {
      return /^y(es)?$/i.test((await rl.question(`Download (when not on disk) and start ${what}? [y/N] `)).trim());
    } finally {
      rl.close();
    }
  };
  const seen = new Map<string, string>();
  let lastPct = -1;
  const job = await port.start(
    {
      runtime: o.runtime as "llama.cpp" | "vllm" | "sglang",
      // a file here is named to the engine by its absolute path (a repo, catalog id or URL as given)
      model: o.model && existsSync(o.model) ? path.resolve(o.model) : o.model,
      slots,
      ctx,
      minCtx,
      acceptUnderpowered: o.acceptUnderpowered,
      benchSec: benchSecOf(o.benchSec),
      ...(o.allowSlow ? { allowSlow: true } : {}),
      ...(o.mtp === false ? { mtp: false } : {}),
      // a path on this machine, given to the engine as an absolute one (the engine's checks name it so); without the
      // flag, this shell's LLAMA_SERVER: the engine's own environment is the one it was started with, which may lack it
      // (an engine `ocw doctor` or the app started), and the runtime phase would go to download a release instead
      ...(llamaServer ? { llamaServer: path.resolve(llamaServer) } : {}),
    },
    {
      yes: !!o.yes,
      confirm,
      onUpdate: (j) => {
        for (const p of j.phases) {
          const key = `${p.status}:${p.detail}`;
          // the plan is logged once it holds (bad input and no-fit end in one `ocw: …` line); failures and the phases
          // skipped after them are said by that last line
          const quiet =
            p.status === "pending" || p.status === "failed" || (p.name === "plan" && p.status === "running") || (p.status === "skipped" && !p.detail);
          if (seen.get(p.name) !== key && !quiet) {
            seen.set(p.name, key);
            log(`${p.name}: ${p.status}${p.ms !== null ? ` (${p.ms} ms)` : ""}${p.detail ? ` — ${p.detail}` : ""}`);
          }
          const pr = p.progress;
          if (p.status === "running" && pr?.total) {
            const pct = Math.floor((pr.done / pr.total) * 20) * 5;
            if (pct !== lastPct) {
              lastPct = pct;
              log(
                `${p.name} ${pct} %${pr.file ? ` ${pr.file}${pr.files && pr.files > 1 ? ` (${(pr.fileIndex ?? 0) + 1}/${pr.files})` : ""}` : ""}${pr.bytesPerSec ? `, ${(pr.bytesPerSec / MiB).toFixed(1)} MiB/s` : ""}${pr.etaSec !== null ? `, ${Math.ceil(pr.etaSec)} s left` : ""}`,
              );
            }
          }
        }
      },
    },
  );
  if (job.plannedCommand) log(`command: ${job.launchedCommand ?? job.plannedCommand}`);
  const r = job.result;
  if (!r) {
    const f = job.failure!;
    // nothing fits: the planner's problem says what to change, as `ocw fit` does
    if (f.kind === "no-fit") return { code: 2, stdout: "", stderr: `ocw: ${f.cause}\n` };
    if (f.kind === "not-confirmed") throw new InputError(f.cause);
    return {
      code: 2,
      stdout: o.json ? JSON.stringify({ job }, null, 2) + "\n" : "",
      stderr: `ocw: ${f.phase} failed (${f.kind}): ${f.cause}${f.logLine && !f.cause.includes(f.logLine) ? ` [log: ${f.logLine}]` : ""} — ${f.remedy}\n`,
    };
  }
  const code = r.outcome === "built" ? 0 : r.outcome === "underpowered" ? 3 : 2;
  const text = o.json
    ? JSON.stringify(
        {
          outcome: r.outcome,
          target: r.target,
          checks: r.checks,
          summary: r.summary,
          active: r.active,
          server: job.servers?.[0] ?? null,
          bench: r.bench ?? null,
          job,
        },
        null,
        2,
      ) + "\n"
    : [
        `${r.outcome.toUpperCase()}: ${r.summary}`,
        ...r.checks.map((c) => `  [${c.passed ? "x" : " "}] ${c.name.padEnd(11)} ${c.evidence}`),
        ...(job.placement ? [`placement: ${job.placement.passed ? "as planned" : "NOT as planned"} — ${job.placement.evidence.join("; ")}`] : []),
        ...(r.bench ? [`speed: ${benchText(r.bench)}`] : []),
        ...(job.failure ? [`warning: ${job.failure.cause} — ${job.failure.remedy}`] : []),
        `target ${r.target.id} saved${r.active ? " and active" : r.outcome === "underpowered" ? " (not active: pass --accept-underpowered or run `ocw target use " + r.target.id + "`)" : " (not active)"}`,
      ].join("\n") + "\n";
  return { code, stdout: text, stderr: "" };
}

export async function runSetup(o: SetupCommandOptions, port: SetupPort = enginePort("cli:ocw setup")): Promise<CommandOutput> {
  const logs: string[] = [];
  const log = (l: string) => {
    logs.push(l);
    if (!o.json) process.stderr.write(`${l}\n`);
  };
  try {
    const modes = [o.runtime ? "runtime" : null, o.capture ? "capture" : null, o.provider ? "provider" : null].filter(Boolean);
    if (modes.length !== 1) throw new InputError("pass exactly one of --runtime llama.cpp, --capture URL or --provider URL");
    const slots = int(o.slots, "--slots", 1, MAX_SLOTS);
    const ctx = int(o.ctx, "--ctx", 1, MAX_CTX_PER_SLOT, " tokens");
    if (o.runtime) {
      if (!["llama.cpp", "vllm", "sglang"].includes(o.runtime))
        throw new InputError(`--runtime ${o.runtime} is not supported; use llama.cpp, vllm or sglang (or start another server yourself and --capture it)`);
      // every runtime starts by phases: the planner's pick or the named model, planned by the same planner as ocw fit
      return await runStartCommand(o, slots, ctx, log, port);
    }
    // capture (one endpoint, or a pool of several) or provider: verified and saved by the engine (setup.verify)
    const urls = o.capture ? (Array.isArray(o.capture) ? o.capture : [o.capture]) : [o.provider!];
    for (const u of urls) checkEndpointUrl(o.capture ? "--capture" : "--provider", u);
    const r = await port.verify(
      {
        mode: o.capture ? "capture" : "provider",
        urls,
        model: o.model,
        apiKeyEnv: o.apiKeyEnv,
        // the key as exported where `ocw` runs (the target keeps only the variable's name)
        ...(o.apiKeyEnv && process.env[o.apiKeyEnv] !== undefined ? { apiKey: process.env[o.apiKeyEnv] } : {}),
        slots,
        ctx,
        benchSec: benchSecOf(o.benchSec),
        yes: o.yes,
        acceptUnderpowered: o.acceptUnderpowered,
      },
      log,
    );
    const code = r.outcome === "built" ? 0 : r.outcome === "underpowered" ? 3 : 2;
    const body = {
      outcome: r.outcome,
      target: r.target,
      checks: r.checks,
      summary: r.summary,
      active: r.active,
      server: r.server,
      timings: r.timings,
      ...(r.bench !== undefined ? { bench: r.bench } : {}),
    };
    const text = o.json
      ? JSON.stringify(body, null, 2) + "\n"
      : [
          `${r.outcome.toUpperCase()}: ${r.summary}`,
          ...r.checks.map((c) => `  [${c.passed ? "x" : " "}] ${c.name.padEnd(11)} ${c.evidence}`),
          ...(r.bench ? [`speed: ${benchText(r.bench)}`] : []),
          `target ${r.target.id} saved${r.active ? " and active" : r.outcome === "underpowered" ? " (not active: pass --accept-underpowered or run `ocw target use " + r.target.id + "`)" : " (not active)"}`,
        ].join("\n") + "\n";
    return { code, stdout: text, stderr: "" };
  } catch (err) {
    // a setup refusal (bad flags, an endpoint that does not answer as needed): one line, exit 2
    const line = setupFailure(err, ["input", "serving"]);
    if (line !== null) return { code: 2, stdout: "", stderr: `ocw: ${line}\n` };
    const e = err as Error;
    return { code: 2, stdout: "", stderr: `ocw: setup failed: ${e.message.split("\n")[0]}\n` };
  }
}

/** A model id as the target holds it (from a flag or a provider's list): no control characters reach the terminal. */
const safeModel = (m: string) => showUntrusted(m, { lines: false, max: 120 });

export async function runTargets(o: { json?: boolean }, port: SetupPort = enginePort("cli:ocw targets")): Promise<CommandOutput> {
  // With --json every target carries its endpoints' live state (healthy, slots, inUse), as the engine sees them.
  if (o.json) return { code: 0, stdout: JSON.stringify(await port.targetsWithEndpoints(), null, 2) + "\n", stderr: "" };
  const { active, targets } = await port.targets();
  if (!targets.length) return { code: 0, stdout: "no targets yet; run `ocw setup`\n", stderr: "" };
  const lines = targets.flatMap((t) => [
    // the model id too: `ocw run --endpoint` targets (adhoc-…) of one URL differ only by it; "unverified" for no outcome (it was "?")
    `${t.id === active ? "*" : " "} ${t.id.padEnd(40)} ${(t.outcome ?? "unverified").padEnd(12)} ${t.serving.engine.padEnd(9)} ${counted(t.serving.slots, "slot")}${t.serving.perSlotCtx ? ` × ${t.serving.perSlotCtx}` : ""}  ${t.endpoint}  model ${safeModel(t.model)}`,
    // what the benchmark after setup measured (absent for a provider, or when none ran)
    ...(t.bench ? [`    ${benchText(t.bench)} (${t.bench.at.slice(0, 10)})`] : []),
  ]);
  // they piled up unsaid: one per URL, model and key variable `ocw run --endpoint` was given
  const adhoc = targets.filter(isAdhocTarget).length;
  if (adhoc)
    lines.push(
      `${counted(adhoc, "ad-hoc target")} (adhoc-…, saved by \`ocw run --endpoint\`): \`ocw target remove --ad-hoc\` removes those no worker needs any more`,
    );
  return { code: 0, stdout: lines.join("\n") + "\n", stderr: "" };
}

export async function runTargetUse(id: string, port: SetupPort = enginePort("cli:ocw target use")): Promise<CommandOutput> {
  try {
    const t = await port.useTarget(id);
    const warn = t.outcome && t.outcome !== "built" ? ` (warning: its last verification was ${t.outcome})` : "";
    return { code: 0, stdout: `active target: ${t.id}${warn}\n`, stderr: "" };
  } catch (e) {
    return { code: 2, stdout: "", stderr: `ocw: ${(e as Error).message}\n` };
  }
}

/**
 * `ocw target key ID`: a provider's key set again (rotated) or, with --clear, forgotten. The key is read from the
 * variable --from-env names where `ocw` runs, or from stdin when it is piped — never from the command line (argv is
 * visible to every process of the machine).
 */
export async function runTargetKey(
  id: string,
  o: { fromEnv?: string; clear?: boolean },
  port: SetupPort = enginePort("cli:ocw target key"),
  io: { env?: NodeJS.ProcessEnv; stdin?: () => Promise<string | null> } = {},
): Promise<CommandOutput> {
  const fail = (m: string) => ({ code: 2, stdout: "", stderr: `ocw: ${m}\n` });
  try {
    // An unknown id first: a typo was told "stdin held no key" or "VAR is not set here", and "no target" only once fixed.
    if (!(await port.targets()).targets.some((t) => t.id === id)) return fail(`no target "${id}". Run \`ocw targets\` to list them.`);
    let key = "";
    if (o.clear) {
      if (o.fromEnv) return fail("--clear forgets the key: give it alone, without --from-env");
    } else if (o.fromEnv) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(o.fromEnv))
        return fail(`--from-env takes the NAME of an environment variable (got "${o.fromEnv.slice(0, 4)}…"), not the key itself`);
      key = (io.env ?? process.env)[o.fromEnv] ?? "";
      if (!key.trim()) return fail(`environment variable ${o.fromEnv} is not set here: export it with the new key, then run this again`);
    } else {
      const piped = await (io.stdin ?? readPipedStdin)();
      if (piped === null)
        return fail(
          `give the key on stdin (printf %s "$KEY" | ocw target key ${id}) or name its variable with --from-env VAR — never on the command line; --clear forgets it`,
        );
      key = piped.trim();
      if (!key) return fail("stdin held no key; --clear forgets it");
    }
    const r = await port.setKey(id, key);
    const where = r.stored === "keychain" ? "in the OS keychain" : r.stored === "file" ? "in a 0600 file of the engine's state dir" : null;
    return {
      code: 0,
      stdout: where
        ? `the key of ${id} is set (kept ${where}); workers started from now on use it\n`
        : `the key of ${id} is forgotten; its workers send none from now on (set one with ocw target key ${id})\n`,
      stderr: "",
    };
  } catch (e) {
    return fail((e as Error).message.split("\n")[0]!);
  }
}

/** stdin's text when it is piped (not a terminal), else null. */
async function readPipedStdin(): Promise<string | null> {
  if (process.stdin.isTTY) return null;
  let text = "";
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.length > 8192) break;
  }
  return text;
}

/**
 * `ocw target remove ID`: a target deleted (refused while a worker of it runs), its kept key with it. `--ad-hoc`: every
 * target `ocw run --endpoint` saved that no worker needs any more (none queued or running, none that could still be
 * resumed or continued: only merged and discarded workers let it go), and never the active one.
 */
export async function runTargetRemove(
  id: string | undefined,
  o: { adHoc?: boolean } = {},
  port: SetupPort = enginePort("cli:ocw target remove"),
): Promise<CommandOutput> {
  const fail = (m: string) => ({ code: 2, stdout: "", stderr: `ocw: ${m}\n` });
  if (o.adHoc && id !== undefined) return fail(`give a target id or --ad-hoc, not both (\`ocw target remove ${id}\` removes that one)`);
  if (!o.adHoc && id === undefined)
    return fail("give the id of the target to remove (`ocw targets` lists them), or --ad-hoc for the ad-hoc ones no worker needs any more");
  try {
    if (o.adHoc) {
      const { removed, kept } = await port.removeAdhocTargets();
      const lines = [
        removed.length
          ? `removed ${counted(removed.length, "ad-hoc target")} (their kept keys with them): ${removed.join(", ")}`
          : "no ad-hoc target to remove",
        ...kept.map((k) =>
          k.active
            ? `kept ${k.id}: it is the active target (\`ocw target use ID\` another one first)`
            : k.workers.length
              ? `kept ${k.id}: ${counted(k.workers.length, "worker")} may still run on it (${k.workers.slice(0, 3).join(", ")}${k.workers.length > 3 ? ", …" : ""}): merge or discard ${k.workers.length === 1 ? "it" : "them"} first`
              : `kept ${k.id}: it changed while being removed; run this again`,
        ),
      ];
      return { code: 0, stdout: lines.join("\n") + "\n", stderr: "" };
    }
    await port.removeTarget(id!);
    return { code: 0, stdout: `target ${id} removed (its kept key with it)\n`, stderr: "" };
  } catch (e) {
    return { code: 2, stdout: "", stderr: `ocw: ${(e as Error).message.split("\n")[0]}\n` };
  }
}

export async function runServingStop(o: { target?: string } = {}, port: SetupPort = enginePort("cli:ocw serving stop")): Promise<CommandOutput> {
  const r = await port.stopServing(o.target);
  if (o.target && !r.stopped.length && !r.alreadyGone.length) {
    // nothing recorded for it: a server ocw did not start (captured) is left alone, an unknown id is bad input
    const t = (await port.targets()).targets.find((x) => x.id === o.target);
    if (!t)
      return {
        code: 2,
        stdout: "",
        stderr: `ocw: no target or model server "${o.target}" (\`ocw serving list\` lists the servers ocw started, \`ocw targets\` the targets)\n`,
      };
    const where = t.serving.engine === "api" ? "an API provider" : `${t.endpoint}, not started by ocw`;
    return {
      code: 1,
      stdout: "",
      stderr: `ocw: ${o.target} is ${where}: ocw leaves it running (stop it where you started it); \`ocw target remove ${o.target}\` forgets the target\n`,
    };
  }
  const lines = [
    ...r.stopped.map((s) => `stopped llama-server pid ${s.pid} (${s.targetId}, port ${s.port})`),
    ...r.alreadyGone.map((s) =>
      s.pid
        ? `pid ${s.pid} (${s.targetId}) was not running${s.reused ? " (that pid is another process now: left alone)" : ""}`
        : `${s.targetId} was not running (stopped already): forgotten now`,
    ),
  ];
  return { code: 0, stdout: (lines.length ? lines.join("\n") : "no model servers started by ocw are running") + "\n", stderr: "" };
}

/** A word for a POSIX shell: as it is when plain, else in single quotes. */
const shWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * What doctor says when this shell's LLAMA_SERVER is not the engine's: the engine (a process of its own, started with
 * the environment of the command that started it) finds and starts llama-server, so its environment is the one that counts.
 */
export function llamaServerEnvNote(client: string | undefined, engine: string | null): string | null {
  if (!client || (engine && path.resolve(engine) === path.resolve(client))) return null;
  return (
    `this shell's LLAMA_SERVER (${client}) is not the engine's (${engine ?? "unset"}): the engine's environment is the one that counts. ` +
    `To have the engine use yours: \`ocw stop\` (it also stops the model servers ocw started), then \`LLAMA_SERVER=${shWord(client)} ocw doctor\` starts it again with it; or pass --llama-server PATH to ocw setup`
  );
}

export async function runDoctor(
  o: { json?: boolean; llamaServer?: string },
  port: SetupPort = enginePort("cli:ocw doctor"),
  clientEnv: NodeJS.ProcessEnv = process.env,
): Promise<CommandOutput> {
  const out = await port.doctor({ llamaServer: o.llamaServer, cwd: process.cwd() });
  const { hardware: hw, llamaServer: bin, serving, sandbox } = out;
  // --llama-server names the binary for this doctor: the environment's is not what it looks at then
  const envNote = o.llamaServer ? null : llamaServerEnvNote(clientEnv.LLAMA_SERVER, out.engineLlamaServer ?? null);
  if (o.json) return { code: 0, stdout: JSON.stringify({ ...out, ...(envNote ? { llamaServerEnvNote: envNote } : {}) }, null, 2) + "\n", stderr: "" };
  const lines = [
    `platform   ${hw.platform}/${hw.arch}`,
    `cpu        ${hw.cpu.model} (${hw.cpu.cores} threads${hw.cpu.physicalCores ? `, ${hw.cpu.physicalCores} cores` : ""})`,
    `ram        ${fmt(hw.ram.freeBytes)} free of ${fmt(hw.ram.totalBytes)}`,
    ...(hw.gpus.length
      ? hw.gpus.map(
          (g) =>
            `gpu ${g.index}      ${g.name}: ${g.freeBytes === null ? "free ?" : `${fmt(g.freeBytes)} free`} of ${fmt(g.totalBytes)}${g.unified ? " (unified)" : ""} [${g.source}]`,
        )
      : ["gpu        none detected (CPU only)"]),
    ...(hw.llamaDevices
      ? [
          `llama.cpp  sees ${hw.llamaDevices.length ? hw.llamaDevices.map((d) => `${d.id} ${d.name} ${fmt(d.freeBytes)} free`).join(", ") : "no GPU devices (CPU backend)"}`,
        ]
      : []),
    `llama-server ${bin ? `${bin} (used by the engine; from ${out.llamaServerFrom ?? "?"})` : out.llamaServerNote}`,
    ...(envNote ? [`note       ${envNote}`] : []),
    `ripgrep    ${out.ripgrep ?? out.ripgrepNote}`,
    ...hw.probes.map((p) => `probe      ${p.name.padEnd(28)} ${p.note} (${p.ms} ms)`),
    ...hw.problems.map((p) => `problem    ${p}`),
    `servers    ${serving.length ? serving.map((s) => `${s.targetId} ${s.pid ? `pid ${s.pid}` : "stopped"} :${s.port}`).join(", ") : "none started by ocw"}`,
    `sandbox    ${sandbox.kind === "bwrap" ? "bubblewrap" : `none: ${sandbox.reason}`}`,
    `limits     ${sandbox.limits}`,
    `detected in ${hw.ms} ms`,
  ];
  return { code: 0, stdout: lines.join("\n") + "\n", stderr: "" };
}

function emit(r: CommandOutput): void {
  if (r.stdout) process.stdout.write(r.stdout);
  if (r.stderr) process.stderr.write(r.stderr);
  process.exitCode = r.code;
}

/** `registerServingSupervisor`: adds the hidden `serving supervise` (serve.ts: the commands that host engine processes). */
export function registerModelSetupCommands(
  program: Command,
  { registerServingSupervisor }: { registerServingSupervisor?: (serving: Command) => void } = {},
): void {
  program
    .command("fit")
    .description("choose a model, quant, slots and context for this machine (or, with --gguf/--metadata, estimate one file in detail)")
    .option("--model <repoOrFile>", "plan this model: catalog id, owner/repo[:QUANT], hf:/URL or a local .gguf (default: propose one)")
    .option("--slots <n>", "how many workers run at once (default 4 with a GPU, 1 on CPU)")
    .option("--runtime <name>", "llama.cpp (default), or vllm / sglang: safetensors weights over tensor × data parallel GPUs")
    .option("--metadata <file>", "JSON object of GGUF metadata keys → values (tensor infos optional)")
    .option("--gguf <pathOrUrl>", "local .gguf, http(s) URL or hf:owner/repo/file.gguf (header read with Range requests)")
    .option(
      "--ctx <n>",
      "with --gguf/--metadata, -c: total context (default: the model's n_ctx_train); without them, exactly this context per slot (as ocw setup --ctx)",
    )
    .option("--parallel <n>", "-np: slots (default: 4 with unified KV with a GPU, 1 on a CPU only — as ocw setup)")
    .option("--kv-unified", "--kv-unified: one KV pool shared by all slots")
    .option("--no-kv-unified", "split KV: each slot gets ctx/parallel")
    .option("--cache-type-k <t>", "-ctk (default f16)")
    .option("--cache-type-v <t>", "-ctv (default f16)")
    .option("--ubatch <n>", "-ub (default 512)")
    .option("--flash-attn <mode>", "-fa on|off|auto (default auto = on)")
    .option("--gpus <spec>", "auto (detect) | cpu | sizes like 24G,16G or NAME=24GiB")
    .option("--min-ctx <n>", "minimum context per slot (default 32768; with --gguf/--metadata 4096)")
    .option("--allow-slow", "plan a model even when it would decode below 8 tokens/s per slot (refused otherwise)")
    .option(
      "--no-mtp",
      "no speculative decoding with the model's own MTP head (on by default where the model ships one: faster for one worker; at many workers at once it can lower total throughput)",
    )
    .option("--json", "print JSON")
    .action(async (opts: FitCommandOptions) => emit(await runFit(opts)));

  program
    .command("setup")
    .description("fit, start (or capture) and verify a model server; persist it as a target")
    .option(
      "--runtime <name>",
      "llama.cpp (default: the planner's pick, started by phases), vllm or sglang (with --model REPO; its binary, python's sglang, or docker/podman)",
    )
    .option(
      "--model <fileOrHfOrId>",
      "GGUF path / hf:owner/repo/file.gguf / owner/repo[:QUANT] (runtime; default: the planner's pick for this machine), or the provider's model id",
    )
    .option("--slots <n>", "how many workers run at once")
    .option("--ctx <n>", "exactly this context per slot (the server is sized for slots × ctx, unified KV)")
    .option("--min-ctx <n>", "at least this context per slot (default 32768; the planner gives more when it fits)")
    .option("--llama-server <path>", "llama-server binary")
    .option(
      "--capture <url>",
      "capture an OpenAI-compatible endpoint that is already serving; repeat it for a pool of endpoints serving the same model",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option("--provider <url>", "an API provider base URL (OpenAI-compatible)")
    .option("--api-key-env <var>", "NAME of the environment variable holding the key (never the key)")
    .option("--yes", "do not ask before starting a server")
    .option("--accept-underpowered", "make an underpowered target active anyway")
    .option("--bench-sec <n>", "seconds the speed benchmark after start or capture may take (default 30, OCW_SETUP_BENCH_SEC); 0 skips it")
    .option("--allow-slow", "start a plan even when it would decode below 8 tokens/s per slot (refused otherwise)")
    .option(
      "--no-mtp",
      "no speculative decoding with the model's own MTP head (on by default where the model ships one: faster for one worker; at many workers at once it can lower total throughput)",
    )
    .option("--json", "print JSON")
    .action(async (opts: SetupCommandOptions) => emit(await runSetup(opts)));

  program
    .command("targets")
    .description("list targets")
    .option("--json", "print JSON")
    .action(async (o: { json?: boolean }) => emit(await runTargets(o)));

  const target = program.command("target").description("manage targets");
  target
    .command("use <id>")
    .description("make a target active")
    .action(async (id: string) => emit(await runTargetUse(id)));
  target
    .command("key <id>")
    .description("set an API target's key again (rotate it), read from stdin or --from-env VAR, never the command line; --clear forgets it")
    .option("--from-env <var>", "NAME of the environment variable holding the new key (never the key)")
    .option("--clear", "forget the key (the target's workers then send none)")
    .action(async (id: string, o: { fromEnv?: string; clear?: boolean }) => emit(await runTargetKey(id, o)));
  target
    .command("remove [id]")
    .description("delete a target and the key kept for it (refused while a worker of it is queued or running)")
    .option("--ad-hoc", "instead of one id: every target `ocw run --endpoint` saved that no worker needs any more (only merged or discarded ones use it)")
    .action(async (id: string | undefined, o: { adHoc?: boolean }) => emit(await runTargetRemove(id, o)));

  const serving = program.command("serving").description("model servers started by ocw");
  serving
    .command("stop")
    .description("stop the model servers ocw started")
    .option("--target <id>", "only this target's server")
    .action(async (opts: { target?: string }) => emit(await runServingStop(opts)));
  // `ocw serving supervise` (hidden): a process the engine starts, hosted by serve.ts (registerServingSupervisor)
  registerServingSupervisor?.(serving);
  // the wizard's servers panel, on the command line (the engine's servers API)
  const servingCli = async (f: () => Promise<string>) => {
    try {
      emit({ code: 0, stdout: `${await f()}\n`, stderr: "" });
    } catch (e) {
      emit({ code: 2, stdout: "", stderr: `ocw: ${(e as Error).message.split("\n")[0]}\n` });
    }
  };
  serving
    .command("list")
    .description("the model servers ocw started: running or stopped, port, and whether `ocw stop` stops them")
    .option("--json", "print JSON (as `ocw targets --json` and `ocw doctor --json` do)")
    .action((o: { json?: boolean }) =>
      servingCli(async () => {
        const list = await enginePort("cli:ocw serving list").servers();
        if (o.json) return JSON.stringify(list, null, 2);
        return list.length
          ? list
              .map(
                (v) =>
                  `${v.targetId.padEnd(40)} ${(v.running ? `running pid ${v.pid}` : "stopped").padEnd(20)} :${v.port}  ${v.keep ? "kept after ocw stop" : "stops with ocw stop"}${v.restarts ? `  restarted ${v.restarts}×` : ""}${v.gaveUp ? `  supervisor gave up: ${v.gaveUp}` : v.lastCrash ? `  last crash: ${v.lastCrash}` : ""}`,
              )
              .join("\n")
          : "no model servers started by ocw";
      }),
    );
  serving
    .command("restart <target>")
    .description("stop a server ocw started and start it again as recorded (same port and key)")
    .action((target: string) =>
      servingCli(async () =>
        (await enginePort("cli:ocw serving restart").restartServer(target)).map((v) => `${v.targetId} running, pid ${v.pid} on :${v.port}`).join("\n"),
      ),
    );
  serving
    .command("keep <target>")
    .description("keep a server running when the engine stops (`ocw stop`); --off: stop it with the engine again (the default)")
    .option("--off", "stop it with the engine")
    .action((target: string, o: { off?: boolean }) =>
      servingCli(async () => {
        await enginePort("cli:ocw serving keep").keepServer(target, !o.off);
        return `${target}: ${o.off ? "stops with ocw stop" : "kept running after ocw stop"}`;
      }),
    );

  program
    .command("doctor")
    .description("hardware, llama-server and running servers")
    .option("--json", "print JSON")
    .option("--llama-server <path>", "llama-server binary to confirm devices with")
    .action(async (opts: { json?: boolean; llamaServer?: string }) => emit(await runDoctor(opts)));
}
