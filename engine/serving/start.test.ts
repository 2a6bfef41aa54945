import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { commandWords, shellQuote } from "../models/plan";
import { checkPlacement, classifyDownload, classifyLog, pathHasQuant, replaces, runningGroups, withFreed } from "./start";

describe("start: failure classification from the server's own log", () => {
  it.each([
    ["ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory", "out-of-memory"],
    ["llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'qwen9'", "unsupported-arch"],
    ["error: invalid argument: --n-cpu-moe", "bad-flag"],
    ["ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version", "driver"],
    ["./llama-server: error while loading shared libraries: libcudart.so.12: cannot open shared object file", "library"],
    ["gguf_init_from_file_impl: tensor 'blk.3.ffn_up.weight' data is not within the file bounds, model is corrupted or incomplete", "model-load"],
    ["couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080", "port"],
  ])("%s → %s", (line, kind) => {
    const c = classifyLog(`main: loading model\n${line}\nsrv    load_model: failed to load model\n`);
    expect(c?.kind).toBe(kind);
    expect(c?.logLine).toBe(line);
    expect(c?.remedy.length).toBeGreaterThan(20);
  });
  // logs of the pinned llama-server (80fb11a, -lv 4) failing to start, as recorded (test/fixtures/llama-logs/failures)
  const failed = (f: string) => readFileSync(path.join(__dirname, "../../test/fixtures/llama-logs/failures", f), "utf8");
  it("a quantized V cache with -fa off: the root-cause line, not 'exiting due to model loading error' (which sends one to the model file)", () => {
    const c = classifyLog(failed("quantized-v-fa-off.log"));
    expect(c?.logLine).toMatch(/quantized V cache requires flash_attn to be enabled/);
    expect(c?.kind).toBe("bad-flag");
    expect(c?.remedy).toMatch(/-fa on|flash/);
  });
  it("a device the build does not have (--device CUDA0 on a CPU or Vulkan build): bad-flag, pointing at --list-devices", () => {
    const c = classifyLog(failed("invalid-device.log"), "/x/llama-server");
    expect(c).toMatchObject({ kind: "bad-flag", logLine: 'error while handling argument "--device": invalid device: CUDA0' });
    expect(c?.remedy).toMatch(/--list-devices/);
  });
  it("a failure no rule knows: the first error-level line of llama-server's log (the root cause), not the last (its 'exiting due to …')", () => {
    const log = failed("quantized-v-fa-off.log").replace(/quantized V cache requires flash_attn to be enabled/, "some new check refused the context");
    expect(classifyLog(log)).toMatchObject({ kind: "other", logLine: expect.stringMatching(/E llama_init_from_model: some new check refused the context$/) });
  });
  it("a flag value the build refuses (-fa maybe): bad-flag", () => {
    expect(classifyLog(failed("fa-bad-value.log"))?.kind).toBe("bad-flag");
  });
  it("an unknown failure still gives the last error line; a clean log gives none", () => {
    expect(classifyLog("a\nsomething fatal happened: boom\n")).toMatchObject({ kind: "other", logLine: "something fatal happened: boom" });
    expect(classifyLog("load_tensors: CPU model buffer size = 12.00 MiB\n")).toBeNull();
  });
  it("downloads", () => {
    expect(classifyDownload("GET x answered HTTP 401 (gated or private: set HF_TOKEN)").kind).toBe("auth");
    expect(classifyDownload("f.gguf needs 59.0 GiB but /x has 3.0 GiB free; …").kind).toBe("disk");
    expect(classifyDownload("checksum mismatch for f.gguf").kind).toBe("checksum");
    expect(classifyDownload("cannot download http://x: fetch failed").kind).toBe("network");
  });
});

describe("start: the Hub files of a quant", () => {
  it("matches a quant by file or folder name, not a look-alike", () => {
    expect(pathHasQuant("Qwen3.6-35B-A3B-UD-Q4_K_M.gguf", "UD-Q4_K_M")).toBe(true);
    expect(pathHasQuant("Qwen3.6-35B-A3B-UD-Q4_K_M.gguf", "Q4_K_M")).toBe(false);
    expect(pathHasQuant("Qwen3.6-35B-A3B-Q4_K_M.gguf", "Q4_K_M")).toBe(true);
    expect(pathHasQuant("UD-Q4_K_M/Qwen3.6-35B-A3B-UD-Q4_K_M-00001-of-00002.gguf", "UD-Q4_K_M")).toBe(true);
    expect(pathHasQuant("Q8_0/model-00002-of-00003.gguf", "q8_0")).toBe(true);
    expect(pathHasQuant("model-Q4_K_S.gguf", "Q4_K_M")).toBe(false);
  });
});

describe("start: the launch is the pick's command", () => {
  it("quoting round-trips paths and -ot patterns", () => {
    const args = ["-m", "/models/a b/it's.gguf", "-ot", ".ffn_.*_exps.=CPU", "--n-cpu-moe", "34"];
    const cmd = `LLAMA_API_KEY=… llama-server ${args.map(shellQuote).join(" ")}`;
    expect(commandWords(cmd)).toEqual({ env: ["LLAMA_API_KEY=…"], bin: "llama-server", args });
  });
});

