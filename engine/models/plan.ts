/**
 * The planner behind `ocw fit` (no --gguf/--metadata), `ocw setup` without a model, and the wizard: for the machine
 * and the concurrency asked, choose a model, quant and llama-server layout. Order of preference (issue 13):
 *   1. the best catalog model (by rank) that fits entirely on the GPUs, on as few GPUs as possible, largest quant first;
 *   2. a MoE model with routed experts in host RAM (--n-cpu-moe), smallest ≥4-bit quant;
 *   3. partial layer offload of a dense model, smallest ≥4-bit quant;
 *   4. CPU only (no usable GPU): small-active MoE models first.
 * Every plan keeps ≥ minCtx tokens per slot in a unified KV pool (never the c/N trap) and prefers an f16/q8_0 cache at
 * the asked context over a q4_0 cache at a longer one.
 */
import type { FitPick, PlannedDevice } from "../../shared/fit";
import { CATALOG, type CatalogEntry, catalogHparams, catalogTensors, servedBy } from "./catalog";
import { type DeviceBudget, type Estimate, estimate, GiB, MiB, pad } from "./estimate";
import type { KvCacheType } from "./ggml-types";
import type { GgufTensorInfo } from "./gguf";
import { hparamsFromMetadata, type ModelHparams } from "./hparams";
import type { ModelInfo } from "./source";
import { cpuTflops, estimateSpeed, gpuBandwidth, gpuTflops, MIN_AGENT_TOK_PER_SEC, ramBandwidth, type SpeedEstimate, type SpeedPart } from "./speed";
import { llamaMtpArgs, MTP_OFF, mtpOf, mtpPlan, mtpState } from "./mtp";
import { counted } from "../../shared/words";

export const DEFAULT_MIN_CTX = 32768;

/**
 * The slots planned when none are asked: 4 with a GPU, 1 on a CPU only (decode speed is shared by every slot). The one
 * default of `ocw fit`, `ocw fit --gguf/--metadata` and `ocw setup`.
 */
export function defaultSlots(gpuCount: number): number {
  return gpuCount > 0 ? 4 : 1;
}

const MARGIN = 1024 * MiB;

export interface PlanModel {
  /** What the pick names: catalog id, repo or file. */
  model: string;
  quant: string | null;
  hparams: ModelHparams;
  tensors: GgufTensorInfo[] | null;
  fileBytes: number;
  isMoe: boolean;
  /** llama-server's model argument(s): ["-hf", "repo:QUANT"] or ["-m", path]. */
  modelArgs: string[];
  /** The share of the weights a token reads (active ÷ total parameters; 1 for a dense model). */
  activeShare?: number;
  /** Routed experts per layer and used per token (the speed model: how many experts N slots touch). */
  experts?: { count: number; used: number } | null;
  /** Parameters in all (FLOPs per token ≈ 2 × this × activeShare); absent: counted from the tensors' shapes. */
  params?: number;
  /** Tokens the model's own MTP head drafts a step (the catalog says the GGUF keeps it): llama.cpp's draft-mtp. */
  mtpDraft?: number;
  /** The GGUF keeps a head but the person switched MTP off (`mtp: false`): no draft flags, and the reason says so. */
  mtpOff?: boolean;
}

export interface PlanDevices {
  /** GPUs the runtime can use, with their llama.cpp device ids (CUDA0, ROCm1, Vulkan0, MTL0) and the vendor tool's index. */
  gpus: (DeviceBudget & { runtimeId: string; index?: number; vendor?: string })[];
  hostFreeBytes: number;
  /** The KV cache type the plan must keep (a start of a plan the person saw: one KV type from plan to start). */
  cacheType?: KvCacheType;
  /** Physical CPU cores (the speed model's CPU FLOPS); absent: assumed. */
  cpuCores?: number | null;
}

interface LayoutPlan {
  placement: FitPick["placement"];
  gpusUsed: number;
  ctxPerSlot: number;
  cacheType: KvCacheType;
  nGpuLayers: number;
  nCpuMoe: number;
  estimate: Estimate;
  /** llama-server's host-side caches, set and budgeted from the RAM the plan leaves (issue 27). */
  host: HostCaches;
}

/**
 * llama-server keeps two caches in host RAM that the estimate does not hold: the prompt cache (`--cache-ram`, 8 GiB by
 * default) and, for hybrid / sliding-window models, context checkpoints (`--ctx-checkpoints`, 32 per slot by default;
 * each holds a slot's recurrent state and SWA cells — ≈ 150 MiB for Qwen3.6-27B: llama.cpp#21690's OOM). Both are set
 * from what the plan leaves of the host's RAM after its own part, the 1 GiB margin and HOST_HEADROOM for the OS,
 * opencode and the engine.
 */
interface HostCaches {
  cacheRamMiB: number;
  /** null: the model keeps no recurrent / SWA state (checkpoints unused). */
  ctxCheckpoints: number | null;
  checkpointBytes: number;
  /** What the plan leaves for the OS, opencode and the engine (at least HOST_HEADROOM when the RAM allows). */
  headroomBytes: number;
}

/** RAM kept for the OS, opencode and the engine before any host cache is given. */
const HOST_HEADROOM = 2 * GiB;
const MAX_CACHE_RAM_MIB = 8192;
const MAX_CHECKPOINTS = 8;

function hostCaches(e: Estimate, slots: number, hostFreeBytes: number): HostCaches {
  const used = e.perDevice.find((d) => d.kind === "cpu")?.totalBytes ?? 0;
  let left = hostFreeBytes - used - MARGIN - HOST_HEADROOM;
  const perCheckpoint = (e.recurrentBytes + e.kvBytesSwa) / Math.max(1, slots);
  let ctxCheckpoints: number | null = null;
  let checkpointBytes = 0;
  if (perCheckpoint > 0) {
    // a quarter of what is left, at most 8 per slot (llama.cpp's 32 would hold ≈ 19 GiB for 4 slots of Qwen3.6-27B)
    ctxCheckpoints = Math.max(0, Math.min(MAX_CHECKPOINTS, Math.floor(Math.max(0, left) / 4 / (slots * perCheckpoint))));
    checkpointBytes = ctxCheckpoints * slots * perCheckpoint;
    left -= checkpointBytes;
  }
  const cacheRamMiB = Math.max(0, Math.min(MAX_CACHE_RAM_MIB, Math.floor(Math.max(0, left) / 2 / MiB / 256) * 256));
  return {
    cacheRamMiB,
    ctxCheckpoints,
    checkpointBytes: Math.round(checkpointBytes),
    headroomBytes: Math.round(Math.max(0, hostFreeBytes - used - MARGIN - checkpointBytes - cacheRamMiB * MiB)),
  };
}

function ctxLadder(min: number, max: number): number[] {
  const out = new Set<number>([pad(min, 256)]);
  for (let c = 1024; c <= max; c *= 2) if (c >= min) out.add(c);
  if (max >= min) out.add(pad(max, 256) > max ? Math.floor(max / 256) * 256 : max);
  return [...out].filter((c) => c >= min && c <= Math.max(max, min)).sort((a, b) => b - a);
}

