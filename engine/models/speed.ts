/**
 * A throughput model for a plan (issue 27). It is an estimate from the makers' figures, never a measurement; `basis`
 * says what it assumed.
 *
 * Decode (one step = one token for each busy slot) is bound by memory or by compute, per device, devices one after the
 * other (layers run in sequence):
 *   memory  = (dense weights + routed experts touched by the step + the KV the slots read) ÷ (60 % of bandwidth)
 *   compute = slots × 2 × active parameters (that device's share) ÷ (its TFLOPS × efficiency)
 * A step's time on a device is the larger of the two. With N slots a MoE step touches 1 − (1 − used/experts)^N of each
 * layer's experts (routing taken as uniform), so experts kept in RAM make many slots slow — 16 slots read most of
 * them every step. Each slot reads its own KV: an agent's session holds on average half its context (≤ 16k tokens).
 * Prefill is compute-bound: 2 × active parameters per token at the device's TFLOPS × 40 %.
 *
 * Bandwidth and TFLOPS by GPU name (dense FP16 tensor figures, FP32 accumulate where the makers say); unknown GPUs,
 * host RAM (OCW_RAM_BANDWIDTH_GBPS sets it) and the CPU's throughput (≈ 200 G int8 ops a second per physical core:
 * llama.cpp's quantized dot products on AVX2) are assumed, and the basis says so.
 *
 * The agent threshold: a worker's turn writes a few hundred tokens (a tool call, an edit) and a task takes tens of
 * turns. Below 8 tokens/s per slot a turn's answer alone takes a minute and a task an hour, so such plans are refused
 * unless the person allows slow plans (`--allow-slow`).
 */
import { config } from "../config";
import { counted } from "../../shared/words";

/** By a GPU name fragment (most specific first): memory bandwidth in GB/s, dense FP16 tensor TFLOPS. */
const GPU_TABLE: [RegExp, number, number][] = [
  [/GB200/i, 8000, 2500],
  [/B200/i, 8000, 2250],
  [/B100/i, 8000, 1750],
  [/H200/i, 4800, 989],
  [/H100.*(SXM|HBM3)/i, 3350, 989],
  [/H100.*NVL/i, 3900, 835],
  [/H100/i, 2000, 756],
  [/GH200/i, 4000, 989],
  [/MI355X/i, 8000, 2500],
  [/MI325X/i, 6000, 1307],
  [/MI300X/i, 5300, 1307],
  [/MI250/i, 3277, 362],
  [/A100.*80/i, 2039, 312],
  [/A100/i, 1555, 312],
  [/L40S/i, 864, 362],
  [/L40\b/i, 864, 181],
  [/L4\b/i, 300, 121],
  [/A10\b/i, 600, 125],
  [/T4\b/i, 320, 65],
  [/RTX PRO 6000/i, 1792, 250],
  [/RTX 6000 Ada/i, 960, 182],
  [/A6000/i, 768, 77],
  [/5090/, 1792, 209],
  [/5080/, 960, 113],
  [/5070 Ti/i, 896, 88],
  [/5070/, 672, 62],
  [/5060 Ti/i, 448, 47],
  [/5060/, 448, 38],
  [/4090/, 1008, 165],
  [/4080/, 717, 97],
  [/4070 Ti/i, 504, 80],
  [/4070/, 504, 58],
  [/4060 Ti/i, 288, 44],
  [/4060/, 272, 30],
  [/3090/, 936, 71],
  [/3080/, 760, 60],
  [/3070/, 448, 41],
  [/3060/, 360, 26],
  [/7900 XTX/i, 960, 61],
  [/7900 XT/i, 800, 52],
  [/7800 XT/i, 624, 37],
  [/6900 XT/i, 512, 23],
  [/M\d Ultra/i, 800, 27],
  [/M4 Max/i, 546, 17],
  [/M\d Max/i, 400, 14],
  [/M4 Pro/i, 273, 9],
  [/M3 Pro/i, 150, 7],
  [/M\d Pro/i, 200, 7],
  [/M4/i, 120, 4],
  [/M\d/i, 100, 3.5],
];

