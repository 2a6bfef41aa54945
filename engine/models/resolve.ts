/**
 * From "a model repo (its quant files)" to one file: read each quant's header over HTTP (Range), fit each, and
 * take the best-quality quant that puts every layer on the GPUs (else the best that fits at all).
 */
import path from "node:path";
import type { DeviceBudget } from "./estimate";
import { fit, type FitChoice } from "./fit";
import { hparamsFromMetadata } from "./hparams";
import { hubHeaders, repoGgufs, resolveUrl, type QuantFile } from "./hf";
import { loadGguf, type ModelInfo } from "./source";

export interface RepoChoice {
  repo: string;
  rev: string;
  quant: QuantFile;
  info: ModelInfo;
  choice: FitChoice;
  considered: { quant: string; totalBytes: number; fits: boolean; placement: FitChoice["placement"]; reason: string }[];
}

/** `owner/repo` or `owner/repo:QUANT` (llama.cpp's -hf syntax), optionally `@rev`. */
export function parseRepoRef(ref: string): { repo: string; quant: string | null; rev: string } | null {
  const m = /^([\w.-]+\/[\w.-]+?)(?::([\w.-]+))?(?:@([\w.\-/]+))?$/.exec(ref);
  if (!m || ref.endsWith(".gguf")) return null;
  return { repo: m[1]!, quant: m[2]?.toUpperCase() ?? null, rev: m[3] ?? "main" };
}

export async function chooseFromRepo(
  ref: string,
  want: { slots: number; minCtxPerSlot: number; maxCtxPerSlot?: number; gpus: DeviceBudget[]; hostFreeBytes: number },
  env: NodeJS.ProcessEnv = process.env,
): Promise<RepoChoice> {
  const p = parseRepoRef(ref);
  if (!p) throw new Error(`"${ref}" is not owner/repo[:QUANT]`);
  const g = await repoGgufs(p.repo, p.rev, fetch, env);
  let quants = g.quants;
  if (p.quant) quants = quants.filter((q) => q.quant === p.quant);
  if (!quants.length) throw new Error(p.quant ? `${p.repo} has no ${p.quant} GGUF (has ${g.quants.map((q) => q.quant).join(", ") || "none"})` : `${p.repo} has no GGUF files`);
  const considered: RepoChoice["considered"] = [];
  let best: { q: QuantFile; info: ModelInfo; c: FitChoice } | null = null;
  let anyFit: { q: QuantFile; info: ModelInfo; c: FitChoice } | null = null;
  for (const q of quants) {
    const info = await loadGguf(resolveUrl(p.repo, q.files[0]!.path, p.rev, env), hubHeaders(env));
    info.fileBytes = q.totalBytes;
    const c = fit({ hparams: hparamsFromMetadata(info.metadata), tensors: info.tensors, fileBytes: q.totalBytes, ...want });
    considered.push({ quant: q.quant, totalBytes: q.totalBytes, fits: c.fits, placement: c.placement, reason: c.reason });
    if (c.fits && !anyFit) anyFit = { q, info, c };
    if (c.fits && (c.placement === "gpu" || !want.gpus.length)) {
      best = { q, info, c };
      break;
    }
  }
  const pick = best ?? anyFit;
  if (!pick) {
    const smallest = considered.at(-1)!;
    throw new Error(`no quant of ${p.repo} fits: ${smallest.quant} ${smallest.reason}`);
  }
  return { repo: p.repo, rev: p.rev, quant: pick.q, info: pick.info, choice: pick.c, considered };
}

export function localPathFor(stateDir: string, repo: string, file: string): string {
  return path.join(stateDir, "models", repo.replace("/", "__"), file);
}
