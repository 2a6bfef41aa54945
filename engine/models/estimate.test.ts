import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { estimateOptionsFromFlags, flagsFromLogName } from "../../test/fixtures/fit-matrix";
import { modelLayout, modelMetadata, type ModelSpec } from "../../test/fixtures/gguf/writer";
import { assignLayers, estimate, EstimateError, GiB, MiB, resolveContext } from "./estimate";
import { tensorBytes } from "./ggml-types";
import { hparamsFromMetadata, MetadataError } from "./hparams";

// Shapes of the tiny models measured against a real llama-server (shared/notes/llama.md §1, §3).
const llamaGqa = () => modelMetadata({ arch: "llama" });
const gemma3Swa = () => modelMetadata({ arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3 });
const lfm2 = () => modelMetadata({ arch: "lfm2", nLayer: 6, nHead: 8, nHeadKv: [0, 0, 2, 0, 0, 2] });
const qwen35 = (): Record<string, unknown> => ({
  "general.architecture": "qwen35",
  "qwen35.block_count": 4,
  "qwen35.context_length": 32768,
  "qwen35.embedding_length": 256,
  "qwen35.feed_forward_length": 512,
  "qwen35.attention.head_count": 4,
  "qwen35.attention.head_count_kv": 2,
  "qwen35.attention.key_length": 64,
  "qwen35.attention.value_length": 64,
  "qwen35.ssm.conv_kernel": 4,
  "qwen35.ssm.inner_size": 256,
  "qwen35.ssm.state_size": 64,
  "qwen35.ssm.time_step_rank": 4,
  "qwen35.ssm.group_count": 2,
  "qwen35.full_attention_interval": 4,
  "qwen35.vocab_size": 151936,
});

type Row = [
  name: string,
  meta: () => Promise<Record<string, unknown>> | Record<string, unknown>,
  opts: Parameters<typeof estimate>[2],
  cells: number,
  streams: number,
  kv: number,
  rs?: number,
];
// Every figure below is what llama-server 80fb11a logged (llama_kv_cache: size / llama_memory_recurrent: size).
const matrix: Row[] = [
  ["llama -c 4096 -np 1", llamaGqa, { ctx: 4096, parallel: 1 }, 4096, 1, 4_194_304],
  ["llama -c 4096 -np 4", llamaGqa, { ctx: 4096, parallel: 4 }, 1024, 4, 4_194_304],
  ["llama no flags", llamaGqa, {}, 32768, 1, 33_554_432],
  ["llama -c 5000 -np 3", llamaGqa, { ctx: 5000, parallel: 3 }, 1792, 3, 5_505_024],
  ["llama -c 5000 -np 3 -kvu", llamaGqa, { ctx: 5000, parallel: 3, kvUnified: true }, 5120, 1, 5_242_880],
  ["llama -c 1000 -np 1", llamaGqa, { ctx: 1000, parallel: 1 }, 1024, 1, 1_048_576],
  ["llama -c 3000 -np 2 q8_0/q8_0", llamaGqa, { ctx: 3000, parallel: 2, cacheTypeK: "q8_0", cacheTypeV: "q8_0" }, 1536, 2, 1_671_168],
  ["llama -c 4096 -np 1 -fa off -ctk q8_0", llamaGqa, { ctx: 4096, parallel: 1, flashAttn: "off", cacheTypeK: "q8_0" }, 4096, 1, 3_211_264],
  ["gemma3 -c 4096 -np 1", gemma3Swa, { ctx: 4096, parallel: 1 }, 4096, 1, 2_097_152 + 1_048_576],
  ["gemma3 -c 4096 -np 4", gemma3Swa, { ctx: 4096, parallel: 4 }, 1024, 4, 2_097_152 + 4_194_304],
  ["gemma3 -c 4096 -np 4 -kvu", gemma3Swa, { ctx: 4096, parallel: 4, kvUnified: true }, 4096, 1, 2_097_152 + 2_621_440],
  ["gemma3 -c 16384 -np 2 -kvu -ub 128", gemma3Swa, { ctx: 16384, parallel: 2, kvUnified: true, ubatch: 128 }, 16384, 1, 8_388_608 + 1_310_720],
  ["gemma3 -c 4096 -np 4 -kvu --swa-full", gemma3Swa, { ctx: 4096, parallel: 4, kvUnified: true, swaFull: true }, 4096, 1, 6 * MiB],
  ["gemma3 no flags", gemma3Swa, {}, 32768, 1, 16_777_216 + 2_621_440],
  ["qwen35 -c 4096 -np 1", qwen35, { ctx: 4096, parallel: 1 }, 4096, 1, 2_097_152, 215_040],
  ["qwen35 -c 4096 -np 4", qwen35, { ctx: 4096, parallel: 4 }, 1024, 4, 2 * MiB, 860_160],
  ["qwen35 -c 5000 -np 3", qwen35, { ctx: 5000, parallel: 3 }, 1792, 3, 2_752_512, 645_120],
  ["lfm2 -c 4096 -np 4", lfm2, { ctx: 4096, parallel: 4 }, 1024, 4, 2 * MiB, 32_768],
  ["lfm2 -c 2048 -np 8 -kvu", lfm2, { ctx: 2048, parallel: 8, kvUnified: true }, 2048, 1, 1_048_576, 65_536],
];

