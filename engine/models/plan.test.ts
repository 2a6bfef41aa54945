import { describe, expect, it } from "vitest";
import { modelMetadata } from "../../test/fixtures/gguf/writer";
import { GiB, MiB } from "./estimate";
import { tensorBytes } from "./ggml-types";
import { hparamsFromMetadata } from "./hparams";
import { findCatalog } from "./catalog";
import { catalogModel, commandWords, layout, modelFromInfo, type PlanDevices, type PlanModel, planModel, propose, replicate } from "./plan";
import { quantBits } from "./resolve";

const gpu = (free: number, i = 0, name = "NVIDIA GeForce RTX 3090") => ({
  id: `nvidia${i}`,
  name,
  kind: "gpu" as const,
  freeBytes: free,
  totalBytes: free,
  runtimeId: `CUDA${i}`,
  index: i,
  vendor: "nvidia",
});
const devs = (gpus: ReturnType<typeof gpu>[], host = 64 * GiB): PlanDevices => ({ gpus, hostFreeBytes: host });

/** A 7B-class GQA model (Qwen2.5-Coder-7B shape) with synthetic Q4_K tensor infos. */
function bigModel(): PlanModel {
  const L = 28,
    E = 3584,
    ff = 18944,
    H = 28,
    KV = 4,
    d = 128,
    V = 152064;
  const meta = {
    "general.architecture": "qwen2",
    "qwen2.block_count": L,
    "qwen2.context_length": 32768,
    "qwen2.embedding_length": E,
    "qwen2.feed_forward_length": ff,
    "qwen2.attention.head_count": H,
    "qwen2.attention.head_count_kv": KV,
    "qwen2.vocab_size": V,
  };
  const t = (name: string, shape: number[], type = 12) => ({ name, shape, type, offset: 0, bytes: tensorBytes(type, shape) });
  const tensors = [t("token_embd.weight", [E, V], 14), t("output.weight", [E, V], 14), t("output_norm.weight", [E], 0)];
  for (let i = 0; i < L; i++) {
    tensors.push(
      t(`blk.${i}.attn_q.weight`, [E, H * d]),
      t(`blk.${i}.attn_k.weight`, [E, KV * d]),
      t(`blk.${i}.attn_v.weight`, [E, KV * d]),
      t(`blk.${i}.attn_output.weight`, [H * d, E]),
      t(`blk.${i}.ffn_gate.weight`, [E, ff]),
      t(`blk.${i}.ffn_up.weight`, [E, ff]),
      t(`blk.${i}.ffn_down.weight`, [ff, E], 14),
    );
  }
  return {
    model: "coder-7b",
    quant: "Q4_K_M",
    hparams: hparamsFromMetadata(meta),
    tensors,
    fileBytes: tensors.reduce((a, x) => a + x.bytes, 0),
    isMoe: false,
    modelArgs: ["-m", "/m/coder-7b.gguf"],
  };
}

describe("the planner (one estimator, one chooser: ocw fit, ocw setup, the wizard, MCP)", () => {
  it("never proposes the c/N trap: N slots get one unified KV of N × ctx", async () => {
    const h = hparamsFromMetadata(await modelMetadata({ arch: "llama" }));
    const m = modelFromInfo(
      { source: "x", metadata: await modelMetadata({ arch: "llama" }), tensors: null, fileBytes: 100 * MiB, quant: null, shards: 1 },
      "tiny",
      ["-m", "/t.gguf"],
    );
    expect(m.hparams.nLayer).toBe(h.nLayer);
    const p = planModel(m, devs([], 8 * GiB), 4, 8192, false, undefined, 8192)!;
    expect(p.ctxPerSlot).toBe(8192);
    expect(p.command).toMatch(/-c 32768 -np 4 --kv-unified/);
    expect(p.placement).toBe("cpu");
  });
  it("for every slot count and budget the per-slot context is at least the minimum", async () => {
    const meta = await modelMetadata({ arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3 });
    const m = modelFromInfo({ source: "x", metadata: meta, tensors: null, fileBytes: 20 * MiB, quant: null, shards: 1 }, "g", ["-m", "/g.gguf"]);
    for (const slots of [1, 2, 3, 4, 8])
      for (const ram of [64 * MiB, 256 * MiB, 4 * GiB]) {
        const p = layout(m, devs([], ram + 1024 * MiB), slots, 2048);
        if (p) expect(p.ctxPerSlot).toBeGreaterThanOrEqual(2048);
      }
  });
  it("whole on the GPU first, the longest context that fits; an exact context when asked", () => {
    const m = bigModel();
    const p = layout(m, devs([gpu(24 * GiB)]), 2, 8192)!;
    expect([p.placement, p.nGpuLayers, p.ctxPerSlot]).toEqual(["gpu", m.hparams.nLayerAll + 1, 32768]);
    expect(layout(m, devs([gpu(24 * GiB)]), 2, 8192, undefined, 8192)!.ctxPerSlot).toBe(8192);
  });
  it("a q8_0 cache before giving up the context; partial offload when the weights do not fit", () => {
    const m = bigModel();
    const q = layout(m, devs([gpu(8.5 * GiB)]), 4, 16384, ["gpu"], 16384)!;
    expect(q.cacheType).not.toBe("f16");
    const p = layout(m, devs([gpu(3 * GiB)]), 1, 4096)!;
    expect(p.placement).toBe("partial");
    expect(p.nGpuLayers).toBeGreaterThan(0);
    expect(p.nGpuLayers).toBeLessThan(m.hparams.nLayerAll + 1);
  });
  it("beyond the training context → no plan; nothing fits → null", async () => {
    const m = modelFromInfo(
      { source: "x", metadata: await modelMetadata({ arch: "llama", nCtxTrain: 4096 }), tensors: null, fileBytes: 10 * MiB, quant: null, shards: 1 },
      "t",
      ["-m", "/t.gguf"],
    );
    expect(planModel(m, devs([]), 1, 8192, false)).toBeNull();
    expect(planModel(bigModel(), devs([gpu(2 * GiB)], 2 * GiB), 4, 32768, false)).toBeNull();
  });
  it("quant bits from names", () => {
    expect(["Q4_K_M", "UD-Q3_K_XL", "IQ2_XXS", "Q8_0", "F16", "BF16", "MXFP4", "weird"].map(quantBits)).toEqual([4, 3, 2, 8, 16, 16, 4, null]);
  });
});

