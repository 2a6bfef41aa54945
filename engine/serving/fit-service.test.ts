// planFit (issue 27): the planner as a typed engine service, called directly (no CLI output parsed), with the
// review's planner cases that go through it.
import { describe, expect, it } from "vitest";
import type { HardwareReport } from "../hardware/detect";
import { isSetupError } from "../models/errors";
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