function fits(e: Estimate, gpus: DeviceBudget[], hostFree: number): boolean {
  for (const d of e.perDevice) {
    const free = d.kind === "cpu" ? hostFree : (gpus.find((g) => g.id === d.device)?.freeBytes ?? 0);
    if (d.totalBytes + MARGIN > free) return false;
  }
  return true;
}

/** Lays one model out on the devices; null when it does not fit at minCtx per slot in any allowed placement. */
export function layout(
  m: PlanModel,
  dev: PlanDevices,
  slots: number,
  minCtx: number,
  allow: FitPick["placement"][] = ["gpu", "moe-offload", "partial", "cpu"],
  maxCtxPerSlot?: number,
): LayoutPlan | null {
  const h = m.hparams;
  if (minCtx > h.nCtxTrain) return null;
  const maxCtx = Math.max(minCtx, Math.min(h.nCtxTrain, 131072, maxCtxPerSlot ?? Infinity));
  const ladder = ctxLadder(minCtx, maxCtx);
  const gpus = [...dev.gpus].sort((a, b) => b.freeBytes - a.freeBytes);
  const all = h.nLayerAll + 1;
  const est = (ctx: number, ct: KvCacheType, g: DeviceBudget[], ngl: number, nCpuMoe: number) =>
    estimate(h, m.tensors, {
      ctx: ctx * slots,
      parallel: slots,
      kvUnified: slots > 1,
      cacheTypeK: ct,
      cacheTypeV: ct,
      flashAttn: "on",
      nGpuLayers: g.length ? ngl : 0,
      gpus: g,
      nCpuMoe,
      tensorSplit: g.length > 1 ? g.map((x) => x.freeBytes / MiB) : undefined,
    });
  // largest context with an f16/q8_0 cache; a q4_0 cache only when nothing else fits the minimum
  const fixed = dev.cacheType;
  const bestCtx = (g: DeviceBudget[], ngl: number, nCpuMoe: number): { ctx: number; ct: KvCacheType; e: Estimate } | null => {
    for (const ctx of ladder)
      for (const ct of fixed ? [fixed] : (["f16", "q8_0"] as const)) {
        const e = est(ctx, ct, g, ngl, nCpuMoe);
        if (fits(e, g, dev.hostFreeBytes)) return { ctx, ct, e };
      }
    if (fixed) return null;
    const e = est(ladder.at(-1)!, "q4_0", g, ngl, nCpuMoe);
    return fits(e, g, dev.hostFreeBytes) ? { ctx: ladder.at(-1)!, ct: "q4_0", e } : null;
  };
  // the search for how much goes to RAM uses a q8_0 cache; q4_0 only when even the most offloaded layout needs it
  let minCt: KvCacheType = "q8_0";
  const fitsMin = (g: DeviceBudget[], ngl: number, nCpuMoe: number) => fits(est(ladder.at(-1)!, minCt, g, ngl, nCpuMoe), g, dev.hostFreeBytes);
  const mk = (
    placement: FitPick["placement"],
    g: DeviceBudget[],
    ngl: number,
    nCpuMoe: number,
    r: { ctx: number; ct: KvCacheType; e: Estimate },
  ): LayoutPlan => ({
    placement,
    gpusUsed: g.length,
    ctxPerSlot: Math.floor(r.e.nCtx / slots),
    cacheType: r.ct,
    nGpuLayers: g.length ? ngl : 0,
    nCpuMoe,
    estimate: r.e,
    host: hostCaches(r.e, slots, dev.hostFreeBytes),
  });

  if (gpus.length) {
    if (allow.includes("gpu")) {
      for (let k = 1; k <= gpus.length; k++) {
        const g = gpus.slice(0, k);
        const r = bestCtx(g, all, 0);
        if (r) return mk("gpu", g, all, 0, r);
      }
    }
    // Every split is searched (issue 27): the GPUs need at least some layers' experts in RAM (more in RAM → less on the
    // GPUs), the host at most some (more → more RAM). The fewest expert layers that let the GPUs fit is the split that
    // needs the least RAM: if the host cannot hold that, no split fits. (The old search asked first whether RAM could
    // hold every expert, and gave up when it could not: Qwen3-Coder-Next on a 24 GB card with 32 GB of RAM.)
    const gpuFits = (e: Estimate) => fits(e, gpus, Infinity);
    if (allow.includes("moe-offload") && m.isMoe) {
      for (const ct of fixed ? [fixed] : (["q8_0", "q4_0"] as const)) {
        minCt = ct;
        const gpuOk = (n: number) => gpuFits(est(ladder.at(-1)!, ct, gpus, all, n));
        if (!gpuOk(h.nLayer)) continue;
        let lo = 1;
        let hi = h.nLayer;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (gpuOk(mid)) hi = mid;
          else lo = mid + 1;
        }
        if (!fitsMin(gpus, all, lo)) continue;
        const r = bestCtx(gpus, all, lo);
        if (r) return mk("moe-offload", gpus, all, lo, r);
      }
    }
    if (allow.includes("partial")) {
      // the most layers the GPUs hold (fewer → less on the GPUs), then whether the host holds the rest
      for (const ct of fixed ? [fixed] : (["q8_0", "q4_0"] as const)) {
        minCt = ct;
        const gpuOk = (ngl: number) => gpuFits(est(ladder.at(-1)!, ct, gpus, ngl, 0));
        if (all - 1 < 1 || !gpuOk(1)) continue;
        let lo = 1;
        let hi = all - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >> 1;
          if (gpuOk(mid)) lo = mid;
          else hi = mid - 1;
        }
        if (!fitsMin(gpus, lo, 0)) continue;
        const r = bestCtx(gpus, lo, 0);
        if (r) return mk("partial", gpus, lo, 0, r);
      }
    }
  }
  if (allow.includes("cpu") && !gpus.length) {
    const r = bestCtx([], 0, 0);
    if (r) return mk("cpu", [], 0, 0, r);
  }
  return null;
}

/** Where a plan's GPUs are named: the llama-server words for them, and the environment that hides the others. */
export function gpuWords(gpus: PlanDevices["gpus"], isolate: boolean): { env: string[]; device: string } {
  // a replica sees only its own GPUs (no CUDA/HIP context, and no memory, on the others); llama.cpp renumbers them
  const visible =
    isolate &&
    gpus.length &&
    gpus.every(
      (g) => g.index !== undefined && /^(CUDA|ROCm)\d+$/.test(g.runtimeId) && g.runtimeId.replace(/\d+$/, "") === gpus[0]!.runtimeId.replace(/\d+$/, ""),
    );
  if (!visible) return { env: [], device: gpus.map((g) => g.runtimeId).join(",") };
  const prefix = gpus[0]!.runtimeId.replace(/\d+$/, "");
  const idx = gpus.map((g) => String(g.index)).join(",");
  return {
    env: prefix === "CUDA" ? ["CUDA_DEVICE_ORDER=PCI_BUS_ID", `CUDA_VISIBLE_DEVICES=${idx}`] : [`HIP_VISIBLE_DEVICES=${idx}`],
    device: gpus.map((_, i) => `${prefix}${i}`).join(","),
  };
}