const ASSUMED_GPU_BW = 300;
const ASSUMED_GPU_TFLOPS = 20;
const ASSUMED_RAM_BW = 60;
/** Physical cores assumed when the machine did not say. */
const ASSUMED_CPU_CORES = 8;
/** Per physical core: llama.cpp multiplies quantized weights with int8 dot products (AVX2: 2 × 32 int8 MACs a cycle at 3 GHz ≈ 200 G ops). */
const CPU_GFLOPS_PER_CORE = 200;
const MEM_EFFICIENCY = 0.6;
const DECODE_COMPUTE_EFFICIENCY = 0.5;
const PREFILL_EFFICIENCY = 0.4;
/** Tokens an agent session holds on average while it decodes (half of a 32k session). */
const AVG_SESSION_CTX = 16384;
/** OpenCode's first request (issue 27, measured with our agent: ≈ 5,917 tokens, rounded up). */
const FIRST_REQUEST_TOKENS = 6144;
/** Below this an agent's turn (a few hundred tokens of output, tens of turns a task) takes too long. */
export const MIN_AGENT_TOK_PER_SEC = 8;
/** Above this the first request of every worker (≈ 6k tokens) waits minutes: warned, not refused. */
const SLOW_FIRST_REQUEST_SEC = 120;

export function gpuBandwidth(name: string): { gbps: number; known: boolean } {
  const hit = GPU_TABLE.find(([re]) => re.test(name));
  return hit ? { gbps: hit[1], known: true } : { gbps: ASSUMED_GPU_BW, known: false };
}

export function gpuTflops(name: string): { tflops: number; known: boolean } {
  const hit = GPU_TABLE.find(([re]) => re.test(name));
  return hit ? { tflops: hit[2], known: true } : { tflops: ASSUMED_GPU_TFLOPS, known: false };
}

export function ramBandwidth(env: NodeJS.ProcessEnv = process.env): { gbps: number; known: boolean } {
  const v = Number(config(env).OCW_RAM_BANDWIDTH_GBPS);
  return Number.isFinite(v) && v > 0 ? { gbps: v, known: true } : { gbps: ASSUMED_RAM_BW, known: false };
}

export function cpuTflops(physicalCores: number | null | undefined): { tflops: number; known: boolean; cores: number } {
  const known = !!physicalCores && physicalCores > 0;
  const cores = known ? physicalCores! : ASSUMED_CPU_CORES;
  return { tflops: (cores * CPU_GFLOPS_PER_CORE) / 1000, known, cores };
}

/** A datacenter GPU with ≥ 80 GB where vLLM / SGLang serve many sequences better than llama.cpp (issue 27). */
export function isDatacenterGpu(name: string, totalBytes: number): boolean {
  return totalBytes >= 75 * 1024 ** 3 && /\b(H100|H200|GH200|B100|B200|GB200|A100|MI300X|MI325X|MI355X)\b/i.test(name);
}

/** Whether a GPU runs FP8 weights natively (Ada, Hopper, Blackwell, CDNA3+): the maker's FP8 repo is then preferred. */
export function hasFp8(name: string): boolean {
  return /\b(H100|H200|GH200|B100|B200|GB200|L40S|L4|MI300X|MI325X|MI355X|RTX PRO 6000|RTX 6000 Ada)\b|\b(40[6-9]0|50[6-9]0)\b/i.test(name);
}

export interface SpeedPart {
  /** CUDA0, RAM, … */
  name: string;
  /** Weights every token reads on this device (attention, shared experts, dense FFN). */
  denseBytes: number;
  /** Routed-expert weights on this device. */
  expertBytes: number;
  /** KV / state bytes per context position held on this device (each slot reads its whole context per token). */
  kvBytesPerToken: number;
  gbps: number;
  bwKnown: boolean;
  tflops: number;
  flopsKnown: boolean;
}

interface SpeedModel {
  /** Active parameters (what a token multiplies): FLOPs per token ≈ 2 × this. */
  activeParams: number;
  /** Routed experts per layer and used per token; absent for a dense model. */
  experts?: { count: number; used: number } | null;
  slots: number;
  ctxPerSlot: number;
}

export interface SpeedEstimate {
  decodeTokPerSecPerSlot: number;
  decodeTokPerSecTotal: number;
  /** One slot busy alone. */
  decodeTokPerSecSingle: number;
  /** Prompt processing (compute-bound) and how long OpenCode's first request (≈ 6k tokens) takes to read. */
  prefillTokPerSec: number;
  firstRequestSec: number;
  /** Below MIN_AGENT_TOK_PER_SEC per slot with every slot busy: refused unless slow plans are allowed. */
  tooSlow: boolean;
  basis: string;
  warning: string | null;
}

