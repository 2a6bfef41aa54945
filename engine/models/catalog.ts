/**
 * The catalog of open coding models ocw proposes (December 2026). Every figure carries its source; a figure we could
 * not confirm from a primary source is listed in `unverified` (and a quant size we derived is marked with `sizeNote`).
 * Entries hold the hyper-parameters the fit needs, so planning works offline; the files themselves are resolved
 * against the Hub at download time (a renamed file does not break setup). Ranked by the maker's SWE-bench Verified
 * score (best first) — the planner walks this order.
 *
 * Tool calling: "unverified" until a target of the model passed ocw's own tool-call round trip on this machine
 * (see engine/serving/verify.ts); `template` says which chat template / parser the entry expects.
 */
import type { GgufTensorInfo } from "./gguf";
import type { ModelHparams } from "./hparams";
import type { MtpHead } from "./mtp";

interface ArchSpec {
  /** GGUF general.architecture. */
  arch: string;
  nLayer: number;
  nEmbd: number;
  nVocab: number;
  /** Attention layers: every layer, or every `interval`-th (hybrid linear/full attention: layer il is full iff (il+1) % interval == 0). */
  attnInterval: number;
  nHead: number;
  nHeadKv: number;
  headDim: number;
  /** MLA: cached latent width per token and layer (kv_lora_rank + rope dim). */
  mla?: number;
  /** Sliding-window layers: window and pattern (layer il is SWA iff il % pattern < pattern − 1). */
  swa?: { window: number; pattern: number };
  /** Gated DeltaNet / SSM recurrent layers (the non-attention ones). */
  recurrent?: { inner: number; groups: number; state: number; conv: number };
  /** Mixture of experts: the share of the weights in routed experts (what --n-cpu-moe moves to RAM). */
  moe?: { experts: number; used: number; expertShare: number };
}

interface CatalogQuant {
  quant: string;
  /** Total file bytes (all shards). */
  bytes: number;
  /** Nominal bits per weight class: quants under 4 bits are listed but never proposed. */
  bits: number;
  /** null: size read from the repo listing / a quant card; otherwise how it was derived. */
  sizeNote: string | null;
  /** true: computed from the parameter count (or another model's file), not read from a listing; the Hub's listing replaces it when online. */
  derived?: boolean;
}

/** The maker's safetensors weights, what vLLM / SGLang load (they do not take GGUF files). */
export interface CatalogWeights {
  repo: string;
  /** bf16, fp8 (block-quantised by the maker; DeepSeek-V4's mixes FP4 experts in), mxfp4 (gpt-oss's native experts). */
  dtype: "bf16" | "fp8" | "mxfp4";
  /** Bytes of the repo's *.safetensors (the Hub's listing replaces it when reachable). */
  bytes: number;
  sizeNote: string | null;
  derived?: boolean;
}

export interface CatalogEntry {
  id: string;
  name: string;
  /** Hugging Face repo holding GGUF quants. */
  repo: string;
  /** Where the facts come from. */
  source: string;
  released: string;
  license: string;
  contextLength: number;
  totalParamsB: number;
  activeParamsB: number;
  /** Maker-reported SWE-bench Verified (%), the ranking key; null = not found. */
  sweBenchVerified: number | null;
  /** Other maker-reported coding benchmarks (newer models report SWE-bench Pro / Terminal-Bench instead). */
  benchmarks?: { name: string; score: number; source: string }[];
  /** Why the entry sits where it does in the rank order (the array's order), when not by SWE-bench Verified alone. */
  rankNote?: string;
  /** The runtimes that can serve it (absent: all three). vLLM/SGLang-only entries have no GGUF quants. */
  runtimes?: ("llama.cpp" | "vllm" | "sglang")[];
  /** The KV of its attention is not what the spec's shape gives (compressed / sparse / linear attention): vLLM/SGLang plans allow 25 % of the weights instead. */
  kvUnknown?: boolean;
  spec: ArchSpec;
  quants: CatalogQuant[];
  /** Safetensors repos for vLLM / SGLang, highest precision first (absent: the source repo in bf16, parameters × 2 bytes). */
  weights?: CatalogWeights[];
  toolCalling: { status: "unverified"; template: string; note: string };
  /** Figures not confirmed from a primary source. */
  unverified: string[];
  /** false: listed for people to choose, never proposed automatically (key figures unconfirmed). */
  autoPick: boolean;
  notes: string;
  /** The MTP head the weights ship (engine/models/mtp.ts; absent: its table, else none). */
  mtp?: MtpHead | null;
}

const GB = 1e9;