function commandFor(m: PlanModel, p: LayoutPlan, gpus: PlanDevices["gpus"], slots: number, isolate = false): string {
  const e = p.estimate;
  const w = gpuWords(gpus, isolate);
  const args = [
    ...m.modelArgs,
    "--host",
    "127.0.0.1",
    "--port",
    "8080",
    "-c",
    String(e.nCtx),
    "-np",
    String(slots),
    ...(slots > 1 ? ["--kv-unified"] : []),
    ...(p.cacheType !== "f16" ? ["-ctk", p.cacheType, "-ctv", p.cacheType] : []),
    "-fa",
    "on",
    ...(gpus.length ? ["-ngl", String(p.nGpuLayers), "--device", w.device] : ["-ngl", "0"]),
    ...(p.nCpuMoe ? ["--n-cpu-moe", String(p.nCpuMoe)] : []),
    ...(gpus.length > 1 ? ["-ts", gpus.map((g) => String(Math.round(g.freeBytes / MiB))).join(",")] : []),
    "--cache-ram",
    String(p.host.cacheRamMiB),
    ...(p.host.ctxCheckpoints !== null ? ["--ctx-checkpoints", String(p.host.ctxCheckpoints)] : []),
    // speculative decoding with the model's own MTP head, where the catalog says the GGUF keeps it
    ...llamaMtpArgs(m.mtpDraft),
    // Prometheus /metrics (501 without it): tokens/s and KV use as the server counts them
    "--metrics",
    "--jinja",
    "--no-mmproj",
  ];
  return `${[...w.env, "LLAMA_API_KEY=…"].join(" ")} llama-server ${args.map(shellQuote).join(" ")}`;
}

function gpuDevices(p: LayoutPlan, gpus: PlanDevices["gpus"]): PlannedDevice[] {
  return gpus.map((g) => {
    const d = p.estimate.perDevice.find((x) => x.device === g.id)!;
    return {
      name: `${g.runtimeId} ${g.name}`,
      budgetBytes: Math.round(g.freeBytes),
      plannedBytes: Math.round(d.totalBytes),
      breakdown: {
        weightsBytes: Math.round(d.weightsBytes ?? 0),
        kvBytes: Math.round(d.kvBytes + d.recurrentBytes),
        computeBytes: Math.round(d.computeBytes + d.outputBytes),
        overheadBytes: Math.round(d.overheadBytes),
        marginBytes: MARGIN,
      },
    };
  });
}

/** The pick for one laid-out model: devices with budgets, the launch command with the key elided, the reason. */
function toPick(m: PlanModel, p: LayoutPlan, dev: PlanDevices, slots: number, toolVerified: boolean): FitPick {
  const gpus = [...dev.gpus].sort((a, b) => b.freeBytes - a.freeBytes).slice(0, p.gpusUsed);
  const e = p.estimate;
  const devices: PlannedDevice[] = gpuDevices(p, gpus);
  const host = e.perDevice.find((x) => x.kind === "cpu")!;
  if (p.placement !== "gpu") {
    devices.push({
      name: "cpu",
      budgetBytes: Math.round(dev.hostFreeBytes),
      plannedBytes: Math.round(host.totalBytes),
      breakdown: {
        weightsBytes: Math.round(host.weightsBytes ?? 0),
        kvBytes: Math.round(host.kvBytes + host.recurrentBytes),
        computeBytes: Math.round(host.computeBytes + host.outputBytes),
        overheadBytes: 0,
        marginBytes: MARGIN,
      },
    });
  }
  const ctxPerSlot = p.ctxPerSlot;
  const where =
    p.placement === "gpu"
      ? `entirely on ${p.gpusUsed} of ${counted(dev.gpus.length, "GPU")}`
      : p.placement === "moe-offload"
        ? `attention and ${h(m).nLayer - p.nCpuMoe} expert layers on the ${p.gpusUsed === 1 ? "GPU" : "GPUs"}, routed experts of ${p.nCpuMoe} layers in RAM (--n-cpu-moe)`
        : p.placement === "partial"
          ? `${p.nGpuLayers}/${h(m).nLayerAll + 1} layers on the ${p.gpusUsed === 1 ? "GPU" : "GPUs"}, the rest in RAM (slow)`
          : "CPU only";
  const replicas = p.placement === "gpu" && dev.gpus.length >= 2 * p.gpusUsed ? Math.floor(dev.gpus.length / p.gpusUsed) : undefined;
  const speed = planSpeed(m, p, gpus, slots, dev.cpuCores);
  return {
    model: m.model,
    quant: m.quant,
    runtime: "llama.cpp",
    slots,
    ctxPerSlot,
    toolCalling: toolVerified ? "verified" : "unverified",
    devices,
    command: commandFor(m, p, gpus, slots),
    placement: p.placement,
    cacheType: p.cacheType,
    reason:
      `${m.model}${m.quant ? ` ${m.quant}` : ""} (${gib(m.fileBytes)}) ${where}; ${counted(slots, "slot")} × ${ctxPerSlot} tokens, unified KV (${p.cacheType})` +
      (replicas ? `; ${replicas} replicas would fit, one per ${counted(p.gpusUsed, "GPU")}` : "") +
      `; ${hostNote(p.host)}` +
      mtpNote(m) +
      speedNote(speed),
    ...(replicas ? { replicas } : {}),
    ...mtpState(m),
    ...(speed ? { speed } : {}),
  };
}

const gib = (b: number) => `${(b / GiB).toFixed(1)} GiB`;

/** A reason's words for a head switched off (asked); none otherwise. */
const mtpNote = (m: { mtpOff?: boolean }): string => (m.mtpOff ? `; ${MTP_OFF}` : "");

/** Parameters of a model: the catalog's count, else the tensors' shapes, else ≈ 1.8 per byte (≈ 4.5 bits a weight). */
function modelParams(m: PlanModel): number {
  if (m.params) return m.params;
  const fromShapes = (m.tensors ?? []).reduce((a, t) => a + (t.shape.length ? t.shape.reduce((x, y) => x * y, 1) : 0), 0);
  return fromShapes > 0 ? fromShapes : m.fileBytes * 1.8;
}

/** Routed-expert bytes per repeating layer (the `*_exps.*` tensors). */
function expertBytesByLayer(m: PlanModel): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of m.tensors ?? []) {
    const hit = /^blk\.(\d+)\..*_exps\./.exec(t.name);
    if (hit) out.set(Number(hit[1]), (out.get(Number(hit[1])) ?? 0) + t.bytes);
  }
  return out;
}

