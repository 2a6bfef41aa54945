/**
 * setup.start on a real `ocw serve`: plan → runtime → download → load → warm-up → verify → placement, with live
 * `setup` events. The machine is simulated (fake nvidia-smi: 1×8 GB, 32 GiB RAM) and the runtime is the GPU double
 * test/fixtures/hardware/fake-runtime.ts (a "CUDA llama-server" that logs where the weights went and serves the scripted
 * model; also a fake `vllm` and a fake python with `sglang`). The Hub is a local stand-in (OCW_HF_ENDPOINT) holding a
 * split GGUF. What is real: the engine, its planner, the download (Range resume, sha256), the supervisor, the verify.
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupJob } from "../../shared/setup";
import { FitResult } from "../../shared/fit";
import { startEngine, type TestEngine } from "../helpers";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-setup-start-"));
const bin = path.join(tmp, "bin");
const pyDir = path.join(tmp, "py");
const argvFile = path.join(tmp, "argv.jsonl");
const control = path.join(tmp, "control.json");
const smiCsv = path.join(tmp, "nv.csv");
const SMI = "0, GPU-0, NVIDIA GeForce RTX 4060, 00000000:01:00.0, 8188, 300, 7888, 580.65.06, 8.9\n";
const REPO = "unsloth/Qwen3.6-35B-A3B-GGUF";
/** Qwen2.5-Coder-1.5B's shape and size (3.09 GB of bf16): fits the simulated 8 GB card with 2 × 32k. */
const ST_REPO = "Qwen/Qwen2.5-Coder-1.5B-Instruct";
const SHARDS = ["UD-Q4_K_M/Qwen3.6-35B-A3B-UD-Q4_K_M-00001-of-00002.gguf", "UD-Q4_K_M/Qwen3.6-35B-A3B-UD-Q4_K_M-00002-of-00002.gguf"];
const bytes = SHARDS.map((_, i) => Buffer.alloc((3 - i) * 1024 * 1024, i + 1));
let hugeListing = false;
const rangeRequests: string[] = [];
let hub: http.Server;
let eng: TestEngine;
const events: SetupJob[] = [];
let unsubscribe: (() => void) | null = null;

function fakeBin(name: string, mode: string, dir = bin) {
  mkdirSync(dir, { recursive: true });
  const f = path.join(dir, name);
  writeFileSync(f, `#!/bin/sh\nOCW_FAKE_MODE=${mode} exec "${process.execPath}" "${path.join(tmp, "fake-runtime.mjs")}" "$@"\n`);
  chmodSync(f, 0o755);
  return f;
}

