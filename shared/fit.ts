import { z } from "zod";

/** The most slots (workers at once) a model server is planned or started with. */
export const MAX_SLOTS = 256;
/** The most context per slot, in tokens, a plan or a start takes. */
export const MAX_CTX_PER_SLOT = 1_048_576;

/**
 * The model-setup contract shared by `ocw fit --json`, the engine's `setup.*` API routes and the GUI wizard.
 * `ocw fit [--model REPO|FILE] [--slots N] [--min-ctx TOKENS] --json` prints a FitResult.
 */

/** One memory pool a plan uses: a GPU, or host RAM named `cpu`. */
export const PlannedDevice = z.object({
  name: z.string(),
  /** What the plan may use there: free memory minus nothing (the margin is part of plannedBytes' headroom). */
  budgetBytes: z.number().int().nonnegative(),
  /** Weights + KV/recurrent state + compute buffers + driver overhead placed there. */
  plannedBytes: z.number().int().nonnegative(),
  /** The parts of plannedBytes (for the wizard's memory chart). */
  breakdown: z
    .object({
      weightsBytes: z.number().int().nonnegative(),
      kvBytes: z.number().int().nonnegative(),
      computeBytes: z.number().int().nonnegative(),
      overheadBytes: z.number().int().nonnegative(),
      marginBytes: z.number().int().nonnegative(),
    })
    .optional(),
});
export type PlannedDevice = z.infer<typeof PlannedDevice>;

export const Placement = z.enum(["gpu", "moe-offload", "partial", "cpu"]);
export type Placement = z.infer<typeof Placement>;

export const FitPick = z.object({
  /** Catalog id, Hub repo or local file. */
  model: z.string(),
  quant: z.string().nullable(),
  runtime: z.enum(["llama.cpp", "vllm", "sglang"]),
  slots: z.number().int().positive(),
  ctxPerSlot: z.number().int().positive(),
  /** "verified": a target of this model passed the tool-call round trip on this machine; otherwise "unverified". */
  toolCalling: z.enum(["verified", "unverified"]),
  devices: z.array(PlannedDevice).min(1),
  /** The exact launch command, with the key elided. */
  command: z.string(),
  /** How the weights are placed, and the plain reason for this choice. */
  placement: Placement,
  reason: z.string(),
  /** vLLM / SGLang: GPUs per engine (tensor parallel) and engines (data parallel); tensor × data GPUs are used. */
  parallel: z.object({ tensor: z.number().int().positive(), data: z.number().int().positive() }).optional(),
  /** llama.cpp: the KV cache type of the plan (-ctk/-ctv); a start given it keeps it (one KV type from plan to start). */
  cacheType: z.enum(["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"]).optional(),
  /** When fewer GPUs than present are used: how many independent replicas the machine could run. */
  replicas: z.number().int().positive().optional(),
  /**
   * The expected speed (issue 27): decode tokens/s per slot with every slot busy, from memory bandwidth ÷ the bytes
   * read per token (the active weights on each device, one after the other); an estimate, `basis` says from what.
   * `warning` when it is too slow for an agent (below 8 tokens/s per slot).
   */
  speed: z
    .object({
      decodeTokPerSecPerSlot: z.number(),
      decodeTokPerSecTotal: z.number(),
      basis: z.string(),
      warning: z.string().nullable(),
      /** One slot busy alone. */
      decodeTokPerSecSingle: z.number().optional(),
      /** Prompt processing, compute-bound (FLOPs per token ÷ the devices' TFLOPS). */
      prefillTokPerSec: z.number().optional(),
      /** Seconds to read OpenCode's first request (≈ 6k tokens) at that rate. */
      firstRequestSec: z.number().optional(),
      /** Below 8 tokens/s per slot with every slot busy: refused unless slow plans are allowed (`--allow-slow`). */
      tooSlow: z.boolean().optional(),
    })
    .optional(),
  /**
   * Speculative decoding with the model's own MTP head (engine/models/mtp.ts): "on" (the command drafts with it, the
   * default), "off" (the model has one this runtime could use, switched off: `mtp: false`); absent where there is none.
   */
  mtp: z.enum(["on", "off"]).optional(),
  /** Why this runtime (vLLM / SGLang proposed on ≥ 80 GB datacenter GPUs, llama.cpp elsewhere). */
  runtimeReason: z.string().optional(),
  /**
   * A pool of replicas (issue 16): one llama-server per GPU or GPU group, each with its share of the slots; setup
   * starts every one and saves one target whose `serving.endpoints` lists them. `command` is then their commands,
   * one per line.
   */
  pool: z
    .object({
      replicas: z.number().int().min(2),
      endpoints: z
        .array(
          z.object({
            /** The llama.cpp device ids (as the machine names them) this replica runs on. */
            devices: z.array(z.string()).min(1),
            slots: z.number().int().positive(),
            ctxPerSlot: z.number().int().positive(),
            /** Its launch command, key elided, other GPUs hidden (CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES). */
            command: z.string(),
          }),
        )
        .min(2),
    })
    .optional(),
});
export type FitPick = z.infer<typeof FitPick>;