/**
 * The speed of one server (issue 27): each device's dense weights, routed experts and KV at its bandwidth and TFLOPS
 * (GPUs by name; host RAM and the CPU assumed unless known) — see speed.ts.
 */
function planSpeed(m: PlanModel, p: LayoutPlan, gpus: PlanDevices["gpus"], slots: number, cpuCores?: number | null): SpeedEstimate | null {
  // the input embeddings stay in RAM but a token reads one row of them, not the table
  const embd = m.tensors?.find((t) => t.name === "token_embd.weight")?.bytes ?? 0;
  const byLayer = expertBytesByLayer(m);
  const allExperts = [...byLayer.values()].reduce((a, b) => a + b, 0);
  const nLayer = m.hparams.nLayer;
  // which layers' experts stay in RAM: all (CPU), the first nCpuMoe (--n-cpu-moe), or those of layers not offloaded
  const cpuLayers =
    p.placement === "cpu" ? nLayer : p.placement === "moe-offload" ? p.nCpuMoe : p.placement === "partial" ? Math.max(0, nLayer + 1 - p.nGpuLayers) : 0;
  const cpuExperts = [...byLayer.entries()].filter(([il]) => il < cpuLayers).reduce((a, [, b]) => a + b, 0);
  const gpuWeights = p.estimate.perDevice.filter((d) => d.kind === "gpu").reduce((a, d) => a + (d.weightsBytes ?? 0), 0) || 1;
  const cpu = cpuTflops(cpuCores);
  const parts: SpeedPart[] = p.estimate.perDevice.map((d) => {
    const g = gpus.find((x) => x.id === d.device);
    const bw = g ? gpuBandwidth(g.name) : ramBandwidth();
    const fl = g ? gpuTflops(g.name) : { tflops: cpu.tflops, known: cpu.known };
    const weights = Math.max(0, (d.weightsBytes ?? 0) - (g ? 0 : embd));
    const experts = Math.min(weights, g ? ((allExperts - cpuExperts) * (d.weightsBytes ?? 0)) / gpuWeights : cpuExperts);
    // a model with no expert tensors but a known active share (a MoE sized from its file): the share stands for routing
    const dense = allExperts ? weights - experts : weights * (m.activeShare ?? 1);
    return {
      name: g ? g.runtimeId : "RAM",
      denseBytes: dense,
      expertBytes: allExperts ? experts : 0,
      kvBytesPerToken: p.estimate.nCtx ? d.kvBytes / p.estimate.nCtx : 0,
      gbps: bw.gbps,
      bwKnown: bw.known,
      tflops: fl.tflops,
      flopsKnown: fl.known,
    };
  });
  const experts = allExperts ? (m.experts ?? activeExperts(m, allExperts)) : null;
  return estimateSpeed(parts, { activeParams: modelParams(m) * (m.activeShare ?? 1), experts, slots, ctxPerSlot: p.ctxPerSlot });
}

/** Without the expert counts: the used ÷ count ratio that gives the model's active share. */
function activeExperts(m: PlanModel, expertBytes: number): { count: number; used: number } {
  const total = (m.tensors ?? []).reduce((a, t) => a + t.bytes, 0) || m.fileBytes;
  const dense = total - expertBytes;
  const ratio = Math.max(0.001, Math.min(1, ((m.activeShare ?? 1) * total - dense) / expertBytes));
  return { count: 1000, used: Math.max(1, Math.round(ratio * 1000)) };
}

function poolSpeed(m: PlanModel, reps: ReplicaPlan[], cpuCores?: number | null): { speed?: SpeedEstimate } {
  const each = reps.map((r) => planSpeed(m, r.plan, r.gpus, r.slots, cpuCores));
  if (each.some((x) => !x)) return {};
  const slowest = each.reduce((a, x) => (x!.decodeTokPerSecPerSlot < a!.decodeTokPerSecPerSlot ? x : a))!;
  return {
    speed: {
      ...slowest!,
      decodeTokPerSecTotal: Math.round(each.reduce((a, x) => a + x!.decodeTokPerSecTotal, 0)),
      basis: `per replica (${reps.length} decode at once): ${slowest!.basis}`,
    },
  };
}

function speedNote(s: SpeedEstimate | null): string {
  return s
    ? `; ≈ ${s.decodeTokPerSecPerSlot} tokens/s per slot (${s.decodeTokPerSecTotal} in all, ${s.decodeTokPerSecSingle} for one slot alone), prompt ≈ ${s.prefillTokPerSec} tokens/s, estimated${s.warning ? ` — ${s.warning}` : ""}`
    : "";
}

function hostNote(c: HostCaches): string {
  return (
    `host RAM: prompt cache ${c.cacheRamMiB} MiB (--cache-ram)` +
    (c.ctxCheckpoints !== null ? `, ${counted(c.ctxCheckpoints, "context checkpoint")} per slot (${gib(c.checkpointBytes)})` : "") +
    `, ${gib(c.headroomBytes)} left for the OS, opencode and the engine`
  );
}

interface ReplicaPlan {
  gpus: PlanDevices["gpus"];
  slots: number;
  plan: LayoutPlan;
}

/**
 * One llama-server per GPU (or group of GPUs) as a pool (issue 16): when the model fits whole on a group of at most
 * half the GPUs with its share of the slots at ≥ minCtx each. A model split over GPUs runs its layers one GPU after
 * the other, so R independent copies decode R times the tokens at once; the slots are spread over the replicas.
 * The smallest group that fits wins (the most replicas, at most one per slot). Null when no group fits or slots < 2.
 */
export function replicate(m: PlanModel, dev: PlanDevices, slots: number, minCtx: number, maxCtxPerSlot?: number): ReplicaPlan[] | null {
  const n = dev.gpus.length;
  if (slots < 2 || n < 2) return null;
  const gpus = [...dev.gpus].sort((a, b) => b.freeBytes - a.freeBytes);
  for (let g = 1; g * 2 <= n; g++) {
    const r = Math.min(Math.floor(n / g), slots);
    const out: ReplicaPlan[] = [];
    for (let i = 0; i < r; i++) {
      const group = gpus.slice(i * g, (i + 1) * g);
      const s = Math.floor(slots / r) + (i < slots % r ? 1 : 0);
      const p = layout(m, { gpus: group, hostFreeBytes: dev.hostFreeBytes / r, cacheType: dev.cacheType }, s, minCtx, ["gpu"], maxCtxPerSlot);
      if (!p || p.gpusUsed !== group.length) break;
      out.push({ gpus: group, slots: s, plan: p });
    }
    if (out.length === r) return out;
  }
  return null;
}