const round = (x: number) => (x >= 100 ? Math.round(x) : Math.round(x * 10) / 10);

/** The share of each layer's routed experts one decode step over `slots` sequences reads. */
export function touchedExperts(experts: SpeedModel["experts"], slots: number): number {
  if (!experts || experts.count <= 0) return 1;
  return 1 - (1 - Math.min(1, experts.used / experts.count)) ** Math.max(1, slots);
}

export function estimateSpeed(partsIn: SpeedPart[], m: SpeedModel): SpeedEstimate | null {
  const parts = partsIn.filter((p) => p.denseBytes + p.expertBytes > 0);
  if (!parts.length) return null;
  const single = touchedExperts(m.experts, 1);
  // each device's share of the FLOPs follows the active bytes it holds
  const activeBytes = parts.map((p) => p.denseBytes + p.expertBytes * single);
  const allActive = activeBytes.reduce((a, b) => a + b, 0) || 1;
  const flopsPerToken = 2 * m.activeParams;
  const avgCtx = Math.min(m.ctxPerSlot, 2 * AVG_SESSION_CTX) / 2;
  const step = (n: number) =>
    parts.reduce((a, p, i) => {
      const bytes = p.denseBytes + p.expertBytes * touchedExperts(m.experts, n) + n * avgCtx * p.kvBytesPerToken;
      const mem = bytes / (p.gbps * 1e9 * MEM_EFFICIENCY);
      const compute = (n * flopsPerToken * (activeBytes[i]! / allActive)) / (p.tflops * 1e12 * DECODE_COMPUTE_EFFICIENCY);
      return a + Math.max(mem, compute);
    }, 0);
  const slots = Math.max(1, m.slots);
  const perSlot = 1 / step(slots);
  const one = 1 / step(1);
  const prefillSec = parts.reduce((a, p, i) => a + (flopsPerToken * (activeBytes[i]! / allActive)) / (p.tflops * 1e12 * PREFILL_EFFICIENCY), 0);
  const prefill = 1 / prefillSec;
  const firstRequestSec = FIRST_REQUEST_TOKENS / prefill;
  const tooSlow = perSlot < MIN_AGENT_TOK_PER_SEC;
  const gb = (b: number) => (b / 1024 ** 3).toFixed(1);
  const basis =
    `estimated, not measured: decode = per device the larger of (weights read + the KV of ${counted(slots, "slot")} at ≈ ${Math.round(avgCtx)} tokens) ÷ ${Math.round(MEM_EFFICIENCY * 100)} % of bandwidth ` +
    `and ${slots} × 2 × ${(m.activeParams / 1e9).toFixed(1)} B active parameters ÷ TFLOPS; ` +
    parts
      .map(
        (p) =>
          `${p.name} ${gb(p.denseBytes + p.expertBytes * touchedExperts(m.experts, slots))} GiB at ${p.gbps} GB/s${p.bwKnown ? "" : " (assumed)"}, ${p.tflops} TFLOPS${p.flopsKnown ? "" : " (assumed)"}`,
      )
      .join(" + ") +
    (m.experts && slots > 1 ? `; ${slots} slots touch ${Math.round(touchedExperts(m.experts, slots) * 100)} % of the routed experts per step` : "") +
    `; prefill compute-bound at ${Math.round(PREFILL_EFFICIENCY * 100)} % of TFLOPS`;
  const warnings: string[] = [];
  if (tooSlow)
    warnings.push(
      `≈ ${round(perSlot)} tokens/s per slot with ${counted(slots, "slot")} busy is too slow for an agent (below ${MIN_AGENT_TOK_PER_SEC}; a worker's turn writes hundreds of tokens): fewer slots, a smaller or MoE model, or a GPU`,
    );
  if (firstRequestSec > SLOW_FIRST_REQUEST_SEC)
    warnings.push(`reading OpenCode's first request (≈ ${FIRST_REQUEST_TOKENS} tokens) takes ≈ ${Math.round(firstRequestSec)} s per worker`);
  return {
    decodeTokPerSecPerSlot: round(perSlot),
    decodeTokPerSecTotal: round(perSlot * slots),
    decodeTokPerSecSingle: round(one),
    prefillTokPerSec: round(prefill),
    firstRequestSec: Math.round(firstRequestSec * 10) / 10,
    tooSlow,
    basis,
    warning: warnings.length ? warnings.join("; ") : null,
  };
}