const RAW_CATALOG: readonly CatalogEntry[] = [
  {
    id: "qwen3.8-27b",
    name: "Qwen3.8-27B",
    repo: "unsloth/Qwen3.8-27B-GGUF",
    source:
      "https://huggingface.co/Qwen/Qwen3.8-27B (released 2026-08-14; dense 27B vision-language model on the Qwen3.5 architecture — Qwen3_5ForConditionalGeneration, 64 layers of hybrid Gated DeltaNet + gated attention, hidden 5120 per Groq's card; 262,144 context; FP8 repo Qwen/Qwen3.8-27B-FP8, block-128; SGLang cookbook: BF16/FP8 checkpoints with in-checkpoint MTP, single GPU on H200 / RTX PRO 6000 / RTX 5090)",
    released: "2026-08-14",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 27.3,
    activeParamsB: 27.3,
    sweBenchVerified: null,
    benchmarks: [
      { name: "SWE-bench Pro", score: 61.7, source: "https://huggingface.co/Qwen/Qwen3.8-27B (via models.dev and Groq's model card)" },
      { name: "Terminal-Bench 2.1", score: 73.0, source: "https://huggingface.co/Qwen/Qwen3.8-27B (via models.dev and Groq's model card)" },
    ],
    rankNote:
      "first: the maker reports SWE-bench Pro (61.7) and Terminal-Bench 2.1 (73.0) instead of SWE-bench Verified; the successor of Qwen3.6-27B on the same architecture. Our own ledger reorders measured models (rankByLedger)",
    spec: {
      arch: "qwen35",
      nLayer: 64,
      nEmbd: 5120,
      nVocab: 248320,
      attnInterval: 4,
      nHead: 24,
      nHeadKv: 4,
      headDim: 256,
      recurrent: { inner: 6144, groups: 16, state: 128, conv: 4 },
    },
    quants: [
      { quant: "Q8_0", bytes: 29.0 * GB, bits: 8.5, sizeNote: "derived: 27.3 B params × 8.5 bpw", derived: true },
      { quant: "Q6_K", bytes: 22.4 * GB, bits: 6.56, sizeNote: "derived: 27.3 B params × 6.56 bpw", derived: true },
      { quant: "Q5_K_M", bytes: 19.4 * GB, bits: 5.69, sizeNote: "derived: 27.3 B params × 5.69 bpw", derived: true },
      { quant: "Q4_K_M", bytes: 16.6 * GB, bits: 4.85, sizeNote: "derived: 27.3 B params × 4.85 bpw", derived: true },
    ],
    weights: [
      {
        repo: "Qwen/Qwen3.8-27B",
        dtype: "bf16",
        bytes: 56e9,
        sizeNote: "derived: ≈ 28 B params (the Hub's count, vision tower included) × 2 bytes",
        derived: true,
      },
      { repo: "Qwen/Qwen3.8-27B-FP8", dtype: "fp8", bytes: 30e9, sizeNote: "derived: ≈ 28 B params × ≈ 1.07 bytes (block-128 FP8 with scales)", derived: true },
    ],
    toolCalling: {
      status: "unverified",
      template: "the GGUF's Qwen3.8 Jinja template (--jinja), Qwen3-Coder XML tool calls; vLLM/SGLang --reasoning-parser qwen3",
      note: "thinking model (thinking control in the template); ships MTP heads (llama.cpp --spec-type draft-mtp, vLLM/SGLang speculative config)",
    },
    unverified: [
      "attention / DeltaNet head counts and vocab taken from Qwen3.6-27B (same architecture; 64 layers and hidden 5120 confirmed)",
      "every quant size is derived from the parameter count (the Hub's listing replaces them when online)",
      "minimum vLLM 0.19 / SGLang 0.5.10 taken from the Qwen3.5/3.6 family it shares the architecture with",
    ],
    autoPick: true,
    notes: "dense hybrid: only 16 of 64 layers hold KV, so long contexts are cheap; newest Qwen dense model in this catalog",
  },
  {
    id: "qwen3.6-27b",
    name: "Qwen3.6-27B",
    repo: "unsloth/Qwen3.6-27B-GGUF",
    source:
      "https://huggingface.co/Qwen/Qwen3.6-27B (model card: 64 layers = 16 × (3 Gated DeltaNet + 1 gated attention), attention 24 Q / 4 KV heads × 256, DeltaNet 48 V / 16 QK heads × 128, hidden 5120, vocab 248320, 262,144 context)",
    released: "2026-04",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 27.8,
    activeParamsB: 27.8,
    sweBenchVerified: 77.2,
    spec: {
      arch: "qwen35",
      nLayer: 64,
      nEmbd: 5120,
      nVocab: 248320,
      attnInterval: 4,
      nHead: 24,
      nHeadKv: 4,
      headDim: 256,
      recurrent: { inner: 6144, groups: 16, state: 128, conv: 4 },
    },
    quants: [
      { quant: "Q8_0", bytes: 29.5 * GB, bits: 8.5, sizeNote: "derived: 27.78 B params × 8.5 bpw" },
      { quant: "Q6_K", bytes: 22.8 * GB, bits: 6.56, sizeNote: "derived: 27.78 B params × 6.56 bpw" },
      { quant: "Q4_K_M", bytes: 16.9 * GB, bits: 4.85, sizeNote: "derived: 27.78 B params × 4.85 bpw" },
      { quant: "IQ4_XS", bytes: 15.1 * GB, bits: 4.25, sizeNote: null },
    ],
    weights: [
      { repo: "Qwen/Qwen3.6-27B", dtype: "bf16", bytes: 54e9, sizeNote: "≈ 54 GB per community quant cards (BF16 original)" },
      { repo: "Qwen/Qwen3.6-27B-FP8", dtype: "fp8", bytes: 28e9, sizeNote: "≈ 28 GB per community quant cards (the maker's block-128 FP8)" },
    ],
    toolCalling: {
      status: "unverified",
      template: "the GGUF's Qwen3.6 Jinja template (--jinja), Qwen3-Coder XML tool calls",
      note: "the unsloth card reports fixed nested-object tool-call parsing and the developer role OpenCode sends",
    },
    unverified: [
      "quant sizes other than IQ4_XS (15.1 GB, from a community quant card) are derived from the parameter count",
      "repo name unsloth/Qwen3.6-27B-GGUF (an unsloth card mirror was seen)",
      "release month",
    ],
    autoPick: true,
    notes: "dense hybrid: only 16 of 64 layers hold KV, so long contexts are cheap; the maker's top SWE-bench score in this catalog",
  },
  {
    id: "qwen3.5-397b-a17b",
    name: "Qwen3.5-397B-A17B",
    repo: "bartowski/Qwen_Qwen3.5-397B-A17B-GGUF",
    source:
      "https://huggingface.co/Qwen/Qwen3.5-397B-A17B (60 layers = 15 × (3 DeltaNet + 1 attention), hidden 4096, 512 experts 10+1 active, attention 32 Q / 2 KV × 256, DeltaNet 64 V / 16 QK × 128); sizes from bartowski's quant table",
    released: "2026-02",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 397,
    activeParamsB: 17,
    sweBenchVerified: 76.2,
    spec: {
      arch: "qwen35moe",
      nLayer: 60,
      nEmbd: 4096,
      nVocab: 248320,
      attnInterval: 4,
      nHead: 32,
      nHeadKv: 2,
      headDim: 256,
      recurrent: { inner: 8192, groups: 16, state: 128, conv: 4 },
      moe: { experts: 512, used: 10, expertShare: 0.97 },
    },
    quants: [
      { quant: "Q8_0", bytes: 421.58 * GB, bits: 8.5, sizeNote: null },
      { quant: "Q6_K", bytes: 342.27 * GB, bits: 6.56, sizeNote: null },
      { quant: "Q5_K_M", bytes: 283.26 * GB, bits: 5.5, sizeNote: null },
      { quant: "Q4_1", bytes: 249.1 * GB, bits: 4.5, sizeNote: null },
    ],
    weights: [
      { repo: "Qwen/Qwen3.5-397B-A17B", dtype: "bf16", bytes: 794e9, sizeNote: "derived: 397 B params × 2 bytes" },
      { repo: "Qwen/Qwen3.5-397B-A17B-FP8", dtype: "fp8", bytes: 405e9, sizeNote: "derived: 397 B params × ≈ 1.02 bytes; repo name not confirmed" },
    ],
    toolCalling: {
      status: "unverified",
      template: "the GGUF's Qwen3.5 Jinja template (--jinja)",
      note: "a community 4-bit MLX build reports 26/30 on ToolCall-15",
    },
    unverified: ["expert share 0.97 derived from 512 experts × 3 × 4096 × 1024 × 60 layers"],
    autoPick: true,
    notes: "flagship MoE for multi-GPU servers; vLLM/SGLang with FP8 serve it faster than llama.cpp",
  },
  {
    id: "qwen3.6-35b-a3b",
    name: "Qwen3.6-35B-A3B",
    repo: "unsloth/Qwen3.6-35B-A3B-GGUF",
    source:
      "https://huggingface.co/Qwen/Qwen3.6-35B-A3B (40 layers = 10 × (3 DeltaNet + 1 attention), hidden 2048, 256 experts 8+1 active, attention 16 Q / 2 KV × 256, DeltaNet 32 V / 16 QK × 128, 262,144 context); sizes from the APEX comparison table of unsloth quants",
    released: "2026-04-16",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 35,
    activeParamsB: 3,
    sweBenchVerified: 73.4,
    spec: {
      arch: "qwen35moe",
      nLayer: 40,
      nEmbd: 2048,
      nVocab: 248320,
      attnInterval: 4,
      nHead: 16,
      nHeadKv: 2,
      headDim: 256,
      recurrent: { inner: 4096, groups: 16, state: 128, conv: 4 },
      moe: { experts: 256, used: 8, expertShare: 0.92 },
    },
    quants: [
      { quant: "Q8_0", bytes: 35 * GB, bits: 8.5, sizeNote: "rounded to 1 GB in the source" },
      { quant: "UD-Q5_K_XL", bytes: 25 * GB, bits: 5.5, sizeNote: "rounded to 1 GB in the source" },
      { quant: "UD-Q4_K_M", bytes: 21 * GB, bits: 4.85, sizeNote: "rounded to 1 GB in the source" },
      { quant: "UD-Q3_K_M", bytes: 16 * GB, bits: 3.9, sizeNote: "rounded to 1 GB in the source" },
    ],
    weights: [
      { repo: "Qwen/Qwen3.6-35B-A3B", dtype: "bf16", bytes: 70e9, sizeNote: "derived: 35 B params × 2 bytes" },
      { repo: "Qwen/Qwen3.6-35B-A3B-FP8", dtype: "fp8", bytes: 36e9, sizeNote: "derived: 35 B params × ≈ 1.03 bytes; repo name not confirmed" },
    ],
    toolCalling: {
      status: "unverified",
      template: "the GGUF's Qwen3.6 Jinja template (--jinja), Qwen3-Coder XML tool calls",
      note: "unsloth shows tool calling in its Studio; not yet round-tripped by ocw",
    },
    unverified: ["expert share 0.92 derived from 256 experts × 3 × 2048 × 512 × 40 layers"],
    autoPick: true,
    notes: "3B active: fast with experts in RAM (--n-cpu-moe) on 8–16 GB GPUs and usable on CPU",
  },
  {
    id: "qwen3-coder-next",
    name: "Qwen3-Coder-Next (80B-A3B)",
    repo: "unsloth/Qwen3-Coder-Next-GGUF",
    source:
      "https://huggingface.co/Qwen/Qwen3-Coder-Next (qwen3next: 48 layers, 36 linear + 12 full attention, hidden 2048, 512 experts 10+1 active, 262,144 context; Q4_K_M 48.5e9 B per steampunque's quant card)",
    released: "2026-02",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 79.7,
    activeParamsB: 3,
    sweBenchVerified: 70.6,
    spec: {
      arch: "qwen3next",
      nLayer: 48,
      nEmbd: 2048,
      nVocab: 151936,
      attnInterval: 4,
      nHead: 16,
      nHeadKv: 2,
      headDim: 256,
      recurrent: { inner: 4096, groups: 16, state: 128, conv: 4 },
      moe: { experts: 512, used: 10, expertShare: 0.97 },
    },
    quants: [
      { quant: "Q8_0", bytes: 84.8 * GB, bits: 8.5, sizeNote: "the Qwen3-Next-80B Q8_0 size (same shape)" },
      { quant: "Q4_K_M", bytes: 48.5 * GB, bits: 4.85, sizeNote: null },
    ],
    weights: [
      { repo: "Qwen/Qwen3-Coder-Next", dtype: "bf16", bytes: 159.4e9, sizeNote: "derived: 79.7 B params × 2 bytes" },
      { repo: "Qwen/Qwen3-Coder-Next-FP8", dtype: "fp8", bytes: 82e9, sizeNote: "derived: 79.7 B params × ≈ 1.03 bytes; repo name not confirmed" },
    ],
    toolCalling: {
      status: "unverified",
      template: "the GGUF's Qwen3-Coder Jinja template (--jinja), XML tool calls",
      note: "LM Studio lists tool use; lmstudio-bug-tracker#1071 reports wrong streamed tool-call XML for Qwen3-Coder there",
    },
    unverified: ["attention heads (16 Q / 2 KV × 256) and DeltaNet heads taken from Qwen3-Next-80B", "vocab 151936 from Qwen3-Next", "repo name"],
    autoPick: true,
    notes: "coding-specialised MoE; experts to RAM with 48+ GB system memory",
  },
  {
    id: "devstral-small-2",
    name: "Devstral-Small-2-24B-Instruct-2512",
    repo: "unsloth/Devstral-Small-2-24B-Instruct-2512-GGUF",
    source:
      "https://huggingface.co/mistralai/Devstral-Small-2-24B-Instruct-2512 (dense, 40 layers, hidden 5120, 32 Q / 8 KV heads, vocab 131072, 256k context); Q4_K_M 14.33 GB / Q5_K_M 16.76 GB per a llama.cpp recipe",
    released: "2025-12",
    license: "apache-2.0",
    contextLength: 262144,
    totalParamsB: 23.6,
    activeParamsB: 23.6,
    sweBenchVerified: 68.0,
    spec: { arch: "mistral3", nLayer: 40, nEmbd: 5120, nVocab: 131072, attnInterval: 1, nHead: 32, nHeadKv: 8, headDim: 128 },
    quants: [
      { quant: "Q8_0", bytes: 25.0 * GB, bits: 8.5, sizeNote: "derived: 23.57 B params × 8.5 bpw" },
      { quant: "Q5_K_M", bytes: 16.76 * GB, bits: 5.5, sizeNote: null },
      { quant: "Q4_K_M", bytes: 14.33 * GB, bits: 4.85, sizeNote: null },
    ],
    weights: [{ repo: "mistralai/Devstral-Small-2-24B-Instruct-2512", dtype: "bf16", bytes: 47.2e9, sizeNote: "derived: 23.6 B params × 2 bytes" }],
    toolCalling: {
      status: "unverified",
      template: "Mistral tool-call template (--jinja); needs llama.cpp with PR #17945",
      note: "tuned for agentic coding tools (Mistral Vibe, OpenHands)",
    },
    unverified: ["head dim 128 (5120 / 40 would be 128 for 40 heads; the card gives 32 heads)", "Q8_0 size derived", "repo name"],
    autoPick: true,
    notes: "dense 24B: all of it must sit on the GPU to be fast; carries a vision tower (not loaded: --no-mmproj)",
  },
  {
    id: "gpt-oss-120b",
    name: "gpt-oss-120b",
    repo: "ggml-org/gpt-oss-120b-GGUF",
    source:
      "https://huggingface.co/openai/gpt-oss-120b (36 layers, 128 experts 4 active, hidden 2880, head dim 64, 131,072 context, alternating 128-token sliding window); MXFP4 GGUF ≈ 60 GB in 3 shards",
    released: "2025-08-05",
    license: "apache-2.0",
    contextLength: 131072,
    totalParamsB: 117,
    activeParamsB: 5.1,
    sweBenchVerified: 62.4,
    spec: {
      arch: "gpt-oss",
      nLayer: 36,
      nEmbd: 2880,
      nVocab: 201088,
      attnInterval: 1,
      nHead: 64,
      nHeadKv: 8,
      headDim: 64,
      swa: { window: 128, pattern: 2 },
      moe: { experts: 128, used: 4, expertShare: 0.95 },
    },
    quants: [{ quant: "MXFP4", bytes: 60 * GB, bits: 4.25, sizeNote: "≈ 60 GB per a deployment guide" }],
    weights: [
      { repo: "openai/gpt-oss-120b", dtype: "mxfp4", bytes: 65.3e9, sizeNote: "≈ 65 GB: MXFP4 experts, the rest bf16 (the maker: runs on one 80 GB GPU)" },
    ],
    toolCalling: {
      status: "unverified",
      template: "harmony format (the GGUF's template, --jinja)",
      note: "llama.cpp parses harmony channels; reasoning effort set in the system prompt",
    },
    unverified: ["KV heads 8 and vocab 201088 from memory of the config, not re-read", "file size ≈ 60 GB", "SWE-bench figure"],
    autoPick: true,
    notes: "MXFP4 experts; all experts on CPU (--n-cpu-moe 36) leaves ≈ 5 GB on the GPU",
  },
  {
    id: "gpt-oss-20b",
    name: "gpt-oss-20b",
    repo: "ggml-org/gpt-oss-20b-GGUF",
    source:
      "https://huggingface.co/openai/gpt-oss-20b (24 layers, 32 experts 4 active, hidden 2880, head dim 64, 131,072 context, alternating 128-token sliding window)",
    released: "2025-08-05",
    license: "apache-2.0",
    contextLength: 131072,
    totalParamsB: 21,
    activeParamsB: 3.6,
    sweBenchVerified: 60.7,
    spec: {
      arch: "gpt-oss",
      nLayer: 24,
      nEmbd: 2880,
      nVocab: 201088,
      attnInterval: 1,
      nHead: 64,
      nHeadKv: 8,
      headDim: 64,
      swa: { window: 128, pattern: 2 },
      moe: { experts: 32, used: 4, expertShare: 0.91 },
    },
    quants: [{ quant: "MXFP4", bytes: 12.13 * GB, bits: 4.25, sizeNote: null }],
    weights: [
      { repo: "openai/gpt-oss-20b", dtype: "mxfp4", bytes: 13.8e9, sizeNote: "≈ 13.8 GB: MXFP4 experts, the rest bf16 (the maker: runs within 16 GB)" },
    ],
    toolCalling: { status: "unverified", template: "harmony format (the GGUF's template, --jinja)", note: "small and fast; weaker at long multi-step edits" },
    unverified: ["KV heads 8 and vocab 201088 from memory of the config", "SWE-bench figure"],
    autoPick: true,
    notes: "the small tier: fits 16 GB GPUs whole, 8 GB GPUs with experts in RAM, and runs on CPUs",
  },
  {
    id: "glm-4.7-flash",
    name: "GLM-4.7-Flash (30B-A3B)",
    repo: "bartowski/zai-org_GLM-4.7-Flash-GGUF",
    source:
      "https://huggingface.co/zai-org/GLM-4.7-Flash (MoE with MLA, served by llama.cpp's deepseek2 path: 47 layers, 64 routed + 1 shared experts, 4 active, latent KV 576 per layer); sizes from bartowski's quant table",
    released: "2026-01",
    license: "mit",
    contextLength: 202752,
    totalParamsB: 30,
    activeParamsB: 3,
    sweBenchVerified: null,
    spec: {
      arch: "deepseek2",
      nLayer: 47,
      nEmbd: 2048,
      nVocab: 154880,
      attnInterval: 1,
      nHead: 20,
      nHeadKv: 1,
      headDim: 576,
      mla: 576,
      moe: { experts: 64, used: 4, expertShare: 0.9 },
    },
    quants: [
      { quant: "Q8_0", bytes: 31.84 * GB, bits: 8.5, sizeNote: null },
      { quant: "Q6_K", bytes: 24.83 * GB, bits: 6.56, sizeNote: null },
      { quant: "Q5_K_M", bytes: 21.57 * GB, bits: 5.5, sizeNote: null },
      { quant: "Q4_K_M", bytes: 18.47 * GB, bits: 4.85, sizeNote: null },
    ],
    toolCalling: { status: "unverified", template: "the GGUF's GLM-4.7 Jinja template (--jinja)", note: "bartowski suggests --flash-attn off for speed" },
    unverified: ["context length (one quant card says 32,768; 202,752 assumed from the GLM-4.x family)", "hidden size, heads and vocab", "SWE-bench score"],
    autoPick: false,
    notes: "listed for choice only: its context length and shape could not be confirmed",
  },
  {
    id: "deepseek-v4-flash",
    name: "DeepSeek-V4-Flash (284B-A13B)",
    repo: "deepseek-ai/DeepSeek-V4-Flash",
    source:
      "https://huggingface.co/deepseek-ai/DeepSeek-V4-Flash (released 2026-04-24, MIT; MoE 284 B total / 13 B active, hybrid Compressed Sparse + Heavily Compressed Attention, mHC, 1,048,576 context; the Instruct checkpoint ships FP4 MoE experts + FP8 attention/dense — SGLang cookbook; vLLM recipe: vLLM 0.20.0+, H200 × 4 DP4 + EP with MTP-1)",
    released: "2026-04-24",
    license: "mit",
    contextLength: 1048576,
    totalParamsB: 284,
    activeParamsB: 13,
    sweBenchVerified: null,
    rankNote: "listed for choice on datacenter GPUs (vLLM / SGLang): its parsers and expert layout could not be confirmed",
    runtimes: ["vllm", "sglang"],
    kvUnknown: true,
    spec: {
      arch: "deepseek4",
      nLayer: 43,
      nEmbd: 4096,
      nVocab: 129280,
      attnInterval: 1,
      nHead: 64,
      nHeadKv: 1,
      headDim: 512,
    },
    quants: [],
    weights: [
      {
        repo: "deepseek-ai/DeepSeek-V4-Flash",
        dtype: "fp8",
        bytes: 160e9,
        sizeNote: "≈ 160 GB (FP4 experts + FP8 rest) per a release summary; the Hub's listing replaces it when online",
        derived: true,
      },
    ],
    toolCalling: {
      status: "unverified",
      template: "DeepSeek-V4 chat template (three reasoning modes; Think Max needs ≥ 384k context)",
      note: "vLLM: --reasoning-parser deepseek_v4 --tool-call-parser deepseek_v4 (vllm.parser.deepseek_v4: <think> + DSML tool calls); SGLang: --reasoning-parser deepseek-v4 --tool-call-parser deepseekv4 (its ToolCallParserEnum and REASONING_PARSER_NAMES at sgl-project/sglang 00828e56 / 0a933a22)",
    },
    unverified: [
      "layers, hidden size, heads and vocab (the spec is a placeholder: vLLM/SGLang plans size its KV as 25 % of the weights)",
      "checkpoint size ≈ 160 GB",
      "whether the pinned SGLang v0.5.10.post1 and vLLM v0.20.0 already register the deepseekv4 / deepseek_v4 parsers (confirmed only in newer stored sources)",
      "minimum SGLang version",
    ],
    autoPick: false,
    notes: "datacenter MoE: 4 × H200 / B200 class; no GGUF path in this catalog (its attention is new to llama.cpp)",
  },
  {
    id: "glm-5.3-flash",
    name: "GLM-5.3-Flash (320B-A18B)",
    repo: "zai-org/GLM-5.3-Flash",
    source:
      "https://huggingface.co/zai-org/GLM-5.3-Flash (MIT; native multimodal MoE, 320 B total / 18 B active, hybrid sparse + linear attention, mHC, 1,048,576 context; Hub tags: glm5_next, fp8)",
    // Venice's model page: released 2026-08-21, open weights, 1M context, 128k output
    released: "2026-08-21",
    license: "mit",
    contextLength: 1048576,
    totalParamsB: 320,
    activeParamsB: 18,
    sweBenchVerified: null,
    rankNote: "listed for choice on datacenter GPUs (vLLM / SGLang): its parsers, shape and minimum runtime versions could not be confirmed",
    runtimes: ["vllm", "sglang"],
    kvUnknown: true,
    spec: {
      arch: "glm5next",
      nLayer: 64,
      nEmbd: 5120,
      nVocab: 154880,
      attnInterval: 1,
      nHead: 64,
      nHeadKv: 1,
      headDim: 576,
    },
    quants: [],
    weights: [
      {
        repo: "zai-org/GLM-5.3-Flash",
        dtype: "fp8",
        bytes: 330e9,
        sizeNote: "derived: 320 B params × ≈ 1.03 bytes (the repo is tagged fp8)",
        derived: true,
      },
    ],
    toolCalling: {
      status: "unverified",
      template: "GLM-5 chat template; reasoning always on (reasoning_effort low / high / max)",
      note: "GLM-5.1's vLLM recipe uses --tool-call-parser glm47 --reasoning-parser glm45 (ocw plans glm47 for GLM-5); not confirmed for 5.3-Flash (newer SGLang has a glm53_flash detector)",
    },
    unverified: [
      "layers, hidden size, heads and vocab (placeholder spec: vLLM/SGLang plans size its KV as 25 % of the weights)",
      "checkpoint size (derived)",
      "parser names and minimum vLLM / SGLang versions",
    ],
    autoPick: false,
    notes: "datacenter MoE (8 × 80 GB class in FP8); listed for choice",
  },
];