/** The pick for a pool of replicas: every replica's command (its GPUs isolated), devices and the reason. */
function toPoolPick(m: PlanModel, reps: ReplicaPlan[], _dev: PlanDevices, toolVerified: boolean): FitPick {
  const slots = reps.reduce((a, r) => a + r.slots, 0);
  const ctxPerSlot = Math.min(...reps.map((r) => r.plan.ctxPerSlot));
  const endpoints = reps.map((r) => ({
    devices: r.gpus.map((g) => g.runtimeId),
    slots: r.slots,
    ctxPerSlot: r.plan.ctxPerSlot,
    command: commandFor(m, r.plan, r.gpus, r.slots, true),
  }));
  const g = reps[0]!.gpus.length;
  const caches = [...new Set(reps.map((r) => r.plan.cacheType))].join("/");
  return {
    model: m.model,
    quant: m.quant,
    runtime: "llama.cpp",
    slots,
    ctxPerSlot,
    toolCalling: toolVerified ? "verified" : "unverified",
    devices: reps.flatMap((r) => gpuDevices(r.plan, r.gpus)),
    command: endpoints.map((e) => e.command).join("\n"),
    placement: "gpu",
    // one type for the pool when its replicas agree (a start pins it); mixed pools name none
    ...(new Set(reps.map((r) => r.plan.cacheType)).size === 1 ? { cacheType: reps[0]!.plan.cacheType } : {}),
    reason:
      `${m.model}${m.quant ? ` ${m.quant}` : ""} (${gib(m.fileBytes)}) as ${reps.length} replicas, one llama-server per ${g === 1 ? "GPU" : `${g} GPUs`} ` +
      `(${endpoints.map((e) => `${e.devices.join("+")}: ${counted(e.slots, "slot")}`).join(", ")}) × ${ctxPerSlot} tokens, unified KV (${caches}); ` +
      `one model split over GPUs runs its layers one GPU after the other, so ${reps.length} copies decode ${reps.length}× the tokens at once — ocw admits each worker to a replica with a free slot` +
      mtpNote(m),
    replicas: reps.length,
    pool: { replicas: reps.length, endpoints },
    ...mtpState(m),
    ...poolSpeed(m, reps, _dev.cpuCores),
  };
}

const h = (m: PlanModel) => m.hparams;

/** `mtp` false: the person switched speculative decoding with the model's own MTP head off (mtp.ts). */
export function catalogModel(e: CatalogEntry, quant: string, mtp = true): PlanModel {
  const q = e.quants.find((x) => x.quant === quant);
  if (!q) throw new Error(`${e.id} has no quant ${quant} (has ${e.quants.map((x) => x.quant).join(", ")})`);
  return {
    model: e.id,
    quant: q.quant,
    hparams: catalogHparams(e),
    tensors: catalogTensors(e, q),
    fileBytes: q.bytes,
    isMoe: !!e.spec.moe,
    activeShare: e.activeParamsB / e.totalParamsB,
    experts: e.spec.moe ? { count: e.spec.moe.experts, used: e.spec.moe.used } : null,
    params: e.totalParamsB * 1e9,
    modelArgs: ["-hf", `${e.repo}:${q.quant}`],
    ...mtpPlan(mtpOf(e), "gguf", mtp),
  };
}

/** Per-slot context that agents need for long sessions before a larger quant is worth having (issue 27). */
const LONG_CTX = 65536;

/**
 * How good a GPU plan is apart from its quant: 2 = ≥ 64k per slot (or all the model / the asked context allows) with
 * an f16/q8_0 cache, 1 = an f16/q8_0 cache at a shorter context, 0 = a q4_0 cache.
 */
function planScore(p: LayoutPlan, m: PlanModel, maxCtxPerSlot?: number): number {
  if (p.cacheType === "q4_0") return 0;
  const want = Math.min(LONG_CTX, m.hparams.nCtxTrain, maxCtxPerSlot ?? Infinity);
  return p.ctxPerSlot >= want ? 2 : 1;
}

interface Proposal {
  pick: FitPick | null;
  alternatives: FitPick[];
  problem: string | null;
  /** Plans that fit but decode too slowly for an agent (refused unless slow plans are allowed), fastest first. */
  slow?: FitPick[];
}

interface ProposeOptions {
  /** Plan models that decode below MIN_AGENT_TOK_PER_SEC per slot too (the person's `--allow-slow`). */
  allowSlow?: boolean;
  /**
   * The one model a person named (the catalog given holds it alone): a plan that finds nothing says that model does not
   * fit, and how large it is, where it would say no catalog model fits.
   */
  named?: string;
  /** false: no speculative decoding with the models' own MTP heads (`--no-mtp`); absent: on where a GGUF keeps one. */
  mtp?: boolean;
}

/** Whether every GPU shares the host's memory (Apple, AMD APUs): bandwidth-poor, so MoE models first (issue 27). */
const unifiedOnly = (dev: PlanDevices): boolean => dev.gpus.length > 0 && dev.gpus.every((g) => g.unified);

/**
 * Chooses from the catalog. `verified(id)` says whether a target of that model passed the tool-call round trip here.
 * A plan too slow for an agent (speed.tooSlow) is passed over for the next quant or model and listed in `slow`, unless
 * `allowSlow`. On unified memory (Apple, APUs) MoE models are tried before dense ones: a token reads only its experts.
 */
