/**
 * vLLM / SGLang planning (issue 13): tensor parallel = the fewest GPUs (a power of two dividing the attention heads)
 * that hold weights + KV for the slots at the context; data parallel = GPUs ÷ TP engines. The machines are the
 * scenario review's (docs/model-setup.md); each expected pick was reviewed as an expert would run it. Offline: the
 * catalog's safetensors sizes (the Hub is not asked).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FitPick } from "../../shared/fit";
import { GiB } from "../models/estimate";
import { commandWords, gpuUtilization, type ParallelModel, type PlanDevices, sizeParallel } from "../models/plan";
import { parallelDevices, proposeParallel, resolveParallelModel } from "./parallel";

const MiB = 1024 ** 2;
const machine = (n: number, name: string, totalMiB: number, usedMiB = 500): PlanDevices =>
  parallelDevices({
    gpus: Array.from({ length: n }, (_, i) => ({ index: i, vendor: "nvidia", name, totalBytes: totalMiB * MiB, freeBytes: (totalMiB - usedMiB) * MiB })),
    ram: { freeBytes: 256 * GiB },
  }).dev;
const plan = (dev: PlanDevices, slots: number, o: { model?: string; runtime?: "vllm" | "sglang"; minCtx?: number } = {}) =>
  proposeParallel({ runtime: o.runtime ?? "vllm", dev, slots, minCtx: o.minCtx ?? 32768, model: o.model, verified: () => false, hub: false });
const flag = (cmd: string, f: string) => {
  const a = commandWords(cmd).args;
  const i = a.indexOf(f);
  return i < 0 ? null : a[i + 1]!;
};

describe("vLLM / SGLang: tensor × data parallel", () => {
  it("2×24 GB, 4 slots → Qwen3.8-27B in the maker's FP8 over both cards (TP 2); bf16 (56 GB) does not fit 48 GB", async () => {
    const r = await plan(machine(2, "NVIDIA GeForce RTX 3090", 24576), 4);
    const p = FitPick.parse(r.pick);
    expect([p.model, p.quant, p.runtime, p.parallel]).toEqual(["qwen3.8-27b", "fp8", "vllm", { tensor: 2, data: 1 }]);
    expect(p.ctxPerSlot).toBeGreaterThanOrEqual(32768);
    expect(p.devices.map((d) => d.name)).toEqual(["CUDA0 NVIDIA GeForce RTX 3090", "CUDA1 NVIDIA GeForce RTX 3090"]);
    for (const d of p.devices) expect(d.plannedBytes).toBeLessThanOrEqual(d.budgetBytes);
    expect(commandWords(p.command).bin).toBe("vllm");
    expect(commandWords(p.command).args.slice(0, 2)).toEqual(["serve", "Qwen/Qwen3.8-27B-FP8"]);
    expect([flag(p.command, "--tensor-parallel-size"), flag(p.command, "--data-parallel-size"), flag(p.command, "--max-num-seqs")]).toEqual(["2", null, "4"]);
    expect(commandWords(p.command).env).toEqual(["VLLM_API_KEY=…"]);
    // Qwen3.8 thinks: its reasoning parser keeps <think>…</think> out of `content`
    expect(flag(p.command, "--reasoning-parser")).toBe("qwen3");
    // a smaller model that fits one card runs as two engines instead (gpt-oss-20b: 13.8 GB)
    const small = (await plan(machine(2, "NVIDIA GeForce RTX 3090", 24576), 4, { model: "gpt-oss-20b" })).pick!;
    expect([small.parallel, flag(small.command, "--data-parallel-size"), flag(small.command, "--max-num-seqs")]).toEqual([{ tensor: 1, data: 2 }, "2", "2"]);
    expect(flag(small.command, "--reasoning-parser")).toBe("openai_gptoss");
  });
  it("8×141 GB (H200), 16 slots → a 27B model as 8 data-parallel engines of 2 sequences × 128k, never an 8-way tensor split; FP8 on Hopper", async () => {
    const p = (await plan(machine(8, "NVIDIA H200", 143771), 16)).pick!;
    expect([p.model, p.quant, p.parallel, p.ctxPerSlot]).toEqual(["qwen3.8-27b", "fp8", { tensor: 1, data: 8 }, 131072]);
    // the speed model: 8 engines decode side by side
    expect(p.speed!.basis).toMatch(/per engine \(8 decode side by side\)/);
    expect(p.speed!.decodeTokPerSecTotal).toBeGreaterThan(p.speed!.decodeTokPerSecPerSlot * 15);
    expect(p.devices).toHaveLength(8);
    expect([flag(p.command, "--tensor-parallel-size"), flag(p.command, "--data-parallel-size"), flag(p.command, "--max-num-seqs")]).toEqual([null, "8", "2"]);
    expect(p.reason).toMatch(/data parallel before a wider tensor split/);
  });
  it("8×141 GB, the 397B flagship (794 GB in bf16) → tensor parallel 8 (32 heads / 8), one engine", async () => {
    const p = (await plan(machine(8, "NVIDIA H200", 143771), 16, { model: "Qwen/Qwen3.5-397B-A17B" })).pick!;
    expect([p.quant, p.parallel]).toEqual(["bf16", { tensor: 8, data: 1 }]);
    expect(flag(p.command, "--tensor-parallel-size")).toBe("8");
    expect(commandWords(p.command).args[1]).toBe("Qwen/Qwen3.5-397B-A17B");
    // its FP8 repo, named — or the catalog id on Hopper, where FP8 comes first: half the GPUs per engine, two engines
    const f = (await plan(machine(8, "NVIDIA H200", 143771), 16, { model: "Qwen/Qwen3.5-397B-A17B-FP8" })).pick!;
    expect([f.quant, f.parallel]).toEqual(["fp8", { tensor: 4, data: 2 }]);
    const id = (await plan(machine(8, "NVIDIA H200", 143771), 16, { model: "qwen3.5-397b-a17b" })).pick!;
    expect([id.quant, id.parallel]).toEqual(["fp8", { tensor: 4, data: 2 }]);
  });
  it("SGLang: --tp-size / --dp-size, the key in a --config file (never --api-key), sequences per engine", async () => {
    const p = (await plan(machine(8, "NVIDIA H200", 143771), 16, { runtime: "sglang" })).pick!;
    const w = commandWords(p.command);
    expect([w.bin, w.args[0], w.args[1]]).toEqual(["python3", "-m", "sglang.launch_server"]);
    expect([flag(p.command, "--dp-size"), flag(p.command, "--tp-size"), flag(p.command, "--max-running-requests"), flag(p.command, "--config")]).toEqual([
      "8",
      null,
      "2",
      "…",
    ]);
    expect(w.args).not.toContain("--api-key");
    expect(flag(p.command, "--reasoning-parser")).toBe(p.model.startsWith("gpt-oss") ? "gpt-oss" : "qwen3");
    // admission reads SGLang's Prometheus /metrics (sglang:num_running_reqs …, engine/admission/capacity.ts), which
    // SGLang serves only with --enable-metrics (python/sglang/srt/entrypoints/http_server.py adds the route then; docs
    // "Production Metrics"); without it /metrics is a 404 and a local SGLang target reports no load
    expect(w.args).toContain("--enable-metrics");
  });
  it("fewer GPUs than the machine has: the others are hidden (CUDA_VISIBLE_DEVICES), one engine per slot at most", async () => {
    const p = (await plan(machine(8, "NVIDIA H200", 143771), 2)).pick!;
    expect(p.parallel).toEqual({ tensor: 1, data: 2 });
    expect(commandWords(p.command).env).toEqual(["CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=0,1", "VLLM_API_KEY=…"]);
  });
  it("a GPU partly in use: the runtime's share drops below 0.9 (vLLM refuses a share larger than what is free)", () => {
    expect(gpuUtilization({ totalBytes: 24 * GiB, freeBytes: 23.5 * GiB })).toBe(0.9);
    expect(gpuUtilization({ totalBytes: 24 * GiB, freeBytes: 12 * GiB })).toBe(0.48);
    const m: ParallelModel = {
      model: "m",
      source: "o/m",
      dtype: "bf16",
      weightsBytes: 6 * GiB,
      weightsSource: "catalog",
      nHead: 32,
      nHeadKv: 8,
      hparams: null,
      contextLength: 32768,
      toolParser: "hermes",
      servedName: "m",
    };
    const half = machine(1, "NVIDIA GeForce RTX 4090", 24564, 12000).gpus;
    const p = sizeParallel(m, half, 1, 8192)!;
    expect(p.utilization).toBe(0.5);
    expect(p.needPerGpu).toBeLessThanOrEqual(p.utilization * half[0]!.totalBytes);
  });
  it("tensor parallel divides the attention heads (24 heads: 2 and 4 and 8 — not 16); KV is replicated past the KV heads", () => {
    const m: ParallelModel = {
      model: "m",
      source: "o/m",
      dtype: "bf16",
      weightsBytes: 300 * GiB,
      weightsSource: "catalog",
      nHead: 24,
      nHeadKv: 4,
      hparams: null,
      contextLength: 32768,
      toolParser: "hermes",
      servedName: "m",
    };
    const p = sizeParallel(m, machine(16, "NVIDIA H100 80GB HBM3", 81559).gpus, 4, 8192)!;
    expect(p.tp).toBe(8);
    // 25 % allowance (no config): 75 GiB of KV, 4 KV heads → each of the 8 ranks holds a quarter
    expect(p.kvPerGpu).toBeCloseTo((75 * GiB) / 4, -6);
    expect(sizeParallel({ ...m, weightsBytes: 600 * GiB }, machine(16, "NVIDIA H100 80GB HBM3", 81559).gpus, 4, 8192)).toBeNull();
  });
  it("nothing fits, no GPU, a GGUF or a file → a problem or a clear input error", async () => {
    const none = await plan(machine(1, "NVIDIA GeForce RTX 4060", 8188), 4);
    expect(none.pick).toBeNull();
    expect(none.problem).toMatch(/--runtime llama.cpp/);
    const cpu = await plan({ gpus: [], hostFreeBytes: 64 * GiB }, 1);
    expect(cpu.problem).toMatch(/needs NVIDIA \(CUDA\) or AMD \(ROCm\) GPUs/);
    await expect(resolveParallelModel("someone/Coder-7B-GGUF", "vllm", {}, false)).rejects.toThrow(/GGUF repo/);
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-par-"));
    writeFileSync(path.join(dir, "m.gguf"), "x");
    await expect(resolveParallelModel(path.join(dir, "m.gguf"), "vllm", {}, false)).rejects.toThrow(/not a GGUF/);
    await expect(resolveParallelModel(dir, "vllm", {}, false)).rejects.toThrow(/no \*\.safetensors/);
  });
  it("a local folder: sized from its safetensors and config.json", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-par-"));
    writeFileSync(path.join(dir, "model.safetensors"), Buffer.alloc(1024 * 1024));
    writeFileSync(
      path.join(dir, "config.json"),
      JSON.stringify({
        num_attention_heads: 12,
        num_key_value_heads: 2,
        num_hidden_layers: 28,
        hidden_size: 1536,
        max_position_embeddings: 32768,
        vocab_size: 151936,
      }),
    );
    const [m] = await resolveParallelModel(dir, "vllm", {}, false);
    expect([m!.weightsBytes, m!.weightsSource, m!.nHead, m!.nHeadKv, m!.contextLength, m!.source]).toEqual([
      1024 * 1024,
      "folder",
      12,
      2,
      32768,
      path.resolve(dir),
    ]);
    // 28 layers × 2 KV heads × 128 × (K+V) × 2 bytes = 28 KiB a token
    const p = sizeParallel(m!, machine(1, "NVIDIA GeForce RTX 4060", 8188).gpus, 2, 32768)!;
    expect(p.kvPerGpu).toBeGreaterThanOrEqual(2 * 32768 * 28 * 1024);
  });
});

describe("MTP switched off (asked): `mtp: false`, as `ocw setup|fit --runtime vllm|sglang --no-mtp`", () => {
  it("vLLM and SGLang: no --speculative-… flags and the reason says so; the default keeps them", async () => {
    for (const runtime of ["vllm", "sglang"] as const) {
      const o = { runtime, dev: machine(2, "NVIDIA H100 80GB HBM3", 81559), slots: 4, minCtx: 32768, model: "qwen3.6-27b", verified: () => false, hub: false };
      const off = await proposeParallel({ ...o, mtp: false });
      expect(commandWords(off.pick!.command).args.filter((a) => a.startsWith("--speculative-"))).toEqual([]);
      expect(off.pick!.reason).toMatch(/MTP off \(asked\)/);
      expect(off.pick!.mtp).toBe("off");
      const on = await proposeParallel(o);
      expect(commandWords(on.pick!.command).args.some((a) => a.startsWith("--speculative-"))).toBe(true);
      expect(on.pick!.reason).not.toMatch(/MTP off/);
      expect(on.pick!.mtp).toBe("on");
    }
  });
});