/** The catalog in rank order; quant and weights sizes not read from a listing are flagged `derived`. */
export const CATALOG: readonly CatalogEntry[] = RAW_CATALOG.map((e) => ({
  ...e,
  quants: e.quants.map((q) => ({ ...q, derived: q.derived ?? /^derived|size \(same shape\)/.test(q.sizeNote ?? "") })),
  weights: e.weights?.map((w) => ({ ...w, derived: w.derived ?? /^derived/.test(w.sizeNote ?? "") })),
}));

/** Whether the catalog entry can be served by this runtime. */
export const servedBy = (e: CatalogEntry, runtime: "llama.cpp" | "vllm" | "sglang"): boolean => !e.runtimes || e.runtimes.includes(runtime);

/**
 * The rank order, with our own ledger where it exists (issue 27): entries whose targets have at least `minGraded`
 * graded tasks swap places among themselves by pass@1 (built ÷ graded); the rest keep the benchmark order. `modelOf`
 * maps a ledger row's target to the model it serves.
 */
export function rankByLedger(
  catalog: readonly CatalogEntry[],
  rows: readonly { target: string; graded: number; passAt1: number | null }[],
  modelOf: (target: string) => string | null,
  minGraded = 5,
): CatalogEntry[] {
  const score = new Map<string, { graded: number; built: number }>();
  for (const r of rows) {
    const m = modelOf(r.target)?.toLowerCase();
    if (!m || r.passAt1 === null) continue;
    const e = catalog.find((c) => {
      const maker = makerRepo(c)?.toLowerCase();
      return m.includes(c.id) || m.includes(c.repo.toLowerCase()) || (!!maker && m.includes(maker));
    });
    if (!e) continue;
    const s = score.get(e.id) ?? { graded: 0, built: 0 };
    score.set(e.id, { graded: s.graded + r.graded, built: s.built + r.passAt1 * r.graded });
  }
  const measured = catalog.filter((e) => (score.get(e.id)?.graded ?? 0) >= minGraded);
  if (measured.length < 2) return [...catalog];
  const rate = (e: CatalogEntry) => score.get(e.id)!.built / score.get(e.id)!.graded;
  const sorted = [...measured].sort((a, b) => rate(b) - rate(a));
  let i = 0;
  return catalog.map((e) => (measured.includes(e) ? sorted[i++]! : e));
}

