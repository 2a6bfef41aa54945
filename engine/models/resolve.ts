/**
 * From "a model repo (its quant files)" to one quant: read each quant's header over HTTP (Range, lazily and once) and
 * plan it with the planner (plan.ts) in its order — replicas or whole on the GPUs (largest quant first), then experts
 * in RAM, partial offload or CPU (smallest ≥4-bit quant first).
 */
import path from "node:path";
import type { FitPick } from "../../shared/fit";
import { hubEndpoint, hubHeaders, repoGgufs, resolveUrl, type QuantFile } from "./hf";
import { modelFromInfo, type PlanDevices, planModel } from "./plan";
import { loadGguf, type ModelInfo } from "./source";
import { SetupError } from "./errors";
import { counted } from "../../shared/words";

interface RepoPlan {
  repo: string;
  rev: string;
  quant: QuantFile;
  pick: FitPick;
  considered: { quant: string; totalBytes: number; fits: boolean; placement: FitPick["placement"] | null }[];
}

/** Nominal bits per weight from a quant name (Q4_K_M → 4, IQ2_XXS → 2, F16 → 16, MXFP4 → 4); null when unknown. */
export function quantBits(quant: string): number | null {
  const q = quant.toUpperCase();
  if (/BF16|F16/.test(q)) return 16;
  if (/F32/.test(q)) return 32;
  if (/MXFP4/.test(q)) return 4;
  const m = /(?:^|[-_])I?Q(\d)/.exec(q);
  return m ? Number(m[1]) : null;
}

/** `owner/repo` or `owner/repo:QUANT` (llama.cpp's -hf syntax), optionally `@rev`. */
export function parseRepoRef(ref: string): { repo: string; quant: string | null; rev: string } | null {
  const m = /^([\w.-]+\/[\w.-]+?)(?::([\w.-]+))?(?:@([\w.\-/]+))?$/.exec(ref);
  if (!m || ref.endsWith(".gguf")) return null;
  return { repo: m[1]!, quant: m[2]?.toUpperCase() ?? null, rev: m[3] ?? "main" };
}

export async function planRepo(
  ref: string,
  want: { dev: PlanDevices; slots: number; minCtx: number; maxCtxPerSlot?: number; verified: boolean },
  env: NodeJS.ProcessEnv = process.env,
): Promise<RepoPlan | { problem: string; considered: RepoPlan["considered"] }> {
  const p = parseRepoRef(ref);
  if (!p) throw new SetupError("model-source", `"${ref}" is not owner/repo[:QUANT]`, { ref });
  const g = await repoGgufs(p.repo, p.rev, fetch, env).catch((e: Error & { cause?: { code?: string } }) => {
    if (e.message === "fetch failed")
      throw new SetupError(
        "model-source",
        `cannot reach the Hugging Face Hub at ${hubEndpoint(env)} (${e.cause?.code ?? "no connection"}): check the network (or HTTPS_PROXY), or pass a local .gguf or a catalog id`,
        { endpoint: hubEndpoint(env), cause: e.cause?.code ?? null },
        "unavailable",
      );
    throw e;
  });
  let quants = g.quants; // largest first
  if (p.quant) quants = quants.filter((q) => q.quant.toUpperCase() === p.quant);
  if (!quants.length)
    throw new SetupError(
      "model-source",
      p.quant ? `${p.repo} has no ${p.quant} GGUF (has ${g.quants.map((q) => q.quant).join(", ") || "none"})` : `${p.repo} has no GGUF files`,
    );
  const infos = new Map<string, ModelInfo>();
  const model = async (q: QuantFile) => {
    let info = infos.get(q.quant);
    if (!info) {
      info = await loadGguf(resolveUrl(p.repo, q.files[0]!.path, p.rev, env), hubHeaders(env));
      info.fileBytes = q.totalBytes;
      infos.set(q.quant, info);
    }
    return modelFromInfo(info, p.repo, ["-hf", `${p.repo}:${q.quant}${p.rev !== "main" ? `@${p.rev}` : ""}`], q.quant);
  };
  const considered: RepoPlan["considered"] = [];
  const good = p.quant ? quants : quants.filter((q) => (quantBits(q.quant) ?? 4) >= 4);
  const order: [FitPick["placement"][], QuantFile[]][] = want.dev.gpus.length
    ? [
        [["gpu"], quants],
        [["moe-offload", "partial"], [...good].reverse()],
      ]
    : [[["cpu"], [...good].reverse()]];
  for (const [phases, qs] of order) {
    for (const q of qs) {
      const pick = planModel(await model(q), want.dev, want.slots, want.minCtx, want.verified, phases, want.maxCtxPerSlot);
      considered.push({ quant: q.quant, totalBytes: q.totalBytes, fits: !!pick, placement: pick?.placement ?? null });
      if (pick) return { repo: p.repo, rev: p.rev, quant: q, pick, considered };
    }
  }
  return {
    problem: `no quant of ${p.repo} fits ${counted(want.slots, "slot")} × ${want.minCtx} tokens here (tried ${[...new Set(considered.map((c) => c.quant))].join(", ")})`,
    considered,
  };
}

export function localPathFor(stateDir: string, repo: string, file: string): string {
  return path.join(stateDir, "models", repo.replace("/", "__"), file);
}
