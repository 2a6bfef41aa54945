/**
 * A small, offline catalog of open coding models with tool calling (curated late 2025). File names are
 * resolved against the Hub tree API at download time (repoGgufs), so a renamed file does not break setup;
 * the sizes here are approximate and only rank choices before any network access.
 */
export interface CatalogEntry {
  id: string;
  name: string;
  /** Hugging Face repo holding GGUF quants. */
  repo: string;
  /** Quant labels offered, best first, with approximate total size in GiB. */
  quants: { quant: string; approxGiB: number }[];
  license: string;
  /** Native context (tokens). */
  contextLength: number;
  arch: string;
  /** Active parameters (B) for MoE, total otherwise. */
  activeParamsB: number;
  totalParamsB: number;
  toolCalling: true;
  notes: string;
}

export const CATALOG: readonly CatalogEntry[] = [
  {
    id: "qwen3-coder-30b-a3b", name: "Qwen3-Coder-30B-A3B-Instruct", repo: "unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF",
    quants: [{ quant: "Q8_0", approxGiB: 30.3 }, { quant: "Q6_K", approxGiB: 23.4 }, { quant: "Q4_K_M", approxGiB: 17.3 }, { quant: "Q3_K_M", approxGiB: 13.7 }],
    license: "apache-2.0", contextLength: 262144, arch: "qwen3moe", activeParamsB: 3.3, totalParamsB: 30.5, toolCalling: true,
    notes: "MoE, fast on partial offload; agentic coding and tool use; use --jinja",
  },
  {
    id: "gpt-oss-20b", name: "gpt-oss-20b", repo: "ggml-org/gpt-oss-20b-GGUF",
    quants: [{ quant: "MXFP4", approxGiB: 11.3 }],
    license: "apache-2.0", contextLength: 131072, arch: "gpt-oss", activeParamsB: 3.6, totalParamsB: 21, toolCalling: true,
    notes: "MoE with sliding-window layers (small KV); reasoning effort via the chat template",
  },
  {
    id: "devstral-small", name: "Devstral-Small-2507 (24B)", repo: "unsloth/Devstral-Small-2507-GGUF",
    quants: [{ quant: "Q8_0", approxGiB: 23.3 }, { quant: "Q6_K", approxGiB: 18 }, { quant: "Q4_K_M", approxGiB: 13.3 }],
    license: "apache-2.0", contextLength: 131072, arch: "llama", activeParamsB: 24, totalParamsB: 24, toolCalling: true,
    notes: "dense; tuned for software-engineering agents",
  },
  {
    id: "qwen2.5-coder-7b", name: "Qwen2.5-Coder-7B-Instruct", repo: "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF",
    quants: [{ quant: "Q8_0", approxGiB: 7.5 }, { quant: "Q6_K", approxGiB: 5.8 }, { quant: "Q4_K_M", approxGiB: 4.4 }],
    license: "apache-2.0", contextLength: 32768, arch: "qwen2", activeParamsB: 7.6, totalParamsB: 7.6, toolCalling: true,
    notes: "small dense coder for 8 GB GPUs; weaker at multi-step tool use",
  },
  {
    id: "qwen3-8b", name: "Qwen3-8B", repo: "Qwen/Qwen3-8B-GGUF",
    quants: [{ quant: "Q8_0", approxGiB: 8.1 }, { quant: "Q6_K", approxGiB: 6.3 }, { quant: "Q4_K_M", approxGiB: 4.7 }],
    license: "apache-2.0", contextLength: 32768, arch: "qwen3", activeParamsB: 8.2, totalParamsB: 8.2, toolCalling: true,
    notes: "general model with thinking mode; send enable_thinking=false for plain answers",
  },
  {
    id: "glm-4.5-air", name: "GLM-4.5-Air", repo: "unsloth/GLM-4.5-Air-GGUF",
    quants: [{ quant: "Q4_K_M", approxGiB: 68 }, { quant: "Q3_K_M", approxGiB: 53 }],
    license: "mit", contextLength: 131072, arch: "glm4moe", activeParamsB: 12, totalParamsB: 106, toolCalling: true,
    notes: "large MoE; needs ≥ 64 GB (GPU + RAM with expert offload) — or serve with vLLM on several GPUs",
  },
];

export function findCatalog(idOrRepo: string): CatalogEntry | undefined {
  const k = idOrRepo.toLowerCase();
  return CATALOG.find((e) => e.id === k || e.repo.toLowerCase() === k || e.name.toLowerCase() === k);
}

/** Catalog entries whose smallest quant could fit in `budgetBytes` (weights only; the fit decides for real). */
export function catalogCandidates(budgetBytes: number): { entry: CatalogEntry; quant: string; approxBytes: number }[] {
  const G = 1024 ** 3;
  const out: { entry: CatalogEntry; quant: string; approxBytes: number }[] = [];
  for (const e of CATALOG) {
    const q = e.quants.find((x) => x.approxGiB * G < budgetBytes * 0.85);
    if (q) out.push({ entry: e, quant: q.quant, approxBytes: q.approxGiB * G });
  }
  return out;
}