export function propose(
  dev: PlanDevices,
  slots: number,
  minCtx: number,
  verified: (id: string) => boolean = () => false,
  catalog: readonly CatalogEntry[] = CATALOG,
  maxCtxPerSlot?: number,
  opts: ProposeOptions = {},
): Proposal {
  const autoPicks = catalog.filter((e) => e.autoPick && servedBy(e, "llama.cpp") && e.quants.length);
  const entries = unifiedOnly(dev) ? [...autoPicks.filter((e) => e.spec.moe), ...autoPicks.filter((e) => !e.spec.moe)] : autoPicks;
  const good = (e: CatalogEntry) => e.quants.filter((q) => q.bits >= 4);
  const found: FitPick[] = [];
  const slow: FitPick[] = [];
  /** false (and kept in `slow`) when the pick decodes too slowly for an agent and slow plans are not allowed */
  const fastEnough = (pick: FitPick): boolean => {
    if (opts.allowSlow || !pick.speed?.tooSlow) return true;
    if (!slow.some((x) => x.model === pick.model && x.quant === pick.quant)) slow.push(pick);
    return false;
  };
  const tryPhase = (phase: FitPick["placement"], list: CatalogEntry[], quantOrder: "largest" | "smallest", max: number) => {
    for (const e of list) {
      if (found.length >= max) return;
      if (found.some((f) => f.model === e.id)) continue;
      const qs = quantOrder === "largest" ? good(e) : [...good(e)].reverse();
      // on several GPUs: replicas of the largest quant that fits one GPU group, before one server split over them all
      if (phase === "gpu") {
        const pool = firstPool(e, qs);
        if (pool) {
          found.push(pool);
          const split = qs
            .map((q) => catalogModel(e, q.quant, opts.mtp !== false))
            .map((m) => ({ m, p: layout(m, dev, slots, minCtx, ["gpu"], maxCtxPerSlot) }))
            .filter((x) => x.p)
            .map((x) => toPick(x.m, x.p!, dev, slots, verified(e.id)))
            .find((x) => fastEnough(x));
          if (split && found.length < max) found.push(split);
          continue;
        }
      }
      // on the GPUs the largest quant is not bought with context or KV precision (issue 27): ≥ 64k per slot (or all
      // the model / the person allows) first, then an f16/q8_0 cache, then the larger quant
      let best: { pick: FitPick; score: number } | null = null;
      for (const q of qs) {
        const m = catalogModel(e, q.quant, opts.mtp !== false);
        const p = layout(m, dev, slots, minCtx, [phase], maxCtxPerSlot);
        if (!p) continue;
        const pick = toPick(m, p, dev, slots, verified(e.id));
        // too slow: a smaller quant reads fewer bytes per token
        if (!fastEnough(pick)) continue;
        const score = phase === "gpu" ? planScore(p, m, maxCtxPerSlot) : 0;
        if (!best || score > best.score) best = { pick, score };
        if (phase !== "gpu" || score === 2) break;
      }
      if (best) found.push(best.pick);
    }
  };
  // the largest quant whose replicas keep an f16/q8_0 cache; a q4_0 cache only when no quant fits otherwise
  const firstPool = (e: CatalogEntry, qs: CatalogEntry["quants"]): FitPick | null => {
    let best: { pick: FitPick; score: number } | null = null;
    for (const q of qs) {
      const m = catalogModel(e, q.quant, opts.mtp !== false);
      const reps = replicate(m, dev, slots, minCtx, maxCtxPerSlot);
      if (!reps) continue;
      const pick = toPoolPick(m, reps, dev, verified(e.id));
      if (!fastEnough(pick)) continue;
      const score = Math.min(...reps.map((r) => planScore(r.plan, m, maxCtxPerSlot)));
      if (!best || score > best.score) best = { pick, score };
      if (score === 2) break;
    }
    return best?.pick ?? null;
  };
  if (dev.gpus.length) {
    tryPhase("gpu", entries, "largest", 3);
    tryPhase(
      "moe-offload",
      entries.filter((e) => e.spec.moe),
      "smallest",
      3,
    );
    tryPhase(
      "partial",
      entries.filter((e) => !e.spec.moe),
      "smallest",
      3,
    );
  } else {
    // CPU: decode speed follows the active parameters, so only small-active MoE models, smallest ≥4-bit quant
    tryPhase(
      "cpu",
      entries.filter((e) => e.activeParamsB <= 5.5),
      "smallest",
      3,
    );
  }
  slow.sort((x, y) => (y.speed?.decodeTokPerSecPerSlot ?? 0) - (x.speed?.decodeTokPerSecPerSlot ?? 0));
  if (found.length) return { pick: found[0]!, alternatives: found.slice(1), problem: null, ...(slow.length ? { slow } : {}) };
  return { pick: null, alternatives: [], problem: noFitProblem(dev, slots, minCtx, verified, catalog, slow, opts.named), ...(slow.length ? { slow } : {}) };
}

/** What a refused slow plan would have given, and how to get a fast one or plan it anyway. */
export function slowProblem(slow: FitPick[], slots: number): string {
  const s = slow[0]!;
  return (
    `${s.model}${s.quant ? ` ${s.quant}` : ""} fits but would decode ≈ ${s.speed!.decodeTokPerSecPerSlot} tokens/s per slot with ${counted(slots, "slot")} busy ` +
    `(estimated; an agent needs ≥ ${MIN_AGENT_TOK_PER_SEC}): refused as too slow — pass --allow-slow to plan it anyway`
  );
}

/**
 * The plan for one named model (a Hub quant or a file), in the planner's order: replicas, whole on the GPUs, experts
 * in RAM, partial offload, CPU. `phases` limits the placements tried (a repo's quants are tried phase by phase).
 */
export function planModel(
  m: PlanModel,
  dev: PlanDevices,
  slots: number,
  minCtx: number,
  verified: boolean,
  phases: FitPick["placement"][] = ["gpu", "moe-offload", "partial", "cpu"],
  maxCtxPerSlot?: number,
): FitPick | null {
  if (phases.includes("gpu") && dev.gpus.length) {
    const reps = replicate(m, dev, slots, minCtx, maxCtxPerSlot);
    if (reps) return toPoolPick(m, reps, dev, verified);
  }
  const allow = phases.filter((p) => p !== "moe-offload" || m.isMoe);
  const p = layout(m, dev, slots, minCtx, allow, maxCtxPerSlot);
  return p ? toPick(m, p, dev, slots, verified) : null;
}

/** A model read from a GGUF header (or metadata): weights from its tensor infos, else spread from the file size. */
export function modelFromInfo(info: ModelInfo, name: string, modelArgs: string[], quant: string | null = info.quant): PlanModel {
  const hp = hparamsFromMetadata(info.metadata);
  const fileBytes = info.fileBytes ?? 0;
  let tensors = info.tensors;
  if (!tensors?.length && fileBytes) {
    // no tensor infos: the embeddings and output by vocabulary share, the rest evenly per layer
    const t = (n: string, bytes: number): GgufTensorInfo => ({ name: n, shape: [], type: 0, offset: 0, bytes: Math.round(bytes) });
    const per = fileBytes / (hp.nLayer + 2);
    tensors = [t("token_embd.weight", per), t("output.weight", per), ...Array.from({ length: hp.nLayer }, (_, il) => t(`blk.${il}.attn_shared.weight`, per))];
  }
  const meta = info.metadata as Record<string, unknown>;
  const arch = String(meta["general.architecture"] ?? "");
  const nExp = Number(meta[`${arch}.expert_count`] ?? 0);
  const nUsed = Number(meta[`${arch}.expert_used_count`] ?? 0);
  const all = (info.tensors ?? []).reduce((a, x) => a + x.bytes, 0);
  const exps = (info.tensors ?? []).filter((x) => /_exps\./.test(x.name)).reduce((a, x) => a + x.bytes, 0);
  // a token reads the shared weights and used ÷ count of the routed experts
  const activeShare = all && exps && nExp > 0 && nUsed > 0 ? (all - exps + (exps * nUsed) / nExp) / all : 1;
  return {
    model: name,
    quant,
    hparams: hp,
    tensors,
    fileBytes,
    isMoe: exps > 0,
    modelArgs,
    activeShare,
    experts: nExp > 0 && nUsed > 0 ? { count: nExp, used: nUsed } : null,
  };
}