describe("estimate matches llama-server's logged KV / recurrent sizes", () => {
  for (const [name, meta, opts, cells, streams, kv, rs] of matrix) {
    it(name, async () => {
      const e = estimate(hparamsFromMetadata(await meta()), null, opts);
      expect([e.kvCells, e.nStream]).toEqual([cells, streams]);
      expect(e.kvBytes).toBe(kv);
      expect(e.recurrentBytes).toBe(rs ?? 0);
    });
  }
  it("gemma3 SWA window cells follow n_swa·(unified ? n_seq : 1) + n_ubatch", async () => {
    const h = hparamsFromMetadata(await gemma3Swa());
    expect(h.isSwa).toEqual([true, true, false, true, true, false]);
    expect(estimate(h, null, { ctx: 8192, parallel: 4, kvUnified: true, ubatch: 256 }).swaCells).toBe(2304);
    expect(estimate(h, null, { ctx: 4096, parallel: 1 }).swaCells).toBe(1024);
  });
  it("recurrent state does not depend on -c or cache type", () => {
    const h = hparamsFromMetadata(qwen35());
    const a = estimate(h, null, { ctx: 4096, parallel: 4 }).recurrentBytes;
    const b = estimate(h, null, { ctx: 65536, parallel: 4, cacheTypeK: "q4_0", cacheTypeV: "q4_0" }).recurrentBytes;
    expect(a).toBe(b);
    expect(h.isRecr).toEqual([true, true, true, false]);
  });
});

describe("context resolution", () => {
  it("-np auto means 4 slots with unified KV, n_ctx = n_ctx_train", () => {
    expect(resolveContext({ nCtxTrain: 32768 }, {})).toEqual({ nCtx: 32768, nCtxPerSlot: 32768, slots: 4, kvUnified: true, nStream: 1 });
  });
  it("split KV pads per slot and may exceed -c", () => {
    expect(resolveContext({ nCtxTrain: 32768 }, { ctx: 5000, parallel: 3 })).toMatchObject({ nCtx: 5376, nCtxPerSlot: 1792 });
  });
  it("rejects a bad slot count", () => {
    expect(() => resolveContext({ nCtxTrain: 1 }, { parallel: 0 })).toThrow(EstimateError);
  });
});

