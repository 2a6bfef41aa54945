/**
 * A throughput estimate for a plan (issue 27): token generation is memory-bound, so decode speed ≈ efficiency ×
 * bandwidth ÷ the bytes read per token. Every token reads the active weights of each device one device after the other
 * (layers run in sequence), so the time per token is the sum over devices of bytes ÷ that device's bandwidth. With N
 * slots busy a step reads the weights once for all N: the total rises, each slot keeps ≈ 80 % of the single-stream
 * rate (the KV reads grow with the batch). Bandwidths: the makers' figures by GPU name; unknown GPUs and host RAM are
 * assumed (OCW_RAM_BANDWIDTH_GBPS sets the host's), and the basis says so.
 */
import { config } from "../config";

/** GB/s by a GPU name fragment (most specific first). */
const GPU_BW: [RegExp, number][] = [
  [/H200/i, 4800],
  [/H100.*(SXM|HBM3)/i, 3350],
  [/H100/i, 2000],
  [/B200/i, 8000],
  [/MI300X/i, 5300],
  [/MI250/i, 3277],
  [/A100.*80/i, 2039],
  [/A100/i, 1555],
  [/L40S/i, 864],
  [/L40\b/i, 864],
  [/L4\b/i, 300],
  [/A10\b/i, 600],
  [/T4\b/i, 320],
  [/RTX PRO 6000/i, 1792],
  [/RTX 6000 Ada/i, 960],
  [/A6000/i, 768],
  [/5090/, 1792],
  [/5080/, 960],
  [/5070 Ti/i, 896],
  [/5070/, 672],
  [/5060 Ti/i, 448],
  [/5060/, 448],
  [/4090/, 1008],
  [/4080/, 717],
  [/4070 Ti/i, 504],
  [/4070/, 504],
  [/4060 Ti/i, 288],
  [/4060/, 272],
  [/3090/, 936],
  [/3080/, 760],
  [/3070/, 448],
  [/3060/, 360],
  [/7900 XTX/i, 960],
  [/7900 XT/i, 800],
  [/7800 XT/i, 624],
  [/6900 XT/i, 512],
  [/M\d Ultra/i, 800],
  [/M4 Max/i, 546],
  [/M\d Max/i, 400],
  [/M4 Pro/i, 273],
  [/M3 Pro/i, 150],
  [/M\d Pro/i, 200],
  [/M4/i, 120],
  [/M\d/i, 100],
];

export const ASSUMED_GPU_BW = 300;
export const ASSUMED_RAM_BW = 60;
const EFFICIENCY = 0.6;
const BATCH_SHARE = 0.8;
/** Below this an agent's turn (a few hundred tokens of output, many turns a task) takes too long. */
export const MIN_AGENT_TOK_PER_SEC = 8;

export function gpuBandwidth(name: string): { gbps: number; known: boolean } {
  const hit = GPU_BW.find(([re]) => re.test(name));
  return hit ? { gbps: hit[1], known: true } : { gbps: ASSUMED_GPU_BW, known: false };
}

export function ramBandwidth(env: NodeJS.ProcessEnv = process.env): { gbps: number; known: boolean } {
  const v = Number(config(env).OCW_RAM_BANDWIDTH_GBPS);
  return Number.isFinite(v) && v > 0 ? { gbps: v, known: true } : { gbps: ASSUMED_RAM_BW, known: false };
}

export interface SpeedEstimate {
  decodeTokPerSecPerSlot: number;
  decodeTokPerSecTotal: number;
  basis: string;
  warning: string | null;
}

/**
 * parts: each device's weight bytes and the share of them a token reads (1 for dense, active ÷ total for MoE experts),
 * with its bandwidth.
 */
export function estimateSpeed(
  parts: { name: string; bytes: number; activeShare: number; gbps: number; known: boolean }[],
  slots: number,
): SpeedEstimate | null {
  const used = parts.filter((p) => p.bytes > 0);
  if (!used.length) return null;
  const secPerToken = used.reduce((a, p) => a + (p.bytes * p.activeShare) / (p.gbps * 1e9), 0) / EFFICIENCY;
  const single = 1 / secPerToken;
  const perSlot = slots > 1 ? single * BATCH_SHARE : single;
  const round = (x: number) => (x >= 100 ? Math.round(x) : Math.round(x * 10) / 10);
  const basis =
    `decode ≈ ${Math.round(EFFICIENCY * 100)} % of bandwidth ÷ bytes read per token: ` +
    used.map((p) => `${p.name} ${((p.bytes * p.activeShare) / 1024 ** 3).toFixed(1)} GiB at ${p.gbps} GB/s${p.known ? "" : " (assumed)"}`).join(" + ");
  return {
    decodeTokPerSecPerSlot: round(perSlot),
    decodeTokPerSecTotal: round(perSlot * slots),
    basis,
    warning:
      perSlot < MIN_AGENT_TOK_PER_SEC
        ? `≈ ${round(perSlot)} tokens/s per slot is slow for an agent (a worker's turn writes hundreds of tokens): fewer slots, a smaller or MoE model, or a GPU`
        : null,
  };
}