function noFitProblem(
  dev: PlanDevices,
  slots: number,
  minCtx: number,
  verified: (id: string) => boolean,
  catalog: readonly CatalogEntry[],
  slow: FitPick[] = [],
  named?: string,
): string {
  const mem = dev.gpus.length
    ? `${counted(dev.gpus.length, "GPU")} with ${(dev.gpus.reduce((a, g) => a + g.freeBytes, 0) / GiB).toFixed(1)} GiB free and ${(dev.hostFreeBytes / GiB).toFixed(1)} GiB RAM free`
    : `no usable GPU and ${(dev.hostFreeBytes / GiB).toFixed(1)} GiB RAM free`;
  const hints: string[] = [];
  for (let s = Math.floor(slots / 2); s >= 1; s = Math.floor(s / 2)) {
    const p = propose(dev, s, minCtx, verified, catalog);
    if (p.pick) {
      hints.push(`--slots ${s} fits (${p.pick.model} ${p.pick.quant}${p.pick.speed ? `, ≈ ${p.pick.speed.decodeTokPerSecPerSlot} tokens/s per slot` : ""})`);
      break;
    }
    if (s === 1) break;
  }
  if (minCtx > 16384 && !hints.length) {
    const p = propose(dev, 1, 16384, verified, catalog);
    if (p.pick) hints.push(`--slots 1 --min-ctx 16384 fits (${p.pick.model}), below what OpenCode needs for a useful session`);
  }
  hints.push("or use an API provider: ocw setup --provider URL --model ID --api-key-env VAR");
  if (slow.length) return `${slowProblem(slow, slots)}; on this machine (${mem}): ${hints.join("; ")}`;
  if (named) {
    // why: the least it takes — its smallest quant's weights alone, before any KV cache or compute buffer
    const smallest = catalog.flatMap((e) => e.quants).sort((a, b) => a.bytes - b.bytes)[0];
    const size = smallest ? `: its smallest quant, ${smallest.quant}, is ${(smallest.bytes / GiB).toFixed(1)} GiB of weights before any KV cache` : "";
    return `${named} does not fit ${counted(slots, "slot")} × ${minCtx} tokens on this machine (${mem})${size}; ${hints.join("; ")}`;
  }
  return `no catalog model fits ${counted(slots, "slot")} × ${minCtx} tokens on this machine (${mem}); ${hints.join("; ")}`;
}

/** Which detected GPUs the llama.cpp runtime can use, with its device ids; notes for the ones it cannot. */
export function devicesFromHardware(
  hw: {
    gpus: { index: number; vendor: string; name: string; totalBytes: number; freeBytes: number | null; unified?: boolean }[];
    ram: { freeBytes: number };
    llamaDevices: { id: string; name: string }[] | null;
    cpu?: { cores: number; physicalCores: number | null };
  },
  runtimePath: string | null,
  assume?: { prefix: Record<string, string> },
): { dev: PlanDevices; notes: string[]; runtimeDevices: string[] | null } {
  const notes: string[] = [];
  // with no runtime yet: the device names of the build setup will install (Vulkan on Linux + NVIDIA without nvcc)
  const prefix: Record<string, string> = { nvidia: "CUDA", amd: "ROCm", apple: "MTL", ...assume?.prefix };
  const counters: Record<string, number> = {};
  const gpus: PlanDevices["gpus"] = [];
  for (const g of hw.gpus) {
    const free = g.unified ? Math.min(g.totalBytes, hw.ram.freeBytes) : (g.freeBytes ?? Math.floor(g.totalBytes * 0.9));
    let runtimeId: string | null;
    if (hw.llamaDevices) {
      const listed = hw.llamaDevices.find((d) => d.name.includes(g.name) || g.name.includes(d.name));
      runtimeId = listed?.id ?? null;
    } else {
      const p = prefix[g.vendor] ?? "Vulkan";
      runtimeId = `${p}${counters[p] ?? 0}`;
      counters[p] = (counters[p] ?? 0) + 1;
    }
    if (!runtimeId) {
      notes.push(
        `${g.name} is not visible to llama-server at ${runtimePath} (it lists ${hw.llamaDevices!.length ? hw.llamaDevices!.map((d) => d.id).join(", ") : "no GPU: a CPU build"}); install a ${g.vendor === "nvidia" ? "CUDA" : g.vendor === "amd" ? "ROCm or Vulkan" : "GPU"} build to use it — planning without it`,
      );
      continue;
    }
    gpus.push({
      id: `${g.vendor}${g.index}`,
      name: g.name,
      kind: "gpu",
      freeBytes: free,
      totalBytes: g.totalBytes,
      unified: g.unified,
      runtimeId,
      index: g.index,
      vendor: g.vendor,
    });
  }
  if (!runtimePath && hw.gpus.length) notes.push("no llama-server found yet: setup installs the prebuilt build for this GPU backend (or pass --llama-server)");
  // unified memory (Apple, AMD APUs) is one pool: what the GPU may take is not also free for the host (issue 27: a
  // 48 GB Mac was planned 46 GiB, its Metal budget counted again as RAM)
  const unifiedBudget = gpus.filter((g) => g.unified).reduce((a, g) => a + g.freeBytes, 0);
  const hostFreeBytes = Math.max(0, hw.ram.freeBytes - unifiedBudget);
  if (unifiedBudget)
    notes.push(
      `unified memory: the GPU's ${(unifiedBudget / GiB).toFixed(1)} GiB come out of the same ${(hw.ram.freeBytes / GiB).toFixed(1)} GiB of RAM, so the host keeps ${(hostFreeBytes / GiB).toFixed(1)} GiB`,
    );
  const cpuCores = hw.cpu ? (hw.cpu.physicalCores ?? hw.cpu.cores) : null;
  return { dev: { gpus, hostFreeBytes, cpuCores }, notes, runtimeDevices: hw.llamaDevices ? hw.llamaDevices.map((d) => d.id) : null };
}