describe("other rules", () => {
  it("quantized V without flash attention is refused like llama.cpp does", async () => {
    const h = hparamsFromMetadata(await llamaGqa());
    expect(() => estimate(h, null, { flashAttn: "off", cacheTypeV: "q8_0" })).toThrow(/flash attention/);
  });
  it("FA off transposes V to the max width across layers", () => {
    const meta = { ...qwen35(), "qwen35.attention.head_count_kv": [2, 2, 2, 2] };
    const h = hparamsFromMetadata(meta);
    expect(estimate(h, null, { ctx: 4096, parallel: 1, flashAttn: "off" }).kvBytes).toBe(2_097_152);
  });
  it("MLA caches K only (DeepSeek-V3 shape: 576 per token per layer)", () => {
    const h = hparamsFromMetadata({
      "general.architecture": "deepseek2",
      "deepseek2.block_count": 61,
      "deepseek2.context_length": 163840,
      "deepseek2.embedding_length": 7168,
      "deepseek2.attention.head_count": 128,
      "deepseek2.attention.head_count_kv": 1,
      "deepseek2.attention.key_length": 576,
      "deepseek2.attention.value_length": 512,
      "deepseek2.attention.key_length_mla": 192,
      "deepseek2.attention.value_length_mla": 128,
    });
    const e = estimate(h, null, { ctx: 4096, parallel: 1 });
    expect(e.kvBytesV).toBe(0);
    expect(e.kvBytes).toBe(61 * 576 * 2 * 4096);
  });
  it("per-layer head_count_kv arrays with zeros skip those layers (GQA, Gemma-style)", () => {
    const h = hparamsFromMetadata({
      "general.architecture": "llama",
      "llama.block_count": 3,
      "llama.context_length": 4096,
      "llama.embedding_length": 512,
      "llama.attention.head_count": 8,
      "llama.attention.head_count_kv": [8, 0, 2],
    });
    expect(estimate(h, null, { ctx: 1024, parallel: 1 }).kvBytes).toBe((8 + 2) * 64 * 2 * 2 * 1024);
  });
  it("missing keys give a clear error", () => {
    expect(() => hparamsFromMetadata({})).toThrow(MetadataError);
    expect(() => hparamsFromMetadata({ "general.architecture": "llama" })).toThrow(/llama.block_count/);
  });
  it("compute estimate is within 5% of the logged buffer for llama-gqa (FA on)", async () => {
    const h = hparamsFromMetadata(await llamaGqa());
    const cases: [Parameters<typeof estimate>[2], number][] = [
      [{ ctx: 4096, parallel: 4 }, 5.51],
      [{ ctx: 4096, parallel: 4, kvUnified: true }, 8.51],
      [{}, 36.51],
    ];
    for (const [o, mib] of cases) {
      const got = estimate(h, null, o).computeBytes / MiB;
      expect(Math.abs(got - mib) / mib).toBeLessThan(0.05);
    }
  });
});

describe("layer split across devices", () => {
  const g = (id: string, free: number) => ({ id, name: id, kind: "gpu" as const, freeBytes: free, totalBytes: free });
  it("splits by free memory; output layer is layer n_layer", () => {
    const a = assignLayers(4, 5, [g("0", 8 * GiB), g("1", 8 * GiB)]);
    expect(a).toEqual([0, 0, 0, 1, 1]);
  });
  it("partial offload keeps the first layers on the CPU", () => {
    expect(assignLayers(4, 2, [g("0", 8 * GiB)])).toEqual([-1, -1, -1, 0, 0]);
  });
  it("puts a layer's KV on its device", async () => {
    const h = hparamsFromMetadata(await llamaGqa());
    const e = estimate(h, null, { ctx: 4096, parallel: 1, gpus: [g("0", 8 * GiB), g("1", 8 * GiB)] });
    expect(e.perDevice.map((d) => d.kvBytes)).toEqual([3 * MiB, 1 * MiB, 0]);
  });
});

// The compute buffer replays llama.cpp's graph reserve + ggml-alloc (compute-graph.ts). Each recorded log names the flags
// it ran with (<model>-c<ctx>-np<n>[-kvu][-ub<n>][-faoff][-q8_0|-q4_0].log); the newer ones also hold the destructor's line with
// four decimals ("compute buffer size is 8.5117 MiB"), which pins the figure to about ±50 bytes.
describe("compute buffer against recorded llama-server logs (test/fixtures/llama-logs)", () => {
  const dir = path.join(__dirname, "../../test/fixtures/llama-logs");
  const SPECS = { "llama-gqa": llamaGqa, "gemma3-swa": gemma3Swa, "lfm2-hybrid": lfm2 } as const;
  const logs = readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort();
  it("has the cases that pin each term", () => {
    // n_outputs = slots (not the vocabulary × ubatch), n_tokens rounded to a multiple of the slots, FA off (KQ matrix),
    // in-place ROPE after a per-head norm (gemma3), short-conv state reads (lfm2), -ub, the Hadamard rotations of a
    // quantized cache (head size 64)
    for (const n of [
      "llama-gqa-c4096-np1.log",
      "llama-gqa-c5000-np3-kvu.log",
      "llama-gqa-c4096-np1-faoff.log",
      "gemma3-swa-c4096-np2-faoff.log",
      "gemma3-swa-c8192-np4-kvu-ub256.log",
      "lfm2-hybrid-c2048-np8-kvu.log",
      "gemma3-swa-c4096-np4-kvu-q8_0.log",
    ]) {
      expect(logs).toContain(n);
    }
  });
  for (const name of logs) {
    const key = (Object.keys(SPECS) as (keyof typeof SPECS)[]).find((k) => name.startsWith(`${k}-`));
    if (!key) continue;
    it(name, async () => {
      const text = readFileSync(path.join(dir, name), "utf8");
      const rest = name.slice(key.length);
      const e = estimate(hparamsFromMetadata(await SPECS[key]()), null, estimateOptionsFromFlags(flagsFromLogName(rest)));
      const precise = /compute buffer size is\s+([\d.]+) MiB/.exec(text);
      const logged = Number(/CPU compute buffer size =\s+([\d.]+) MiB/.exec(text)?.[1]);
      expect(logged).toBeGreaterThan(0);
      if (precise) expect(Math.abs(e.computeBytes - Number(precise[1]) * MiB)).toBeLessThanOrEqual(64);
      else expect(Math.round((e.computeBytes / MiB) * 100) / 100).toBe(logged);
    });
  }
});

