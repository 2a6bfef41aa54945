/**
 * vLLM / SGLang planning (issue 13): which safetensors weights, and how many GPUs per engine (tensor parallel) and
 * engines (data parallel) — `ocw fit --runtime vllm|sglang`, `ocw setup --runtime vllm|sglang`, and the alternative
 * `ocw fit` lists on a multi-GPU machine where one of them is installed. The sizing is engine/models/plan.ts's
 * (`sizeParallel`); this module finds the model's size and shape: the catalog (offline), the Hub's listing and
 * config.json, or a local folder.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import type { FitPick } from "../../shared/fit";
import { targetSlug } from "../../shared/target";
import {
  CATALOG,
  type CatalogEntry,
  catalogHparams,
  type CatalogWeights,
  findCatalog,
  GiB,
  gpuWords,
  hasFp8,
  HUB_CONFIG_MAX_BYTES,
  hubEndpoint as hubEndpointOf,
  hubHeaders,
  listRepoFiles,
  makerRepo,
  MTP_OFF,
  mtpOf,
  mtpPlan,
  mtpState,
  PARALLEL_OVERHEAD,
  type ParallelModel,
  type ParallelPlan,
  parallelSpeed,
  type PlanDevices,
  readHubJson,
  readHubSizes,
  resolveUrl,
  servedBy,
  SetupError,
  type SetupErrorData,
  sglangMtpArgs,
  shellQuote,
  sizeParallel,
  vllmMtpArgs,
  withHubSizes,
} from "../models";
import type { FitPick as FitPickT, PlannedDevice } from "../../shared/fit";
import { buildSglangArgs, buildVllmArgs } from "./runtimes";
import { reasoningParser, toolParser } from "./runtime-adapters";
import { counted } from "../../shared/words";

export class ParallelInputError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("parallel", message, data);
    this.name = "ParallelInputError";
  }
}

interface HardwareGpus {
  gpus: { index: number; vendor: string; name: string; totalBytes: number; freeBytes: number | null; unified?: boolean }[];
  ram: { freeBytes: number };
}

/** The GPUs vLLM / SGLang can use: NVIDIA (CUDA) or AMD (ROCm), whatever llama-server sees; the larger vendor group. */
export function parallelDevices(hw: HardwareGpus): { dev: PlanDevices; notes: string[] } {
  const notes: string[] = [];
  const by = (v: string) => hw.gpus.filter((g) => g.vendor === v && !g.unified);
  const nv = by("nvidia");
  const amd = by("amd");
  const use = nv.length >= amd.length ? nv : amd;
  const prefix = use === nv ? "CUDA" : "ROCm";
  const other = hw.gpus.filter((g) => !use.includes(g));
  if (other.length) notes.push(`vLLM / SGLang run on NVIDIA (CUDA) or AMD (ROCm) GPUs of one kind: not planning on ${other.map((g) => g.name).join(", ")}`);
  const gpus: PlanDevices["gpus"] = use.map((g, i) => ({
    id: `${g.vendor}${g.index}`,
    name: g.name,
    kind: "gpu",
    freeBytes: g.freeBytes ?? Math.floor(g.totalBytes * 0.9),
    totalBytes: g.totalBytes,
    runtimeId: `${prefix}${i}`,
    index: g.index,
    vendor: g.vendor,
  }));
  return { dev: { gpus, hostFreeBytes: hw.ram.freeBytes }, notes };
}

type Fetch = typeof fetch;
/** The Hub with a short timeout: offline planning must not hang on a DNS lookup. */
const timedFetch: Fetch = (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(8000) });

interface HfConfig {
  num_attention_heads?: number;
  num_key_value_heads?: number;
  num_hidden_layers?: number;
  hidden_size?: number;
  head_dim?: number;
  vocab_size?: number;
  max_position_embeddings?: number;
  text_config?: HfConfig;
}

