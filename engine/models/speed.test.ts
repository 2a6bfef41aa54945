// The speed model (issue 27): memory- or compute-bound decode per device, experts touched by N slots, prefill from
// TFLOPS, the GPU table, and which GPUs count as datacenter / FP8-capable.
import { describe, expect, it } from "vitest";
import { cpuTflops, estimateSpeed, gpuBandwidth, gpuTflops, hasFp8, isDatacenterGpu, MIN_AGENT_TOK_PER_SEC, touchedExperts } from "./speed";

const GB = 1e9;
const part = (o: Partial<Parameters<typeof estimateSpeed>[0][number]> = {}) => ({
  name: "CUDA0",
  denseBytes: 10 * GB,
  expertBytes: 0,
  kvBytesPerToken: 0,
  gbps: 1000,
  bwKnown: true,
  tflops: 100,
  flopsKnown: true,
  ...o,
});

describe("speed", () => {
  it("a step over N slots touches 1 − (1 − used/experts)^N of the routed experts", () => {
    const e = { count: 256, used: 8 };
    expect(touchedExperts(e, 1)).toBeCloseTo(1 / 32, 6);
    expect(touchedExperts(e, 16)).toBeCloseTo(1 - (31 / 32) ** 16, 6);
    expect(touchedExperts(null, 16)).toBe(1);
  });

  it("memory-bound decode: 60 % of bandwidth ÷ bytes per token; more slots keep most of it when the weights dominate", () => {
    const s = estimateSpeed([part()], { activeParams: 5e9, slots: 1, ctxPerSlot: 32768 })!;
    expect(s.decodeTokPerSecSingle).toBeCloseTo(60, 0);
    const four = estimateSpeed([part()], { activeParams: 5e9, slots: 4, ctxPerSlot: 32768 })!;
    expect(four.decodeTokPerSecPerSlot).toBeCloseTo(60, 0);
    expect(four.decodeTokPerSecTotal).toBeCloseTo(240, -1);
    // each slot reads its own KV: 4 slots × 16k tokens × 256 KiB per token
    const kv = estimateSpeed([part({ kvBytesPerToken: 256 * 1024 })], { activeParams: 5e9, slots: 4, ctxPerSlot: 32768 })!;
    expect(kv.decodeTokPerSecPerSlot).toBeLessThan(four.decodeTokPerSecPerSlot / 2);
  });

  it("compute-bound when many slots share a weak device; experts in RAM make many slots slow; too slow is flagged", () => {
    const cpu = cpuTflops(2);
    const p = part({ name: "RAM", denseBytes: 1 * GB, expertBytes: 20 * GB, gbps: 60, tflops: cpu.tflops });
    const one = estimateSpeed([p], { activeParams: 3e9, experts: { count: 256, used: 8 }, slots: 1, ctxPerSlot: 32768 })!;
    const many = estimateSpeed([p], { activeParams: 3e9, experts: { count: 256, used: 8 }, slots: 16, ctxPerSlot: 32768 })!;
    expect(one.tooSlow).toBe(false);
    expect(many.decodeTokPerSecPerSlot).toBeLessThan(MIN_AGENT_TOK_PER_SEC);
    expect([many.tooSlow, many.warning]).toEqual([true, expect.stringMatching(/too slow for an agent/)]);
    expect(many.basis).toMatch(/16 slots touch 40 % of the routed experts per step/);
    // prefill: 2 × 3 B FLOPs per token at 40 % of 0.4 TFLOPS
    expect(one.prefillTokPerSec).toBeCloseTo((cpu.tflops * 1e12 * 0.4) / 6e9, 0);
    expect(one.firstRequestSec).toBeGreaterThan(120);
    expect(one.warning).toMatch(/first request/);
  });

  it("the GPU table, datacenter GPUs and FP8", () => {
    expect([gpuBandwidth("NVIDIA H100 80GB HBM3").gbps, gpuTflops("NVIDIA H100 80GB HBM3").tflops]).toEqual([3350, 989]);
    expect(gpuBandwidth("NVIDIA H100 PCIe").gbps).toBe(2000);
    expect(gpuBandwidth("Some GPU").known).toBe(false);
    expect(isDatacenterGpu("NVIDIA H200", 141 * 1024 ** 3)).toBe(true);
    expect(isDatacenterGpu("NVIDIA A100-SXM4-40GB", 40 * 1024 ** 3)).toBe(false);
    expect(isDatacenterGpu("NVIDIA GeForce RTX 5090", 32 * 1024 ** 3)).toBe(false);
    expect(["NVIDIA H200", "NVIDIA L40S", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090", "NVIDIA A100 80GB PCIe"].map(hasFp8)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
