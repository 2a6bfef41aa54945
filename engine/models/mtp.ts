/**
 * Multi-token prediction (MTP) heads the catalog's models ship (issue 27): speculative decoding with the model's own
 * head drafts a few tokens a step and verifies them in one pass — more decode tokens/s where decode is memory-bound
 * (a single stream, a few slots), nothing to download beside the model. Planned only where the catalog says the
 * weights carry the head:
 * - llama.cpp: `--spec-type draft-mtp --spec-draft-n-max N` (the pinned build's --help; the GGUF must hold the NextN
 *   layers — a conversion that dropped them cannot use it, so `gguf` is true only for a GGUF repo known to keep them);
 * - vLLM: `--speculative-config {"method":"mtp","num_speculative_tokens":N}` on the maker's safetensors ("mtp" is in
 *   SpeculativeMethod from v0.11.0's docs on; vllm/config/speculative.py (commit 002e77c1) rewrites the per-model names
 *   such as qwen3_next_mtp to "mtp" with a deprecation warning and maps qwen3_5 / qwen3_5_moe to their MTP heads);
 * - SGLang: `--speculative-algorithm NEXTN` with N steps (its MTP path; server_args.py turns NEXTN into EAGLE in every
 *   stored version), on the maker's safetensors.
 * A catalog entry may say it itself (`mtp`); the table below covers the entries whose makers ship the head.
 *
 * On by default, with a switch (`mtp: false` on the plan's input: `ocw setup|fit|deploy k8s --no-mtp`, the Setup
 * page's checkbox): drafting raises one stream's speed, but with many slots busy the verify passes compete with the
 * other sequences' decode and a server's total tokens/s can drop (vLLM's docs aim speculative decoding at low-QPS
 * latency). Off, the plan carries no draft tokens — no speculative flag reaches any runtime — and its reason says
 * MTP_OFF.
 */
export interface MtpHead {
  /** The catalog's GGUF repo keeps the MTP (NextN) layers: llama.cpp can draft with them. */
  gguf: boolean;
  /** The maker's safetensors carry the head: vLLM / SGLang can draft with it. */
  safetensors: boolean;
  /** Tokens drafted per step (llama.cpp's default is 3; the makers' cards use 1–3 for vLLM). */
  draftTokens: number;
}

/**
 * The heads by catalog id. Qwen3.5/3.6 ship one MTP layer in their safetensors (their model cards serve it with vLLM's
 * and SGLang's MTP); the catalog's unsloth GGUFs are not confirmed to keep the NextN tensors, so llama.cpp is not
 * planned with MTP for them (a GGUF repo that keeps them sets `gguf`).
 */
const HEADS: Record<string, MtpHead> = {
  "qwen3.6-27b": { gguf: false, safetensors: true, draftTokens: 2 },
  "qwen3.6-35b-a3b": { gguf: false, safetensors: true, draftTokens: 2 },
  "qwen3.5-397b-a17b": { gguf: false, safetensors: true, draftTokens: 2 },
};

/** The MTP head a catalog entry ships, or null (no head: no speculative flags). */
export function mtpOf(e: { id: string; mtp?: MtpHead | null }): MtpHead | null {
  return e.mtp ?? HEADS[e.id] ?? null;
}

/** What a plan's reason says where the model has a head this runtime would draft with but the person switched it off. */
export const MTP_OFF = "MTP off (asked)";

/**
 * What a planned model carries of its head: the draft tokens where the weights the runtime loads keep it (`gguf` for
 * llama.cpp, `safetensors` for vLLM / SGLang) and MTP is on; `mtpOff` where they keep it and it was switched off;
 * nothing where there is no head to use.
 */
export function mtpPlan(head: MtpHead | null, weights: "gguf" | "safetensors", on = true): { mtpDraft?: number; mtpOff?: true } {
  if (!head?.[weights]) return {};
  return on ? { mtpDraft: head.draftTokens } : { mtpOff: true };
}

/** A pick's `mtp` (shared/fit.ts) from its planned model: "on", "off" (asked), or nothing (no head to use). */
export function mtpState(m: { mtpDraft?: number; mtpOff?: boolean }): { mtp?: "on" | "off" } {
  return m.mtpDraft ? { mtp: "on" } : m.mtpOff ? { mtp: "off" } : {};
}

/** llama-server's words for a model whose GGUF keeps its MTP head; none otherwise. */
export function llamaMtpArgs(draftTokens: number | null | undefined): string[] {
  return draftTokens ? ["--spec-type", "draft-mtp", "--spec-draft-n-max", String(draftTokens)] : [];
}

/** vLLM's words for a model whose safetensors carry the head; none otherwise. */
export function vllmMtpArgs(draftTokens: number | null | undefined): string[] {
  return draftTokens ? ["--speculative-config", JSON.stringify({ method: "mtp", num_speculative_tokens: draftTokens })] : [];
}

/** SGLang's words (its NEXTN speculative algorithm) for a model whose safetensors carry the head; none otherwise. */
export function sglangMtpArgs(draftTokens: number | null | undefined): string[] {
  return draftTokens
    ? [
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-steps",
        String(draftTokens),
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        String(draftTokens + 1),
      ]
    : [];
}
