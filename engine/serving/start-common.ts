/**
 * What the start phases of every runtime share (start.ts for llama.cpp, start-runtimes.ts for vLLM / SGLang): the
 * job's options, the classified failure (StartError), the log and download classifiers, the phase helpers and the
 * running servers a start may replace. A leaf of engine/serving/: it imports no start, CLI or runtime module.
 */
import { SetupError } from "../models";
import { type SetupFailure, SetupJob, type SetupPhase, type SetupPhaseName, type SetupStartInput } from "../../shared/setup";
import type { Target, TargetBench } from "../../shared/target";
import { benchBudgetSec, benchLine, benchmarkEndpoint } from "./bench";
import type { ServedEndpoint, VerifyResult } from "./verify";
import type { HardwareReport } from "../hardware";
import type { TargetStore } from "../store";
import { finish, listServing, type ServingRecord, servingAlive } from "./setup";
import { counted } from "../../shared/words";

export interface StartJobOptions {
  input: SetupStartInput;
  store: TargetStore;
  /** Every change of the job (throttled for download progress). */
  onUpdate?: (job: SetupJob) => void;
  signal?: AbortSignal;
  hardware?: HardwareReport;
  llamaServer?: string;
  readyTimeoutMs?: number;
  jobId?: string;
  /** Asked once the plan is known, before any download or start (the CLI's question); false or a throw stops the job. */
  confirm?: (job: SetupJob) => Promise<boolean>;
}

/** A start failure already classified: a setup error of kind "start", its classification and phase as data. */
export class StartError extends SetupError {
  constructor(readonly failure: Omit<SetupFailure, "phase" | "logFile"> & { phase?: SetupPhaseName; logFile?: string | null }) {
    // bad input and a plan that cannot fit are the caller's to change; the rest is the machine's or the runtime's
    super(
      "start",
      failure.cause,
      { failure: failure.kind, phase: failure.phase ?? null, logLine: failure.logLine ?? null, logFile: failure.logFile ?? null },
      ["input", "no-fit", "not-found", "not-confirmed"].includes(failure.kind) ? "bad-input" : "unavailable",
    );
    this.name = "StartError";
  }
}

interface Rule {
  kind: string;
  re: RegExp;
  remedy: (ctx: { bin: string | null }) => string;
}

/** Root causes llama-server (and vLLM/SGLang) print, most specific first. */
const LOG_RULES: Rule[] = [
  {
    kind: "out-of-memory",
    re: /out of memory|cudaMalloc failed|hipMalloc failed|ErrorOutOfDeviceMemory|failed to allocate .*buffer|unable to allocate|CUDA error: out of memory|torch\.OutOfMemoryError|not enough memory|No available memory for the cache blocks/i,
    remedy: () =>
      "the plan did not fit the memory that was free at start (another process may hold GPU memory: check nvidia-smi); choose fewer slots, a shorter context per slot or a smaller quant, or stop what uses the GPU",
  },
  {
    kind: "unsupported-arch",
    re: /unknown model architecture|unknown architecture|architecture .* not supported|model type .* not supported|does not support the model/i,
    remedy: ({ bin }) =>
      `this runtime is older than the model's architecture: update it (${bin ? `replace ${bin}` : "install a newer build"}; for the prebuilt llama.cpp remove <state>/llama and start again to fetch the latest)`,
  },
  {
    // llama-server: `error while handling argument "--device": invalid device: CUDA0` — a device name of another build
    kind: "bad-flag",
    re: /invalid device: \S+/i,
    remedy: ({ bin }) =>
      `the plan names a device this build does not have (CUDA0 on a Vulkan or CPU build): \`${bin ?? "llama-server"} --list-devices\` shows its names — plan again with that build (ocw fit), or install the build for the GPU`,
  },
  {
    // `E llama_init_from_model: quantized V cache requires flash_attn to be enabled`, then "exiting due to model loading error"
    kind: "bad-flag",
    re: /requires flash_attn|requires flash attention/i,
    remedy: () => "a quantized V cache (-ctv q8_0, q4_0 …) needs flash attention: start with -fa on (or auto), or with an f16 V cache",
  },
  {
    kind: "bad-flag",
    re: /error: (invalid|unknown) argument|unrecognized (option|arguments?)|invalid value for|error: unknown option|invalid argument:|error while handling argument|unknown value for/i,
    remedy: ({ bin }) =>
      `${bin ?? "the runtime"} does not accept a flag of the plan (an old build?): update it, or run \`ocw fit --json\` and start the command by hand to see which`,
  },
  {
    kind: "driver",
    re: /CUDA driver version is insufficient|no CUDA-capable device|cuInit|ggml_cuda_init: failed|ggml_vulkan: No devices found|hipErrorNoDevice|NVIDIA driver on your system is too old/i,
    remedy: () => "the GPU driver does not work with this build: update the driver, or use a build for what works here (Vulkan or CPU)",
  },
  {
    kind: "library",
    re: /error while loading shared libraries|cannot open shared object file|Library not loaded|ImportError|ModuleNotFoundError/i,
    remedy: () => "the runtime is missing a library: install it (the CUDA/ROCm runtime for a GPU build), or use the prebuilt build ocw downloads",
  },
  {
    kind: "model-load",
    re: /error loading model|gguf_init_from_file|invalid magic|not within the file bounds|failed to read|corrupted|unexpected end of file/i,
    remedy: () => "the model file is damaged or incomplete (or split and a shard is missing): delete it and start again to download it anew",
  },
  {
    kind: "port",
    re: /couldn't bind|address already in use|bind\(\) failed|EADDRINUSE/i,
    remedy: () => "the port was taken between choosing and binding it: start again",
  },
];