function records(): { mode: string; argv: string[]; keyFrom: string; keyInArgv: boolean }[] {
  return existsSync(argvFile)
    ? readFileSync(argvFile, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

async function finished(jobId: string, timeoutMs = 120_000): Promise<SetupJob> {
  const t0 = Date.now();
  for (;;) {
    const j = await eng.client.setup.job.query({ jobId });
    if (j && j.state !== "running") return j;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`job ${jobId} still running: ${JSON.stringify(j?.phases)} checks ${JSON.stringify(j?.checks)}; engine: ${eng.stderr().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  buildSync({
    entryPoints: [path.join(__dirname, "../fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: path.join(tmp, "fake-runtime.mjs"),
    logLevel: "error",
  });
  fakeBin("llama-server", "llama");
  fakeBin("vllm", "vllm");
  fakeBin("python3", "python", pyDir);
  writeFileSync(smiCsv, SMI);
  writeFileSync(path.join(tmp, "devices.txt"), "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4060 (8188 MiB, 7888 MiB free)\n");
  // the stand-in Hub: a tree listing with the split quant (and a look-alike quant), resolve with Range, slow enough to show progress
  hub = http.createServer((req, res) => {
    const u = new URL(req.url!, "http://x");
    if (u.pathname === `/api/models/${REPO}/tree/main`) {
      const entry = (p: string, b: Buffer) => ({
        type: "file",
        path: p,
        size: b.length,
        lfs: { oid: createHash("sha256").update(b).digest("hex"), size: hugeListing ? 2 ** 50 : b.length },
      });
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(
        JSON.stringify([
          ...SHARDS.map((p, i) => entry(p, bytes[i]!)),
          entry("Qwen3.6-35B-A3B-Q4_K_M.gguf", Buffer.alloc(10)),
          { type: "file", path: "README.md", size: 5 },
        ]),
      );
    }
    // a safetensors repo for vLLM / SGLang: sized from the listing, shaped by its config.json
    if (u.pathname === `/api/models/${ST_REPO}/tree/main`) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(
        JSON.stringify([
          { type: "file", path: "config.json", size: 700 },
          { type: "file", path: "model.safetensors", size: 3_087_467_144, lfs: { oid: "0".repeat(64), size: 3_087_467_144 } },
        ]),
      );
    }
    if (u.pathname === `/${ST_REPO}/resolve/main/config.json`) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(
        JSON.stringify({
          num_attention_heads: 12,
          num_key_value_heads: 2,
          num_hidden_layers: 28,
          hidden_size: 1536,
          max_position_embeddings: 32768,
          vocab_size: 151936,
        }),
      );
    }
    const i = SHARDS.findIndex((p) => u.pathname === `/${REPO}/resolve/main/${p}`);
    if (i < 0) {
      res.writeHead(404);
      return res.end("not found");
    }
    const b = bytes[i]!;
    const m = /bytes=(\d+)-/.exec(req.headers.range ?? "");
    const start = m ? Number(m[1]) : 0;
    if (m) rangeRequests.push(`${i}:${start}`);
    res.writeHead(m ? 206 : 200, { "content-length": String(b.length - start) });
    let off = start;
    const tick = () => {
      if (off >= b.length) return res.end();
      const n = Math.min(256 * 1024, b.length - off);
      res.write(b.subarray(off, off + n));
      off += n;
      setTimeout(tick, 40);
    };
    tick();
  });
  await new Promise<void>((r) => hub.listen(0, "127.0.0.1", () => r()));
  const state = path.join(tmp, "state");
  // a download cut short earlier: the first shard resumes from 1 MiB
  const part = path.join(state, "models", REPO.replace("/", "__"), `${SHARDS[0]}.part`);
  mkdirSync(path.dirname(part), { recursive: true });
  writeFileSync(part, bytes[0]!.subarray(0, 1024 * 1024));
  eng = await startEngine(state, {
    PATH: [bin, path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    OCW_FAKE_NVIDIA_SMI: smiCsv,
    OCW_FAKE_GPU_USE: "1",
    OCW_RAM_BYTES: String(32 * 1024 ** 3),
    LLAMA_SERVER: path.join(bin, "llama-server"),
    OCW_LLAMA_CACHE: path.join(tmp, "none"),
    OCW_HF_ENDPOINT: `http://127.0.0.1:${(hub.address() as AddressInfo).port}`,
    OCW_FAKE_LLAMA_DEVICES: path.join(tmp, "devices.txt"),
    OCW_FAKE_ARGV: argvFile,
    OCW_FAKE_CONTROL: control,
    OCW_PYTHON: path.join(pyDir, "python3"),
  });
  const sub = eng.client.events.subscribe(
    { lastEventId: null },
    {
      onData: (d) => {
        const e = d.data as { type: string; job?: SetupJob };
        if (e.type === "setup" && e.job) events.push(e.job);
      },
    },
  );
  unsubscribe = () => sub.unsubscribe();
}, 60_000);

/** Stops what the starts left running (supervisors first): the fake GPU's memory is free again for the next plan. */
async function stopServers() {
  const recs = existsSync(path.join(tmp, "state", "serving.json"))
    ? (JSON.parse(readFileSync(path.join(tmp, "state", "serving.json"), "utf8")) as { pid: number; supervisorPid?: number | null }[])
    : [];
  const pids = recs.flatMap((r) => [r.supervisorPid, r.pid]).filter((p): p is number => !!p && p > 1);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      continue;
    }
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  writeFileSync(smiCsv, SMI);
}

afterAll(async () => {
  unsubscribe?.();
  // `ocw serving stop` asks the engine, which it started in the CLI's state dir
  const { stopDetachedEngine } = await import("../helpers");
  for (const dir of ["cli-state", "cli-state-old", "cli-state-nogpu"]) await stopDetachedEngine(path.join(tmp, dir));
  await stopServers();
  await eng?.kill();
  hub?.close();
});

