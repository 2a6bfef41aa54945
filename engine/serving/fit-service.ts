/**
 * The planner as one engine service (issue 27): `planFit(input, hardware) → FitResult`, called directly by the CLI
 * (`ocw fit`), the API (setup.fit / setup.hardware) and the start job (plan, and again after the runtime phase) — no
 * path parses printed CLI output. Bad input is a SetupError (kind "input") with the field named in its data.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { CPU_SLOTS_NOTE, type FitPick, FitResult } from "../../shared/fit";
import type { HardwareReport } from "../hardware";
import {
  CATALOG,
  type CatalogEntry,
  DEFAULT_MIN_CTX,
  defaultSlots,
  devicesFromHardware,
  findCatalog,
  isDatacenterGpu,
  type KvCacheType,
  loadGguf,
  modelFromInfo,
  parseRepoRef,
  type PlanDevices,
  planModel,
  planRepo,
  propose,
  readHubSizes,
  servedBy,
  SetupError,
  slowProblem,
  withHubSizes,
} from "../models";
import { TargetStore } from "../store";
import { expectedLlamaBackend } from "./get-llama";
import { findLlamaServer } from "./llama-server";
import { ParallelInputError, parallelDevices, proposeParallel } from "./parallel";
import { findRuntime } from "./runtime-adapters";
import { FIRST_ANSWER_TOKENS, MIN_SLOT_CTX, OPENCODE_FIRST_REQUEST_TOKENS } from "./verify";
import { counted } from "../../shared/words";

type FitRuntime = "llama.cpp" | "vllm" | "sglang";

interface PlanFitInput {
  /** A catalog id, Hub repo[:QUANT], hf:/URL or local .gguf; absent = the planner proposes one. */
  model?: string;
  slots?: number;
  /** Minimum context per slot (default 32,768). */
  minCtx?: number;
  /** Exactly this context per slot (rounded up to 256); the planner still chooses quant, cache and placement. */
  ctxPerSlot?: number;
  runtime?: FitRuntime;
  /** llama.cpp: keep this KV cache type (the plan a person saw); absent = the planner's choice. */
  cacheType?: KvCacheType;
  /** Plan models too slow for an agent (below 8 tokens/s per slot) instead of refusing them (`--allow-slow`). */
  allowSlow?: boolean;
  /**
   * false (`--no-mtp`, the Setup page's checkbox): no speculative decoding with the model's own MTP head, on any
   * runtime; absent or true: on where the weights carry one (engine/models/mtp.ts).
   */
  mtp?: boolean;
}

interface PlanFitOptions {
  /** The llama-server the hardware's `llamaDevices` came from; undefined = look it up, null = none installed. */
  llamaServer?: string | null;
  /** The targets whose tool-call round trip passed. */
  store?: TargetStore;
  /** Test seam: whether nvcc is here (a CUDA source build is possible); default: looked up on PATH. */
  nvcc?: boolean;
  /** The environment for the Hub (HF_ENDPOINT) when sizing vLLM weights; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** false: never ask the Hub for sizes nor read the kept listing (the catalog's figures). */
  hub?: boolean;
  /** The catalog in rank order (default CATALOG; the API passes it reordered by our own ledger). */
  catalog?: readonly CatalogEntry[];
}

function input(message: string, field: string): never {
  throw new SetupError("input", message, { field });
}

/** Model ids whose target passed the tool-call round trip (built, with a passed "tools" check). */
export function toolVerifiedModels(store: TargetStore = new TargetStore()): (id: string) => boolean {
  let targets: { model: string; outcome?: string; checks: { name: string; passed: boolean }[] }[] = [];
  try {
    targets = store.list().targets;
  } catch {
    /* no store yet */
  }
  return (id) =>
    targets.some((t) => t.outcome === "built" && t.checks.some((c) => c.name === "tools" && c.passed) && t.model.toLowerCase().includes(id.toLowerCase()));
}

export function safeFindLlamaServer(): string | null {
  try {
    return findLlamaServer();
  } catch {
    return null;
  }
}

