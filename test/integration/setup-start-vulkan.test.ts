/**
 * The commonest first run (issue 27): Linux + NVIDIA with no llama-server installed and no nvcc. llama.cpp publishes
 * no Linux CUDA build, so setup installs the Vulkan build — and the plan must name what that build lists
 * (`Vulkan0`), not `CUDA0`, which llama-server refuses (`invalid device: CUDA0`, exit 1).
 * What is real: the engine, its planner, the installer (release listing, download, sha256, unpack, `--version`), the
 * re-plan on the installed build's `--list-devices`, the supervisor and verify. Simulated: the GPU (fake nvidia-smi:
 * 1×8 GB), the release mirror (OCW_LLAMA_RELEASES_URL) and the build itself — the GPU double
 * test/fixtures/hardware/fake-runtime.ts, which lists only Vulkan devices and refuses a --device it does not list,
 * as llama.cpp's argument parser does.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupJob } from "../../shared/setup";
import { writeModel } from "../fixtures/gguf/writer";
import { startEngine, type TestEngine } from "../helpers";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-setup-vulkan-"));
const argvFile = path.join(tmp, "argv.jsonl");
const smiCsv = path.join(tmp, "nv.csv");
const devices = path.join(tmp, "devices.txt");
const SMI = "0, GPU-0, NVIDIA GeForce RTX 4060, 00000000:01:00.0, 8188, 300, 7888, 580.65.06, 8.9\n";
const ASSET = "llama-b7000-bin-ubuntu-vulkan-x64.tar.gz";
let server: http.Server;
let eng: TestEngine;
let model: string;

function records(): { argv: string[]; refused?: string }[] {
  return existsSync(argvFile)
    ? readFileSync(argvFile, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

async function finished(jobId: string): Promise<SetupJob> {
  for (const t0 = Date.now(); Date.now() - t0 < 120_000; await new Promise((r) => setTimeout(r, 200))) {
    const j = await eng.client.setup.job.query({ jobId });
    if (j && j.state !== "running") return j;
  }
  throw new Error(`job ${jobId} did not finish; engine: ${eng.stderr().slice(-2000)}`);
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
  // the release's Vulkan tarball: build/bin/llama-server, a build that sees the RTX 4060 through Vulkan only
  const src = path.join(tmp, "asset", "build", "bin");
  mkdirSync(src, { recursive: true });
  writeFileSync(path.join(src, "llama-server"), `#!/bin/sh\nOCW_FAKE_MODE=llama exec "${process.execPath}" "${path.join(tmp, "fake-runtime.mjs")}" "$@"\n`);
  chmodSync(path.join(src, "llama-server"), 0o755);
  execFileSync("tar", ["-czf", path.join(tmp, ASSET), "-C", path.join(tmp, "asset"), "build"]);
  const tarball = readFileSync(path.join(tmp, ASSET));
  writeFileSync(
    devices,
    "ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = NVIDIA GeForce RTX 4060 (NVIDIA) | uma: 0 | fp16: 1 | bf16: 1 | warp size: 32 | shared memory: 49152 | int dot: 1 | matrix cores: NV_coopmat2\nAvailable devices:\n  Vulkan0: NVIDIA GeForce RTX 4060 (8188 MiB, 7888 MiB free)\n",
  );
  writeFileSync(smiCsv, SMI);
  server = http.createServer((req, res) => {
    const n = decodeURIComponent((req.url ?? "").slice(1));
    if (n === "release.json") {
      res.setHeader("content-type", "application/json");
      // as GitHub lists a Linux release: CPU and Vulkan builds, no CUDA one
      return res.end(
        JSON.stringify({
          tag_name: "b7000",
          assets: [
            {
              name: ASSET,
              browser_download_url: `${base()}/${ASSET}`,
              size: tarball.length,
              digest: `sha256:${createHash("sha256").update(tarball).digest("hex")}`,
            },
          ],
        }),
      );
    }
    if (n !== ASSET) {
      res.statusCode = 404;
      return res.end();
    }
    res.setHeader("content-length", String(tarball.length));
    res.end(tarball);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  model = path.join(tmp, "tiny.gguf");
  await writeModel(model, { arch: "llama", name: "tiny-llama" });
  eng = await startEngine(path.join(tmp, "state"), {
    // no llama-server anywhere (PATH, LLAMA_SERVER, the build cache, <state>/llama) and no nvcc
    PATH: [path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    LLAMA_SERVER: "",
    OCW_LLAMA_CACHE: path.join(tmp, "no-cache"),
    OCW_NVCC: "",
    OCW_FAKE_NVIDIA_SMI: smiCsv,
    OCW_FAKE_GPU_USE: "1",
    OCW_RAM_BYTES: String(32 * 1024 ** 3),
    OCW_LLAMA_RELEASES_URL: `${base()}/release.json`,
    OCW_FAKE_LLAMA_DEVICES: devices,
    OCW_FAKE_ARGV: argvFile,
    OCW_FAKE_LLAMA_BUFFERS: "Vulkan0=60,CPU_Mapped=8",
  });
}, 60_000);

function base() {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterAll(async () => {
  const file = path.join(tmp, "state", "serving.json");
  const recs = (existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : []) as { pid: number; supervisorPid?: number | null }[];
  for (const r of recs)
    for (const pid of [r.supervisorPid, r.pid])
      if (pid && pid > 1)
        try {
          process.kill(pid, "SIGTERM");
        } catch {
          /* gone */
        }
  await eng?.kill();
  server?.close();
});

