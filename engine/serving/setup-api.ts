/**
 * Model setup on the engine's typed API (the wizard and other clients): hardware as the planner sees it, the catalog
 * with this machine's fit per entry, and the fit itself — the same code paths as `ocw fit --json`.
 */
import { type CatalogView, FitInput, FitResult } from "../../shared/fit";
import { detectHardware, type HardwareReport } from "../hardware/detect";
import { CATALOG } from "../models/catalog";
import { DEFAULT_MIN_CTX, devicesFromHardware, propose } from "../models/plan";
import { runFitPlan, toolVerifiedModels } from "./commands";
import { findLlamaServer } from "./llama-server";

export class SetupApiInputError extends Error {}

let cached: { at: number; hw: Promise<HardwareReport>; bin: string | null } | null = null;

/** Hardware detection is ~1 s of probes: shared by calls within 30 s. */
function hardware(): { hw: Promise<HardwareReport>; bin: string | null } {
  if (!cached || Date.now() - cached.at > 30_000) {
    let bin: string | null = null;
    try {
      bin = findLlamaServer();
    } catch {
      bin = null;
    }
    cached = { at: Date.now(), hw: detectHardware({ llamaServer: bin }), bin };
  }
  return cached;
}

export async function setupFit(input: FitInput): Promise<FitResult> {
  const i = FitInput.parse(input ?? {});
  const { hw } = hardware();
  const r = await runFitPlan({ json: true, model: i.model, slots: i.slots?.toString(), minCtx: i.minCtx?.toString(), hardware: await hw });
  if (r.code === 2) throw new SetupApiInputError(r.stderr.replace(/^ocw: /, "").trim());
  return FitResult.parse(JSON.parse(r.stdout));
}

export async function setupHardware(): Promise<FitResult["hardware"]> {
  return (await setupFit({})).hardware;
}

export async function setupCatalog(input: { slots?: number; minCtx?: number }): Promise<CatalogView[]> {
  const { hw, bin } = hardware();
  const { dev } = devicesFromHardware(await hw, bin);
  const slots = input.slots ?? (dev.gpus.length ? 4 : 1);
  const minCtx = input.minCtx ?? DEFAULT_MIN_CTX;
  const verified = toolVerifiedModels();
  return CATALOG.map((e) => {
    const p = propose(dev, slots, minCtx, verified, [{ ...e, autoPick: true }]);
    return {
      id: e.id, name: e.name, repo: e.repo, source: e.source, released: e.released, license: e.license, contextLength: e.contextLength,
      totalParamsB: e.totalParamsB, activeParamsB: e.activeParamsB, quants: e.quants.map((q) => ({ quant: q.quant, bytes: q.bytes, sizeNote: q.sizeNote })),
      toolCalling: { ...e.toolCalling, status: verified(e.id) ? "verified" : "unverified" }, unverified: e.unverified,
      fit: p.pick ? { quant: p.pick.quant ?? "", placement: p.pick.placement, slots: p.pick.slots, ctxPerSlot: p.pick.ctxPerSlot, reason: p.pick.reason } : null,
      fitProblem: p.problem,
    };
  });
}
