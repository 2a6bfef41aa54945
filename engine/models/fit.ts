/**
 * The `fit` chooser: given a model (hparams + tensor infos), the hardware and what the user wants
 * (N slots, a minimum context per slot), pick context, KV cache type, flash attention, GPU layers and tensor
 * split that fit with a margin. N slots at full per-slot context always means a unified KV of N × ctx cells:
 * this chooser never proposes the "c/N trap" (split KV where each slot silently gets c/N).
 */
import type { KvCacheType } from "./ggml-types";
import type { GgufTensorInfo } from "./gguf";
import { type DeviceBudget, type Estimate, estimate, GiB, MiB, pad } from "./estimate";
import type { ModelHparams } from "./hparams";

export interface FitRequest {
  hparams: ModelHparams;
  tensors: GgufTensorInfo[] | null;
  /** Used when tensor infos are absent (weights ≈ file size). */
  fileBytes?: number;
  slots: number;
  /** Minimum context each slot (each worker) must get. */
  minCtxPerSlot: number;
  /** Upper bound for the per-slot context (default: n_ctx_train). */
  maxCtxPerSlot?: number;
  gpus: DeviceBudget[];
  /** Host RAM available for the model server. */
  hostFreeBytes: number;
  /** Free memory to leave on every device (llama.cpp --fit leaves 1024 MiB). */
  marginBytes?: number;
  cacheTypes?: KvCacheType[];
  ubatch?: number;
}

export interface FitChoice {
  fits: boolean;
  /** "gpu" (all layers on GPUs), "partial" (some layers on CPU), "cpu" (CPU only). */
  placement: "gpu" | "partial" | "cpu" | "none";
  slots: number;
  ctxPerSlot: number;
  /** The -c to pass: slots × ctxPerSlot, unified. */
  nCtx: number;
  kvUnified: boolean;
  cacheTypeK: KvCacheType;
  cacheTypeV: KvCacheType;
  flashAttn: "on" | "off";
  nGpuLayers: number;
  tensorSplit: number[] | null;
  estimate: Estimate | null;
  /** llama-server arguments for this choice (without -m/--host/--port/--api-key). */
  args: string[];
  reason: string;
  /** When it does not fit: what would. */
  suggestions: string[];
}

const DEFAULT_MARGIN = 1024 * MiB;

function ctxLadder(min: number, max: number): number[] {
  const out = new Set<number>();
  const top = pad(max, 256);
  for (let c = top; c >= min; c = pad(Math.floor(c / 2), 256)) {
    out.add(c);
    if (c <= 256) break;
  }
  out.add(pad(min, 256));
  return [...out].filter((c) => c >= min && c <= top).sort((a, b) => b - a);
}

interface Check {
  ok: boolean;
  shortBy: number;
}

function checkFits(e: Estimate, req: FitRequest, margin: number): Check {
  let shortBy = 0;
  const weightsUnknown = e.weightsBytes === null;
  const extraWeights = weightsUnknown ? (req.fileBytes ?? 0) : 0;
  for (const d of e.perDevice) {
    let need = d.totalBytes;
    if (weightsUnknown) {
      // spread the file size by layer share when only metadata is known
      const share = (d.layers + (d.hasOutput ? 1 : 0)) / (req.hparams.nLayerAll + 1);
      need += extraWeights * (d.kind === "cpu" && req.gpus.length && d.layers === 0 ? 0.02 : share);
    }
    const free = d.kind === "cpu" ? req.hostFreeBytes : (d.freeBytes ?? 0);
    const over = need + margin - free;
    if (over > 0) shortBy = Math.max(shortBy, over);
  }
  return { ok: shortBy <= 0, shortBy };
}

export function argsFor(c: Pick<FitChoice, "nCtx" | "slots" | "kvUnified" | "cacheTypeK" | "cacheTypeV" | "flashAttn" | "nGpuLayers" | "tensorSplit">): string[] {
  const a = ["-c", String(c.nCtx), "-np", String(c.slots)];
  if (c.kvUnified) a.push("--kv-unified");
  if (c.cacheTypeK !== "f16") a.push("-ctk", c.cacheTypeK);
  if (c.cacheTypeV !== "f16") a.push("-ctv", c.cacheTypeV);
  a.push("-fa", c.flashAttn, "-ngl", String(c.nGpuLayers));
  if (c.tensorSplit && c.tensorSplit.length > 1) a.push("-ts", c.tensorSplit.map((x) => String(Math.round(x))).join(","));
  return a;
}