/** A repo's or folder's config.json, as the catalog's shape (dense attention: every layer holds KV). */
function modelFromConfig(name: string, cfg: HfConfig): Pick<ParallelModel, "nHead" | "nHeadKv" | "hparams" | "contextLength"> {
  const c = cfg.text_config ?? cfg;
  const nHead = c.num_attention_heads ?? null;
  const nHeadKv = c.num_key_value_heads ?? nHead;
  const ctx = c.max_position_embeddings ?? 32768;
  if (!nHead || !c.num_hidden_layers || !c.hidden_size) return { nHead, nHeadKv, hparams: null, contextLength: ctx };
  const fake = {
    name,
    contextLength: ctx,
    spec: {
      arch: "llama",
      nLayer: c.num_hidden_layers,
      nEmbd: c.hidden_size,
      nVocab: c.vocab_size ?? 32000,
      attnInterval: 1,
      nHead,
      nHeadKv: nHeadKv ?? nHead,
      headDim: c.head_dim ?? Math.floor(c.hidden_size / nHead),
    },
  } as unknown as CatalogEntry;
  return { nHead, nHeadKv, hparams: catalogHparams(fake), contextLength: ctx };
}

/**
 * A catalog entry's safetensors variants (highest precision first), sized by the Hub when it answers. `mtp` false: the
 * person switched speculative decoding with the model's own MTP head off (engine/models/mtp.ts).
 */
export async function catalogModels(
  e: CatalogEntry,
  runtime: "vllm" | "sglang",
  hub: { size(repo: string): Promise<number | null> },
  fp8First = false,
  mtp = true,
): Promise<ParallelModel[]> {
  const maker = makerRepo(e);
  const listed: CatalogWeights[] =
    e.weights ?? (maker ? [{ repo: maker, dtype: "bf16", bytes: e.totalParamsB * 2e9, sizeNote: "derived: parameters × 2 bytes" }] : []);
  // on GPUs that run FP8 natively (Hopper, Blackwell, Ada, CDNA3) the maker's FP8 weights decode about twice as fast
  // for near-identical answers: they come first there (issue 27)
  const variants = fp8First ? [...listed.filter((w) => w.dtype === "fp8"), ...listed.filter((w) => w.dtype !== "fp8")] : listed;
  const out: ParallelModel[] = [];
  for (const w of variants) {
    const listed = await hub.size(w.repo);
    out.push({
      model: e.id,
      source: w.repo,
      dtype: w.dtype,
      weightsBytes: listed ?? w.bytes,
      weightsSource: listed ? "hub" : "catalog",
      nHead: e.spec.nHead,
      nHeadKv: e.spec.mla ? 1 : e.spec.nHeadKv,
      // compressed / sparse / linear attention the spec cannot size: the 25 % allowance
      hparams: e.kvUnknown ? null : catalogHparams(e),
      contextLength: e.contextLength,
      toolParser: toolParser(runtime, e, w.repo),
      reasoningParser: reasoningParser(runtime, e, w.repo),
      servedName: targetSlug({ model: w.repo.split("/").pop()!, quant: null }),
      activeParams: e.activeParamsB * 1e9,
      experts: e.spec.moe ? { count: e.spec.moe.experts, used: e.spec.moe.used, share: e.spec.moe.expertShare } : null,
      ...mtpPlan(mtpOf(e), "safetensors", mtp),
    });
  }
  return out;
}

/** Sizes the Hub gave, kept for 10 minutes across plans (the wizard plans on every change). */
const hubSizes = new Map<string, { at: number; bytes: number | null }>();

/** The Hub's safetensors sizes, remembered; after one failure (offline) it is not asked again in this plan. */
class HubSizer {
  private offline = false;
  private cache = new Map<string, number | null>();
  constructor(
    private env: NodeJS.ProcessEnv,
    private enabled: boolean,
  ) {}
  async size(repo: string): Promise<number | null> {
    if (!this.enabled || this.offline) return null;
    if (this.cache.has(repo)) return this.cache.get(repo)!;
    const kept = hubSizes.get(`${hubEndpointOf(this.env)} ${repo}`);
    if (kept && Date.now() - kept.at < 600_000) return kept.bytes;
    const files = await listRepoFiles(repo, "main", timedFetch, this.env).catch((e: Error) => {
      if (!/no Hugging Face repo|gated/.test(e.message)) this.offline = true;
      return null;
    });
    const bytes = files?.filter((f) => /\.safetensors$/i.test(f.path)).reduce((a, f) => a + f.size, 0) || null;
    this.cache.set(repo, bytes);
    if (files) hubSizes.set(`${hubEndpointOf(this.env)} ${repo}`, { at: Date.now(), bytes });
    return bytes;
  }
}