/** Whether vLLM / SGLang is installed (a binary, not a container), asked at most once a minute (SGLang spawns python). */
const installed = new Map<string, { at: number; how: "binary" | "container" | null; path: string }>();
function installedRuntime(rt: "vllm" | "sglang"): { how: "binary" | "container" | null } {
  const k = installed.get(rt);
  if (k && Date.now() - k.at < 60_000 && k.path === (process.env.PATH ?? "")) return k;
  const f = findRuntime(rt, process.env, { binaryOnly: true });
  const v = { at: Date.now(), how: f.how, path: process.env.PATH ?? "" };
  installed.set(rt, v);
  return v;
}

/** How vLLM would run here, in words: installed, its pinned image through docker/podman, or what to install. */
function vllmHere(): string {
  const f = findRuntime("vllm", process.env);
  return f.how === "binary"
    ? "vLLM is installed"
    : f.how === "container"
      ? `setup runs vLLM's pinned container image with ${path.basename(f.bin)}`
      : "neither vLLM nor docker/podman is here yet: pip install vllm (or install docker)";
}

/**
 * The plan for this machine: {hardware, pick, alternatives, problem} (shared/fit.ts). With no llama-server
 * installed the GPUs are planned for the build setup will install (on Linux + NVIDIA: CUDA when nvcc can build it,
 * else Vulkan); once a runtime is installed its own `--list-devices` (in `hw.llamaDevices`) names the devices.
 */