export function fit(req: FitRequest): FitChoice {
  const h = req.hparams;
  const margin = req.marginBytes ?? DEFAULT_MARGIN;
  const slots = req.slots;
  if (!Number.isInteger(slots) || slots < 1) throw new Error(`slots must be a positive integer (got ${slots})`);
  const maxCtx = Math.min(req.maxCtxPerSlot ?? h.nCtxTrain, h.nCtxTrain);
  const base: Omit<FitChoice, "fits" | "placement" | "reason" | "suggestions" | "estimate" | "args"> = {
    slots, ctxPerSlot: 0, nCtx: 0, kvUnified: slots > 1, cacheTypeK: "f16", cacheTypeV: "f16", flashAttn: "on", nGpuLayers: 0, tensorSplit: null,
  };
  if (req.minCtxPerSlot > h.nCtxTrain) {
    return {
      ...base, fits: false, placement: "none", estimate: null, args: [],
      reason: `the model was trained for ${h.nCtxTrain} tokens of context; ${req.minCtxPerSlot} per slot is beyond it`,
      suggestions: ["pick a model with a longer context", `lower --ctx to ≤ ${h.nCtxTrain}`],
    };
  }
  const ladder = ctxLadder(req.minCtxPerSlot, maxCtx);
  const cacheTypes = req.cacheTypes ?? ["f16", "q8_0", "q4_0"];
  const totalGpuFree = req.gpus.reduce((a, g) => a + g.freeBytes, 0);
  const tensorSplit = req.gpus.length > 1 ? req.gpus.map((g) => g.freeBytes / MiB) : null;

  const tryPlacement = (ngl: number, gpus: DeviceBudget[]): FitChoice | null => {
    // Largest context first; at equal context prefer the more precise cache.
    for (const ctx of ladder) {
      for (const ct of cacheTypes) {
        const e = estimate(h, req.tensors, {
          ctx: ctx * slots, parallel: slots, kvUnified: slots > 1, cacheTypeK: ct, cacheTypeV: ct, flashAttn: "on",
          ubatch: req.ubatch, nGpuLayers: ngl, gpus, tensorSplit: tensorSplit ?? undefined,
        });
        if (e.nCtxPerSlot < req.minCtxPerSlot) continue; // never accept less than asked per slot
        if (checkFits(e, req, margin).ok) {
          const choice = {
            ...base, ctxPerSlot: ctx, nCtx: e.nCtx, cacheTypeK: ct, cacheTypeV: ct, nGpuLayers: gpus.length ? ngl : 0,
            tensorSplit: gpus.length > 1 ? tensorSplit : null, flashAttn: "on" as const,
          };
          const placement: FitChoice["placement"] = !gpus.length ? "cpu" : ngl >= h.nLayerAll + 1 ? "gpu" : "partial";
          return {
            ...choice, fits: true, placement, estimate: e, args: argsFor(choice),
            reason: `${slots} slot(s) × ${ctx} tokens, unified KV (${ct}), ${placement === "cpu" ? "CPU only" : `${choice.nGpuLayers}/${h.nLayerAll + 1} layers on GPU`}`,
            suggestions: [],
          };
        }
      }
    }
    return null;
  };

  if (req.gpus.length) {
    const all = tryPlacement(h.nLayerAll + 1, req.gpus);
    if (all) return all;
    for (let ngl = h.nLayerAll; ngl >= 1; ngl--) {
      const p = tryPlacement(ngl, req.gpus);
      if (p) return p;
    }
  }
  const cpu = tryPlacement(0, []);
  if (cpu) {
    if (req.gpus.length) cpu.reason += " (does not fit the GPUs)";
    return cpu;
  }
  const e = estimate(h, req.tensors, { ctx: pad(req.minCtxPerSlot, 256) * slots, parallel: slots, kvUnified: slots > 1, cacheTypeK: "q4_0", cacheTypeV: "q4_0", flashAttn: "on" });
  const need = (e.totalBytes ?? (req.fileBytes ?? 0) + e.kvBytes + e.recurrentBytes + e.computeBytes) + margin;
  const have = Math.max(totalGpuFree, req.hostFreeBytes);
  return {
    ...base, fits: false, placement: "none", estimate: e, args: [],
    reason: `needs about ${(need / GiB).toFixed(1)} GiB for ${slots} slot(s) × ${req.minCtxPerSlot} tokens even with a q4_0 KV cache; the largest memory pool has ${(have / GiB).toFixed(1)} GiB free`,
    suggestions: [
      "a smaller model or a lower-bit quant",
      slots > 1 ? `fewer slots (--slots ${Math.max(1, Math.floor(slots / 2))})` : "a shorter --ctx",
      `a GPU with ≥ ${Math.ceil(need / GiB)} GiB free`,
      "an API provider (ocw setup --provider URL --model ID --api-key-env VAR)",
    ],
  };
}
