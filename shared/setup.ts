import { z } from "zod";
import { Price } from "./cost";
import { FitPick, MAX_CTX_PER_SLOT, MAX_SLOTS } from "./fit";
import { EnvVarName, Target, TargetBench, TargetCheck } from "./target";

/**
 * Model setup mutations on the engine's API (the wizard, and any client): capture a running server or add an API
 * provider. The engine verifies the endpoint first and saves the target only after that verify — or, when the person
 * chooses it explicitly, saves it as unverified (no checks run, shown as such everywhere).
 */

const Url = z
  .string()
  .trim()
  .min(1, "a server URL is required, like http://127.0.0.1:8080/v1")
  .url("a server URL like http://127.0.0.1:8080/v1 (http or https)");
const TargetId = z
  .string()
  .trim()
  .regex(/^[a-z0-9][a-z0-9._-]{0,79}$/, "a target id of lowercase letters, digits, '.', '_' or '-' (at most 80)");

const Common = {
  /** Name of the environment variable (in the engine's environment) that holds the key; never the key itself. */
  apiKeyEnv: EnvVarName.optional(),
  slots: z.number().int().min(1, "slots must be ≥ 1").max(MAX_SLOTS, `at most ${MAX_SLOTS} slots`).optional(),
  /** Target id; default derived from the model and port. */
  id: TargetId.optional(),
  /** Make an underpowered target (reachable, but it failed the coding task or the tool call) active anyway. */
  acceptUnderpowered: z.boolean().default(false),
  /** The person's choice: save (and use) it without running verify. Recorded as unverified. */
  unverified: z.boolean().default(false),
};

export const SetupCaptureInput = z.object({
  url: Url,
  /** The served model to capture (default: the first the server lists). */
  model: z.string().trim().min(1).optional(),
  /** Context each slot must have (checked against what the server reports). */
  ctx: z.number().int().min(1024, "the context per slot must be ≥ 1024 tokens").optional(),
  /** Seconds the benchmark after verify may take (default OCW_SETUP_BENCH_SEC, 30); 0 skips it. */
  benchSec: z.number().int().min(0).max(600).optional(),
  ...Common,
});
export type SetupCaptureInput = z.input<typeof SetupCaptureInput>;

export const SetupProviderInput = z.object({
  url: Url,
  model: z.string().trim().min(1, "the provider's model id is required"),
  apiKeyEnv: EnvVarName,
  slots: Common.slots,
  id: Common.id,
  acceptUnderpowered: Common.acceptUnderpowered,
  unverified: Common.unverified,
  /** Dollars per million tokens (the provider's listed price for the model): kept on the target for costs. */
  price: Price.optional(),
});
export type SetupProviderInput = z.input<typeof SetupProviderInput>;

export const SetupOutcome = z.object({
  /** "unverified": saved by the person's choice without checks. */
  outcome: z.enum(["built", "underpowered", "cannot-build", "unverified"]),
  /** Whether a target was written (cannot-build saves nothing). */
  saved: z.boolean(),
  active: z.boolean(),
  /** The target as saved, or as it would have been (cannot-build). */
  target: Target,
  checks: z.array(TargetCheck),
  summary: z.string(),
  /** What the server itself reported (engine, per-slot context, slots). */
  observed: z.object({ engine: z.string(), totalSlots: z.number().nullable(), perSlotCtx: z.number().nullable() }).nullable(),
  ms: z.number(),
  /** The benchmark after start / capture (also on the saved target); null when none ran. */
  bench: TargetBench.nullable().optional(),
});
export type SetupOutcome = z.infer<typeof SetupOutcome>;

/**
 * setup.start: run a model on the engine's machine. The engine runs the phases in order — runtime binary, download,
 * load, warm-up, verify, placement — publishes the job as `setup` events while it runs, and saves a target at the end.
 */
export const SetupRuntime = z.enum(["llama.cpp", "vllm", "sglang"]);
export type SetupRuntime = z.infer<typeof SetupRuntime>;