describe("replicas from setup (issue 16): one llama-server per GPU as a pool", () => {
  it("2 × 24 GB, 4 slots: a model that fits one card runs as 2 replicas × 2 slots, each with its GPU alone", () => {
    const m = bigModel();
    const reps = replicate(m, devs([gpu(23.5 * GiB, 0), gpu(23.5 * GiB, 1)]), 4, 32768)!;
    expect(reps.map((r) => [r.gpus.map((g) => g.runtimeId), r.slots])).toEqual([
      [["CUDA0"], 2],
      [["CUDA1"], 2],
    ]);
    const p = planModel(m, devs([gpu(23.5 * GiB, 0), gpu(23.5 * GiB, 1)]), 4, 32768, false)!;
    expect(p.pool!.replicas).toBe(2);
    expect(p.slots).toBe(4);
    expect(p.devices.map((d) => d.name)).toEqual(["CUDA0 NVIDIA GeForce RTX 3090", "CUDA1 NVIDIA GeForce RTX 3090"]);
    const [a, b] = p.pool!.endpoints.map((e) => commandWords(e.command));
    expect(a!.env).toEqual(["CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0", "LLAMA_API_KEY=…"]);
    expect(b!.env).toEqual(["CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=1", "LLAMA_API_KEY=…"]);
    // inside each replica its one GPU is CUDA0; no tensor split, 2 slots in a unified pool of 2 × ctx
    for (const w of [a!, b!]) {
      expect(w.args.join(" ")).toMatch(new RegExp(`-c ${2 * p.pool!.endpoints[0]!.ctxPerSlot} -np 2 --kv-unified`));
      expect(w.args[w.args.indexOf("--device") + 1]).toBe("CUDA0");
      expect(w.args).not.toContain("-ts");
    }
    expect(p.reason).toMatch(/2 replicas, one llama-server per GPU .*one model split over GPUs runs its layers one GPU after the other/);
    expect(p.command.split("\n")).toHaveLength(2);
  });
  it("1 slot, or a model that needs every GPU: one server (split), no pool", () => {
    const m = bigModel();
    expect(replicate(m, devs([gpu(23.5 * GiB, 0), gpu(23.5 * GiB, 1)]), 1, 32768)).toBeNull();
    const p = planModel(m, devs([gpu(5 * GiB, 0), gpu(5 * GiB, 1)]), 2, 8192, false)!;
    expect(p.pool).toBeUndefined();
    expect(p.command).toMatch(/--device CUDA0,CUDA1 -ts/);
  });
  it("8 × 141 GB, 16 slots: the catalog's pick as 8 replicas × 2 slots; the split alternative beside it", () => {
    const h200 = Array.from({ length: 8 }, (_, i) => gpu(140 * GiB, i, "NVIDIA H200"));
    const p = propose(devs(h200, 1024 * GiB), 16, 32768);
    expect(p.pick!.pool!.replicas).toBe(8);
    expect(p.pick!.pool!.endpoints.every((e) => e.slots === 2 && e.devices.length === 1)).toBe(true);
    expect(new Set(p.pick!.pool!.endpoints.map((e) => e.devices[0])).size).toBe(8);
    expect(p.alternatives.some((a) => a.model === p.pick!.model && !a.pool)).toBe(true);
  });
  it("a catalog model keeps its quant choice per replica (largest that fits one GPU)", () => {
    const e = findCatalog("qwen3.6-27b")!;
    const two = devs([gpu(23.5 * GiB, 0), gpu(23.5 * GiB, 1)]);
    const q8 = catalogModel(e, "Q8_0");
    expect(replicate(q8, two, 4, 32768)).toBeNull();
    const p = propose(two, 4, 32768);
    expect(p.pick!.pool).toBeDefined();
    expect(p.pick!.quant).not.toBe("Q8_0");
  });
});