describe("setup.start (llama.cpp): the planner's MoE pick on 1×8 GB, by phases", () => {
  let job: SetupJob;
  let pickCommand: string;
  it("downloads every shard (resumed, checked), starts the planner's command with --n-cpu-moe, verifies live, confirms placement", async () => {
    const fit = FitResult.parse(await eng.client.setup.fit.query({}));
    expect(fit.pick?.placement).toBe("moe-offload");
    expect(fit.pick?.command).toMatch(/--n-cpu-moe \d+/);
    pickCommand = fit.pick!.command;
    const gpu = fit.pick!.devices.find((d) => d.name.startsWith("CUDA0"))!;
    const cpu = fit.pick!.devices.find((d) => d.name === "cpu")!;
    // the "driver" puts the weights where the plan said
    writeFileSync(
      control,
      JSON.stringify({ buffers: `CUDA0=${Math.round(gpu.breakdown!.weightsBytes / 2 ** 20)},CPU_Mapped=${Math.round(cpu.breakdown!.weightsBytes / 2 ** 20)}` }),
    );
    const first = await eng.client.setup.start.mutate({});
    expect(first.state).toBe("running");
    await expect(eng.client.setup.start.mutate({})).rejects.toThrow(/already running/);
    job = await finished(first.jobId);
    expect(job.failure).toBeNull();
    expect(job.state).toBe("done");
    expect(job.phases.map((p) => [p.name, p.status])).toEqual([
      ["plan", "done"],
      ["runtime", "done"],
      ["download", "done"],
      ["load", "done"],
      ["warmup", "done"],
      ["verify", "done"],
      ["placement", "done"],
      ["bench", "skipped"],
    ]);
    for (const p of job.phases) expect(p.ms).toEqual(expect.any(Number));
    // download: both shards, the first resumed at 1 MiB, sha256 checked
    const dir = path.join(tmp, "state", "models", REPO.replace("/", "__"));
    SHARDS.forEach((s, i) => expect(statSync(path.join(dir, s)).size).toBe(bytes[i]!.length));
    expect(rangeRequests).toContain("0:1048576");
    expect(job.phases.find((p) => p.name === "download")!.detail).toMatch(/2 files.*sha256.*resumed at 1 MiB/);
    const progress = events
      .filter((e) => e.jobId === job.jobId)
      .map((e) => e.phases.find((p) => p.name === "download")!.progress)
      .filter(Boolean);
    expect(progress.some((p) => p!.fileIndex === 1 && p!.files === 2)).toBe(true);
    expect(progress.some((p) => p!.total === bytes[0]!.length + bytes[1]!.length && (p!.bytesPerSec ?? 0) > 0 && p!.etaSec !== null)).toBe(true);
    expect(progress.at(-1)!.resumedBytes).toBe(1024 * 1024);
    // the launch is the planner's command: same words but the model file, port, alias and -fit/-lv
    const launched = records()
      .filter((r) => r.mode === "llama" && !r.argv.includes("--list-devices") && !r.argv.includes("--version"))
      .at(-1)!;
    expect(launched.keyFrom).toBe("env LLAMA_API_KEY");
    expect(launched.keyInArgv).toBe(false);
    const strip = (a: string[]) => {
      const out: string[] = [];
      for (let i = 0; i < a.length; i++) {
        if (["-m", "-hf", "--port", "--alias", "-fit", "-lv"].includes(a[i]!)) i++;
        else out.push(a[i]!);
      }
      return out;
    };
    const planned = pickCommand.replace(/^LLAMA_API_KEY=… llama-server /, "").split(" ");
    expect(strip(launched.argv)).toEqual(strip(planned));
    expect(launched.argv[launched.argv.indexOf("-m") + 1]).toBe(path.join(dir, SHARDS[0]!));
    expect(launched.argv).toContain("--n-cpu-moe");
    // verify streamed its checks one by one
    const counts = events.filter((e) => e.jobId === job.jobId).map((e) => e.checks.length);
    expect(new Set(counts).size).toBeGreaterThanOrEqual(4);
    expect(job.checks.map((c) => c.name)).toEqual(["reachable", "auth", "slots", "concurrency", "capability", "reasoning", "tools"]);
    // placement: the log's buffers and the device memory the (fake) nvidia-smi reports
    expect(job.placement?.passed).toBe(true);
    expect(job.placement?.evidence.join(" ")).toMatch(/CUDA0 \d+ MiB/);
    expect(job.placement?.evidence.join(" ")).toMatch(/device memory: CUDA0 NVIDIA GeForce RTX 4060 .* GiB used \(\+/);
    expect(job.result?.outcome).toBe("built");
    expect(job.result?.active).toBe(true);
    expect((await eng.client.targets.list.query()).active).toBe(job.result?.target.id);
  }, 180_000);

  it("starting the same target again plans with its running server's GPU memory free (it is replaced), not around it", async () => {
    const recs = () =>
      JSON.parse(readFileSync(path.join(tmp, "state", "serving.json"), "utf8")) as {
        targetId: string;
        pid: number;
        gpuBytes?: { index: number; bytes: number }[];
      }[];
    const id = job.result!.target.id;
    const old = recs().find((r) => r.targetId === id)!;
    // what the first server holds, as the (fake) nvidia-smi measured it: its CUDA0 buffer + 1.5 GB of context
    expect(old.gpuBytes).toEqual([{ index: 0, bytes: expect.any(Number) }]);
    expect(old.gpuBytes![0]!.bytes).toBeGreaterThan(1500 * 2 ** 20);
    // the fake GPU now shows that memory in use: what is left is less than the plan puts there (a plan around it differs)
    const freeMiB = Number(readFileSync(smiCsv, "utf8").split(",")[6]);
    expect(freeMiB * 2 ** 20).toBeLessThan(job.pick!.devices.find((d) => d.name.startsWith("CUDA0"))!.plannedBytes);
    const again = await finished((await eng.client.setup.start.mutate({})).jobId);
    expect(again.failure).toBeNull();
    expect(again.plannedCommand).toBe(pickCommand);
    expect(again.phases.find((p) => p.name === "plan")!.detail).toMatch(
      new RegExp(`running server of target ${id} \\(pid ${old.pid}\\) holds .* GiB of GPU memory: counted as free`),
    );
    // one server for the target: the old one stopped, the new one's memory measured after it was gone
    const now = recs().filter((r) => r.targetId === id);
    expect(now).toHaveLength(1);
    expect(now[0]!.pid).not.toBe(old.pid);
    expect(again.placement?.passed).toBe(true);
    expect(again.placement?.evidence.join(" ")).toMatch(/device memory: CUDA0 NVIDIA GeForce RTX 4060 .* GiB used \(\+[1-9]/);
  }, 180_000);

  it("a failed load names the server's own log line and what to do, and leaves no serving record", async () => {
    await stopServers();
    writeFileSync(
      control,
      JSON.stringify({
        fail: "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 19000.00 MiB on device 0: cudaMalloc failed: out of memory\nllama_model_load: error loading model: unable to allocate CUDA0 buffer\nsrv    load_model: failed to load model",
      }),
    );
    const j = await finished((await eng.client.setup.start.mutate({ id: "oom-try" })).jobId);
    expect(j.state).toBe("failed");
    expect(j.failure).toMatchObject({ phase: "load", kind: "out-of-memory" });
    expect(j.failure!.logLine).toMatch(/cudaMalloc failed: out of memory/);
    expect(j.failure!.cause).not.toMatch(/exited \(1\)/);
    expect(j.failure!.remedy).toMatch(/fewer slots/);
    expect(j.phases.find((p) => p.name === "download")!.status).toBe("done");
    expect(j.phases.find((p) => p.name === "warmup")!.status).toBe("skipped");
    const serving = JSON.parse(readFileSync(path.join(tmp, "state", "serving.json"), "utf8")) as { targetId: string; pid: number }[];
    expect(serving.find((r) => r.targetId === "oom-try")).toBeUndefined();
  }, 120_000);

  it("a start that verify finds cannot-build stops the server it started, and says so", async () => {
    await stopServers();
    writeFileSync(control, JSON.stringify({ toolsAsText: true }));
    try {
      const j = await finished((await eng.client.setup.start.mutate({ id: "no-tools" })).jobId);
      expect(j.result?.outcome, JSON.stringify(j.failure)).toBe("cannot-build");
      const pid = j.servers![0]!.pid;
      expect(j.result!.summary).toMatch(new RegExp(`tool calls do not work: .*; the model server this setup started was stopped \\(pid ${pid}\\)$`));
      // nothing left running or recorded for it
      const serving = JSON.parse(readFileSync(path.join(tmp, "state", "serving.json"), "utf8")) as { targetId: string }[];
      expect(serving.find((r) => r.targetId === "no-tools")).toBeUndefined();
      expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      writeFileSync(control, "{}");
    }
  }, 120_000);

  it("a port taken between choosing and binding it is started again on another port, not failed", async () => {
    await stopServers();
    const launches = () => records().filter((x) => x.mode === "llama" && x.argv.includes("--port"));
    const before = launches().length;
    writeFileSync(
      control,
      JSON.stringify({
        failOnce: "main: couldn't bind HTTP server socket, hostname: 127.0.0.1\nError: listen EADDRINUSE: address already in use 127.0.0.1:1",
        onceFile: path.join(tmp, "port-taken-once"),
      }),
    );
    const j = await finished((await eng.client.setup.start.mutate({ id: "port-race" })).jobId);
    expect(j.phases.find((p) => p.name === "load")!.status, JSON.stringify(j.failure)).toBe("done");
    const ports = launches()
      .slice(before)
      .map((x) => x.argv[x.argv.indexOf("--port") + 1]);
    expect(ports).toHaveLength(2);
    expect(ports[0]).not.toBe(ports[1]);
    await stopServers();
  }, 120_000);

  it("weights that went to RAM fail the placement check with the fix", async () => {
    await stopServers();
    writeFileSync(control, JSON.stringify({ buffers: "CPU_Mapped=20000" }));
    const j = await finished((await eng.client.setup.start.mutate({ id: "cpu-build" })).jobId);
    expect(j.phases.find((p) => p.name === "placement")!.status).toBe("failed");
    expect(j.placement?.passed).toBe(false);
    expect(j.failure).toMatchObject({ phase: "placement", kind: "placement" });
    expect(j.failure!.cause).toMatch(/CUDA0: 0\.00 GiB of weights loaded where the plan put/);
    expect(j.failure!.remedy).toMatch(/CUDA/);
  }, 120_000);

  it("a download larger than the free disk is refused before a byte is fetched", async () => {
    await stopServers();
    hugeListing = true;
    const before = rangeRequests.length;
    try {
      const j = await finished((await eng.client.setup.start.mutate({ id: "huge" })).jobId);
      expect(j.failure).toMatchObject({ phase: "download", kind: "disk" });
      expect(j.failure!.cause).toMatch(/needs .* GiB more on disk .* GiB free/);
      expect(j.failure!.remedy).toMatch(/OCW_STATE_DIR/);
      expect(rangeRequests.length).toBe(before);
    } finally {
      hugeListing = false;
    }
  }, 60_000);
});

describe("setup.start --runtime vllm | sglang (fake binaries that record their argv and serve the OpenAI API)", () => {
  it("vLLM: key in VLLM_API_KEY, never argv; slots and context as asked; verified and saved", async () => {
    const j = await finished((await eng.client.setup.start.mutate({ runtime: "vllm", model: ST_REPO, slots: 2, minCtx: 32768 })).jobId);
    expect(j.failure).toBeNull();
    const r = records()
      .filter((x) => x.mode === "vllm")
      .at(-1)!;
    expect(r.argv.slice(0, 2)).toEqual(["serve", ST_REPO]);
    expect(r.argv.join(" ")).toMatch(/--max-model-len 32768 --max-num-seqs 2 --gpu-memory-utilization 0.9 /);
    // the planner's command (one GPU: no tensor or data parallel flags), sized from the Hub's listing
    expect(j.pick).toMatchObject({ runtime: "vllm", parallel: { tensor: 1, data: 1 } });
    expect(j.pick!.reason).toMatch(/the Hub's listing/);
    expect(r.argv).not.toContain("--tensor-parallel-size");
    expect([r.keyFrom, r.keyInArgv]).toEqual(["env VLLM_API_KEY", false]);
    expect(j.plannedCommand).toMatch(/^VLLM_API_KEY=… /);
    expect(j.result?.target.serving.engine).toBe("vllm");
    expect(j.result?.outcome).toBe("built");
  }, 120_000);

  it("SGLang: python -m sglang.launch_server with the key in a 0600 --config file", async () => {
    // the vLLM above holds its share of the (fake) GPU: another target plans around it, so stop it first
    await stopServers();
    const j = await finished((await eng.client.setup.start.mutate({ runtime: "sglang", model: ST_REPO, slots: 2, minCtx: 32768, id: "sgl" })).jobId);
    expect(j.failure).toBeNull();
    const r = records()
      .filter((x) => x.mode === "python" && x.argv[0] === "-m")
      .at(-1)!;
    expect(r.argv.slice(0, 2)).toEqual(["-m", "sglang.launch_server"]);
    expect(r.argv).not.toContain("--api-key");
    expect([r.keyFrom, r.keyInArgv]).toEqual(["config file", false]);
    const cfg = r.argv[r.argv.indexOf("--config") + 1]!;
    expect(statSync(cfg).mode & 0o777).toBe(0o600);
    expect(j.result?.target.serving.engine).toBe("sglang");
    expect(j.result?.outcome).toBe("built");
  }, 120_000);

  it("vLLM without a model plans from the catalog; on an 8 GB card nothing fits whole → a no-fit in the plan phase naming llama.cpp", async () => {
    const j = await finished((await eng.client.setup.start.mutate({ runtime: "vllm", id: "no-model" })).jobId);
    expect(j.failure).toMatchObject({ phase: "plan", kind: "no-fit" });
    expect(j.failure!.cause).toMatch(/does not fit .* with vLLM .*--runtime llama.cpp/);
    // a GGUF repo is not for vLLM: bad input, before anything starts
    const g = await finished((await eng.client.setup.start.mutate({ runtime: "vllm", model: "someone/Coder-GGUF", id: "gguf" })).jobId);
    expect(g.failure).toMatchObject({ phase: "plan", kind: "input" });
    expect(g.failure!.cause).toMatch(/GGUF repo/);
  }, 30_000);
});

describe("ocw setup --runtime vllm|sglang (the bundled CLI)", () => {
  const ocw = async (args: string[], env: NodeJS.ProcessEnv) => {
    const { execa } = await import("execa");
    return execa(process.execPath, [path.join(__dirname, "../../dist/ocw.mjs"), ...args], { reject: false, env: { ...process.env, ...env }, timeout: 120_000 });
  };
  const env = () => ({
    OCW_STATE_DIR: path.join(tmp, "cli-state"),
    PATH: [bin, path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    OCW_FAKE_ARGV: argvFile,
    OCW_PYTHON: path.join(pyDir, "python3"),
    OCW_HF_ENDPOINT: eng.url,
    OCW_FAKE_NVIDIA_SMI: "",
    OCW_RAM_BYTES: String(32 * 1024 ** 3),
  });
  it("starts vLLM with the planned tensor × data parallel flags (4×24 GB: Qwen3.6-27B FP8, TP 2 × DP 2), verifies it and saves the target (exit 0), the key never in argv", async () => {
    const smi4 = path.join(tmp, "nv4.csv");
    writeFileSync(
      smi4,
      Array.from({ length: 4 }, (_, i) => `${i}, GPU-${i}, NVIDIA GeForce RTX 4090, 00000000:0${i + 1}:00.0, 24564, 500, 24064, 580.65.06, 8.9`).join("\n") +
        "\n",
    );
    const gpuEnv = {
      ...env(),
      OCW_FAKE_NVIDIA_SMI: smi4,
      OCW_FAKE_GPU_USE: "1",
      PATH: [bin, path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    };
    const r = await ocw(["setup", "--runtime", "vllm", "--model", "Qwen/Qwen3.6-27B-FP8", "--slots", "4", "--ctx", "32768", "--yes"], gpuEnv);
    expect(r.stderr).toMatch(/plan: done .*tensor parallel 2 .*× data parallel 2/);
    expect(r.stderr).toMatch(/load: done .*vLLM pid \d+/);
    expect(r.stderr).toMatch(/command: VLLM_API_KEY=… .*vllm serve Qwen\/Qwen3.6-27B-FP8 /);
    expect(r.stdout).toMatch(/^BUILT: /);
    // placement: each of the 4 GPUs gained vLLM's share (the fake claims --gpu-memory-utilization of each, as vLLM does)
    expect(r.stderr).toMatch(
      /placement: done .*device memory: CUDA3 NVIDIA GeForce RTX 4090 .*\(\+\d+\.\d GiB since before the start\).*the weights are where the plan put them/,
    );
    expect(r.exitCode).toBe(0);
    const rec = records()
      .filter((x) => x.mode === "vllm")
      .at(-1)!;
    expect(rec.keyInArgv).toBe(false);
    const a = rec.argv.join(" ");
    expect(a).toMatch(/--max-model-len 32768 --max-num-seqs 2 /);
    expect(a).toMatch(/--tensor-parallel-size 2 --data-parallel-size 2 /);
    expect(a).toMatch(/--tool-call-parser qwen3_coder/);
    // Qwen3.6 thinks: without the family's reasoning parser its <think>…</think> would land in `content`
    expect(a).toMatch(/--reasoning-parser qwen3/);
    // again, with the GPUs showing what the running vLLM holds (0.9 of each): the plan counts it free and replaces it
    const recs = JSON.parse(readFileSync(path.join(tmp, "cli-state", "serving.json"), "utf8")) as {
      targetId: string;
      pid: number;
      gpuBytes?: { index: number; bytes: number }[];
    }[];
    const old = recs.find((x) => x.targetId === "vllm-qwen3.6-27b-fp8")!;
    expect(old.gpuBytes!.map((g) => g.index)).toEqual([0, 1, 2, 3]);
    expect(readFileSync(smi4, "utf8").split("\n")[0]!.split(", ")[6]).not.toBe("24064");
    const again = await ocw(["setup", "--runtime", "vllm", "--model", "Qwen/Qwen3.6-27B-FP8", "--slots", "4", "--ctx", "32768", "--yes"], gpuEnv);
    expect(again.stderr).toMatch(
      new RegExp(
        `plan: done .*tensor parallel 2 .*running server of target vllm-qwen3.6-27b-fp8 \\(pid ${old.pid}\\) holds .* GiB of GPU memory: counted as free`,
      ),
    );
    expect(again.exitCode, again.stderr).toBe(0);
    const now = (JSON.parse(readFileSync(path.join(tmp, "cli-state", "serving.json"), "utf8")) as { targetId: string; pid: number }[]).filter(
      (x) => x.targetId === old.targetId,
    );
    expect(now.map((x) => x.pid)).not.toContain(old.pid);
    expect(now).toHaveLength(1);
    expect(again.stderr).toMatch(/placement: done .*the weights are where the plan put them/);
    await ocw(["serving", "stop"], env());
  }, 150_000);
  it("a vLLM older than the model family's minimum (Qwen3.6: ≥ 0.19) is refused before launch, naming the upgrade", async () => {
    const smi4 = path.join(tmp, "nv4-old.csv");
    writeFileSync(
      smi4,
      Array.from({ length: 4 }, (_, i) => `${i}, GPU-${i}, NVIDIA GeForce RTX 4090, 00000000:0${i + 1}:00.0, 24564, 500, 24064, 580.65.06, 8.9`).join("\n") +
        "\n",
    );
    const launchesBefore = records().filter((x) => x.mode === "vllm" && x.argv[0] === "serve").length;
    const r = await ocw(["setup", "--runtime", "vllm", "--model", "Qwen/Qwen3.6-27B-FP8", "--slots", "4", "--ctx", "32768", "--yes", "--json"], {
      ...env(),
      OCW_STATE_DIR: path.join(tmp, "cli-state-old"),
      OCW_FAKE_NVIDIA_SMI: smi4,
      OCW_FAKE_VLLM_VERSION: "0.11.0",
      PATH: [bin, path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    });
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      /runtime failed \(runtime-version\): vLLM 0\.11\.0 .*older than 0\.19\.0.*Qwen3\.5\/3\.6|runtime failed \(runtime-version\): vLLM 0\.11\.0 .*older than 0\.19\.0/,
    );
    expect(r.stderr).toMatch(/pip install -U 'vllm>=0\.19\.0'/);
    expect(records().filter((x) => x.mode === "vllm" && x.argv[0] === "serve").length).toBe(launchesBefore);
  }, 60_000);
  it("an unknown runtime, or vLLM without a model, is exit 2 with one line", async () => {
    // A machine without GPUs: its own state dir, so its own engine (an engine detects the hardware it plans for, and
    // the tests above left one running on 4 simulated GPUs).
    const noGpu = { ...env(), OCW_STATE_DIR: path.join(tmp, "cli-state-nogpu") };
    const a = await ocw(["setup", "--runtime", "ollama", "--yes"], noGpu);
    expect([a.exitCode, a.stderr.trim()]).toEqual([2, expect.stringMatching(/^ocw: --runtime ollama is not supported; use llama.cpp, vllm or sglang/)]);
    const b = await ocw(["setup", "--runtime", "sglang", "--yes"], noGpu);
    expect(b.exitCode).toBe(2);
    expect(b.stderr.trim()).toMatch(/^ocw: SGLang needs NVIDIA \(CUDA\) or AMD \(ROCm\) GPUs .*--runtime llama.cpp/);
  }, 60_000);
});
