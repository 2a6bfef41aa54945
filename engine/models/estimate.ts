/**
 * Memory estimator that follows llama.cpp's own sizing rules (llama.cpp 80fb11a):
 *  - context: src/llama-context.cpp:288-302 (pad 256, unified vs split, n_ctx_seq)
 *  - KV: src/llama-kv-cache.cpp (per layer n_embd_k_gqa × cells × streams; V uses the max width when V is transposed, i.e. FA off)
 *  - SWA: src/llama-kv-cache-iswa.cpp:73 (window cells = PAD(min(cells, n_swa·(unified ? n_seq : 1) + n_ubatch), 256))
 *  - recurrent: src/llama-memory-recurrent.cpp:101 (F32, rows = max(1, n_seq)·(1 + n_rs_seq), n_embd_r / n_embd_s)
 *  - layer → device: src/llama-model.cpp:1443-1500 (cumulative free-memory fractions, output layer = n_layer)
 * KV and recurrent bytes are exact (they are plain tensor allocations). The compute buffer replays llama.cpp's graph
 * reserve and ggml-alloc on the decoder block (compute-graph.ts); driver overhead is a documented estimate
 * (see docs/model-setup.md).
 */
import type { DeviceBudget } from "../hardware";
import { computeBufferBytes } from "./compute-graph";
import { ggmlTypeId, type KvCacheType, rowBytes } from "./ggml-types";
import type { GgufTensorInfo } from "./gguf";
import { type ModelHparams, nEmbdKGqa, nEmbdVGqa } from "./hparams";
import { SetupError, type SetupErrorData } from "./errors";

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export const pad = (x: number, n: number): number => Math.ceil(x / n) * n;

export type { DeviceBudget };

export interface EstimateOptions {
  /** -c (total cache); 0 or undefined → n_ctx_train. */
  ctx?: number;
  /** -np; undefined or -1 → auto = 4 slots with a unified KV (llama-server's default). */
  parallel?: number;
  /** --kv-unified; default false unless -np is auto. */
  kvUnified?: boolean;
  cacheTypeK?: KvCacheType;
  cacheTypeV?: KvCacheType;
  ubatch?: number;
  /** -fa; "auto" resolves to on (CPU and CUDA/Metal/Vulkan all support it in this llama.cpp). */
  flashAttn?: "on" | "off" | "auto";
  swaFull?: boolean;
  /** -ngl; undefined or < 0 → all layers (incl. output). */
  nGpuLayers?: number;
  /** GPUs in order; empty = CPU only. */
  gpus?: DeviceBudget[];
  /** -ts proportions; default by free memory. */
  tensorSplit?: number[];
  nRsSeq?: number;
  /** Per-GPU driver/context overhead (default 300 MiB). */
  gpuOverheadBytes?: number;
  /** --n-cpu-moe N: the routed-expert tensors (`*_exps.*`) of layers 0..N-1 stay in host RAM. */
  nCpuMoe?: number;
}

interface DeviceEstimate {
  device: string;
  name: string;
  kind: "gpu" | "cpu";
  /** Repeating layers (and "output") placed here. */
  layers: number;
  hasOutput: boolean;
  weightsBytes: number | null;
  kvBytes: number;
  recurrentBytes: number;
  computeBytes: number;
  outputBytes: number;
  overheadBytes: number;
  totalBytes: number;
  freeBytes: number | null;
}

export interface Estimate {
  arch: string;
  nCtx: number;
  nCtxPerSlot: number;
  slots: number;
  kvUnified: boolean;
  nStream: number;
  kvCells: number;
  swaCells: number | null;
  flashAttn: boolean;
  cacheTypeK: KvCacheType;
  cacheTypeV: KvCacheType;
  ubatch: number;
  kvBytes: number;
  kvBytesK: number;
  kvBytesV: number;
  /** Part of kvBytes in the SWA cache. */
  kvBytesSwa: number;
  recurrentBytes: number;
  weightsBytes: number | null;
  outputBytes: number;
  computeBytes: number;
  nGpuLayers: number;
  perDevice: DeviceEstimate[];
  totalBytes: number | null;
  warnings: string[];
}

export class EstimateError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("estimate", message, data);
    this.name = "EstimateError";
  }
}

interface ResolvedContext {
  nCtx: number;
  nCtxPerSlot: number;
  slots: number;
  kvUnified: boolean;
  nStream: number;
}

