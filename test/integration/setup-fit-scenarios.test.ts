/**
 * `ocw fit --json` as a real process on simulated machines: fake nvidia-smi / rocm-smi first on PATH (the only test
 * doubles), host RAM set with OCW_RAM_BYTES, no llama-server (so the plan assumes the matching build). Each expected
 * pick was reviewed against what an expert would run (docs/model-setup.md, "Scenario review"). `ocw fit` asks the
 * engine (setup.plan), which plans for its own machine: one engine per simulated machine (its state dir keyed by the
 * machine), each started by the first `ocw fit` there and stopped after the file.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createHash } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { FitResult } from "../../shared/fit";
import { BUNDLE, stopDetachedEngine } from "../helpers";

const run = promisify(execFile);
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-fit-scen-"));
const FAKE_BIN = path.join(__dirname, "../fixtures/hardware/bin");
const FAKE_NVCC = path.join(tmp, "nvcc");
writeFileSync(FAKE_NVCC, "#!/bin/sh\necho 'Cuda compilation tools, release 12.8'\n", { mode: 0o755 });
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

function nvidia(n: number, name: string, totalMiB: number, usedMiB = 500): string {
  const f = path.join(tmp, `nv-${n}-${totalMiB}.csv`);
  const rows = Array.from(
    { length: n },
    (_, i) =>
      `${i}, GPU-${i}000000-0000-0000-0000-000000000000, ${name}, 00000000:${String(i + 1).padStart(2, "0")}:00.0, ${totalMiB}, ${usedMiB}, ${totalMiB - usedMiB}, 580.65.06, 9.0`,
  );
  writeFileSync(f, rows.join("\n") + "\n");
  return f;
}

function rocm(name: string, totalBytes: number, usedBytes: number): string {
  const f = path.join(tmp, `rocm-${totalBytes}.json`);
  writeFileSync(
    f,
    JSON.stringify({
      card0: { "VRAM Total Memory (B)": String(totalBytes), "VRAM Total Used Memory (B)": String(usedBytes), "Card series": name, "Card model": "0x74a1" },
    }),
  );
  return f;
}

async function fit(args: string[], hw: { nvidia?: string; rocm?: string; ramGiB: number }, extraEnv: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = {
    HOME: process.env.HOME,
    PATH: [FAKE_BIN, path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    // one engine per simulated machine: the engine detects the hardware it plans for
    OCW_STATE_DIR: path.join(
      tmp,
      `state-${createHash("sha256")
        .update(JSON.stringify([hw, extraEnv]))
        .digest("hex")
        .slice(0, 12)}`,
    ),
    OCW_LLAMA_CACHE: path.join(tmp, "no-llama"),
    OCW_RAM_BYTES: String(hw.ramGiB * GiB),
    // a CUDA toolkit is here: with no llama-server yet, NVIDIA GPUs are planned for the CUDA source build (CUDA0 …)
    OCW_NVCC: FAKE_NVCC,
    ...(hw.nvidia ? { OCW_FAKE_NVIDIA_SMI: hw.nvidia } : {}),
    ...(hw.rocm ? { OCW_FAKE_ROCM_SMI: hw.rocm } : {}),
    ...extraEnv,
  };
  engines.add(env.OCW_STATE_DIR!);
  try {
    const r = await run(process.execPath, [BUNDLE, "fit", ...args], { env, timeout: 60_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

const engines = new Set<string>();
afterAll(async () => {
  for (const dir of engines) await stopDetachedEngine(dir);
}, 120_000);

const kvType = (cmd: string) => /-ctk (\S+)/.exec(cmd)?.[1] ?? "f16";

describe("ocw fit --json on simulated machines", () => {
  it("1×8 GB + 32 GiB RAM → a 3B-active MoE with experts in RAM, not a layer-split dense model", async () => {
    const r = await fit(["--json"], { nvidia: nvidia(1, "NVIDIA GeForce RTX 4060", 8188), ramGiB: 32 });
    expect(r.code, r.stderr).toBe(0);
    const j = FitResult.parse(JSON.parse(r.stdout));
    const p = j.pick!;
    expect(p.model).toBe("qwen3.6-35b-a3b");
    expect(p.placement).toBe("moe-offload");
    expect(p.command).toMatch(/--n-cpu-moe \d+/);
    expect(p.ctxPerSlot).toBeGreaterThanOrEqual(32768);
    expect(kvType(p.command)).not.toBe("q4_0");
    expect(p.devices.map((d) => d.name)).toEqual(["CUDA0 NVIDIA GeForce RTX 4060", "cpu"]);
    for (const d of p.devices) expect(d.plannedBytes).toBeLessThan(d.budgetBytes);
    expect(p.command).toMatch(/^LLAMA_API_KEY=… llama-server -hf /);
    expect(j.problem).toBeNull();
  });
  it("1×24 GB → Qwen3.8-27B Q4_K_M whole on the GPU, 4 slots × ≥32k, at agent speed", async () => {
    const j = FitResult.parse(JSON.parse((await fit(["--json"], { nvidia: nvidia(1, "NVIDIA GeForce RTX 4090", 24564), ramGiB: 64 })).stdout));
    expect([j.pick!.model, j.pick!.quant, j.pick!.placement, j.pick!.slots]).toEqual(["qwen3.8-27b", "Q4_K_M", "gpu", 4]);
    expect(j.pick!.speed!.decodeTokPerSecPerSlot).toBeGreaterThanOrEqual(8);
    expect(j.pick!.ctxPerSlot).toBeGreaterThanOrEqual(32768);
    expect(j.pick!.devices).toHaveLength(1);
    expect(j.alternatives.length).toBeGreaterThan(0);
  });
  it("2×24 GB, 4 slots → two replicas of the same model (Q5_K_M, 2 slots each, one GPU each); the Q8_0 split over both is the alternative", async () => {
    const j = FitResult.parse(JSON.parse((await fit(["--json"], { nvidia: nvidia(2, "NVIDIA GeForce RTX 3090", 24576), ramGiB: 64 })).stdout));
    expect([j.pick!.model, j.pick!.quant, j.pick!.slots]).toEqual(["qwen3.8-27b", "Q5_K_M", 4]);
    expect(j.pick!.ctxPerSlot).toBeGreaterThanOrEqual(32768);
    expect(["f16", "q8_0"]).toContain(kvType(j.pick!.command));
    expect(j.pick!.pool!.endpoints.map((e) => [e.devices, e.slots])).toEqual([
      [["CUDA0"], 2],
      [["CUDA1"], 2],
    ]);
    expect(j.pick!.pool!.endpoints.map((e) => /CUDA_VISIBLE_DEVICES=(\d)/.exec(e.command)?.[1])).toEqual(["0", "1"]);
    expect(j.pick!.devices.map((d) => d.name)).toEqual(["CUDA0 NVIDIA GeForce RTX 3090", "CUDA1 NVIDIA GeForce RTX 3090"]);
    expect(j.pick!.command).not.toMatch(/ -ts /);
    expect(j.pick!.reason).toMatch(/2 replicas, one llama-server per GPU/);
    const split = j.alternatives.find((a) => a.model === "qwen3.8-27b" && !a.pool)!;
    expect(split.quant).toBe("Q8_0");
    expect(split.command).toMatch(/ -ts \d+,\d+ /);
    // one slot cannot be shared by two servers: then the Q8_0 split is the pick
    const one = FitResult.parse(
      JSON.parse((await fit(["--json", "--slots", "1"], { nvidia: nvidia(2, "NVIDIA GeForce RTX 3090", 24576), ramGiB: 64 })).stdout),
    );
    expect([one.pick!.quant, one.pick!.pool]).toEqual(["Q8_0", undefined]);
  });
  it("1×80 GB → vLLM with the maker's FP8 (a datacenter GPU), saying why; --runtime llama.cpp → Q8_0 with 128k per slot, f16 cache", async () => {
    const v = FitResult.parse(JSON.parse((await fit(["--json"], { nvidia: nvidia(1, "NVIDIA H100 80GB HBM3", 81559), ramGiB: 256 })).stdout));
    expect([v.pick!.runtime, v.pick!.quant]).toEqual(["vllm", "fp8"]);
    expect(v.pick!.runtimeReason).toMatch(/datacenter GPU/);
    expect(v.alternatives[0]!.runtime).toBe("llama.cpp");
    const j = FitResult.parse(
      JSON.parse((await fit(["--json", "--runtime", "llama.cpp"], { nvidia: nvidia(1, "NVIDIA H100 80GB HBM3", 81559), ramGiB: 256 })).stdout),
    );
    expect([j.pick!.quant, j.pick!.ctxPerSlot, kvType(j.pick!.command)]).toEqual(["Q8_0", 131072, "f16"]);
  });
  it("8×141 GB, 16 slots → one vLLM over all eight (issue 27); with llama.cpp 8 replicas × 2 slots, one H200 each, never layer-split over all eight", async () => {
    const v = FitResult.parse(JSON.parse((await fit(["--json", "--slots", "16"], { nvidia: nvidia(8, "NVIDIA H200", 143771), ramGiB: 1024 })).stdout));
    expect([v.pick!.runtime, v.pick!.parallel!.tensor * v.pick!.parallel!.data, v.pick!.pool]).toEqual(["vllm", 8, undefined]);
    const j = FitResult.parse(
      JSON.parse((await fit(["--json", "--slots", "16", "--runtime", "llama.cpp"], { nvidia: nvidia(8, "NVIDIA H200", 143771), ramGiB: 1024 })).stdout),
    );
    expect(j.pick!.pool!.replicas).toBe(8);
    expect(j.pick!.pool!.endpoints.every((e) => e.devices.length === 1 && e.slots === 2 && !/ -ts /.test(e.command))).toBe(true);
    expect(j.pick!.pool!.endpoints.map((e) => /CUDA_VISIBLE_DEVICES=(\d)/.exec(e.command)?.[1])).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
    expect(j.pick!.devices).toHaveLength(8);
    expect(j.pick!.slots).toBe(16);
    expect(j.pick!.ctxPerSlot).toBeGreaterThanOrEqual(32768);
    expect(j.hardware.gpus).toHaveLength(8);
  });
  it("AMD 24 GB and 192 GB on Linux, no llama-server yet → the Vulkan build setup installs (llama.cpp has no Linux ROCm prebuilt in the pin), its device ids", async () => {
    const a = FitResult.parse(JSON.parse((await fit(["--json"], { rocm: rocm("Radeon RX 7900 XTX", 25753026560, 1102827520), ramGiB: 64 })).stdout));
    expect(a.pick!.devices[0]!.name).toBe("Vulkan0 Radeon RX 7900 XTX");
    expect(a.pick!.placement).toBe("gpu");
    const b = FitResult.parse(
      JSON.parse((await fit(["--json", "--runtime", "llama.cpp"], { rocm: rocm("AMD Instinct MI300X", 192 * GiB, 300 * MiB), ramGiB: 512 })).stdout),
    );
    expect([b.pick!.quant, b.pick!.devices[0]!.name]).toEqual(["Q8_0", "Vulkan0 AMD Instinct MI300X"]);
    // a 192 GB datacenter GPU without a runtime asked: vLLM on ROCm
    const c = FitResult.parse(JSON.parse((await fit(["--json"], { rocm: rocm("AMD Instinct MI300X", 192 * GiB, 300 * MiB), ramGiB: 512 })).stdout));
    expect([c.pick!.runtime, c.pick!.devices[0]!.name]).toEqual(["vllm", "ROCm0 AMD Instinct MI300X"]);
  });
  it("CPU only, 16 GiB → gpt-oss-20b on the CPU, 1 slot; 8 GiB → exit 3 with what to change", async () => {
    const r = await fit(["--json"], { ramGiB: 16 });
    const j = FitResult.parse(JSON.parse(r.stdout));
    expect([j.pick!.model, j.pick!.placement, j.pick!.slots]).toEqual(["gpt-oss-20b", "cpu", 1]);
    expect(j.pick!.devices.map((d) => d.name)).toEqual(["cpu"]);
    expect(j.pick!.command).toContain("-ngl 0");
    const small = await fit(["--json"], { ramGiB: 8 });
    expect(small.code).toBe(3);
    const s = FitResult.parse(JSON.parse(small.stdout));
    expect(s.pick).toBeNull();
    expect(s.problem).toMatch(/API provider/);
  });
  it("a named model and a concurrency that does not fit → exit 3 naming fewer slots", async () => {
    const r = await fit(["--json", "--model", "qwen3.6-27b", "--slots", "64", "--min-ctx", "131072"], {
      nvidia: nvidia(1, "NVIDIA GeForce RTX 4090", 24564),
      ramGiB: 16,
    });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).problem).toMatch(/--slots \d+/);
  });
  it("bad input → exit 2 with one line", async () => {
    for (const args of [
      ["--slots", "0"],
      ["--min-ctx", "lots"],
      ["--model", "/nope.gguf"],
      ["--model", "qwen3.6-27b:Q2_K"],
    ]) {
      const r = await fit([...args, "--json"], { ramGiB: 16 });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    }
  });
  it("--runtime vllm on 2×24 GB → Qwen3.8-27B FP8, tensor parallel 2 (bf16's 56 GB does not fit); 8×141 GB → 8 data-parallel engines", async () => {
    const arg = (cmd: string, f: string) => new RegExp(`${f} (\\S+)`).exec(cmd)?.[1] ?? null;
    const a = await fit(["--json", "--runtime", "vllm"], { nvidia: nvidia(2, "NVIDIA GeForce RTX 3090", 24576), ramGiB: 64 });
    expect(a.code, a.stderr).toBe(0);
    const p = FitResult.parse(JSON.parse(a.stdout)).pick!;
    expect([p.model, p.quant, p.runtime, p.parallel, p.slots]).toEqual(["qwen3.8-27b", "fp8", "vllm", { tensor: 2, data: 1 }, 4]);
    expect(p.command).toMatch(/^VLLM_API_KEY=… vllm serve Qwen\/Qwen3.8-27B-FP8 /);
    expect([arg(p.command, "--tensor-parallel-size"), arg(p.command, "--max-num-seqs")]).toEqual(["2", "4"]);
    expect(p.devices.map((d) => d.name)).toEqual(["CUDA0 NVIDIA GeForce RTX 3090", "CUDA1 NVIDIA GeForce RTX 3090"]);
    const b = FitResult.parse(
      JSON.parse((await fit(["--json", "--runtime", "sglang", "--slots", "16"], { nvidia: nvidia(8, "NVIDIA H200", 143771), ramGiB: 1024 })).stdout),
    ).pick!;
    // H200 runs FP8 natively: the maker's FP8 weights first
    expect([b.model, b.quant, b.runtime, b.parallel, b.ctxPerSlot]).toEqual(["qwen3.8-27b", "fp8", "sglang", { tensor: 1, data: 8 }, 131072]);
    expect([arg(b.command, "--dp-size"), arg(b.command, "--max-running-requests")]).toEqual(["8", "2"]);
    expect(b.command).not.toMatch(/--api-key/);
    // no GPU: exit 3 saying to use llama.cpp; a GGUF file: exit 2
    const c = await fit(["--json", "--runtime", "vllm"], { ramGiB: 16 });
    expect([c.code, JSON.parse(c.stdout).problem]).toEqual([3, expect.stringMatching(/--runtime llama.cpp/)]);
    const d = await fit(["--json", "--runtime", "vllm", "--model", __filename], { ramGiB: 16 });
    expect([d.code, d.stderr]).toEqual([2, expect.stringMatching(/^ocw: .*not a GGUF|is a file/)]);
  });
  it("multi-GPU with vLLM installed: `ocw fit` lists vLLM's tensor × data parallel plan as an alternative to the llama.cpp pick", async () => {
    const bin = path.join(tmp, "vllm-bin");
    const { mkdirSync, chmodSync } = await import("node:fs");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "vllm"), "#!/bin/sh\nexit 0\n");
    chmodSync(path.join(bin, "vllm"), 0o755);
    const r = await fit(["--json"], { nvidia: nvidia(2, "NVIDIA GeForce RTX 3090", 24576), ramGiB: 64 }, { OCW_VLLM_BIN: path.join(bin, "vllm") });
    const j = FitResult.parse(JSON.parse(r.stdout));
    expect(j.pick!.runtime).toBe("llama.cpp");
    const v = j.alternatives.find((a) => a.runtime === "vllm")!;
    expect([v.model, v.parallel]).toEqual(["qwen3.8-27b", { tensor: 2, data: 1 }]);
    // without it: llama.cpp alternatives only
    const none = FitResult.parse(JSON.parse((await fit(["--json"], { nvidia: nvidia(2, "NVIDIA GeForce RTX 3090", 24576), ramGiB: 64 })).stdout));
    expect(none.alternatives.every((a) => a.runtime === "llama.cpp")).toBe(true);
  });
  it("a llama-server that sees no GPU (CPU build) → plans on the CPU and says why", async (ctx) => {
    const bin = process.env.LLAMA_SERVER;
    if (!bin) return ctx.skip("LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh");
    const r = await fit(["--json"], { nvidia: nvidia(1, "NVIDIA GeForce RTX 4090", 24564), ramGiB: 32 }, { LLAMA_SERVER: bin });
    const j = FitResult.parse(JSON.parse(r.stdout));
    expect(j.hardware.runtimeDevices).toEqual([]);
    expect(j.pick!.devices.map((d) => d.name)).toEqual(["cpu"]);
    expect(j.hardware.notes.join(" ")).toMatch(/not visible to llama-server/);
  });
});