/** The maker's (safetensors) repo of a catalog entry: its first weights variant, else the repo its source names. */
export function makerRepo(e: CatalogEntry): string | null {
  return e.weights?.[0]?.repo ?? /huggingface\.co\/([\w.-]+\/[\w.-]+)/.exec(e.source)?.[1] ?? null;
}

export function findCatalog(idOrRepo: string): CatalogEntry | undefined {
  const k = idOrRepo.toLowerCase().replace(/^hf:/, "").replace(/:.*$/, "");
  return CATALOG.find((e) => e.id === k || e.repo.toLowerCase() === k || e.name.toLowerCase() === k);
}

/** Hyper-parameters for the estimator, built from the catalog's spec (the same shape the GGUF reader produces). */
export function catalogHparams(e: CatalogEntry): ModelHparams {
  const s = e.spec;
  const n = s.nLayer;
  const isAttn = (il: number) => s.attnInterval <= 1 || (il + 1) % s.attnInterval === 0;
  const isSwa = Array.from({ length: n }, (_, il) => !!s.swa && isAttn(il) && il % s.swa.pattern < s.swa.pattern - 1);
  const kvLayer = Array.from({ length: n }, (_, il) => isAttn(il));
  const rsLayer = Array.from({ length: n }, (_, il) => !!s.recurrent && !isAttn(il));
  const r = s.recurrent;
  return {
    arch: s.arch,
    name: e.name,
    nLayerAll: n,
    nLayerNextn: 0,
    nLayer: n,
    nCtxTrain: e.contextLength,
    nEmbd: s.nEmbd,
    nVocab: s.nVocab,
    nHead: kvLayer.map((a) => (a ? s.nHead : 0)),
    nHeadKv: kvLayer.map((a) => (a ? (s.mla ? 1 : s.nHeadKv) : 0)),
    nFf: new Array<number>(n).fill(0),
    headK: s.mla ?? s.headDim,
    headV: s.mla ? 0 : s.headDim,
    headKSwa: s.headDim,
    headVSwa: s.headDim,
    isMla: !!s.mla,
    swaType: s.swa ? "standard" : "none",
    nSwa: s.swa?.window ?? 0,
    isSwa,
    isRecr: rsLayer,
    kvLayer,
    rsLayer,
    nEmbdR: r ? (r.conv - 1) * (r.inner + 2 * r.groups * r.state) : 0,
    nEmbdS: r ? r.state * r.inner : 0,
    kind: r ? "hybrid" : "attention",
    caveats: ["weights spread from the catalog's file size (no tensor table before download)"],
  };
}

