import { describe, expect, it } from "vitest";
import { modelLayout, modelMetadata } from "../../test/fixtures/gguf/writer";
import { GiB, MiB } from "./estimate";
import { fit } from "./fit";
import { tensorBytes } from "./ggml-types";
import { hparamsFromMetadata } from "./hparams";

const gpu = (free: number, id = "cuda0") => ({ id, name: id, kind: "gpu" as const, freeBytes: free, totalBytes: free });

/** A 7B-class GQA model's metadata (Qwen2.5-Coder-7B shape) with synthetic Q4_K tensor infos. */
function bigModel() {
  const L = 28, E = 3584, ff = 18944, H = 28, KV = 4, d = 128, V = 152064;
  const meta = {
    "general.architecture": "qwen2", "qwen2.block_count": L, "qwen2.context_length": 32768, "qwen2.embedding_length": E,
    "qwen2.feed_forward_length": ff, "qwen2.attention.head_count": H, "qwen2.attention.head_count_kv": KV, "qwen2.vocab_size": V,
  };
  const t = (name: string, shape: number[], type = 12) => ({ name, shape, type, offset: 0, bytes: tensorBytes(type, shape) });
  const tensors = [t("token_embd.weight", [E, V], 14), t("output.weight", [E, V], 14), t("output_norm.weight", [E], 0)];
  for (let i = 0; i < L; i++) {
    tensors.push(t(`blk.${i}.attn_q.weight`, [E, H * d]), t(`blk.${i}.attn_k.weight`, [E, KV * d]), t(`blk.${i}.attn_v.weight`, [E, KV * d]),
      t(`blk.${i}.attn_output.weight`, [H * d, E]), t(`blk.${i}.ffn_gate.weight`, [E, ff]), t(`blk.${i}.ffn_up.weight`, [E, ff]),
      t(`blk.${i}.ffn_down.weight`, [ff, E], 14));
  }
  return { h: hparamsFromMetadata(meta), tensors };
}

describe("fit chooser", () => {
  it("never proposes the c/N trap: N slots get a unified KV of N × ctx", async () => {
    const h = hparamsFromMetadata(await modelMetadata({ arch: "llama" }));
    const c = fit({ hparams: h, tensors: null, slots: 4, minCtxPerSlot: 8192, maxCtxPerSlot: 8192, gpus: [], hostFreeBytes: 8 * GiB });
    expect(c.fits).toBe(true);
    expect(c.kvUnified).toBe(true);
    expect(c.nCtx).toBe(4 * 8192);
    expect(c.estimate!.nCtxPerSlot).toBeGreaterThanOrEqual(8192);
    expect(c.args).toEqual(expect.arrayContaining(["-c", "32768", "-np", "4", "--kv-unified"]));
  });
  it("for every slot count and budget the per-slot context is at least the minimum", async () => {
    const h = hparamsFromMetadata(await modelMetadata({ arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3 }));
    for (const slots of [1, 2, 3, 4, 8]) {
      for (const ram of [64 * MiB, 256 * MiB, 4 * GiB]) {
        const c = fit({ hparams: h, tensors: null, slots, minCtxPerSlot: 2048, gpus: [], hostFreeBytes: ram + 1024 * MiB });
        if (c.fits) {
          expect(c.estimate!.nCtxPerSlot).toBeGreaterThanOrEqual(2048);
          expect(c.kvUnified || slots === 1).toBe(true);
        }
      }
    }
  });
  it("puts all layers on the GPU first, then maximizes context", () => {
    const { h, tensors } = bigModel();
    const c = fit({ hparams: h, tensors, slots: 2, minCtxPerSlot: 8192, gpus: [gpu(24 * GiB)], hostFreeBytes: 32 * GiB });
    expect(c.placement).toBe("gpu");
    expect(c.nGpuLayers).toBe(h.nLayerAll + 1);
    expect(c.ctxPerSlot).toBe(32768);
  });
  it("falls back to a smaller cache type before shrinking context below what a bigger cache allows", () => {
    const { h, tensors } = bigModel();
    const c = fit({ hparams: h, tensors, slots: 4, minCtxPerSlot: 16384, maxCtxPerSlot: 16384, gpus: [gpu(8.5 * GiB)], hostFreeBytes: 32 * GiB });
    expect(c.fits).toBe(true);
    expect(c.cacheTypeK).not.toBe("f16");
  });
  it("partial offload when the weights do not fit, with the first layers on the CPU", () => {
    const { h, tensors } = bigModel();
    const c = fit({ hparams: h, tensors, slots: 1, minCtxPerSlot: 4096, gpus: [gpu(3 * GiB)], hostFreeBytes: 32 * GiB });
    expect(c.placement).toBe("partial");
    expect(c.nGpuLayers).toBeGreaterThan(0);
    expect(c.nGpuLayers).toBeLessThan(h.nLayerAll + 1);
  });
  it("says plainly when nothing fits, and what would", () => {
    const { h, tensors } = bigModel();
    const c = fit({ hparams: h, tensors, slots: 4, minCtxPerSlot: 32768, gpus: [gpu(2 * GiB)], hostFreeBytes: 2 * GiB });
    expect(c.fits).toBe(false);
    expect(c.reason).toMatch(/needs about .* GiB/);
    expect(c.suggestions.join(" ")).toMatch(/API provider/);
  });
  it("refuses a per-slot context beyond the training context", async () => {
    const h = hparamsFromMetadata(await modelMetadata({ arch: "llama", nCtxTrain: 4096 }));
    const c = fit({ hparams: h, tensors: null, slots: 1, minCtxPerSlot: 8192, gpus: [], hostFreeBytes: 8 * GiB });
    expect(c.fits).toBe(false);
    expect(c.reason).toMatch(/trained for 4096/);
  });
  it("splits across two GPUs by free memory", () => {
    const { h, tensors } = bigModel();
    const c = fit({ hparams: h, tensors, slots: 2, minCtxPerSlot: 8192, gpus: [gpu(4 * GiB, "a"), gpu(4 * GiB, "b")], hostFreeBytes: 32 * GiB });
    expect(c.placement).toBe("gpu");
    expect(c.args).toContain("-ts");
    expect(c.estimate!.perDevice.filter((d) => d.kind === "gpu").every((d) => d.layers > 10)).toBe(true);
  });
  it("the layout helper knows its tensors", async () => {
    const { tensors } = await modelLayout({ arch: "lfm2" });
    expect(tensors.filter((t) => t.name.includes("shortconv.conv"))).toHaveLength(4);
  });
});
