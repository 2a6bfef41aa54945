// planFit (issue 27): the planner as a typed engine service, called directly (no CLI output parsed), with the
// review's planner cases that go through it.
import { describe, expect, it } from "vitest";
import type { HardwareReport } from "../hardware/detect";
import { isSetupError } from "../models/errors";
import { findCatalog } from "../models/catalog";
import { planFit } from "./fit-service";

const GiB = 1024 ** 3;
const hw = (gpus: HardwareReport["gpus"], ramGiB: number): HardwareReport => ({
  platform: "linux",
  arch: "x64",
  cpu: { model: "t", cores: 16, physicalCores: 8 },
  ram: { totalBytes: ramGiB * GiB, freeBytes: ramGiB * GiB },
  gpus,
  llamaDevices: null,
  probes: [],
  problems: [],
  ms: 1,
});
const nv = (i: number, name: string, gib: number): HardwareReport["gpus"][number] => ({
  index: i,
  vendor: "nvidia",
  name,
  totalBytes: gib * GiB,
  freeBytes: gib * GiB - 0.5 * GiB,
  usedBytes: 0.5 * GiB,
  unified: false,
  source: "nvidia-smi",
});

describe("planFit", () => {
  it("returns the FitResult contract; bad input is a SetupError naming the field", async () => {
    const r = await planFit({ slots: 1 }, hw([], 16), { llamaServer: null, nvcc: false });
    expect(r.pick?.placement).toBe("cpu");
    const e = await planFit({ slots: 0 }, hw([], 16), { llamaServer: null }).catch((x) => x);
    expect(isSetupError(e, "input")).toBe(true);
    expect(e.data).toEqual({ field: "slots" });
    expect(e.code).toBe("bad-input");
  });

  it("--ctx below what OpenCode's first request needs is refused before anything starts (verify would always call it cannot-build)", async () => {
    const e = await planFit({ slots: 1, ctxPerSlot: 4096 }, hw([], 16), { llamaServer: null, nvcc: false }).catch((x) => x);
    expect(isSetupError(e, "input")).toBe(true);
    expect(e.data).toEqual({ field: "ctxPerSlot" });
    expect(e.message).toMatch(/^--ctx 4096 per slot is less than OpenCode's first request needs .*: give --ctx 8192 or more/);
    const ok = await planFit({ slots: 1, ctxPerSlot: 8192 }, hw([], 16), { llamaServer: null, nvcc: false });
    expect(ok.pick?.ctxPerSlot).toBe(8192);
  });

  it("a named model never gets a quant under 4 bits when a ≥ 4-bit quant fits (Qwen3.6-35B-A3B on a 20 GB card: UD-Q4_K_M with experts in RAM, not UD-Q3_K_M whole)", async () => {
    const r = await planFit({ model: "qwen3.6-35b-a3b", slots: 1 }, hw([nv(0, "NVIDIA RTX 4000 Ada", 20)], 64), { llamaServer: null, nvcc: true });
    expect(r.pick, r.problem ?? "").not.toBeNull();
    expect(r.pick!.quant).not.toBe("UD-Q3_K_M");
    // with too little memory for any ≥ 4-bit quant, the small one is used and the reason says so
    const tight = await planFit({ model: "qwen3.6-35b-a3b", slots: 1 }, hw([nv(0, "NVIDIA RTX 4000 Ada", 20)], 4), { llamaServer: null, nvcc: true });
    if (tight.pick?.quant === "UD-Q3_K_M") expect(tight.pick.reason).toMatch(/no ≥ 4-bit quant .* fits here/);
  });

  it("Linux + NVIDIA with no llama-server and no nvcc: planned as the Vulkan build setup installs, saying why", async () => {
    const r = await planFit({ slots: 1 }, hw([nv(0, "NVIDIA GeForce RTX 4090", 24)], 64), { llamaServer: null, nvcc: false });
    expect(r.pick!.command).toMatch(/--device Vulkan0/);
    expect(r.hardware.notes.join(" ")).toMatch(/no Linux CUDA build/);
    const cuda = await planFit({ slots: 1 }, hw([nv(0, "NVIDIA GeForce RTX 4090", 24)], 64), { llamaServer: null, nvcc: true });
    expect(cuda.pick!.command).toMatch(/--device CUDA0/);
  });

  it("unified memory is budgeted once: on a 48 GB Mac the plan's GPU and host parts together stay within the 48 GB", async () => {
    const mac: HardwareReport = {
      ...hw(
        [{ index: 0, vendor: "apple", name: "Apple M4 Pro", totalBytes: 36 * GiB, freeBytes: 36 * GiB, usedBytes: 0, unified: true, source: "sysctl" }],
        48,
      ),
      platform: "darwin",
      arch: "arm64",
    };
    const notes: string[] = [];
    for (const model of [undefined, "qwen3-coder-next", "qwen3.6-35b-a3b:Q8_0"]) {
      const r = await planFit({ slots: 1, model }, mac, { llamaServer: null });
      const total = r.pick ? r.pick.devices.reduce((a, d) => a + d.plannedBytes, 0) : 0;
      expect(
        total,
        `${model}: ${r.pick?.placement} ${r.pick?.devices.map((d) => `${d.name} ${(d.plannedBytes / GiB).toFixed(1)}`).join(", ")}`,
      ).toBeLessThanOrEqual(48 * GiB - 2 * GiB);
      notes.push(...r.hardware.notes);
    }
    expect(notes.join(" ")).toMatch(/unified memory/);
  });

  it("one KV type from plan to start: a cacheType given is kept; the pick names its own", async () => {
    const m = hw([nv(0, "NVIDIA GeForce RTX 4090", 24)], 64);
    const free = await planFit({ model: "qwen3.6-27b", slots: 2 }, m, { llamaServer: null, nvcc: true });
    expect(free.pick!.cacheType).toMatch(/^(f16|q8_0)$/);
    const other = free.pick!.cacheType === "f16" ? "q8_0" : "f16";
    const kept = await planFit({ model: "qwen3.6-27b", slots: 2, cacheType: other }, m, { llamaServer: null, nvcc: true });
    expect(kept.pick!.cacheType).toBe(other);
    if (other === "q8_0") expect(kept.pick!.command).toMatch(/-ctk q8_0 -ctv q8_0/);
    else expect(kept.pick!.command).not.toMatch(/-ctk/);
  });
});

describe("issue 27: a speed model on every plan; plans too slow for an agent are refused", () => {
  const apple = (name: string, gpuGiB: number, ramGiB: number): HardwareReport => ({
    ...hw([{ index: 0, vendor: "apple", name, totalBytes: gpuGiB * GiB, freeBytes: gpuGiB * GiB, usedBytes: 0, unified: true, source: "sysctl" }], ramGiB),
    platform: "darwin",
    arch: "arm64",
  });
  const opts = { llamaServer: null, nvcc: true, hub: false } as const;

  it("16 slots on a CPU-only 32 GB machine are refused, naming the slot count that is fast enough; --allow-slow plans them", async () => {
    const r = await planFit({ slots: 16 }, hw([], 32), opts);
    expect(r.pick).toBeNull();
    expect(r.refused!.length).toBeGreaterThan(0);
    expect(r.refused!.every((x) => x.speed!.tooSlow && x.speed!.decodeTokPerSecPerSlot < 8)).toBe(true);
    expect(r.problem).toMatch(/too slow .*--allow-slow/);
    expect(r.problem).toMatch(/--slots \d+ fits \(.*tokens\/s per slot\)/);
    const forced = await planFit({ slots: 16, allowSlow: true }, hw([], 32), opts);
    expect(forced.pick!.slots).toBe(16);
    expect(forced.pick!.speed!.tooSlow).toBe(true);
    expect(forced.pick!.speed!.warning).toMatch(/too slow for an agent/);
  });

  it("16 slots on a 12 GB RTX 3060 are refused (experts in RAM: 16 slots touch most of them every step); 4 slots plan at agent speed", async () => {
    const m = hw([nv(0, "NVIDIA GeForce RTX 3060", 12)], 32);
    const r = await planFit({ slots: 16 }, m, opts);
    expect(r.pick).toBeNull();
    expect(r.problem).toMatch(/too slow/);
    expect(r.refused![0]!.speed!.basis).toMatch(/16 slots touch \d+ % of the routed experts per step/);
    const four = await planFit({ slots: 4 }, m, opts);
    expect(four.pick!.speed!.decodeTokPerSecPerSlot).toBeGreaterThanOrEqual(8);
    // the dense 27B with layers in RAM was passed over as too slow
    expect(four.refused?.some((x) => x.model === "qwen3.6-27b" && x.placement === "partial")).toBe(true);
  });

  it("the default slot count is lowered until the plan is fast enough, and the notes say so (an explicit --slots is refused instead)", async () => {
    // a 4 GB card with 32 GB of RAM: 4 slots are too slow, 2 are not
    const m = hw([nv(0, "NVIDIA GeForce GTX 1650", 4)], 32);
    const r = await planFit({}, m, opts);
    expect(r.pick!.slots).toBe(2);
    expect(r.pick!.speed!.tooSlow).toBe(false);
    expect(r.hardware.notes.join(" ")).toMatch(/4 slots would decode ≈ [\d.]+ tokens\/s each \(too slow for an agent\): planned 2 slots instead/);
    const asked = await planFit({ slots: 4 }, m, opts);
    expect(asked.pick).toBeNull();
    expect(asked.problem).toMatch(/--slots 2 fits/);
  });

  it("Apple 64 GB (M4 Max): a MoE model, not the dense 27B at Q8_0 (a token reads only its experts)", async () => {
    const r = await planFit({}, apple("Apple M4 Max", 48, 64), opts);
    expect(findCatalog(r.pick!.model)!.spec.moe).toBeDefined();
    expect(`${r.pick!.model} ${r.pick!.quant}`).not.toBe("qwen3.6-27b Q8_0");
    expect(r.pick!.speed!.decodeTokPerSecPerSlot).toBeGreaterThanOrEqual(8);
    // a 48 GB M4 Pro: the dense 27B at Q6_K/Q8_0 would decode ≈ 5–7 tokens/s per slot — never the pick
    const pro = await planFit({}, apple("Apple M4 Pro", 36, 48), opts);
    expect(findCatalog(pro.pick!.model)!.spec.moe).toBeDefined();
  });

  it("every plan carries decode at 1 and N slots, prefill and the first request's time; on the CPU prefill is compute-bound by the cores", async () => {
    const fast = await planFit({ slots: 4 }, hw([nv(0, "NVIDIA GeForce RTX 4090", 24)], 64), opts);
    const s = fast.pick!.speed!;
    expect(s.decodeTokPerSecSingle).toBeGreaterThanOrEqual(s.decodeTokPerSecPerSlot);
    expect(s.decodeTokPerSecTotal).toBeGreaterThan(s.decodeTokPerSecSingle!);
    expect(s.prefillTokPerSec).toBeGreaterThan(300);
    expect(s.firstRequestSec).toBeLessThan(30);
    const few = { ...hw([], 32), cpu: { model: "t", cores: 2, physicalCores: 2 } };
    const many = { ...hw([], 32), cpu: { model: "t", cores: 32, physicalCores: 16 } };
    const a = (await planFit({ slots: 1 }, few, opts)).pick!.speed!;
    const b = (await planFit({ slots: 1 }, many, opts)).pick!.speed!;
    expect(b.prefillTokPerSec! / a.prefillTokPerSec!).toBeCloseTo(8, 0);
    expect(a.basis).toMatch(/prefill compute-bound/);
  });
});

describe("issue 27: vLLM proposed on ≥ 80 GB datacenter GPUs", () => {
  const opts = { llamaServer: null, nvcc: true, hub: false } as const;
  it("1 × H100 80 GB: vLLM is the pick and says why; the llama.cpp plan is the first alternative; --runtime llama.cpp keeps llama.cpp", async () => {
    const m = hw([nv(0, "NVIDIA H100 80GB HBM3", 80)], 256);
    const r = await planFit({}, m, opts);
    expect(r.pick!.runtime).toBe("vllm");
    expect(r.pick!.runtimeReason).toMatch(/datacenter GPU.*vLLM batches/);
    expect(r.pick!.reason).toMatch(/vLLM/);
    // FP8 weights on a GPU that runs them natively
    expect(r.pick!.quant).toBe("fp8");
    expect(r.pick!.speed!.decodeTokPerSecPerSlot).toBeGreaterThan(8);
    expect(r.alternatives[0]!.runtime).toBe("llama.cpp");
    const llama = await planFit({ runtime: "llama.cpp" }, m, opts);
    expect(llama.pick!.runtime).toBe("llama.cpp");
  });

  it("8 × H200, 16 slots: one vLLM over all eight GPUs (tensor × data parallel), not eight llama.cpp replicas", async () => {
    const m = hw(
      Array.from({ length: 8 }, (_, i) => nv(i, "NVIDIA H200", 141)),
      1024,
    );
    const r = await planFit({ slots: 16 }, m, opts);
    expect(r.pick!.runtime).toBe("vllm");
    expect(r.pick!.pool).toBeUndefined();
    expect(r.pick!.parallel!.tensor * r.pick!.parallel!.data).toBe(8);
    expect(r.pick!.devices).toHaveLength(8);
    expect(r.pick!.command.split("\n")).toHaveLength(1);
    expect(r.alternatives.some((a) => a.runtime === "llama.cpp" && a.pool?.replicas === 8)).toBe(true);
  });

  it("a 24 GB consumer card stays on llama.cpp", async () => {
    const r = await planFit({}, hw([nv(0, "NVIDIA GeForce RTX 4090", 24)], 64), opts);
    expect(r.pick!.runtime).toBe("llama.cpp");
    expect(r.pick!.runtimeReason).toBeUndefined();
  });
});

describe("issue 27: the December 2026 catalog through planFit", () => {
  const opts = { llamaServer: null, nvcc: true, hub: false } as const;
  it("a vLLM/SGLang-only model (DeepSeek-V4-Flash) is planned for vLLM on 4 × H200; --runtime llama.cpp says why not", async () => {
    const m = hw(
      Array.from({ length: 4 }, (_, i) => nv(i, "NVIDIA H200", 141)),
      1024,
    );
    const r = await planFit({ model: "deepseek-v4-flash", slots: 8 }, m, opts);
    expect(r.pick!.runtime).toBe("vllm");
    expect(r.pick!.command).toMatch(/vllm serve deepseek-ai\/DeepSeek-V4-Flash /);
    const e = await planFit({ model: "deepseek-v4-flash", slots: 8, runtime: "llama.cpp" }, m, opts).catch((x) => x);
    expect(e.message).toMatch(/served by vLLM \/ SGLang only/);
  });
});

describe("MTP switched off (asked): planFit's `mtp: false` reaches every runtime's plan", () => {
  const opts = { llamaServer: null, nvcc: true, hub: false } as const;
  it("1 × H100, Qwen3.6-27B: the vLLM pick and an asked SGLang plan lose --speculative-…; the default keeps them", async () => {
    const m = hw([nv(0, "NVIDIA H100 80GB HBM3", 80)], 256);
    const spec = (cmd: string) => cmd.split(/\s+/).filter((w) => w.startsWith("--speculative-") || w.startsWith("--spec-"));
    const on = await planFit({ model: "qwen3.6-27b" }, m, opts);
    expect(on.pick!.runtime).toBe("vllm");
    expect(spec(on.pick!.command)).toEqual(["--speculative-config"]);
    const off = await planFit({ model: "qwen3.6-27b", mtp: false }, m, opts);
    expect(off.pick!.runtime).toBe("vllm");
    expect(spec(off.pick!.command)).toEqual([]);
    expect(off.pick!.reason).toMatch(/MTP off \(asked\)/);
    const sg = await planFit({ model: "qwen3.6-27b", runtime: "sglang", mtp: false }, m, opts);
    expect(spec(sg.pick!.command)).toEqual([]);
    expect(sg.pick!.reason).toMatch(/MTP off \(asked\)/);
    expect(spec((await planFit({ model: "qwen3.6-27b", runtime: "sglang" }, m, opts)).pick!.command)).toContain("--speculative-algorithm");
  });
});