/**
 * Stand-in tensor table from the file size: embeddings and output by vocabulary share, the rest spread evenly over the
 * layers, each layer's routed-expert share in an `ffn_*_exps` tensor (so --n-cpu-moe can be planned before download).
 */
export function catalogTensors(e: CatalogEntry, q: CatalogQuant): GgufTensorInfo[] {
  const s = e.spec;
  const bytesPerParam = q.bytes / (e.totalParamsB * 1e9);
  const embd = Math.round(s.nVocab * s.nEmbd * bytesPerParam);
  const perLayer = Math.max(0, (q.bytes - 2 * embd) / s.nLayer);
  const share = s.moe?.expertShare ?? 0;
  const t = (name: string, bytes: number): GgufTensorInfo => ({ name, shape: [], type: 0, offset: 0, bytes: Math.round(bytes) });
  const out = [t("token_embd.weight", embd), t("output.weight", embd)];
  for (let il = 0; il < s.nLayer; il++) {
    out.push(t(`blk.${il}.attn_shared.weight`, perLayer * (1 - share)));
    if (share > 0) out.push(t(`blk.${il}.ffn_up_exps.weight`, perLayer * share));
  }
  return out;
}

/**
 * What each model family needs from vLLM / SGLang (issue 27): the oldest release that loads it (from the model cards:
 * Qwen3.5 / 3.6 name vLLM ≥ 0.19 and SGLang ≥ 0.5.10), the container image pinned for it, and the parsers that keep
 * its thinking out of `content` and turn its tool calls into OpenAI tool calls. null: the family needs none / no
 * minimum is known. Reasoning parser names: docs.vllm.ai "Reasoning Outputs" (qwen3, glm45, openai_gptoss) and
 * docs.sglang.io "Reasoning Parser" (qwen3, glm45, gpt-oss); all of them, with deepseek_v4 / deepseek-v4, are registered
 * in vllm-project/vllm vllm/reasoning/__init__.py (commit 0064cc9c) and sgl-project/sglang
 * python/sglang/srt/parser/reasoning_parser_names.py (commit 0a933a22), newer than the pinned tags (not stored).
 */