/** A named model for vLLM / SGLang: a catalog id, a Hub repo with safetensors, or a local folder. */
export async function resolveParallelModel(
  name: string,
  runtime: "vllm" | "sglang",
  env: NodeJS.ProcessEnv = process.env,
  hubEnabled = true,
  fp8First = false,
  mtp = true,
): Promise<ParallelModel[]> {
  const found = findCatalog(name) ?? CATALOG.find((c) => c.weights?.some((w) => w.repo.toLowerCase() === name.toLowerCase()));
  // the Hub's sizes kept from an earlier listing (offline too), laid over the catalog's figures
  const entry = found && hubEnabled ? withHubSizes([found], readHubSizes(env))[0] : found;
  const hub = new HubSizer(env, hubEnabled);
  if (entry) {
    const all = await catalogModels(entry, runtime, hub, fp8First, mtp);
    const exact = all.filter((m) => m.source.toLowerCase() === name.toLowerCase());
    return exact.length ? exact : all;
  }
  if (existsSync(name)) {
    if (!statSync(name).isDirectory())
      throw new ParallelInputError(
        `${name} is a file: vLLM / SGLang load a folder of safetensors weights (with config.json) or a Hub repo, not a GGUF — use --runtime llama.cpp for GGUF files`,
      );
    const st = readdirSync(name).filter((f) => /\.safetensors$/i.test(f));
    if (!st.length) throw new ParallelInputError(`${name} holds no *.safetensors files: pass a folder with the model's safetensors weights and config.json`);
    const bytes = st.reduce((a, f) => a + statSync(path.join(name, f)).size, 0);
    const cfgFile = path.join(name, "config.json");
    const cfg = existsSync(cfgFile) ? (JSON.parse(readFileSync(cfgFile, "utf8")) as HfConfig) : {};
    return [
      {
        model: name,
        source: path.resolve(name),
        dtype: null,
        weightsBytes: bytes,
        weightsSource: "folder",
        ...modelFromConfig(path.basename(name), cfg),
        toolParser: toolParser(runtime, undefined, name),
        reasoningParser: reasoningParser(runtime, undefined, name),
        servedName: targetSlug({ model: path.basename(path.resolve(name)), quant: null }),
      },
    ];
  }
  const repo = name.replace(/^hf:/, "");
  if (!/^[\w.-]+\/[\w.-]+$/.test(repo))
    throw new ParallelInputError(`--model ${name} is neither a catalog id, a Hugging Face repo (owner/name) with safetensors weights, nor a local folder`);
  if (/gguf/i.test(repo))
    throw new ParallelInputError(
      `${repo} looks like a GGUF repo: vLLM / SGLang load the maker's safetensors weights (e.g. Qwen/Qwen3.6-27B); use --runtime llama.cpp for GGUF`,
    );
  const files = await listRepoFiles(repo, "main", timedFetch, env).catch((e: Error) => {
    throw new ParallelInputError(
      `cannot size ${repo}: ${e.message.split("\n")[0]} (the Hub's listing gives the weights' size; offline, use a catalog id or a local folder)`,
    );
  });
  const bytes = files.filter((f) => /\.safetensors$/i.test(f.path)).reduce((a, f) => a + f.size, 0);
  if (!bytes)
    throw new ParallelInputError(
      `${repo} lists no *.safetensors files: vLLM / SGLang need the safetensors weights (a GGUF repo goes with --runtime llama.cpp)`,
    );
  let cfg: HfConfig = {};
  if (files.some((f) => f.path === "config.json")) {
    const r = await timedFetch(resolveUrl(repo, "config.json", "main", env), { headers: hubHeaders(env) }).catch(() => null);
    // Read to HUB_CONFIG_MAX_BYTES at most (a larger answer is a coded error, not read whole); not JSON: sized without it.
    if (r?.ok) {
      const got = await readHubJson<HfConfig>(r, resolveUrl(repo, "config.json", "main", env), `${repo}'s config.json`, HUB_CONFIG_MAX_BYTES);
      if (got && typeof got === "object" && !Array.isArray(got)) cfg = got;
    }
  }
  return [
    {
      model: repo,
      source: repo,
      dtype: null,
      weightsBytes: bytes,
      weightsSource: "hub",
      ...modelFromConfig(repo, cfg),
      toolParser: toolParser(runtime, undefined, repo),
      reasoningParser: reasoningParser(runtime, undefined, repo),
      servedName: targetSlug({ model: repo.split("/").pop()!, quant: null }),
    },
  ];
}

interface ParallelProposal {
  pick: FitPick | null;
  alternatives: FitPick[];
  problem: string | null;
}

/**
 * The vLLM / SGLang plan: the named model (its variants highest precision first), else the catalog in rank order
 * (each entry's first variant that fits). Null pick with the problem when nothing fits.
 */
