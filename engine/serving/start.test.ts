import { describe, expect, it } from "vitest";
import { commandWords, shellQuote } from "../models/plan";
import { checkPlacement, classifyDownload, classifyLog, pathHasQuant } from "./start";

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
      { name: "CUDA0 NVIDIA GeForce RTX 4060", budgetBytes: 8 * GiB, plannedBytes: 7 * GiB, breakdown: { weightsBytes: 4 * GiB, kvBytes: GiB, computeBytes: GiB, overheadBytes: 0, marginBytes: GiB } },
      { name: "cpu", budgetBytes: 32 * GiB, plannedBytes: 16 * GiB, breakdown: { weightsBytes: 15 * GiB, kvBytes: 0, computeBytes: 0, overheadBytes: 0, marginBytes: GiB } },
    ],
  };
  it("passes when the log shows the weights where planned", () => {
    const p = checkPlacement(pick, "load_tensors:        CUDA0 model buffer size =  4100.00 MiB\nload_tensors:   CPU_Mapped model buffer size = 15300.00 MiB\n");
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
