/**
 * Model hyper-parameters that decide memory, read from GGUF metadata the way llama.cpp's loader does
 * (src/llama-model.cpp load_hparams + src/models/<arch>.cpp load_arch_hparams, llama.cpp 80fb11a).
 */
import type { GgufValue } from "./gguf";
import { SetupError, type SetupErrorData } from "./errors";

type Metadata = Record<string, GgufValue | unknown>;

type SwaType = "none" | "standard" | "chunked";

export interface ModelHparams {
  arch: string;
  name: string | null;
  nLayerAll: number;
  nLayerNextn: number;
  /** n_layer_all − nextn (the trunk). */
  nLayer: number;
  nCtxTrain: number;
  nEmbd: number;
  nVocab: number;
  nHead: number[];
  nHeadKv: number[];
  nFf: number[];
  headK: number;
  headV: number;
  headKSwa: number;
  headVSwa: number;
  isMla: boolean;
  swaType: SwaType;
  nSwa: number;
  isSwa: boolean[];
  isRecr: boolean[];
  /** Layers that hold attention KV (filter ∧ has_kv). */
  kvLayer: boolean[];
  /** Layers that hold recurrent state. */
  rsLayer: boolean[];
  nEmbdR: number;
  nEmbdS: number;
  kind: "attention" | "recurrent" | "hybrid" | "none";
  /** Things this reader knows it does not model exactly. */
  caveats: string[];
}

const RECURRENT = new Set(["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"]);
const HYBRID = new Set([
  "jamba",
  "falcon-h1",
  "plamo2",
  "granitehybrid",
  "lfm2",
  "lfm2moe",
  "nemotron_h",
  "nemotron_h_moe",
  "qwen3next",
  "kimi-linear",
  "bailingmoe3",
  "kimi-k3",
  "qwen35",
  "qwen35moe",
  "qwen4exp",
  "deepseek4",
  "minimax-01",
]);
const NO_MEMORY = new Set([
  "bert",
  "jina-bert-v2",
  "jina-bert-v3",
  "nomic-bert",
  "nomic-bert-moe",
  "neo-bert",
  "eurobert",
  "wavtokenizer-dec",
  "modern-bert",
  "gemma-embedding",
  "dream",
  "llada",
  "llada-moe",
  "rnd1",
]);
/** Archs llama.cpp builds with a cache type this estimator does not model (DSA/MSA indexers, DSV4). */
const UNMODELED = new Set(["minimax-m3", "glm-dsa", "deepseek32", "dots3note", "deepseek4", "qwen4exp", "dflash"]);

function num(v: unknown): number | undefined {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  if (typeof v === "boolean") return v ? 1 : 0;
  return undefined;
}

function arrLen(v: unknown): number | undefined {
  if (Array.isArray(v)) return v.length;
  if (v && typeof v === "object" && (v as { __gguf_array?: boolean }).__gguf_array) return (v as { length: number }).length;
  return undefined;
}

/** get_key_or_arr: a scalar fills every layer; an array is taken per layer (must have n entries). */
function perLayer(v: unknown, n: number, fallback: number[] | number, key: string): number[] {
  if (Array.isArray(v)) {
    if (v.length !== n)
      throw new SetupError("metadata", `${key} has ${v.length} entries, expected block_count = ${n}`, { key, entries: v.length, blockCount: n });
    return v.map((x) => num(x) ?? 0);
  }
  const s = num(v);
  if (s !== undefined) return new Array<number>(n).fill(s);
  return Array.isArray(fallback) ? [...fallback] : new Array<number>(n).fill(fallback);
}

export class MetadataError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("metadata", message, data);
    this.name = "MetadataError";
  }
}

/** set_swa_pattern(n_pattern, dense_first) */
function swaPattern(nLayer: number, nLayerAll: number, p: number, denseFirst = false): boolean[] {
  const out = new Array<boolean>(nLayerAll).fill(false);
  for (let il = 0; il < nLayer; il++) {
    out[il] = denseFirst ? p === 0 || il % p !== 0 : p === 0 || il % p < p - 1;
  }
  return out;
}