describe("issue 27: planner cases from the review", () => {
  const rtx4090 = (host: number) => devs([gpu(23.5 * GiB, 0, "NVIDIA GeForce RTX 4090")], host);
  it("MoE expert offload is searched over every split: Qwen3-Coder-Next on a 24 GB card with 32 GB of RAM fits (RAM cannot hold all experts)", () => {
    const e = findCatalog("qwen3-coder-next")!;
    const r = propose(rtx4090(32 * GiB), 1, 32768, () => false, [{ ...e, autoPick: true }]);
    expect(r.pick, r.problem ?? "").not.toBeNull();
    expect(r.pick!.placement).toBe("moe-offload");
    const ram = r.pick!.devices.find((d) => d.name === "cpu")!;
    expect(ram.plannedBytes + 1024 * MiB).toBeLessThanOrEqual(32 * GiB);
    const n = Number(/--n-cpu-moe (\d+)/.exec(r.pick!.command)![1]);
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(e.spec.nLayer);
  });

  it("llama-server's host caches are set and budgeted: --cache-ram and --ctx-checkpoints from the RAM the plan leaves", () => {
    const flag = (cmd: string, f: string) => {
      const a = commandWords(cmd).args;
      return a.includes(f) ? Number(a[a.indexOf(f) + 1]) : null;
    };
    // hybrid Qwen3.6-27B whole on a 24 GB card, 32 GiB of RAM: both set, within the RAM
    const e = findCatalog("qwen3.6-27b")!;
    const p = propose(rtx4090(32 * GiB), 4, 32768, () => false, [{ ...e, autoPick: true }]).pick!;
    const ram = flag(p.command, "--cache-ram")!;
    const ck = flag(p.command, "--ctx-checkpoints")!;
    expect(ram).toBeGreaterThan(0);
    expect(ram).toBeLessThanOrEqual(8192);
    expect(ck).toBeGreaterThanOrEqual(1);
    expect(ck).toBeLessThanOrEqual(8);
    expect(p.reason).toMatch(/prompt cache \d+ MiB \(--cache-ram\), \d+ context checkpoints? per slot .* left for the OS, opencode and the engine/);
    // CPU only, 32 GiB, 4 slots: the plan itself takes most of the RAM — the 8 GiB default cache would not fit
    const cpu = propose(devs([], 32 * GiB), 4, 32768, undefined, undefined, undefined, { allowSlow: true }).pick!;
    const used = cpu.devices.find((d) => d.name === "cpu")!.plannedBytes;
    const cacheRam = flag(cpu.command, "--cache-ram")! * MiB;
    expect(used + cacheRam + 1024 * MiB).toBeLessThanOrEqual(32 * GiB);
  });

  it("context and KV precision before a larger quant: a 32 GB card × 4 slots gets ≥ 64k per slot with an f16/q8_0 cache, not Q8_0 with q4_0 at 32k", () => {
    const e = findCatalog("qwen3.6-27b")!;
    const p = propose(devs([gpu(31.5 * GiB, 0, "NVIDIA GeForce RTX 5090")], 64 * GiB), 4, 32768, () => false, [{ ...e, autoPick: true }]).pick!;
    expect(p.reason).not.toMatch(/unified KV \(q4_0\)/);
    expect(p.ctxPerSlot).toBeGreaterThanOrEqual(65536);
  });

  it("every plan carries a throughput estimate from bandwidth ÷ bytes per token, with a warning when too slow for an agent", () => {
    const e = findCatalog("qwen3.6-27b")!;
    const p = propose(rtx4090(32 * GiB), 4, 32768, () => false, [{ ...e, autoPick: true }]).pick!;
    // a 4090 (1008 GB/s) reading ≈ 16-23 GB per token: tens of tokens/s per slot, no warning
    expect(p.speed!.decodeTokPerSecPerSlot).toBeGreaterThan(15);
    expect(p.speed!.decodeTokPerSecPerSlot).toBeLessThan(60);
    expect(p.speed!.warning).toBeNull();
    expect(p.speed!.basis).toMatch(/CUDA0 .* at 1008 GB\/s/);
    // whole on the GPU: the embeddings left in RAM are a lookup, not read per token
    expect(p.speed!.basis).not.toMatch(/RAM/);
    expect(p.speed!.decodeTokPerSecPerSlot).toBeGreaterThan(20);
    expect(p.reason).toMatch(/tokens\/s per slot/);
    // a dense 7B on the CPU (RAM assumed 60 GB/s) with 4 slots: single digits per slot, and it says so
    const cpu = planModel(bigModel(), devs([], 64 * GiB), 4, 8192, false)!;
    expect(cpu.speed!.decodeTokPerSecPerSlot).toBeLessThan(8);
    expect(cpu.speed!.warning).toMatch(/slow for an agent/);
    expect(cpu.speed!.basis).toMatch(/RAM .* \(assumed\)/);
    // MoE: only the active experts are read — a 3B-active model is far faster than its size suggests
    const moe = propose(devs([], 64 * GiB), 1, 32768).pick!;
    expect(moe.speed!.decodeTokPerSecPerSlot).toBeGreaterThan(cpu.speed!.decodeTokPerSecPerSlot);
  });
});