// The same tiny models on a CUDA llama-server (80fb11a, NVIDIA H200, -v), recorded by bench/fit-cuda.ts's run: each log
// starts with the recorder's `#case <id> <model> <flags>` line. Weights and KV land per device exactly as placed (the tied
// output's copy of token_embd on the GPU, partial offload); with layers on the GPU the host's compute buffer holds the
// graph inputs. That figure is exact where flash attention ran where the KV is: the CUDA kernels have no head size 32
// (llama-gqa, lfm2-hybrid), so there -fa auto resolves off and a forced -fa on runs on the CPU (bench/fit-cuda.md).
describe("GPU placement against recorded CUDA llama-server logs (test/fixtures/llama-logs/cuda-h200)", () => {
  const dir = path.join(__dirname, "../../test/fixtures/llama-logs/cuda-h200");
  const SPECS: Record<string, ModelSpec> = {
    "llama-gqa": { arch: "llama" },
    "gemma3-swa": { arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3 },
    "lfm2-hybrid": { arch: "lfm2", nLayer: 6, nHead: 8, nHeadKv: [0, 0, 2, 0, 0, 2] },
  };
  const h200 = { id: "nvidia0", name: "NVIDIA H200", kind: "gpu" as const, freeBytes: 143156 * MiB, totalBytes: 143771 * MiB };
  const logs = readdirSync(dir)
    .filter((n) => /^\d+-.*\.log$/.test(n))
    .sort();
  const sum = (text: string, re: RegExp) => [...text.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  it("has the full-offload matrix, partial offload and -ngl 0", () => {
    expect(logs.length).toBeGreaterThanOrEqual(24);
  });
  for (const name of logs) {
    it(name, async () => {
      const text = readFileSync(path.join(dir, name), "utf8");
      const [, , model, flagText] = /^#case\t(\S+)\t(\S+)\t(.*)$/m.exec(text)!;
      const flags = flagText!.split(" ");
      const i = flags.indexOf("-ngl");
      const ngl = Number(flags[i + 1]);
      const { kvs, tensors } = await modelLayout(SPECS[model!]!);
      const h = hparamsFromMetadata(Object.fromEntries(kvs.map((k) => [k.key, k.value])));
      const infos = tensors.map((t) => ({ name: t.name, shape: t.shape, type: t.type, offset: 0, bytes: tensorBytes(t.type, t.shape) }));
      const o = { ...estimateOptionsFromFlags([...flags.slice(0, i), ...flags.slice(i + 2)]), gpus: [h200], nGpuLayers: ngl >= 999 ? -1 : ngl };
      const e = estimate(h, infos, o);
      const [gpu, host] = [e.perDevice[0]!, e.perDevice[1]!];
      // two decimals per logged line (CUDA pads quantized rows to 512 elements: a few KiB on the q8_0/q4_0 caches)
      const near = (bytes: number, mib: number) => expect(Math.abs(bytes / MiB - mib)).toBeLessThanOrEqual(0.011);
      near(gpu.weightsBytes!, sum(text, /CUDA0 model buffer size =\s+([\d.]+)/g));
      near(host.weightsBytes!, sum(text, /CPU_Mapped model buffer size =\s+([\d.]+)/g));
      near(gpu.kvBytes, sum(text, /CUDA0 KV buffer size =\s+([\d.]+)/g));
      near(host.kvBytes, sum(text, /\sCPU KV buffer size =\s+([\d.]+)/g));
      const hostCompute = Number(/~llama_context:\s+CUDA_Host compute buffer size is\s+([\d.]+) MiB/.exec(text)?.[1]);
      expect(hostCompute).toBeGreaterThan(0);
      const faWhereKv = model === "gemma3-swa" || flagText!.includes("-fa off");
      if (ngl > 0 && faWhereKv) expect(Math.abs(host.computeBytes - hostCompute * MiB)).toBeLessThanOrEqual(64);
    });
  }
});