export async function planFit(i: PlanFitInput, hw: HardwareReport, o: PlanFitOptions = {}): Promise<FitResult> {
  if (i.slots !== undefined && !(Number.isInteger(i.slots) && i.slots >= 1)) input(`--slots must be an integer ≥ 1 (got "${i.slots}")`, "slots");
  if (i.ctxPerSlot !== undefined && !(Number.isInteger(i.ctxPerSlot) && i.ctxPerSlot >= 1024))
    input(`--ctx must be an integer ≥ 1024 (got "${i.ctxPerSlot}")`, "ctxPerSlot");
  // A slot that cannot hold a worker's first turn fails verify whatever else is right: said before a download or a start.
  if (i.ctxPerSlot !== undefined && i.ctxPerSlot < MIN_SLOT_CTX)
    input(
      `--ctx ${i.ctxPerSlot} per slot is less than OpenCode's first request needs (≈ ${OPENCODE_FIRST_REQUEST_TOKENS} tokens with our agent, plus ${FIRST_ANSWER_TOKENS} for its answer), so no worker could start: give --ctx 8192 or more (the default minimum is ${DEFAULT_MIN_CTX})`,
      "ctxPerSlot",
    );
  if (i.minCtx !== undefined && !(Number.isInteger(i.minCtx) && i.minCtx >= 1024)) input(`--min-ctx must be an integer ≥ 1024 (got "${i.minCtx}")`, "minCtx");
  // setup's --ctx: exactly this context per slot (llama.cpp pads the cache to 256 cells)
  const exact = i.ctxPerSlot === undefined ? undefined : Math.ceil(i.ctxPerSlot / 256) * 256;
  // a minimum below a worker's first turn (OpenCode's first request + its answer) is raised to it: such a slot fails verify
  const minCtx = exact ?? Math.max(i.minCtx ?? DEFAULT_MIN_CTX, MIN_SLOT_CTX);
  // a catalog model served by vLLM / SGLang only (no GGUF) is planned for vLLM when no runtime was asked
  const named = i.model ? findCatalog(i.model) : undefined;
  const runtime = i.runtime ?? (named && !servedBy(named, "llama.cpp") ? "vllm" : "llama.cpp");
  if (!["llama.cpp", "vllm", "sglang"].includes(runtime)) input(`--runtime ${runtime} is not supported; use llama.cpp, vllm or sglang`, "runtime");
  const parallel = runtime === "vllm" || runtime === "sglang";
  const bin = parallel ? null : o.llamaServer === undefined ? safeFindLlamaServer() : o.llamaServer;
  const assume = !parallel && !bin ? expectedLlamaBackend(hw.platform, hw.gpus, o.nvcc) : null;
  const ld = devicesFromHardware(parallel ? { ...hw, llamaDevices: null } : hw, bin, assume ? { prefix: assume.prefix } : undefined);
  const pd = parallel ? parallelDevices(hw) : null;
  const dev = pd ? pd.dev : { ...ld.dev, ...(i.cacheType ? { cacheType: i.cacheType } : {}) };
  const notes = pd ? pd.notes : ld.notes;
  if (assume?.note) notes.push(assume.note);
  const runtimeDevices = pd ? pd.dev.gpus.map((g) => g.runtimeId) : ld.runtimeDevices;
  const slots = i.slots ?? defaultSlots(dev.gpus.length);
  if (i.slots === undefined && !dev.gpus.length && !parallel) notes.push(CPU_SLOTS_NOTE);
  const verified = toolVerifiedModels(o.store);
  const allowSlow = !!i.allowSlow;
  let result: { pick: FitResult["pick"]; alternatives: FitResult["alternatives"]; problem: string | null; refused?: FitPick[] };
  if (parallel) {
    try {
      result = await proposeParallel({
        runtime: runtime as "vllm" | "sglang",
        dev,
        slots,
        minCtx,
        maxCtxPerSlot: exact,
        model: i.model,
        verified,
        env: o.env,
        hub: o.hub,
        mtp: i.mtp,
      });
    } catch (e) {
      if (e instanceof ParallelInputError) input(e.message, "model");
      throw e;
    }
  } else {
    // the catalog with the Hub's real file sizes where a listing was kept (never the network here)
    const catalog = o.hub === false ? CATALOG : withHubSizes(o.catalog ?? CATALOG, readHubSizes(o.env));
    result = await planLlama(i, dev, slots, minCtx, exact, verified, allowSlow, catalog);
    // the default slot count is lowered until the plan is fast enough for an agent (an explicit --slots is refused)
    if (!result.pick && result.refused?.length && i.slots === undefined && !allowSlow) {
      for (let s = Math.floor(slots / 2); s >= 1; s = Math.floor(s / 2)) {
        const fewer = await planLlama(i, dev, s, minCtx, exact, verified, false, catalog);
        if (fewer.pick) {
          notes.push(
            `${slots} slots would decode ≈ ${result.refused[0]!.speed?.decodeTokPerSecPerSlot} tokens/s each (too slow for an agent): planned ${counted(s, "slot")} instead (pass --slots ${slots} --allow-slow to keep ${slots})`,
          );
          result = { ...fewer, refused: [...result.refused, ...(fewer.refused ?? [])] };
          break;
        }
        if (s === 1) break;
      }
    }
  }
  // vLLM's or SGLang's tensor × data parallel plan of the catalog's best fit on all the GPUs (null where none or it fails)
  const bestParallel = (rt: "vllm" | "sglang") =>
    proposeParallel({
      runtime: rt,
      dev: parallelDevices(hw).dev,
      slots,
      minCtx,
      maxCtxPerSlot: exact,
      model: i.model?.replace(/:.*$/, ""),
      verified,
      max: 1,
      env: o.env,
      hub: o.hub,
      mtp: i.mtp,
    }).catch(() => null);
  // ≥ 80 GB datacenter GPUs (H100, H200, B200, MI300X …): vLLM batches many sequences on one engine with tensor ×
  // data parallel, where llama.cpp would run small replicas using a fraction of the memory — proposed as the pick when
  // no runtime was asked for; the llama.cpp plan stays as an alternative (issue 27)
  const big = hw.gpus.filter((g) => (g.vendor === "nvidia" || g.vendor === "amd") && !g.unified && isDatacenterGpu(g.name, g.totalBytes));
  if (!parallel && !i.runtime && big.length && (!i.model || findCatalog(i.model))) {
    const p = await bestParallel("vllm");
    if (p?.pick) {
      const why =
        `${counted(big.length, "datacenter GPU")} of ≥ 80 GB (${big[0]!.name}): vLLM batches all ${slots} sequences on one engine with tensor × data parallel and uses the GPUs' memory for KV, ` +
        `where llama.cpp would run ${result.pick?.pool ? `${result.pick.pool.replicas} small replicas` : "one server"}; ${vllmHere()} (ocw setup --runtime vllm; --runtime llama.cpp keeps the llama.cpp plan)`;
      const vllmPick = { ...p.pick, runtimeReason: why, reason: `${p.pick.reason}; ${why}` };
      const llama = result.pick ? [{ ...result.pick, runtimeReason: "llama.cpp: the alternative to vLLM on these GPUs (--runtime llama.cpp)" }] : [];
      result = { ...result, pick: vllmPick, alternatives: [...llama, ...result.alternatives], problem: null };
    }
  }
  // on several GPUs, where vLLM or SGLang is installed: its tensor × data parallel plan of the catalog's best fit
  if (!parallel && (!i.model || findCatalog(i.model)) && hw.gpus.filter((g) => g.vendor === "nvidia" || g.vendor === "amd").length >= 2) {
    for (const rt of ["vllm", "sglang"] as const) {
      if (installedRuntime(rt).how !== "binary") continue;
      if (result.pick?.runtime === rt || result.alternatives.some((x) => x.runtime === rt)) continue;
      const p = await bestParallel(rt);
      if (p?.pick) result.alternatives.push(p.pick);
    }
  }
  const { refused, ...rest } = result;
  return FitResult.parse({
    hardware: {
      gpus: hw.gpus.map((g) => ({ name: g.name, vendor: String(g.vendor), totalBytes: g.totalBytes, freeBytes: g.freeBytes, unified: g.unified })),
      ramTotalBytes: hw.ram.totalBytes,
      ramFreeBytes: hw.ram.freeBytes,
      cpu: hw.cpu.model,
      runtimeDevices,
      notes: [...notes, ...hw.problems],
    },
    ...rest,
    ...(refused?.length ? { refused } : {}),
  } satisfies FitResult);
}