describe("Linux + NVIDIA, no llama-server, no nvcc: the Vulkan build is installed and planned as Vulkan", () => {
  it("before the install, the plan already names the Vulkan build's devices and says why", async () => {
    // (runs first: no runtime in <state>/llama yet)
    const fit = await eng.client.setup.fit.query({ model, slots: 1, minCtx: 2048 });
    expect(fit.hardware.runtimeDevices).toBeNull();
    expect(fit.pick?.command).toMatch(/--device Vulkan0/);
    expect(fit.hardware.notes.join(" ")).toMatch(/no Linux CUDA build and nvcc is not installed/);
  });

  it("the start uses the device names the installed build lists and succeeds", async () => {
    const j = await finished((await eng.client.setup.start.mutate({ model, slots: 2, ctx: 8192, id: "vk", acceptUnderpowered: true })).jobId);
    const refused = records()
      .filter((r) => r.refused)
      .map((r) => r.refused);
    expect(refused).toEqual([]);
    expect(j.failure).toBeNull();
    expect(j.state).toBe("done");
    expect(j.phases.find((p) => p.name === "runtime")!.detail).toMatch(/installed llama\.cpp b7000 \(vulkan, sha256\).*lists Vulkan0/);
    expect(j.plannedCommand).toMatch(/--device Vulkan0/);
    expect(j.plannedCommand).not.toMatch(/CUDA0/);
    const launched = records()
      .filter((r) => !r.argv.includes("--list-devices") && !r.argv.includes("--version"))
      .at(-1)!;
    expect(launched.argv[launched.argv.indexOf("--device") + 1]).toBe("Vulkan0");
    expect(j.checks.find((c) => c.name === "slots")?.passed).toBe(true);
    expect(j.placement?.passed).toBe(true);
  }, 150_000);

  it("the KV cache type of the plan shown is the one started (setup.start cacheType)", async () => {
    const j = await finished(
      (await eng.client.setup.start.mutate({ model, slots: 2, ctx: 8192, id: "vk", acceptUnderpowered: true, cacheType: "q8_0" })).jobId,
    );
    expect(j.failure).toBeNull();
    expect(j.pick?.cacheType).toBe("q8_0");
    const launched = records()
      .filter((r) => !r.argv.includes("--list-devices") && !r.argv.includes("--version"))
      .at(-1)!;
    expect(launched.argv.join(" ")).toMatch(/-ctk q8_0 -ctv q8_0/);
  }, 150_000);

  it("after the install, ocw fit plans on the installed build's own device list", async () => {
    const fit = await eng.client.setup.fit.query({ model, slots: 1, minCtx: 2048 });
    // a runtime is installed now (<state>/llama): its own --list-devices names the device
    expect(fit.hardware.runtimeDevices, JSON.stringify(fit.hardware.notes)).toEqual(["Vulkan0"]);
    expect(fit.pick?.command).toMatch(/--device Vulkan0/);
  });
});