export const FitHardware = z.object({
  gpus: z.array(z.object({ name: z.string(), vendor: z.string(), totalBytes: z.number(), freeBytes: z.number().nullable(), unified: z.boolean().optional() })),
  ramTotalBytes: z.number(),
  ramFreeBytes: z.number(),
  cpu: z.string(),
  /** What the llama.cpp runtime itself sees (null when no binary was found: the plan assumes a matching build). */
  runtimeDevices: z.array(z.string()).nullable(),
  /** GPUs detected but not usable by the runtime, and other notes a person should read. */
  notes: z.array(z.string()),
});
export type FitHardware = z.infer<typeof FitHardware>;

/**
 * The note the plan carries when it used the CPU-only default of 1 slot (a hardware note). Its last words are for the
 * command line and other clients; the Setup screen, where the Slots field is, says where that field is instead.
 */
export const CPU_SLOTS_NOTE = "CPU only: 1 slot by default (decode speed is shared by all slots); for more, set Slots in Setup (--slots N on the command line)";

export const FitResult = z.object({
  hardware: FitHardware,
  pick: FitPick.nullable(),
  alternatives: z.array(FitPick),
  /** Null with a pick; otherwise what to change (fewer slots, a smaller model, an API provider). */
  problem: z.string().nullable(),
  /** Plans that fit but were refused as too slow for an agent (below 8 tokens/s per slot); `allowSlow` plans them. */
  refused: z.array(FitPick).optional(),
});
export type FitResult = z.infer<typeof FitResult>;

export const FitInput = z.object({
  model: z.string().min(1).optional(),
  slots: z.number().int().min(1, "slots must be ≥ 1").max(MAX_SLOTS, `at most ${MAX_SLOTS} slots`).optional(),
  minCtx: z.number().int().min(1024, "the minimum context per slot must be ≥ 1024 tokens").max(MAX_CTX_PER_SLOT).optional(),
  /** Plan models too slow for an agent (below 8 tokens/s per slot) instead of refusing them. */
  allowSlow: z.boolean().optional(),
  /**
   * Speculative decoding with the model's own MTP head where the weights carry one (absent or true: on, the default);
   * false: off — faster for one worker, but with many workers at once it can lower the server's total throughput.
   */
  mtp: z.boolean().optional(),
});
export type FitInput = z.infer<typeof FitInput>;

/** A catalog entry as clients see it, with the engine's verdict for this machine. */
export const CatalogView = z.object({
  id: z.string(),
  name: z.string(),
  repo: z.string(),
  source: z.string(),
  released: z.string(),
  license: z.string(),
  contextLength: z.number(),
  totalParamsB: z.number(),
  activeParamsB: z.number(),
  /** derived: the size was computed (parameters × bits), not read from the Hub's listing. */
  quants: z.array(z.object({ quant: z.string(), bytes: z.number(), sizeNote: z.string().nullable(), derived: z.boolean().optional() })),
  toolCalling: z.object({ status: z.enum(["verified", "unverified"]), template: z.string(), note: z.string() }),
  unverified: z.array(z.string()),
  /** The engine's fit on this machine: null when nothing fits. */
  fit: z.object({ quant: z.string(), placement: Placement, slots: z.number(), ctxPerSlot: z.number(), reason: z.string() }).nullable(),
  fitProblem: z.string().nullable(),
});
export type CatalogView = z.infer<typeof CatalogView>;

/**
 * `ocw fit --gguf/--metadata`: one file estimated in detail on the engine's machine. Paths are read relative to `cwd`
 * (the CLI's working directory) and shown as given.
 */
export const FitFileInput = z.object({
  metadata: z.string().min(1).max(4096).optional(),
  gguf: z.string().min(1).max(4096).optional(),
  cwd: z.string().max(4096).optional(),
  ctx: z.number().int().min(0).optional(),
  /** Slots, or -1 for auto. */
  parallel: z.number().int().min(-1).optional(),
  kvUnified: z.boolean().optional(),
  cacheTypeK: z.string().max(16).optional(),
  cacheTypeV: z.string().max(16).optional(),
  ubatch: z.number().int().min(1).optional(),
  flashAttn: z.enum(["on", "off", "auto"]).optional(),
  /** auto (detect) | cpu | sizes like 24G,16G or NAME=24GiB. */
  gpus: z.string().max(1000).optional(),
  minCtx: z.number().int().min(1).optional(),
  /** Confirm with llama-fit-params when a llama.cpp build is found (default true). */
  llamaFit: z.boolean().optional(),
});
export type FitFileInput = z.infer<typeof FitFileInput>;

/** `ocw fit` (the planner) with the CLI's options: what FitInput has, plus the runtime and an exact context per slot. */
export const FitPlanInput = FitInput.extend({
  ctxPerSlot: z.number().int().min(1024).max(MAX_CTX_PER_SLOT).optional(),
  runtime: z.enum(["llama.cpp", "vllm", "sglang"]).optional(),
});
export type FitPlanInput = z.infer<typeof FitPlanInput>;