/** llama_context: n_ctx = PAD(c, 256); split → n_ctx_seq = PAD(n_ctx / n_seq, 256), n_ctx = n_ctx_seq · n_seq. */
export function resolveContext(h: Pick<ModelHparams, "nCtxTrain">, o: Pick<EstimateOptions, "ctx" | "parallel" | "kvUnified">): ResolvedContext {
  const auto = o.parallel === undefined || o.parallel < 0;
  const slots = auto ? 4 : o.parallel!;
  if (!Number.isInteger(slots) || slots < 1) throw new EstimateError(`--parallel must be a positive integer (got ${o.parallel})`);
  const kvUnified = auto ? (o.kvUnified ?? true) : (o.kvUnified ?? false);
  const c = o.ctx && o.ctx > 0 ? o.ctx : h.nCtxTrain;
  let nCtx = pad(c, 256);
  let nCtxPerSlot: number;
  if (kvUnified) nCtxPerSlot = nCtx;
  else {
    nCtxPerSlot = pad(Math.floor(nCtx / slots), 256);
    nCtx = nCtxPerSlot * slots;
  }
  return { nCtx, nCtxPerSlot, slots, kvUnified, nStream: kvUnified ? 1 : slots };
}

function typeId(t: KvCacheType): number {
  const id = ggmlTypeId(t);
  if (id === undefined) throw new EstimateError(`unknown cache type ${t}`);
  return id;
}

/** Layer index a tensor belongs to: blk.N → N, token_embd → -1 (input), everything else → n_layer_all (output). */
function tensorLayer(name: string, nLayerAll: number): number {
  const m = /^blk\.(\d+)\./.exec(name);
  if (m) return Number(m[1]);
  if (name.startsWith("token_embd.") && !name.startsWith("token_embd_norm")) return -1;
  return nLayerAll;
}

/** Device index for each layer 0..n_layer_all (the last is the output layer); -1 = CPU. */
export function assignLayers(nLayerAll: number, nGpuLayers: number, gpus: DeviceBudget[], tensorSplit?: number[]): number[] {
  const n = gpus.length;
  const out = new Array<number>(nLayerAll + 1).fill(-1);
  if (n === 0 || nGpuLayers <= 0) return out;
  const raw = tensorSplit && tensorSplit.some((x) => x > 0) ? gpus.map((_, i) => tensorSplit[i] ?? 0) : gpus.map((g) => g.freeBytes);
  const splits: number[] = [];
  let sum = 0;
  for (const x of raw) splits.push((sum += x));
  for (let i = 0; i < n; i++) splits[i] = sum > 0 ? splits[i]! / sum : (i + 1) / n;
  const iGpuStart = Math.max(nLayerAll + 1 - nGpuLayers, 0);
  const act = Math.min(nGpuLayers, nLayerAll + 1);
  for (let il = 0; il <= nLayerAll; il++) {
    if (il < iGpuStart || il - iGpuStart >= act) continue;
    const f = Math.fround((il - iGpuStart) / act);
    let d = 0;
    while (d < n && !(splits[d]! > f)) d++; // std::upper_bound
    out[il] = Math.min(d, n - 1);
  }
  return out;
}

/**
 * The host's compute buffer when layers run on GPUs (logged as `CUDA_Host compute buffer size`): the reserve graph's
 * inputs, which ggml fills on the host and copies to the GPU, plus the token_embd GET_ROWS, which runs where token_embd
 * lives (the CPU). Inputs are never freed, so the buffer is their sum at 32-byte alignment: token ids, the embeddings
 * input, positions, per KV cache its Hadamard matrices (quantized cache, head size a multiple of 64), K/V row indices
 * and KQ mask (n_kv × n_tokens, f16 with flash attention, f32 without; it dominates), and the output ids. The big ops of
 * layers kept on the CPU are offloaded to the GPU at this batch size, so partial offload adds nothing here. Matches the
 * 4-decimal figure of every H200 log (test/fixtures/llama-logs/cuda-h200) where flash attention ran on the KV's device.
 */
function hostInputBytes(
  h: ModelHparams,
  s: { nTokens: number; nSeqs: number; cells: number; swaCells: number | null; fa: boolean; quantK: boolean; quantV: boolean },
): number {
  const al = (n: number) => pad(n, 32);
  const T = s.nTokens;
  let vWidthMax = 0;
  for (let il = 0; il < h.nLayer; il++) if (h.kvLayer[il]) vWidthMax = Math.max(vWidthMax, (h.isSwa[il] ? h.headVSwa : h.headV) * (h.nHeadKv[il] ?? 0));
  const hasAttn = h.kvLayer.some(Boolean);
  const hasSwa = hasAttn && (s.swaCells ?? 0) > 0 && h.isSwa.some((x, il) => x && h.kvLayer[il]);
  let b = al(4 * T) + al(h.nEmbd * T * 4) + al(4 * T);
  for (const swa of hasSwa ? [false, true] : hasAttn ? [false] : []) {
    const dk = swa ? h.headKSwa : h.headK;
    const dv = swa ? h.headVSwa : h.headV;
    if (s.quantK && dk > 0 && dk % 64 === 0 && h.headK % 64 === 0) {
      let nrot = 64;
      while (dk % (nrot * 2) === 0) nrot *= 2;
      b += al(nrot * nrot * 4);
    }
    if (s.quantV && dv > 0 && dv % 64 === 0 && h.headV % 64 === 0) b += al(64 * 64 * 4);
    b += al(8 * T) + al(s.fa ? 8 * T : 8 * T * vWidthMax) + al((swa ? s.swaCells! : s.cells) * T * (s.fa ? 2 : 4));
  }
  return b + al(4 * Math.min(T, s.nSeqs)) + al(h.nEmbd * T * 4);
}