type Refusable = { pick: FitResult["pick"]; alternatives: FitResult["alternatives"]; problem: string | null; refused?: FitPick[] };

/** A pick too slow for an agent becomes a refusal (with the problem saying why and how) unless slow plans are allowed. */
function refuseSlow(r: Refusable, slots: number, allowSlow: boolean): Refusable {
  if (allowSlow || !r.pick?.speed?.tooSlow) return r;
  const fast = r.alternatives.filter((a) => !a.speed?.tooSlow);
  const refused = [r.pick, ...(r.refused ?? [])];
  if (fast.length) return { pick: fast[0]!, alternatives: fast.slice(1), problem: null, refused };
  return {
    pick: null,
    alternatives: [],
    problem: `${slowProblem(refused, slots)}; or fewer slots (--slots ${Math.max(1, Math.floor(slots / 2))}), a smaller model, or an API provider`,
    refused,
  };
}

/** The llama.cpp plan: the catalog's proposal, a catalog model, a Hub repo or a GGUF file. */
async function planLlama(
  i: PlanFitInput,
  dev: PlanDevices,
  slots: number,
  minCtx: number,
  exact: number | undefined,
  verified: (id: string) => boolean,
  allowSlow: boolean,
  catalog: readonly CatalogEntry[],
): Promise<Refusable> {
  let result: Refusable;
  if (!i.model) {
    const r = propose(dev, slots, minCtx, verified, catalog, exact, { allowSlow, mtp: i.mtp });
    return { pick: r.pick, alternatives: r.alternatives, problem: r.problem, ...(r.slow?.length ? { refused: r.slow } : {}) };
  }
  const found = findCatalog(i.model);
  const entry = found ? (catalog.find((c) => c.id === found.id) ?? found) : undefined;
  const repoQuant = /:([\w.-]+)$/.exec(i.model)?.[1]?.toUpperCase() ?? null;
  if (entry) {
    if (!servedBy(entry, "llama.cpp") || !entry.quants.length)
      input(`${entry.id} is served by vLLM / SGLang only (the catalog has no GGUF of it): plan it with --runtime vllm or --runtime sglang`, "model");
    const only = { ...entry, autoPick: true, quants: repoQuant ? entry.quants.filter((q) => q.quant.toUpperCase() === repoQuant) : entry.quants };
    if (!only.quants.length) input(`${entry.id} has no quant ${repoQuant} in the catalog (has ${entry.quants.map((q) => q.quant).join(", ")})`, "model");
    // never below 4 bits when a ≥ 4-bit quant fits (issue 27); a quant named explicitly, or a smaller one when no
    // ≥ 4-bit quant fits, may be used (the person asked for this model)
    const first = repoQuant ? null : propose(dev, slots, minCtx, verified, [only], exact, { allowSlow, named: entry.name, mtp: i.mtp });
    result = first?.pick
      ? { pick: first.pick, alternatives: first.alternatives, problem: null }
      : { pick: null, alternatives: [], problem: first?.problem ?? null, ...(first?.slow?.length ? { refused: first.slow } : {}) };
    if (!result.pick) {
      const small = propose(dev, slots, minCtx, verified, [{ ...only, quants: only.quants.map((q) => ({ ...q, bits: Math.max(q.bits, 4) })) }], exact, {
        allowSlow,
        named: entry.name,
        mtp: i.mtp,
      });
      if (small.pick && !repoQuant)
        small.pick.reason = `${small.pick.reason}; no ≥ 4-bit quant of ${entry.name} fits here, so a smaller one (${small.pick.quant}) is used: expect weaker answers`;
      const refused = [...(result.refused ?? []), ...(small.slow ?? [])];
      result = { pick: small.pick, alternatives: small.alternatives, problem: small.problem, ...(refused.length ? { refused } : {}) };
    }
    return result;
  }
  const verifiedOk = verified(
    i.model
      .split(":")[0]!
      .split("/")
      .pop()!
      .replace(/-GGUF$/i, ""),
  );
  try {
    if (!existsSync(i.model) && parseRepoRef(i.model)) {
      const r = await planRepo(i.model, { dev, slots, minCtx, maxCtxPerSlot: exact, verified: verifiedOk });
      result =
        "pick" in r
          ? { pick: r.pick, alternatives: [], problem: null }
          : {
              pick: null,
              alternatives: [],
              problem: `${r.problem}; try fewer slots (--slots ${Math.max(1, Math.floor(slots / 2))}), a shorter --min-ctx, another model, or an API provider (ocw setup --provider URL --model ID --api-key-env VAR)`,
            };
    } else {
      const info = await loadGguf(i.model);
      const m = modelFromInfo(info, i.model, existsSync(i.model) ? ["-m", path.resolve(i.model)] : ["-hf", i.model]);
      const pick = planModel(m, dev, slots, minCtx, verified(m.hparams.name ?? i.model), undefined, exact);
      result = pick
        ? { pick, alternatives: [], problem: null }
        : {
            pick: null,
            alternatives: [],
            problem:
              minCtx > m.hparams.nCtxTrain
                ? `${i.model} was trained for ${m.hparams.nCtxTrain} tokens of context; ${minCtx} per slot is beyond it`
                : `${i.model} does not fit ${counted(slots, "slot")} × ${minCtx} tokens here even with experts/layers in RAM and a q4_0 cache; try fewer slots (--slots ${Math.max(1, Math.floor(slots / 2))}), a smaller quant, or an API provider (ocw setup --provider URL --model ID --api-key-env VAR)`,
          };
    }
  } catch (e) {
    // a file, repo or URL that cannot be read or sized (ModelSourceError, MetadataError, EstimateError, the Hub …)
    const m = (e as Error).message.split("\n")[0]!;
    input(m.includes(i.model) ? m : `${i.model}: ${m}`, "model");
  }
  return refuseSlow(result, slots, allowSlow);
}