export const SetupStartInput = z.object({
  /** A catalog id (`qwen3.6-27b`, `repo:QUANT`), a Hub repo `owner/repo[:QUANT]`, `hf:…`, an URL or a local .gguf; default: the planner's pick. */
  model: z.string().trim().min(1).optional(),
  slots: z.number().int().min(1, "slots must be ≥ 1").max(MAX_SLOTS, `at most ${MAX_SLOTS} slots`).optional(),
  /** Minimum context per slot the plan must give (default 32,768). */
  minCtx: z.number().int().min(1024, "the minimum context per slot must be ≥ 1024 tokens").max(MAX_CTX_PER_SLOT).optional(),
  /** Exactly this context per slot (instead of minCtx; the planner still chooses quant, cache and placement). */
  ctx: z.number().int().min(1024, "the context per slot must be ≥ 1024 tokens").max(MAX_CTX_PER_SLOT).optional(),
  runtime: SetupRuntime.default("llama.cpp"),
  id: TargetId.optional(),
  acceptUnderpowered: z.boolean().default(false),
  /** llama.cpp: this llama-server binary (an absolute path on the engine's machine) instead of the one found or fetched. */
  llamaServer: z.string().trim().min(1).max(4096).optional(),
  /**
   * llama.cpp: the KV cache type of the plan the person saw (its pick's `cacheType`): the start plans with it, so the
   * cache started is the one shown; when it no longer fits the start plans freely and its plan phase says so.
   */
  cacheType: z.enum(["f16", "q8_0", "q4_0"]).optional(),
  /** Seconds the benchmark after start may take (default OCW_SETUP_BENCH_SEC, 30); 0 skips it. */
  benchSec: z.number().int().min(0).max(600).optional(),
  /** Plan a model too slow for an agent (below 8 tokens/s per slot, estimated) instead of refusing it. */
  allowSlow: z.boolean().optional(),
  /** Speculative decoding with the model's own MTP head (absent: on where the weights carry one); false: off (FitInput's `mtp`). */
  mtp: z.boolean().optional(),
});
export type SetupStartInput = z.input<typeof SetupStartInput>;

export const SetupPhaseName = z.enum(["plan", "runtime", "download", "load", "warmup", "verify", "placement", "bench"]);
export type SetupPhaseName = z.infer<typeof SetupPhaseName>;

export const SetupProgress = z.object({
  /** Bytes done / total (null total: unknown size). */
  done: z.number().nonnegative(),
  total: z.number().nonnegative().nullable(),
  bytesPerSec: z.number().nonnegative().nullable(),
  etaSec: z.number().nonnegative().nullable(),
  /** The file being fetched, and which of how many (all shards of a split GGUF). */
  file: z.string().nullable(),
  fileIndex: z.number().int().nonnegative().nullable(),
  files: z.number().int().nonnegative().nullable(),
  /** Bytes that were already on disk (resumed, or a complete file reused). */
  resumedBytes: z.number().nonnegative(),
});
export type SetupProgress = z.infer<typeof SetupProgress>;

export const SetupPhase = z.object({
  name: SetupPhaseName,
  status: z.enum(["pending", "running", "done", "failed", "skipped"]),
  /** Wall time of the phase (ms), set once it ended. */
  ms: z.number().nullable(),
  /** What it did or found, in one line. */
  detail: z.string(),
  progress: SetupProgress.nullable(),
});
export type SetupPhase = z.infer<typeof SetupPhase>;

/** Why a start failed: the phase, the root cause (the server's own log line when there is one) and what to do. */
export const SetupFailure = z.object({
  phase: SetupPhaseName,
  /** A short classification: out-of-memory, model-load, unsupported-arch, bad-flag, port, driver, library, disk, auth, not-found, network, checksum, timeout, verify, placement, other. */
  kind: z.string(),
  cause: z.string(),
  /** The log line that explains it (llama-server's, vLLM's), not the supervisor's exit code. */
  logLine: z.string().nullable(),
  remedy: z.string(),
  logFile: z.string().nullable(),
});
export type SetupFailure = z.infer<typeof SetupFailure>;