/** A word as a POSIX shell reads it back (the pick's command is copied into terminals). */
export function shellQuote(w: string): string {
  return /^[\w@%+=:,./…-]+$/u.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/**
 * The words of a pick's command, as the shell would split them (single quotes, the leading VAR=… assignments dropped):
 * what `setup.start` launches is this command, with only the model file, port and alias filled in.
 */
export function commandWords(command: string): { env: string[]; bin: string; args: string[] } {
  const words: string[] = [];
  let cur: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (ch === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unbalanced quote in ${command}`);
      cur = (cur ?? "") + command.slice(i + 1, end);
      i = end;
    } else if (ch === "\\" && i + 1 < command.length) {
      cur = (cur ?? "") + command[++i];
    } else if (/\s/.test(ch)) {
      if (cur !== null) words.push(cur);
      cur = null;
    } else cur = (cur ?? "") + ch;
  }
  if (cur !== null) words.push(cur);
  const env: string[] = [];
  while (words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) env.push(words.shift()!);
  const bin = words.shift();
  if (!bin) throw new Error(`no program in ${command}`);
  return { env, bin, args: words };
}

// ── vLLM / SGLang: tensor parallel × data parallel (issue 13) ─────────────────────────────────────────────────────

/** A model as vLLM / SGLang load it: safetensors weights (a Hub repo or a local folder), never a GGUF. */
export interface ParallelModel {
  /** What the pick names: catalog id, repo or folder. */
  model: string;
  /** What the runtime loads: a Hub repo (owner/name) or a local folder. */
  source: string;
  /** bf16 / fp8 / mxfp4, or null when unknown (a repo outside the catalog). */
  dtype: string | null;
  weightsBytes: number;
  /** Where the size comes from: the Hub's listing, the folder, or the catalog (derived figures say so there). */
  weightsSource: "hub" | "folder" | "catalog";
  /** Attention heads (tensor parallel must divide them) and KV heads (KV is replicated past them); null = unknown. */
  nHead: number | null;
  nHeadKv: number | null;
  /** For the KV / recurrent state of slots × context (f16 cache); null → an allowance of 25 % of the weights. */
  hparams: ModelHparams | null;
  contextLength: number;
  toolParser: string;
  /** The family's reasoning parser (its thinking out of `content`), or null. */
  reasoningParser?: string | null;
  servedName: string;
  /** The speed model: active parameters, routed experts and their share of the weights (absent: dense, bytes ÷ 2). */
  activeParams?: number;
  experts?: { count: number; used: number; share: number } | null;
  /** Tokens the model's own MTP head drafts a step (the catalog says the safetensors carry it); absent: none. */
  mtpDraft?: number;
  /** The safetensors carry a head but the person switched MTP off (`mtp: false`): no speculative flags; the reason says so. */
  mtpOff?: boolean;
}

/**
 * The speed of one vLLM / SGLang engine (issue 27): its TP GPUs each read 1/TP of the weights and the KV at once, and
 * do 1/TP of the FLOPs; `perRank` sequences are batched; DP engines decode side by side.
 */
export function parallelSpeed(m: ParallelModel, p: ParallelPlan): SpeedEstimate | null {
  const g = p.gpus[0];
  if (!g) return null;
  const bw = gpuBandwidth(g.name);
  const fl = gpuTflops(g.name);
  const share = m.experts?.share ?? 0;
  const s = estimateSpeed(
    [
      {
        name: `${p.tp > 1 ? `${p.tp} × ` : ""}${g.runtimeId}`,
        denseBytes: (m.weightsBytes * (1 - share)) / p.tp,
        expertBytes: (m.weightsBytes * share) / p.tp,
        kvBytesPerToken: p.kvPerGpu / Math.max(1, p.perRank * p.ctxPerSlot),
        gbps: bw.gbps,
        bwKnown: bw.known,
        tflops: fl.tflops,
        flopsKnown: fl.known,
      },
    ],
    {
      activeParams: (m.activeParams ?? m.weightsBytes / (m.dtype === "fp8" ? 1 : 2)) / p.tp,
      experts: m.experts ? { count: m.experts.count, used: m.experts.used } : null,
      slots: p.perRank,
      ctxPerSlot: p.ctxPerSlot,
    },
  );
  if (!s || p.dp === 1) return s;
  const total = s.decodeTokPerSecPerSlot * p.perRank * p.dp;
  return {
    ...s,
    decodeTokPerSecTotal: total >= 100 ? Math.round(total) : Math.round(total * 10) / 10,
    basis: `per engine (${p.dp} decode side by side): ${s.basis}`,
  };
}

/** Per GPU: activations, CUDA graphs and the NCCL buffers of tensor parallel, beside weights and KV. */
export const PARALLEL_OVERHEAD = 2 * GiB;
/** The runtimes' own default share of a GPU (vLLM --gpu-memory-utilization 0.9). */
const PARALLEL_MAX_UTIL = 0.9;

export interface ParallelPlan {
  tp: number;
  dp: number;
  /** Sequences per engine (--max-num-seqs / --max-running-requests are per data-parallel rank). */
  perRank: number;
  ctxPerSlot: number;
  /** The share of each GPU the runtime may take (≤ 0.9, and ≤ what is free: vLLM refuses to start otherwise). */
  utilization: number;
  gpus: PlanDevices["gpus"];
  weightsPerGpu: number;
  kvPerGpu: number;
  needPerGpu: number;
}

/** What share of a GPU a runtime may claim: 0.9, or less when other processes hold memory (keeping 256 MiB spare). */
export function gpuUtilization(g: { freeBytes: number; totalBytes: number | null }): number {
  const total = g.totalBytes || g.freeBytes;
  return Math.max(0, Math.min(PARALLEL_MAX_UTIL, Math.floor(((g.freeBytes - 256 * MiB) / total) * 100) / 100));
}

function parallelKv(m: ParallelModel, perRank: number, ctx: number): number {
  if (!m.hparams) return m.weightsBytes * 0.25;
  const e = estimate(m.hparams, null, { ctx: perRank * ctx, parallel: perRank, kvUnified: true, cacheTypeK: "f16", cacheTypeV: "f16", gpus: [] });
  return e.kvBytes + e.recurrentBytes;
}

/**
 * vLLM / SGLang need every layer on the GPUs. Tensor parallel TP = the smallest power of two GPUs (dividing the
 * attention heads) on which weights/TP + the KV of a rank's sequences at the context + overhead fit the runtime's
 * share of each GPU; data parallel DP = GPUs ÷ TP engines (at most one per slot), the slots spread over them. At that
 * TP the longest context rung (≤ 131,072, ≤ the model's) that fits. Null when no TP fits.
 */
export function sizeParallel(
  m: ParallelModel,
  gpusIn: PlanDevices["gpus"],
  slots: number,
  minCtx: number,
  maxCtxPerSlot?: number,
  fixed: { tp?: number; dp?: number } = {},
): ParallelPlan | null {
  if (minCtx > m.contextLength) return null;
  const gpus = [...gpusIn].sort((a, b) => b.freeBytes - a.freeBytes);
  const n = gpus.length;
  const ladder = ctxLadder(minCtx, Math.max(minCtx, Math.min(m.contextLength, 131072, maxCtxPerSlot ?? Infinity)));
  // k8s (issue 27: one sizer): a pod's tensor-parallel size and data-parallel ranks may be fixed by the person
  for (let tp = fixed.tp ?? 1; tp <= n; tp *= 2) {
    if (fixed.tp && tp !== fixed.tp) break;
    if (m.nHead && m.nHead % tp !== 0) continue;
    const dp = fixed.dp ?? Math.max(1, Math.min(Math.floor(n / tp), slots));
    if (tp * dp > n) break;
    const perRank = Math.ceil(slots / dp);
    const used = gpus.slice(0, tp * dp);
    const utilization = Math.min(...used.map(gpuUtilization));
    const budget = Math.min(...used.map((g) => utilization * (g.totalBytes || g.freeBytes)));
    const weightsPerGpu = m.weightsBytes / tp;
    // KV heads split over the TP ranks until there is one per rank; past that each rank holds a copy
    const kvShare = m.nHeadKv && tp > m.nHeadKv ? 1 / m.nHeadKv : 1 / tp;
    for (const ctx of ladder) {
      const kvPerGpu = parallelKv(m, perRank, ctx) * kvShare;
      const need = weightsPerGpu + kvPerGpu + PARALLEL_OVERHEAD;
      if (need <= budget) return { tp, dp, perRank, ctxPerSlot: ctx, utilization, gpus: used, weightsPerGpu, kvPerGpu, needPerGpu: need };
    }
  }
  return null;
}