interface RuntimeFamily {
  family: string;
  minVersion: { vllm: string | null; sglang: string | null };
  image: { vllm: string; sglang: string };
  reasoningParser: { vllm: string | null; sglang: string | null };
}

/** The images ocw runs when the model's family names no newer one (OCW_VLLM_IMAGE / OCW_SGLANG_IMAGE override). */
export const DEFAULT_IMAGES = { vllm: "docker.io/vllm/vllm-openai:v0.19.0", sglang: "docker.io/lmsysorg/sglang:v0.5.10.post1" } as const;

const FAMILIES: { re: RegExp; f: RuntimeFamily }[] = [
  // thinking models: <think>…</think> goes to reasoning_content only with the qwen3 parser
  {
    re: /qwen3[._-]?[568]/i,
    f: {
      family: "qwen3.5/3.6/3.8",
      minVersion: { vllm: "0.19.0", sglang: "0.5.10" },
      image: DEFAULT_IMAGES,
      reasoningParser: { vllm: "qwen3", sglang: "qwen3" },
    },
  },
  // Qwen3-Coder(-Next) does not think: no reasoning parser (one would take its answer for unfinished thinking)
  {
    re: /qwen3-coder/i,
    f: { family: "qwen3-coder", minVersion: { vllm: null, sglang: null }, image: DEFAULT_IMAGES, reasoningParser: { vllm: null, sglang: null } },
  },
  {
    // vLLM's recipe names 0.20.0+ (DeepSeek-V4's attention); the image is pinned to that release
    re: /deepseek-v4/i,
    f: {
      family: "deepseek-v4",
      minVersion: { vllm: "0.20.0", sglang: null },
      image: { vllm: "docker.io/vllm/vllm-openai:v0.20.0", sglang: DEFAULT_IMAGES.sglang },
      // docs.vllm.ai vllm.parser.deepseek_v4 (<think> reasoning + DSML tool calls); docs.sglang.io DeepSeek-V4 cookbook
      reasoningParser: { vllm: "deepseek_v4", sglang: "deepseek-v4" },
    },
  },
  {
    re: /gpt-oss/i,
    f: { family: "gpt-oss", minVersion: { vllm: null, sglang: null }, image: DEFAULT_IMAGES, reasoningParser: { vllm: "openai_gptoss", sglang: "gpt-oss" } },
  },
  {
    re: /glm-4\.[5-7]/i,
    f: { family: "glm-4.x", minVersion: { vllm: null, sglang: null }, image: DEFAULT_IMAGES, reasoningParser: { vllm: "glm45", sglang: "glm45" } },
  },
  {
    re: /qwen3/i,
    f: { family: "qwen3", minVersion: { vllm: null, sglang: null }, image: DEFAULT_IMAGES, reasoningParser: { vllm: "qwen3", sglang: "qwen3" } },
  },
];

/** The runtime needs of a catalog entry or a repo name (matched by family); a family-less model needs nothing special. */
export function runtimeFamily(idOrRepo: string): RuntimeFamily {
  return (
    FAMILIES.find((x) => x.re.test(idOrRepo))?.f ?? {
      family: "other",
      minVersion: { vllm: null, sglang: null },
      image: DEFAULT_IMAGES,
      reasoningParser: { vllm: null, sglang: null },
    }
  );
}
