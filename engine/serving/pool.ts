import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { targetSlug, type Target } from "../../shared/target";
import { TargetStore } from "../store";
import { setupCapture, SetupInputError, type CaptureSetupOptions, type SetupResult } from "./setup";

const RANK = { built: 0, underpowered: 1, "cannot-build": 2, unverified: 3 } as const;

/**
 * `ocw setup --capture URL --capture URL …`: one pool target of several endpoints serving the same model (replicas
 * on several GPUs or machines). Each endpoint is verified like a single capture; the pool's outcome is its weakest
 * endpoint's; `--slots N` is per endpoint (default: what each server reports).
 */
export async function setupCapturePool(urls: string[], o: Omit<CaptureSetupOptions, "url">): Promise<SetupResult> {
  const t0 = performance.now();
  if (new Set(urls).size !== urls.length) throw new SetupInputError("the same --capture URL is given twice: name each endpoint of the pool once");
  const scratch = mkdtempSync(path.join(os.tmpdir(), "ocw-pool-"));
  let each: SetupResult[];
  try {
    // Verify every endpoint on its own, without saving any of them as a target of its own.
    each = [];
    for (const [i, url] of urls.entries()) {
      // the benchmark runs on the first endpoint only (with its slots): the pool target carries it, as a started pool does
      const benchSec = i === 0 ? o.benchSec : 0;
      const r = await setupCapture({ ...o, url, benchSec, store: new TargetStore(path.join(scratch, "targets.json")), id: undefined }).catch((err: Error) => {
        throw new SetupInputError(`endpoint ${url}: ${err.message}`);
      });
      each.push(r);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const models = [...new Set(each.map((r) => r.target.model))];
  if (models.length > 1)
    throw new SetupInputError(`a pool serves one model, but these endpoints serve ${models.join(", ")}: pass --model to pick one every endpoint serves`);
  const worst = each.reduce((a, r) => (RANK[r.outcome] > RANK[a.outcome] ? r : a));
  const first = each[0]!.target;
  const endpoints = each.map((r) => ({ url: r.target.endpoint, slots: r.target.serving.slots }));
  const ctxs = each.map((r) => r.target.serving.perSlotCtx).filter((c): c is number => typeof c === "number");
  const perSlotCtx = ctxs.length ? Math.min(...ctxs) : null;
  const target: Target = {
    ...first,
    id: o.id ?? `pool-${targetSlug({ model: path.basename(first.model), quant: null })}-${endpoints.length}`,
    contextLimit: perSlotCtx ?? first.contextLimit,
    serving: { engine: first.serving.engine, endpoints, slots: endpoints.reduce((a, e) => a + e.slots, 0), perSlotCtx },
    outcome: worst.outcome === "unverified" ? undefined : worst.outcome,
    verifiedAt: new Date().toISOString(),
    // Each check, per endpoint, so the evidence says which endpoint it is about.
    checks: each.flatMap((r) => r.checks.map((c) => ({ ...c, evidence: `${r.target.endpoint}: ${c.evidence}` }))),
  };
  const store = o.store ?? new TargetStore();
  const activate = worst.outcome === "built" || (worst.outcome === "underpowered" && !!o.acceptUnderpowered);
  const unsaved = worst.outcome === "cannot-build" && o.saveCannotBuild === false;
  const saved = unsaved ? target : store.save(target, activate);
  return {
    outcome: worst.outcome,
    saved: !unsaved,
    target: saved,
    checks: target.checks,
    summary: `pool of ${endpoints.length} endpoints serving ${first.model} (${target.serving.slots} slots in all): ${each.map((r) => `${r.target.endpoint} ${r.outcome}`).join("; ")}`,
    active: !unsaved && activate,
    observed: { engine: first.serving.engine, totalSlots: target.serving.slots, perSlotCtx },
    bench: each[0]!.bench ?? null,
    timings: { totalMs: performance.now() - t0, verifyMs: each.reduce((a, r) => a + r.timings.verifyMs, 0) },
  };
}