/** The most telling line of a server log for a failed start, classified, with what to do. */
export function classifyLog(log: string, bin: string | null = null): { kind: string; logLine: string | null; remedy: string } | null {
  const lines = log
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  for (const r of LOG_RULES) {
    const line = lines.find((l) => r.re.test(l));
    if (line) return { kind: r.kind, logLine: line.slice(0, 400), remedy: r.remedy({ bin }) };
  }
  // llama-server marks its error-level lines (`0.00.157.287 E llama_init_from_model: …`): the first is the root cause, the
  // later ones its consequences ("failed to create context", "exiting due to model loading error")
  const first = lines.find((l) => /^\d+\.\d+\.\d+\.\d+ E /.test(l));
  if (first) return { kind: "other", logLine: first.slice(0, 400), remedy: "read the line above and the log file; `ocw doctor` checks the runtime" };
  const err = [...lines].reverse().find((l) => /\b(error|failed|fatal|abort|exception)\b/i.test(l) && !/Loading model/.test(l));
  return err ? { kind: "other", logLine: err.slice(0, 400), remedy: "read the line above and the log file; `ocw doctor` checks the runtime" } : null;
}

/** A download error, classified. */
export function classifyDownload(message: string): { kind: string; remedy: string } {
  if (/GiB free|needs .* GiB/.test(message))
    return { kind: "disk", remedy: "free disk space, or set OCW_STATE_DIR to a larger disk (models are stored under <state>/models)" };
  if (/HTTP 40[13]|gated|private/.test(message))
    return { kind: "auth", remedy: "the repository is gated or private: accept its license on huggingface.co and set HF_TOKEN where the engine starts" };
  if (/HTTP 404|no Hugging Face repo|has no /.test(message))
    return { kind: "not-found", remedy: "check the repository and quant names (`ocw fit --model REPO` lists the quants it has)" };
  if (/checksum|sha256/.test(message))
    return { kind: "checksum", remedy: "the file did not match the Hub's checksum and was removed: start again (a proxy or a broken mirror can cause this)" };
  if (/cancel/.test(message)) return { kind: "cancelled", remedy: "start again to resume from the bytes already on disk" };
  if (/broke at|size mismatch/.test(message)) return { kind: "network", remedy: "the connection broke: start again, the download resumes where it stopped" };
  return {
    kind: "network",
    remedy: "the Hub (or OCW_HF_ENDPOINT) cannot be reached from the engine's machine: check the network, or download the file yourself and pass its path",
  };
}

/** The live servers of one target (all replicas of a pool) and the GPU memory they hold, by the vendor tool's index. */
export interface RunningGroup {
  id: string;
  recs: ServingRecord[];
  bytes: Map<number, number>;
}

export function runningGroups(recs: ServingRecord[] = listServing()): RunningGroup[] {
  const m = new Map<string, RunningGroup>();
  for (const r of recs) {
    // alive as recorded: a pid another process holds now is not our server, its GPU memory not ours to replace
    if (!servingAlive(r) || !r.gpuBytes?.length) continue;
    const id = r.replicaOf ?? r.targetId;
    const g = m.get(id) ?? { id, recs: [], bytes: new Map<number, number>() };
    g.recs.push(r);
    for (const x of r.gpuBytes) g.bytes.set(x.index, (g.bytes.get(x.index) ?? 0) + x.bytes);
    m.set(id, g);
  }
  return [...m.values()];
}

/** The hardware as it will be once those servers are stopped: their memory free again. */
export function withFreed(hw: HardwareReport, bytes: Map<number, number>): HardwareReport {
  return {
    ...hw,
    gpus: hw.gpus.map((g) => {
      const b = bytes.get(g.index) ?? 0;
      if (!b || g.freeBytes === null) return g;
      return { ...g, freeBytes: Math.min(g.totalBytes, g.freeBytes + b), usedBytes: g.usedBytes === null ? null : Math.max(0, g.usedBytes - b) };
    }),
  };
}