export async function proposeParallel(o: {
  runtime: "vllm" | "sglang";
  dev: PlanDevices;
  slots: number;
  minCtx: number;
  maxCtxPerSlot?: number;
  model?: string;
  verified: (id: string) => boolean;
  env?: NodeJS.ProcessEnv;
  max?: number;
  hub?: boolean;
  /** false: no speculative decoding with the model's own MTP head (`--no-mtp`); absent: on where the weights carry one. */
  mtp?: boolean;
}): Promise<ParallelProposal> {
  const name = o.runtime === "vllm" ? "vLLM" : "SGLang";
  // bad input first (a GGUF, a missing folder), then whether the machine can run it
  const named = o.model
    ? await resolveParallelModel(
        o.model,
        o.runtime,
        o.env ?? process.env,
        o.hub !== false,
        o.dev.gpus.length > 0 && o.dev.gpus.every((g) => hasFp8(g.name)),
        o.mtp !== false,
      )
    : null;
  if (!o.dev.gpus.length) {
    return {
      pick: null,
      alternatives: [],
      problem: `${name} needs NVIDIA (CUDA) or AMD (ROCm) GPUs and none is usable here; use --runtime llama.cpp (it runs on the CPU too) or an API provider (ocw setup --provider URL --model ID --api-key-env VAR)`,
    };
  }
  const env = o.env ?? process.env;
  const hub = new HubSizer(env, o.hub !== false);
  const fp8 = o.dev.gpus.length > 0 && o.dev.gpus.every((g) => hasFp8(g.name));
  const found: FitPick[] = [];
  const tried: string[] = [];
  const first = (ms: ParallelModel[]) => {
    for (const m of ms) {
      const p = sizeParallel(m, o.dev.gpus, o.slots, o.minCtx, o.maxCtxPerSlot);
      if (p) return toParallelPick(m, p, o.runtime, o.dev, o.slots, o.verified(m.model));
      tried.push(`${m.source} ${(m.weightsBytes / 1024 ** 3).toFixed(0)} GiB`);
    }
    return null;
  };
  if (o.model) {
    const pick = first(named!);
    if (pick) return { pick, alternatives: [], problem: null };
  } else {
    const catalog = o.hub === false ? CATALOG : withHubSizes(CATALOG, readHubSizes(env));
    for (const e of catalog.filter((c) => c.autoPick && servedBy(c, o.runtime))) {
      if (found.length >= (o.max ?? 3)) break;
      const pick = first(await catalogModels(e, o.runtime, hub, fp8, o.mtp !== false));
      if (pick) found.push(pick);
    }
    if (found.length) return { pick: found[0]!, alternatives: found.slice(1), problem: null };
  }
  const gpus = o.dev.gpus;
  const mem = `${counted(gpus.length, "GPU")} of ${(Math.min(...gpus.map((g) => g.totalBytes)) / 1024 ** 3).toFixed(0)} GiB`;
  return {
    pick: null,
    alternatives: [],
    problem:
      `${o.model ?? "no catalog model"} does not fit ${counted(o.slots, "sequence")} × ${o.minCtx} tokens with ${name} on ${mem} (every layer must be on the GPUs; tried ${tried.slice(0, 6).join(", ")}); ` +
      `try fewer slots (--slots ${Math.max(1, Math.floor(o.slots / 2))}), a shorter context, --runtime llama.cpp (it can keep experts or layers in RAM), or an API provider`,
  };
}