/** Where the weights landed after start, per device, against the plan. */
export const SetupPlacement = z.object({
  passed: z.boolean(),
  devices: z.array(z.object({ name: z.string(), plannedBytes: z.number(), loadedBytes: z.number().nullable() })),
  evidence: z.array(z.string()),
});
export type SetupPlacement = z.infer<typeof SetupPlacement>;

export const SetupJob = z.object({
  jobId: z.string(),
  state: z.enum(["running", "done", "failed", "cancelled"]),
  runtime: SetupRuntime,
  /** The model and plan being started (null until planned). */
  model: z.string().nullable(),
  quant: z.string().nullable(),
  slots: z.number().nullable(),
  ctxPerSlot: z.number().nullable(),
  /** The planner's command (key elided), and the one actually launched (port, alias and local paths filled in). */
  plannedCommand: z.string().nullable(),
  launchedCommand: z.string().nullable(),
  phases: z.array(SetupPhase),
  /** The verify checklist as it runs. */
  checks: z.array(TargetCheck),
  placement: SetupPlacement.nullable(),
  failure: SetupFailure.nullable(),
  /** Set when done: the saved target and verify's verdict. */
  result: SetupOutcome.nullable(),
  /** The planner's pick being started (with `pool` when it is a pool of replicas). */
  pick: FitPick.nullable().optional(),
  /** The llama-server(s) started: one per replica of a pool (pid, port, how long until healthy, argv without the key). */
  servers: z
    .array(
      z.object({
        pid: z.number(),
        port: z.number(),
        url: z.string(),
        readyMs: z.number(),
        args: z.array(z.string()),
        logFile: z.string(),
        env: z.array(z.string()),
      }),
    )
    .optional(),
  startedAt: z.string(),
  ms: z.number().nullable(),
});
export type SetupJob = z.infer<typeof SetupJob>;

/**
 * `ocw setup --capture URL… | --provider URL` on the engine's API (setup.verify): the flags as the command read them.
 * `apiKey`: the named variable's value in the command's own environment (absent: the engine's), so a key exported
 * where `ocw` runs verifies as it always did; the target records only the variable's name.
 */
export const SetupVerifyInput = z.object({
  mode: z.enum(["capture", "provider"]),
  urls: z.array(z.string().max(4096)).min(1).max(64),
  model: z.string().max(1000).optional(),
  apiKeyEnv: z.string().max(1000).optional(),
  apiKey: z.string().max(8192).optional(),
  slots: z.number().int().optional(),
  ctx: z.number().int().optional(),
  benchSec: z.number().int().min(0).max(600).optional(),
  yes: z.boolean().optional(),
  acceptUnderpowered: z.boolean().optional(),
});
export type SetupVerifyInput = z.infer<typeof SetupVerifyInput>;

/**
 * setup.start's refusal of a llama-server path that names nothing on the engine's machine, in a client's words: the
 * engine sends it with the data `{ field: "llamaServer", missing: PATH }`, and how to do without the path is the
 * client's to say (the GUI: leave the field empty; \`ocw setup\`: leave out --llama-server).
 */
export function noLlamaServerText(missing: string, leaveOut = "give no llama-server path"): string {
  return `no llama-server at ${missing} on the engine's machine: check the path, or ${leaveOut} to use the one found or the prebuilt release`;
}

/**
 * The missing path of that refusal, from an error as a client holds it: the engine's own (its `detail`, in the same
 * process) or the API's answer (`data.ocwData`); null for any other error.
 */
export function missingLlamaServer(err: unknown): string | null {
  const e = err as { detail?: { data?: Record<string, unknown> }; data?: { ocwData?: Record<string, unknown> } } | null;
  const data = e?.data?.ocwData ?? e?.detail?.data;
  return data?.field === "llamaServer" && typeof data.missing === "string" ? data.missing : null;
}