export function hparamsFromMetadata(meta: Metadata): ModelHparams {
  const arch = meta["general.architecture"];
  if (typeof arch !== "string" || !arch) {
    throw new MetadataError('metadata has no general.architecture (a GGUF metadata object is keyed like "llama.block_count")');
  }
  if (arch === "clip") throw new MetadataError("this is an mmproj (vision tower) file, not a language model; pass the model GGUF");
  const k = (s: string): unknown => meta[`${arch}.${s}`];
  const need = (s: string): number => {
    const v = num(k(s));
    if (v === undefined) throw new MetadataError(`metadata lacks ${arch}.${s}`);
    return v;
  };
  const caveats: string[] = [];
  const nLayerAll = need("block_count");
  const nLayerNextn = num(k("nextn_predict_layers")) ?? 0;
  const nLayer = nLayerAll - nLayerNextn;
  const nCtxTrain = need("context_length");
  const nEmbd = need("embedding_length");
  const nHead = perLayer(k("attention.head_count"), nLayerAll, 0, `${arch}.attention.head_count`);
  const nHeadKv = perLayer(k("attention.head_count_kv"), nLayerAll, nHead, `${arch}.attention.head_count_kv`);
  const nFf = perLayer(k("feed_forward_length"), nLayerAll, 0, `${arch}.feed_forward_length`);
  const nVocab = arrLen(meta["tokenizer.ggml.tokens"]) ?? num(k("vocab_size")) ?? 0;

  const h0 = nHead[0] ?? 0;
  let headK = 0;
  let headV = 0;
  if (h0 > 0) {
    headK = num(k("attention.key_length")) ?? Math.floor(nEmbd / h0);
    headV = num(k("attention.value_length")) ?? Math.floor(nEmbd / h0);
  }
  const headKSwa = num(k("attention.key_length_swa")) ?? headK;
  const headVSwa = num(k("attention.value_length_swa")) ?? headV;
  const isMla = num(k("attention.key_length_mla")) !== undefined && num(k("attention.value_length_mla")) !== undefined;

  // --- sliding window
  let swaType: SwaType = "none";
  let nSwa = num(k("attention.sliding_window")) ?? 0;
  let isSwa = new Array<boolean>(nLayerAll).fill(false);
  const patRaw = k("attention.sliding_window_pattern");
  const pat = (def: number, denseFirst = false): boolean[] => {
    if (Array.isArray(patRaw)) {
      const a = patRaw.map((x) => Boolean(num(x)));
      return [...a, ...new Array<boolean>(Math.max(0, nLayerAll - a.length)).fill(false)].slice(0, nLayerAll);
    }
    return swaPattern(nLayer, nLayerAll, num(patRaw) ?? def, denseFirst);
  };
  const hasWindowKey = k("attention.sliding_window") !== undefined;
  switch (arch) {
    case "gemma2":
      swaType = "standard";
      nSwa = num(k("attention.sliding_window")) ?? 4096;
      isSwa = pat(2);
      break;
    case "gemma3":
      if (nSwa > 0) {
        swaType = "standard";
        isSwa = pat(6);
      }
      break;
    case "gemma3n":
      swaType = "standard";
      isSwa = pat(5);
      break;
    case "gemma4":
      swaType = "standard";
      isSwa = pat(0);
      break;
    case "cohere2":
      swaType = "standard";
      isSwa = pat(4);
      break;
    case "gpt-oss":
      swaType = "standard";
      isSwa = pat(2);
      break;
    case "llama4":
      if (!(hasWindowKey && nSwa === 0)) {
        swaType = "chunked";
        nSwa = 8192;
        isSwa = pat(4);
      }
      break;
    case "olmo2":
    case "afmoe":
      if (nSwa > 0) {
        swaType = "standard";
        isSwa = pat(4);
      }
      break;
    case "smallthinker":
      if (nSwa > 0) {
        swaType = "standard";
        nSwa = 4096;
        isSwa = pat(4, true);
      }
      break;
    case "exaone4":
      if (nSwa > 0 || patRaw !== undefined) {
        swaType = "standard";
        nSwa = nSwa || 4096;
        isSwa = pat(4);
      }
      break;
    default:
      // lfm2 handled below (its attention layers become SWA); other archs: SWA only if the file says so.
      if (arch !== "lfm2" && nSwa > 0 && patRaw !== undefined) {
        swaType = "standard";
        isSwa = pat(4);
        caveats.push(`SWA layout for arch ${arch} taken from its sliding_window_pattern key; llama.cpp may differ`);
      }
  }

  // --- recurrent layers
  let isRecr = new Array<boolean>(nLayerAll).fill(RECURRENT.has(arch));
  const recrArr = k("attention.recurrent_layers");
  if (["qwen3next", "qwen35", "qwen35moe", "qwen4exp", "minimax-01"].includes(arch)) {
    if (Array.isArray(recrArr)) isRecr = perLayer(recrArr, nLayerAll, 0, `${arch}.attention.recurrent_layers`).map(Boolean);
    else {
      const fai = num(k("full_attention_interval")) ?? 4;
      isRecr = isRecr.map((_, i) => i < nLayer && (i + 1) % fai !== 0);
    }
  } else if (["granitehybrid", "jamba", "lfm2", "lfm2moe", "plamo2", "kimi-linear", "bailingmoe3", "kimi-k3"].includes(arch)) {
    isRecr = isRecr.map((_, i) => (arch.startsWith("lfm2") ? i < nLayer : true) && nHeadKv[i] === 0);
  } else if (arch === "nemotron_h" || arch === "nemotron_h_moe") {
    isRecr = isRecr.map((_, i) => i < nLayer && nHeadKv[i] === 0 && nFf[i] === 0);
  } else if (arch === "falcon-h1") {
    isRecr = isRecr.map(() => true);
  }
  if (arch === "lfm2" && nSwa > 0) {
    swaType = "standard";
    isSwa = isSwa.map((_, i) => i < nLayer && !isRecr[i]);
  }

  // --- n_embd_r / n_embd_s (src/llama-hparams.cpp)
  const wkvHead = num(k("wkv.head_size")) ?? 0;
  const lCache = num(k("shortconv.l_cache")) ?? 0;
  const kdaHead = num(k("kda.head_dim")) ?? 0;
  const dConv = num(k("ssm.conv_kernel")) ?? 0;
  const dInner = num(k("ssm.inner_size")) ?? 0;
  const dState = num(k("ssm.state_size")) ?? 0;
  const nGroup = num(k("ssm.group_count")) ?? 0;
  let nEmbdR: number;
  let nEmbdS: number;
  if (wkvHead) {
    nEmbdR = (num(k("token_shift_count")) ?? 2) * nEmbd;
    nEmbdS = nEmbd * wkvHead;
  } else if (lCache) {
    nEmbdR = nEmbd * (lCache - 1);
    nEmbdS = dState * dInner;
  } else if (kdaHead) {
    const dIn = h0 * kdaHead;
    nEmbdR = 3 * (dConv > 0 ? dConv - 1 : 3) * dIn;
    nEmbdS = kdaHead * kdaHead * h0;
  } else {
    nEmbdR = (dConv > 0 ? dConv - 1 : 0) * (dInner + 2 * nGroup * dState);
    nEmbdS = dState * dInner;
    if (arch === "minimax-01") caveats.push("MiniMax linear-attention state not modelled exactly");
  }

  // --- which layers carry which memory (llama_model::create_memory)
  let kvFromStart = -1;
  if (arch === "gemma3n") kvFromStart = 20;
  if (arch === "gemma4") kvFromStart = nLayerAll - (num(k("attention.shared_kv_layers")) ?? 0);
  const hasKv = (il: number): boolean => kvFromStart < 0 || il < kvFromStart;
  const recurrent = RECURRENT.has(arch);
  const hybrid = HYBRID.has(arch);
  let kvLayer: boolean[];
  let rsLayer: boolean[];
  if (NO_MEMORY.has(arch)) {
    kvLayer = new Array<boolean>(nLayerAll).fill(false);
    rsLayer = [...kvLayer];
  } else if (recurrent) {
    kvLayer = new Array<boolean>(nLayerAll).fill(false);
    rsLayer = new Array<boolean>(nLayerAll).fill(true);
  } else if (hybrid) {
    let fa: (il: number) => boolean = (il) => !isRecr[il];
    let fr: (il: number) => boolean = (il) => Boolean(isRecr[il]);
    if (arch === "falcon-h1") {
      fa = () => true;
      fr = () => true;
    } else if (arch === "nemotron_h" || arch === "nemotron_h_moe") {
      fa = (il) => !isRecr[il] && nFf[il] === 0;
      fr = (il) => Boolean(isRecr[il]) && nFf[il] === 0;
    } else if (["qwen3next", "qwen35", "qwen35moe", "qwen4exp", "minimax-01"].includes(arch)) {
      fa = (il) => il < nLayer && !isRecr[il];
      fr = (il) => il < nLayer && Boolean(isRecr[il]);
    }
    kvLayer = Array.from({ length: nLayerAll }, (_, il) => hasKv(il) && fa(il));
    rsLayer = Array.from({ length: nLayerAll }, (_, il) => fr(il));
  } else {
    // plain attention; some archs with NextN keep the MTP layers out of the main cache
    const nextnFiltered = ["step35", "hy_v3", "glm-dsa", "mimo2", "deepseek32"].includes(arch) && nLayerNextn > 0;
    kvLayer = Array.from({ length: nLayerAll }, (_, il) => hasKv(il) && (!nextnFiltered || il < nLayer));
    rsLayer = new Array<boolean>(nLayerAll).fill(false);
  }
  if (UNMODELED.has(arch)) caveats.push(`arch ${arch} uses a specialised cache (indexer/compressed); KV figures are approximate`);
  if (arch === "gemma3n" || (arch === "gemma4" && kvFromStart < nLayerAll)) caveats.push("layers sharing KV with earlier layers hold none of their own");

  const kind = NO_MEMORY.has(arch) ? "none" : recurrent ? "recurrent" : hybrid ? "hybrid" : "attention";
  return {
    arch,
    name: typeof meta["general.name"] === "string" ? (meta["general.name"] as string) : null,
    nLayerAll,
    nLayerNextn,
    nLayer,
    nCtxTrain,
    nEmbd,
    nVocab,
    nHead,
    nHeadKv,
    nFf,
    headK,
    headV,
    headKSwa,
    headVSwa,
    isMla,
    swaType,
    nSwa,
    isSwa,
    isRecr,
    kvLayer,
    rsLayer,
    nEmbdR,
    nEmbdS,
    kind,
    caveats,
  };
}

function headDimK(h: ModelHparams, il: number): number {
  return h.isSwa[il] ? h.headKSwa : h.headK;
}
function headDimV(h: ModelHparams, il: number): number {
  return h.isSwa[il] ? h.headVSwa : h.headV;
}
export function nEmbdKGqa(h: ModelHparams, il: number): number {
  return headDimK(h, il) * (h.nHeadKv[il] ?? 0);
}
export function nEmbdVGqa(h: ModelHparams, il: number): number {
  return headDimV(h, il) * (h.nHeadKv[il] ?? 0);
}