describe("start: placement against the plan", () => {
  const GiB = 1024 ** 3;
  const pick = {
    placement: "moe-offload" as const,
    devices: [
      {
        name: "CUDA0 NVIDIA GeForce RTX 4060",
        budgetBytes: 8 * GiB,
        plannedBytes: 7 * GiB,
        breakdown: { weightsBytes: 4 * GiB, kvBytes: GiB, computeBytes: GiB, overheadBytes: 0, marginBytes: GiB },
      },
      {
        name: "cpu",
        budgetBytes: 32 * GiB,
        plannedBytes: 16 * GiB,
        breakdown: { weightsBytes: 15 * GiB, kvBytes: 0, computeBytes: 0, overheadBytes: 0, marginBytes: GiB },
      },
    ],
  };
  it("passes when the log shows the weights where planned", () => {
    const p = checkPlacement(
      pick,
      "load_tensors:        CUDA0 model buffer size =  4100.00 MiB\nload_tensors:   CPU_Mapped model buffer size = 15300.00 MiB\n",
    );
    expect(p.passed).toBe(true);
    expect(p.devices[0]!.loadedBytes).toBeCloseTo(4100 * 1024 ** 2);
  });
  it("fails when the GPU got nothing (a CPU build), or when nvidia-smi shows no memory taken", () => {
    expect(checkPlacement(pick, "load_tensors:   CPU_Mapped model buffer size = 19400.00 MiB\n").passed).toBe(false);
    const smi = { before: [{ name: "NVIDIA GeForce RTX 4060", usedBytes: 0.3 * GiB }], after: [{ name: "NVIDIA GeForce RTX 4060", usedBytes: 0.4 * GiB }] };
    const p = checkPlacement(pick, "load_tensors:        CUDA0 model buffer size =  4100.00 MiB\n", smi);
    expect(p.passed).toBe(false);
    expect(p.evidence.join(" ")).toMatch(/vendor tool shows 0\.1 GiB more/);
  });
  it("no buffer lines at all is not a pass", () => {
    expect(checkPlacement(pick, "nothing\n").passed).toBe(false);
  });
});

describe("start: replacing a running server of the same target", () => {
  const hw = (usedMiB: number) =>
    ({
      platform: "linux",
      arch: "x64",
      cpu: { model: "x", cores: 2 },
      ram: { totalBytes: 64 * 2 ** 30, freeBytes: 32 * 2 ** 30 },
      llamaDevices: null,
      probes: [],
      problems: [],
      ms: 1,
      gpus: [
        {
          index: 0,
          vendor: "nvidia",
          name: "G",
          totalBytes: 24576 * 2 ** 20,
          usedBytes: usedMiB * 2 ** 20,
          freeBytes: (24576 - usedMiB) * 2 ** 20,
          unified: false,
          source: "nvidia-smi",
        },
      ],
    }) as unknown as import("../hardware/detect").HardwareReport;
  const rec = (targetId: string, args: string[], bytes: number, extra: Record<string, unknown> = {}) => ({
    targetId,
    pid: process.pid,
    supervisorPid: null,
    port: 1,
    bin: "llama-server",
    args,
    logFile: "",
    keyFile: null,
    startedAt: "",
    gpuBytes: [{ index: 0, bytes }],
    ...extra,
  });
  const pick = (model: string, quant: string | null, command: string) => ({ model, quant, command }) as unknown as import("../../shared/fit").FitPick;

  it("groups live records by target (replicas summed per GPU), skips dead pids and records without figures", () => {
    const gs = runningGroups([
      rec("a@1", ["-m", "/m.gguf"], 5 * 2 ** 30, { replicaOf: "a" }),
      rec("a@2", ["-m", "/m.gguf"], 2 ** 30, { replicaOf: "a" }),
      rec("dead", [], 2 ** 30, { pid: 0 }),
      { ...rec("old", [], 0), gpuBytes: undefined },
    ]);
    expect(gs.map((g) => [g.id, g.recs.length, g.bytes.get(0)])).toEqual([["a", 2, 6 * 2 ** 30]]);
  });
  it("frees a target's memory on its GPUs (never past the total)", () => {
    const h = withFreed(hw(20000), new Map([[0, 16000 * 2 ** 20]]));
    expect([h.gpus[0]!.freeBytes! / 2 ** 20, h.gpus[0]!.usedBytes! / 2 ** 20]).toEqual([20576, 4000]);
    expect(withFreed(hw(1000), new Map([[0, 5000 * 2 ** 20]])).gpus[0]!.freeBytes).toBe(24576 * 2 ** 20);
  });
  it("replaces only the target setup will stop: the asked id, or the id derived from the catalog model / the same file", () => {
    const g = {
      id: "llamacpp-qwen3.6-27b-q4-k-m",
      recs: [rec("llamacpp-qwen3.6-27b-q4-k-m", ["-m", "/x.gguf", "--alias", "qwen3.6-27b-q4-k-m"], 1) as never],
      bytes: new Map(),
    };
    expect(replaces(pick("qwen3.6-27b", "Q4_K_M", "LLAMA_API_KEY=… llama-server -hf unsloth/Qwen3.6-27B-GGUF:Q4_K_M"), g)).toBe(true);
    expect(replaces(pick("qwen3.6-27b", "Q8_0", "LLAMA_API_KEY=… llama-server -hf unsloth/Qwen3.6-27B-GGUF:Q8_0"), g)).toBe(false);
    expect(replaces(pick("qwen3.6-27b", "Q8_0", "x"), g, "llamacpp-qwen3.6-27b-q4-k-m")).toBe(true);
    expect(replaces(pick("qwen3.6-27b", "Q4_K_M", "x"), g, "mine")).toBe(false);
    const f = { id: "llamacpp-tiny", recs: [rec("llamacpp-tiny", ["-m", "/models/tiny.gguf", "--alias", "tiny"], 1) as never], bytes: new Map() };
    expect(replaces(pick("/models/tiny.gguf", null, "LLAMA_API_KEY=… llama-server -m /models/tiny.gguf -c 4096"), f)).toBe(true);
    expect(replaces(pick("/models/other.gguf", null, "LLAMA_API_KEY=… llama-server -m /models/other.gguf -c 4096"), f)).toBe(false);
  });
});