/** The launch command of a parallel plan, key elided: vLLM reads VLLM_API_KEY, SGLang a 0600 --config file. */
function parallelCommand(m: ParallelModel, p: ParallelPlan, runtime: "vllm" | "sglang", allGpus: number): string {
  const w = gpuWords(p.gpus, p.gpus.length < allGpus);
  if (runtime === "vllm") {
    const b = buildVllmArgs({
      model: m.source,
      servedName: m.servedName,
      port: 8000,
      maxModelLen: p.ctxPerSlot,
      maxNumSeqs: p.perRank,
      gpuMemoryUtilization: p.utilization,
      tensorParallel: p.tp,
      dataParallel: p.dp,
      toolCallParser: m.toolParser,
      reasoningParser: m.reasoningParser,
    });
    // speculative decoding with the model's own MTP head, where the catalog says the weights carry it
    return `${[...w.env, "VLLM_API_KEY=…"].join(" ")} vllm ${[...b.args, ...vllmMtpArgs(m.mtpDraft)].map(shellQuote).join(" ")}`;
  }
  // SGLang's static pool (weights + KV) leaves the overhead for activations and CUDA graphs
  const g = p.gpus[0]!;
  const frac = Math.max(0.1, Math.floor((p.utilization - PARALLEL_OVERHEAD / (g.totalBytes || g.freeBytes)) * 100) / 100);
  const b = buildSglangArgs({
    model: m.source,
    servedName: m.servedName,
    port: 30000,
    contextLength: p.ctxPerSlot,
    maxRunningRequests: p.perRank,
    memFractionStatic: frac,
    tensorParallel: p.tp,
    dataParallel: p.dp,
    apiKey: "",
  });
  const ki = b.args.indexOf("--api-key");
  const args = [
    ...b.args.slice(0, ki),
    ...b.args.slice(ki + 2),
    "--tool-call-parser",
    m.toolParser,
    ...(m.reasoningParser ? ["--reasoning-parser", m.reasoningParser] : []),
    ...sglangMtpArgs(m.mtpDraft),
    "--config",
    "…",
  ];
  return `${w.env.length ? `${w.env.join(" ")} ` : ""}python3 ${args.map(shellQuote).join(" ")}`;
}

/** The pick for a vLLM / SGLang plan: one device per GPU used, the command, and why this TP × DP. */
function toParallelPick(m: ParallelModel, p: ParallelPlan, runtime: "vllm" | "sglang", dev: PlanDevices, slots: number, toolVerified: boolean): FitPickT {
  const name = runtime === "vllm" ? "vLLM" : "SGLang";
  const devices: PlannedDevice[] = p.gpus.map((g) => {
    const budget = Math.round(p.utilization * (g.totalBytes || g.freeBytes));
    return {
      name: `${g.runtimeId} ${g.name}`,
      budgetBytes: budget,
      plannedBytes: Math.round(p.needPerGpu),
      breakdown: {
        weightsBytes: Math.round(p.weightsPerGpu),
        kvBytes: Math.round(p.kvPerGpu),
        computeBytes: PARALLEL_OVERHEAD,
        overheadBytes: 0,
        marginBytes: Math.max(0, Math.round(g.freeBytes - budget)),
      },
    };
  });
  const size = `${gib(m.weightsBytes)} of ${m.dtype ?? "safetensors"} weights, size from ${m.weightsSource === "hub" ? "the Hub's listing" : m.weightsSource === "folder" ? "the folder" : "the catalog"}`;
  const speed = parallelSpeed(m, p);
  const why =
    p.tp === 1
      ? "it fits one GPU whole"
      : `the fewest GPUs${m.nHead ? ` (a power of two dividing its ${m.nHead} attention heads)` : ""} that hold its weights and KV`;
  return {
    model: m.model,
    quant: m.dtype,
    runtime,
    slots,
    ctxPerSlot: p.ctxPerSlot,
    toolCalling: toolVerified ? "verified" : "unverified",
    devices,
    command: parallelCommand(m, p, runtime, dev.gpus.length),
    placement: "gpu",
    reason:
      `${m.source} (${size}) with ${name}: tensor parallel ${p.tp} — ${why} — × data parallel ${p.dp} (${counted(p.dp, "engine")} of ${counted(p.perRank, "sequence")} × ${p.ctxPerSlot} tokens) on ${p.gpus.length} of ${counted(dev.gpus.length, "GPU")}; ` +
      `${gib(p.needPerGpu)} per GPU (weights ${gib(p.weightsPerGpu)}, KV ${gib(p.kvPerGpu)}, overhead ${gib(PARALLEL_OVERHEAD)}) of the ${Math.round(p.utilization * 100)} % the runtime may take` +
      (p.dp > 1 ? `; data parallel before a wider tensor split: each engine decodes on its own, without all-reduce traffic between GPUs` : "") +
      (speed
        ? `; ≈ ${speed.decodeTokPerSecPerSlot} tokens/s per sequence (${speed.decodeTokPerSecTotal} in all), prompt ≈ ${speed.prefillTokPerSec} tokens/s, estimated`
        : "") +
      (m.mtpOff ? `; ${MTP_OFF}` : ""),
    parallel: { tensor: p.tp, data: p.dp },
    ...mtpState(m),
    ...(speed ? { speed } : {}),
  };
}

const gib = (b: number) => `${(b / GiB).toFixed(1)} GiB`;