export function estimate(h: ModelHparams, tensors: GgufTensorInfo[] | null, o: EstimateOptions = {}): Estimate {
  const warnings = [...h.caveats];
  const ctx = resolveContext(h, o);
  const ctk = o.cacheTypeK ?? "f16";
  const ctv = o.cacheTypeV ?? "f16";
  const fa = (o.flashAttn ?? "auto") !== "off";
  const quantV = !["f32", "f16", "bf16"].includes(ctv);
  if (quantV && !fa) throw new EstimateError(`quantized V cache (${ctv}) requires flash attention; use --flash-attn on or --cache-type-v f16`);
  const ubatch = o.ubatch ?? 512;
  if (!Number.isInteger(ubatch) || ubatch < 1) throw new EstimateError(`--ubatch must be a positive integer (got ${o.ubatch})`);
  const tk = typeId(ctk);
  const tv = typeId(ctv);
  const gpus = o.gpus ?? [];
  const nLayerAll = h.nLayerAll;
  const ngl = o.nGpuLayers === undefined || o.nGpuLayers < 0 ? nLayerAll + 1 : o.nGpuLayers;
  const layerDev = assignLayers(nLayerAll, gpus.length ? ngl : 0, gpus, o.tensorSplit);

  // ---- KV
  const cells = ctx.nCtxPerSlot;
  const hasSwa = h.swaType !== "none" && h.isSwa.some(Boolean);
  let swaCells: number | null = null;
  if (hasSwa) {
    swaCells = o.swaFull ? cells : pad(Math.min(cells, h.nSwa * (ctx.kvUnified ? ctx.slots : 1) + ubatch), 256);
  }
  let vMax = 0;
  for (let il = 0; il < nLayerAll; il++) vMax = Math.max(vMax, nEmbdVGqa(h, il));
  const devKv = new Map<number, number>();
  const devRs = new Map<number, number>();
  let kvK = 0;
  let kvV = 0;
  let kvSwa = 0;
  for (let il = 0; il < nLayerAll; il++) {
    if (!h.kvLayer[il]) continue;
    const c = h.isSwa[il] && swaCells !== null ? swaCells : cells;
    const k = rowBytes(tk, nEmbdKGqa(h, il)) * c * ctx.nStream;
    const v = h.isMla ? 0 : rowBytes(tv, fa ? nEmbdVGqa(h, il) : vMax) * c * ctx.nStream;
    kvK += k;
    kvV += v;
    if (h.isSwa[il] && swaCells !== null) kvSwa += k + v;
    const d = layerDev[il]!;
    devKv.set(d, (devKv.get(d) ?? 0) + k + v);
  }

  // ---- recurrent state
  const rows = Math.max(1, ctx.slots) * (1 + (o.nRsSeq ?? 0));
  let rs = 0;
  for (let il = 0; il < nLayerAll; il++) {
    if (!h.rsLayer[il]) continue;
    const b = 4 * h.nEmbdR * rows + 4 * h.nEmbdS * rows;
    rs += b;
    const d = layerDev[il]!;
    devRs.set(d, (devRs.get(d) ?? 0) + b);
  }

  // ---- weights
  let weights: number | null = null;
  const devW = new Map<number, number>();
  if (tensors && tensors.length) {
    weights = 0;
    const hasOutput = tensors.some((t) => t.name === "output.weight");
    for (const t of tensors) {
      const il = tensorLayer(t.name, nLayerAll);
      const expertOnCpu = (o.nCpuMoe ?? 0) > 0 && il >= 0 && il < o.nCpuMoe! && /_exps\./.test(t.name);
      const d = il < 0 || expertOnCpu ? -1 : layerDev[Math.min(il, nLayerAll)]!;
      weights += t.bytes;
      devW.set(d, (devW.get(d) ?? 0) + t.bytes);
      // tied output: token_embd is duplicated onto the output layer's device when that is a GPU
      if (il < 0 && !hasOutput && t.name === "token_embd.weight" && layerDev[nLayerAll]! >= 0) {
        const od = layerDev[nLayerAll]!;
        devW.set(od, (devW.get(od) ?? 0) + t.bytes);
      }
    }
  } else {
    warnings.push("no tensor infos: weights not counted (pass a GGUF, or metadata with tensor infos)");
  }

  // ---- output buffer (n_vocab floats per output; llama-server allows one output per slot) and compute buffer
  const outputBytes = h.nVocab * 4 * ctx.slots;
  // sched_reserve(): the prompt graph for n_tokens = min(n_ctx, n_ubatch) over n_seq_max sequences (graph_reserve rounds
  // n_tokens up to a multiple of them), with one output per slot (n_outputs_max = n_parallel), allocated by ggml-alloc
  const nBatch = Math.min(ctx.nCtx, 2048);
  const nSeqs = ctx.slots;
  const nTokens = Math.ceil(Math.min(ctx.nCtx, Math.min(nBatch, ubatch)) / nSeqs) * nSeqs;
  const compute = computeBufferBytes({
    ...h,
    nLayer: h.nLayer,
    nTokens,
    nSeqs,
    nOutputs: Math.min(nTokens, ctx.slots),
    nKv: cells,
    nKvSwa: swaCells ?? 0,
    flashAttn: fa,
    quantK: !["f32", "f16", "bf16"].includes(ctk),
    quantV: quantV,
  });
  if (h.isMla || h.rsLayer.some((r, il) => r && !h.arch.startsWith("lfm2") && !h.kvLayer[il])) {
    warnings.push("compute buffer: this architecture's MLA / recurrent layers are sized as standard attention / short-conv layers (an approximation)");
  }
  if (tensors?.some((t) => /_exps\./.test(t.name))) {
    warnings.push("compute buffer: the expert FFNs are sized as one dense FFN of feed_forward_length (an approximation)");
  }
  if (gpus.length > 1) warnings.push("multi-GPU: pipeline parallelism keeps extra input copies; compute estimate per GPU");

  // ---- per device
  const overhead = o.gpuOverheadBytes ?? 300 * MiB;
  const perDevice: DeviceEstimate[] = [];
  const count = (d: number) => layerDev.slice(0, nLayerAll).filter((x) => x === d).length;
  const usedGpus = new Set(layerDev.filter((d) => d >= 0));
  gpus.forEach((g, i) => {
    const used = usedGpus.has(i);
    const w = weights === null ? null : (devW.get(i) ?? 0);
    const kv = devKv.get(i) ?? 0;
    const r = devRs.get(i) ?? 0;
    const comp = used ? compute : 0;
    const ov = used ? overhead : 0;
    perDevice.push({
      device: g.id,
      name: g.name,
      kind: g.kind,
      layers: count(i),
      hasOutput: layerDev[nLayerAll] === i,
      weightsBytes: w,
      kvBytes: kv,
      recurrentBytes: r,
      computeBytes: comp,
      outputBytes: 0,
      overheadBytes: ov,
      totalBytes: (w ?? 0) + kv + r + comp + ov,
      freeBytes: g.freeBytes,
    });
  });
  {
    const w = weights === null ? null : (devW.get(-1) ?? 0);
    const kv = devKv.get(-1) ?? 0;
    const r = devRs.get(-1) ?? 0;
    // with layers on GPUs, the host's compute buffer (CUDA_Host) holds the graph's inputs and the input layer's GET_ROWS
    const comp = usedGpus.size ? hostInputBytes(h, { nTokens, nSeqs, cells, swaCells, fa, quantK: !["f32", "f16", "bf16"].includes(ctk), quantV }) : compute;
    perDevice.push({
      device: "CPU",
      name: "host",
      kind: "cpu",
      layers: count(-1),
      hasOutput: layerDev[nLayerAll] === -1,
      weightsBytes: w,
      kvBytes: kv,
      recurrentBytes: r,
      computeBytes: comp,
      outputBytes,
      overheadBytes: 0,
      totalBytes: (w ?? 0) + kv + r + comp + outputBytes,
      freeBytes: null,
    });
  }
  const kvBytes = kvK + kvV;
  return {
    arch: h.arch,
    ...ctx,
    kvCells: cells,
    swaCells,
    flashAttn: fa,
    cacheTypeK: ctk,
    cacheTypeV: ctv,
    ubatch,
    kvBytes,
    kvBytesK: kvK,
    kvBytesV: kvV,
    kvBytesSwa: kvSwa,
    recurrentBytes: rs,
    weightsBytes: weights,
    outputBytes,
    computeBytes: compute,
    nGpuLayers: gpus.length ? Math.min(ngl, nLayerAll + 1) : 0,
    perDevice,
    totalBytes: weights === null ? null : perDevice.reduce((a, d) => a + d.totalBytes, 0),
    warnings,
  };
}