/**
 * The plan to start: a running server of the target this setup replaces (`id`, or any whose plan `replaces` names)
 * is stopped before the load, so plan again with its memory free; the first plan when none is replaced.
 */
export async function planReplacing<F extends { pick: unknown }>(
  hw: HardwareReport,
  first: F,
  planOn: (h: HardwareReport) => Promise<F>,
  id: string | undefined,
  replaces: (pick: NonNullable<F["pick"]>, g: RunningGroup) => boolean,
): Promise<{ fit: F; replacing: RunningGroup | null }> {
  for (const g of runningGroups()) {
    if (id && g.id !== id) continue;
    const freed = await planOn(withFreed(hw, g.bytes));
    if (freed.pick && replaces(freed.pick as NonNullable<F["pick"]>, g)) return { fit: freed, replacing: g };
  }
  return { fit: first, replacing: null };
}

/** The helpers the other runtimes' phases use (start-runtimes.ts). */
export interface PhaseOps {
  begin: (name: SetupPhaseName, detail: string) => void;
  end: (detail?: string, status?: SetupPhase["status"]) => void;
  skip: (name: SetupPhaseName, detail: string) => void;
  emit: (force?: boolean) => void;
  cancelled: () => void;
  phase: (name: SetupPhaseName) => SetupPhase;
}

/** What every phase of a start gets: the options, the parsed input, the job it updates and the phase helpers. */
export interface StartCtx {
  o: StartJobOptions;
  input: SetupStartInputParsed;
  job: SetupJob;
  ops: PhaseOps;
  /** The log file a failure points at (set once a server is launched). */
  setLog: (file: string) => void;
  /** The target whose model server(s) this start launches (from the launch on): stopped again when the start fails. */
  setLaunched: (targetId: string) => void;
}
type SetupStartInputParsed = ReturnType<typeof SetupStartInput.parse>;

/**
 * bench: prefill and decode tokens/s at 1 stream and at N (the slots) over the endpoint, within OCW_SETUP_BENCH_SEC (or the
 * input's benchSec); skipped when the budget is 0 or verify found the server unusable. A pool is measured on its first
 * replica (with that replica's slots). Never fails the start: what it could not measure it says.
 */
export async function benchPhase(c: StartCtx, t: ServedEndpoint & { pooled?: number }, v: VerifyResult): Promise<TargetBench | null> {
  const { begin, end, skip, emit, phase } = c.ops;
  const budget = c.input.benchSec ?? benchBudgetSec();
  if (budget <= 0) {
    skip("bench", "no benchmark (OCW_SETUP_BENCH_SEC=0)");
    return null;
  }
  if (v.outcome === "cannot-build") {
    skip("bench", "not measured: verify found the server unusable");
    return null;
  }
  begin("bench", `${t.slots > 1 ? `1 stream, then ${t.slots} at once` : "1 stream"}, about ${budget} s${t.pooled ? ` (replica 1 of ${t.pooled})` : ""}`);
  const b = await benchmarkEndpoint({
    ...t,
    budgetSec: budget,
    signal: c.o.signal,
    onProgress: (n, note) => {
      phase("bench").detail = `${counted(n, "request")}: ${note}`;
      emit(false);
    },
  });
  end(benchLine(b), "done");
  return b;
}

/** The target saved as verify decided (the engine is its single writer), and the job's result from it. */
export function saveTarget(c: StartCtx, target: Target, v: VerifyResult, engine: string, bench: TargetBench | null): void {
  const saved = finish(c.o.store, target, v, { acceptUnderpowered: c.input.acceptUnderpowered });
  c.job.result = {
    outcome: v.outcome,
    saved: saved.saved,
    active: saved.active,
    target: saved.target,
    checks: v.checks,
    summary: v.summary,
    observed: { engine, totalSlots: v.observed.totalSlots, perSlotCtx: v.observed.perSlotCtx },
    ms: 0,
    bench,
  };
}

/** The person's yes (the CLI's question), once the plan is known and before anything is downloaded or started. */
export async function confirmPhase(c: StartCtx): Promise<void> {
  const { o, job } = c;
  if (o.confirm) {
    const ok = await o.confirm(SetupJob.parse(structuredClone(job))).catch((e: Error) => {
      throw new StartError({ kind: "not-confirmed", cause: e.message, logLine: null, remedy: "pass --yes to skip the question" });
    });
    if (!ok)
      throw new StartError({
        kind: "not-confirmed",
        cause: "not confirmed; nothing downloaded or started (pass --yes to skip the question)",
        logLine: null,
        remedy: "pass --yes to skip the question",
      });
  }
}
