// The setup wizard in Chromium against real engines (`ocw serve`) on simulated machines: fake nvidia-smi / rocm-smi
// first on PATH (the only GPU doubles), host RAM set with OCW_RAM_BYTES, no llama-server. Every route: run a model on
// this machine (CPU only, 2×24 GB), capture a running server (the scripted model: one that works, one that refuses
// tools, a dead URL), an API provider (unset key, verified, saved unverified by choice). Screenshots in
// test-results/screenshots/setup-*.png.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect, test, type Locator, type Page } from "@playwright/test";
import { startScriptedModel, toolCall, type ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, ROOT, startEngine, tempDir, type E2EEngine } from "./engine";

const SHOTS = path.join(ROOT, "test-results", "screenshots");
/** The app scrolls inside its main pane: bring `at` into view first, so the shot shows what the test checked. */
const shot = async (page: Page, name: string, at?: Locator) => {
  if (at) await at.scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(SHOTS, `setup-${name}.png`) });
};
const FAKE_BIN = path.join(ROOT, "test", "fixtures", "hardware", "bin");
const GiB = 1024 ** 3;
const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";

test.describe.configure({ mode: "serial" });

const dirs: string[] = [];
const engines: E2EEngine[] = [];
const models: ScriptedModel[] = [];

/** An engine on a simulated machine: `gpus` rows for the fake nvidia-smi (none: CPU only). */
async function engineOn(gpus: { name: string; totalMiB: number }[], ramGiB: number, env: NodeJS.ProcessEnv = {}): Promise<E2EEngine> {
  const dir = tempDir("setup-e2e");
  dirs.push(dir);
  let nv: Record<string, string> = {};
  if (gpus.length) {
    const csv = path.join(dir, "nvidia.csv");
    writeFileSync(
      csv,
      gpus
        .map(
          (g, i) =>
            `${i}, GPU-${i}0000000-0000-0000-0000-000000000000, ${g.name}, 00000000:${String(i + 1).padStart(2, "0")}:00.0, ${g.totalMiB}, 500, ${g.totalMiB - 500}, 580.65.06, 8.9`,
        )
        .join("\n") + "\n",
    );
    nv = { OCW_FAKE_NVIDIA_SMI: csv };
  }
  // a CUDA toolkit is here: with no llama-server yet, NVIDIA GPUs are planned for the CUDA source build (CUDA0 …)
  writeFileSync(path.join(dir, "nvcc"), "#!/bin/sh\n", { mode: 0o755 });
  const e = await startEngine(path.join(dir, "state"), {
    PATH: [FAKE_BIN, process.env.PATH ?? ""].join(path.delimiter),
    OCW_NVCC: path.join(dir, "nvcc"),
    OCW_RAM_BYTES: String(ramGiB * GiB),
    LLAMA_SERVER: "",
    OCW_LLAMA_CACHE: path.join(dir, "no-llama"),
    OCW_FAKE_NVIDIA_SMI: "",
    OCW_FAKE_ROCM_SMI: "",
    ...nv,
    ...env,
  });
  engines.push(e);
  return e;
}

async function open(page: Page, e: E2EEngine) {
  await page.goto(e.url);
  await page.getByRole("link", { name: "Setup" }).click();
  await expect(page.getByRole("list", { name: "Detected hardware" })).toBeVisible();
}

let cpu: E2EEngine;
let good: ScriptedModel;
let noTools: ScriptedModel;

test.beforeAll(async () => {
  good = await startScriptedModel({
    modelId: "scripted-coder",
    apiKey: "sk-e2e-setup",
    chunkDelayMs: 10,
    scripts: [
      {
        name: "tools",
        match: (c) => c.hasTools,
        script: (c) => (c.toolResults.length ? { text: `The word is ${c.lastToolResult!.trim()}.` } : toolCall("read", { filePath: "notes/token.txt" })),
      },
      { match: /sumOfSquares/, script: () => ({ text: GOOD }) },
    ],
    fallback: () => ({ text: "one two three four five six seven eight nine ten eleven twelve" }),
  });
  noTools = await startScriptedModel({
    modelId: "no-jinja",
    chunkDelayMs: 10,
    scripts: [
      { name: "refuse", match: (c) => c.hasTools, script: () => ({ error: { status: 500, message: "tools param requires --jinja flag" } }) },
      { match: /sumOfSquares/, script: () => ({ text: GOOD }) },
    ],
    fallback: () => ({ text: "one two three four five six seven eight nine ten eleven twelve" }),
  });
  models.push(good, noTools);
  // the benchmark after a capture / start, short (the e2e default is off: playwright.config.ts)
  cpu = await engineOn([], 16, { OCW_E2E_GOOD_KEY: "sk-e2e-setup", OCW_SETUP_BENCH_SEC: "1" });
});

test.afterAll(async () => {
  // `ocw stop`, not a bare SIGTERM: the model servers an engine started (and their supervisors) stop with it
  for (const e of engines) await e.stop();
  for (const m of models) await m.close();
  cleanup(...dirs);
});

test("CPU-only machine: no invented GPU; the engine's pick for the CPU, its memory chart and the CLI command", async ({ page }) => {
  await open(page, cpu);
  const hw = page.getByRole("list", { name: "Detected hardware" });
  await expect(hw).toContainText("No GPU detected");
  await expect(hw).not.toContainText("GPU 0");
  // The CPU-only note speaks to the person at the wizard: it points at the Slots field below it (it said "set Slots in Setup" on Setup).
  await expect(page.getByText(/^CPU only: 1 slot by default/)).toContainText("set Slots below");
  const rec = page.getByRole("region", { name: "Recommended setup" });
  // the same pick as `ocw fit` on a 16 GiB CPU-only machine (docs/model-setup.md, scenario review)
  const fit = await cpu.client.setup.fit.query({});
  expect(fit.pick?.model).toBe("gpt-oss-20b");
  await expect(rec).toContainText("gpt-oss");
  await expect(rec).toContainText(fit.pick!.quant!);
  await expect(rec).toContainText(`${fit.pick!.slots} (workers at once)`);
  await expect(rec).toContainText(`${fit.pick!.ctxPerSlot.toLocaleString("en-US")} tokens`);
  await expect(rec).toContainText("fits · CPU only");
  await expect(rec.getByRole("img", { name: /^CPU \(RAM\)|^cpu: weights/ })).toBeVisible();
  await expect(rec.getByLabel("ocw setup command")).toContainText(`--slots ${fit.pick!.slots} --ctx ${fit.pick!.ctxPerSlot}`);
  await expect(rec.getByLabel("llama-server command")).toContainText("-ngl 0");
  // the catalog badges are the engine's: the 397B model does not fit 16 GiB
  await expect(page.getByLabel("Qwen3.5-397B-A17B: does not fit")).toBeVisible();
  await shot(page, "01-cpu-only");
  await shot(page, "01b-cpu-catalog", page.getByRole("table", { name: "Model catalog" }));
  // Each quants cell ("4 · 14 GiB–27 GiB") is on one line: no size split from its unit; no "Infinity" for a model without GGUF.
  const quants = page.getByRole("table", { name: "Model catalog" }).locator("td.quants > span");
  expect(await quants.count()).toBeGreaterThan(3);
  expect(new Set(await quants.evaluateAll((els) => els.map((e) => e.getClientRects().length)))).toEqual(new Set([1]));
  await expect(page.getByRole("table", { name: "Model catalog" })).not.toContainText("Infinity");
  // fewer slots than nothing fits: 64 slots × 128k is too much → the problem and the API-provider way out
  await page.getByLabel(/^Slots \(workers at once/).fill("64");
  await page.getByLabel("Minimum context per slot").selectOption("131072");
  await expect(page.getByRole("region", { name: "Recommended setup" }).getByRole("alert")).toContainText("no catalog model fits 64 slots");
  await shot(page, "02-cpu-too-small", page.getByRole("region", { name: "Recommended setup" }));
  await page.getByRole("button", { name: "Use an API provider instead" }).click();
  await expect(page.getByRole("radio", { name: "Use an API provider" })).toBeChecked();
});

test("2×24 GB machine: both GPUs listed, one replica per GPU (a pool), a chart per GPU; another catalog model planned on request", async ({ page }) => {
  const two = await engineOn(
    [
      { name: "NVIDIA GeForce RTX 4090", totalMiB: 24564 },
      { name: "NVIDIA GeForce RTX 4090", totalMiB: 24564 },
    ],
    64,
  );
  await open(page, two);
  await expect(page.getByRole("list", { name: "Detected hardware" }).getByRole("listitem").filter({ hasText: "RTX 4090" })).toHaveCount(2);
  const fit = await two.client.setup.fit.query({});
  expect(fit.pick?.devices.length).toBe(2);
  const rec = page.getByRole("region", { name: "Recommended setup" });
  await expect(rec).toContainText(fit.pick!.quant!);
  await expect(rec).toContainText("fits · on GPU");
  await expect(rec.getByRole("img", { name: /^CUDA0 NVIDIA GeForce RTX 4090: weights/ })).toBeVisible();
  await expect(rec.getByRole("img", { name: /^CUDA1 NVIDIA GeForce RTX 4090: weights/ })).toBeVisible();
  // 4 slots on two cards that each hold the model: two llama-servers, each with its GPU alone, as one pool target
  expect(fit.pick?.pool?.replicas).toBe(2);
  await expect(rec).toContainText("2 llama-servers as one pool target");
  await expect(rec.getByLabel("llama-server command")).toContainText("CUDA_VISIBLE_DEVICES=0");
  await expect(rec.getByLabel("llama-server command")).toContainText("CUDA_VISIBLE_DEVICES=1");
  await shot(page, "03-two-gpus");
  await page.getByRole("button", { name: "Plan gpt-oss-20b" }).click();
  const mine = page.getByRole("region", { name: "Your choice" });
  await expect(mine).toContainText("gpt-oss-20b");
  await expect(mine.getByLabel("ocw setup command")).toContainText("ocw setup --runtime llama.cpp --model ");
  await shot(page, "04-your-choice", mine);
});

test("1 × H100: the MTP checkbox shows only for a picked model with a head, checked; unchecked, the plan loses the speculative flags and says so", async ({
  page,
}) => {
  // a dead Hub: the vLLM plans size the weights from the catalog at once
  const h100 = await engineOn([{ name: "NVIDIA H100 80GB HBM3", totalMiB: 81559 }], 256, { HF_ENDPOINT: "http://127.0.0.1:9" });
  await open(page, h100);
  const box = page.getByRole("checkbox", { name: "Speculative decoding (MTP)" });
  const rec = page.getByRole("region", { name: "Recommended setup" });
  // the engine's recommendation here ships no MTP head: no checkbox for it
  const fit = await h100.client.setup.fit.query({});
  expect(fit.pick?.runtime).toBe("vllm");
  expect(fit.pick?.mtp).toBeUndefined();
  await expect(rec).toContainText("vllm");
  await expect(box).toHaveCount(0);
  // Qwen3.6-27B's safetensors carry one: planned with vLLM on this datacenter GPU, drafting by default
  await page.getByRole("button", { name: "Plan Qwen3.6-27B", exact: true }).click();
  const mine = page.getByRole("region", { name: "Your choice" });
  await expect(mine.getByLabel("vllm command")).toContainText("--speculative-config");
  await expect(box).toBeChecked();
  await expect(page.getByText("faster for one worker; at many workers at once it can lower total throughput")).toBeVisible();
  await expect(box).toHaveAccessibleDescription("with the model's own MTP head: faster for one worker; at many workers at once it can lower total throughput");
  await shot(page, "05-mtp-on", box);
  await box.uncheck();
  await expect(mine.getByLabel("vllm command")).not.toContainText("--speculative");
  await expect(mine).toContainText("MTP off (asked)");
  await expect(mine.getByLabel("ocw setup command")).toContainText("--no-mtp");
  await expect(box).not.toBeChecked();
  await shot(page, "06-mtp-off", mine);
  // checked again: the head drafts again
  await box.check();
  await expect(mine.getByLabel("vllm command")).toContainText("--speculative-config");
  await expect(mine).not.toContainText("MTP off");
});

test("capture: a dead URL says so and saves nothing; a working server is verified (tool call included), saved and active", async ({ page }) => {
  await open(page, cpu);
  await page.getByRole("radio", { name: "Capture a running server" }).check();
  const form = page.getByRole("form", { name: "Capture a running server" });
  await form.getByRole("textbox", { name: "Server URL" }).fill("http://127.0.0.1:9/v1");
  await form.getByRole("button", { name: "Verify and save" }).click();
  await expect(form.getByRole("alert")).toContainText("nothing OpenAI-compatible answers at http://127.0.0.1:9");
  await shot(page, "05-capture-dead-url");
  expect((await cpu.client.targets.list.query()).targets).toHaveLength(0);

  await form.getByRole("textbox", { name: "Server URL" }).fill(good.url);
  await form.getByRole("button", { name: "Verify and save" }).click();
  await expect(form.getByRole("alert")).toContainText("requires a key: name the environment variable");
  await form.getByLabel(/^Key environment variable/).fill("OCW_E2E_GOOD_KEY");
  await form.getByLabel(/^Slots/).fill("2");
  await form.getByLabel("Target id (optional)").fill("scripted-good");
  await expect(form.getByLabel("Capture a running server: CLI command")).toHaveText(`ocw setup --capture ${good.url} --api-key-env OCW_E2E_GOOD_KEY --slots 2`);
  await form.getByRole("button", { name: "Verify and save" }).click();
  const result = page.getByRole("region", { name: "Verify result" });
  await expect(result.getByRole("status")).toContainText("Saved as scripted-good and made active", { timeout: 60_000 });
  const list = result.getByRole("list", { name: "Verify checklist" });
  for (const name of [
    "Reachable",
    "Key required",
    "Slots and context",
    "Requests overlap",
    "Coding task",
    "Thinking kept out of answers",
    "Tool-call round trip",
  ])
    await expect(list.getByLabel(`${name}: pass`)).toBeVisible();
  await expect(page.getByLabel("Active target")).toContainText("scripted-good");
  await shot(page, "06-capture-verified", list);
  // the benchmark after verify: prefill and decode at 1 stream and at the 2 slots, from the stream's clock
  await expect(result.getByLabel("Measured speed")).toContainText(
    /measured: prefill \d+ tok\/s, decode \d+ tok\/s \(1 stream\); \d+ tok\/s in all, \d+ per stream \(2 streams\)/,
  );
  await shot(page, "06b-capture-measured", result);
  expect((await cpu.client.targets.list.query()).targets.find((t) => t.id === "scripted-good")?.bench).toMatchObject({ source: "stream", slots: 2 });
  expect((await cpu.client.targets.list.query()).active).toBe("scripted-good");
});

test("capture: a server that refuses tools (llama-server --no-jinja) fails verify with the reason, and nothing is saved", async ({ page }) => {
  await open(page, cpu);
  await page.getByRole("radio", { name: "Capture a running server" }).check();
  const form = page.getByRole("form", { name: "Capture a running server" });
  await form.getByRole("textbox", { name: "Server URL" }).fill(noTools.url);
  await form.getByLabel(/^Slots/).fill("1");
  await form.getByRole("button", { name: "Verify and save" }).click();
  const result = page.getByRole("region", { name: "Verify result" });
  await expect(result.getByRole("status")).toContainText("Nothing was saved", { timeout: 60_000 });
  await expect(result.getByRole("status")).toContainText("cannot-build");
  const tools = result.getByLabel("Tool-call round trip: fail");
  await expect(tools).toContainText("tools param requires --jinja flag");
  await expect(tools).toContainText("llama-server --jinja");
  await shot(page, "07-capture-no-tools", tools);
  const { targets } = await cpu.client.targets.list.query();
  expect(targets.map((t) => t.id)).toEqual(["scripted-good"]);
});

test("API provider: an unset key variable is a clear error; a verified provider is saved; saving unverified is an explicit choice", async ({ page }) => {
  await open(page, cpu);
  await page.getByRole("radio", { name: "Use an API provider" }).check();
  const form = page.getByRole("form", { name: "Use an API provider" });
  await form.getByLabel("Base URL").fill(good.url);
  await form.getByLabel("Model id").fill("scripted-coder");
  await form.getByLabel(/^Key environment variable/).fill("OCW_E2E_NOT_SET");
  await form.getByRole("button", { name: "Verify and save" }).click();
  await expect(form.getByRole("alert")).toContainText("OCW_E2E_NOT_SET is not set in the engine's environment");
  await shot(page, "08-provider-unset-key");
  expect((await cpu.client.targets.list.query()).targets).toHaveLength(1);

  await form.getByLabel(/^Key environment variable/).fill("OCW_E2E_GOOD_KEY");
  await form.getByLabel(/^Slots/).fill("2");
  await form.getByRole("button", { name: "Verify and save" }).click();
  const result = page.getByRole("region", { name: "Verify result" });
  await expect(result.getByRole("status")).toContainText("Saved as api-scripted-coder and made active", { timeout: 60_000 });
  await expect(result.getByLabel("Tool-call round trip: pass")).toBeVisible();
  await shot(page, "09-provider-verified", result.getByRole("list", { name: "Verify checklist" }));

  await form.getByLabel("Base URL").fill("https://api.example.invalid/v1");
  await form.getByLabel("Model id").fill("vendor/later");
  await form.getByLabel("Target id (optional)").fill("later");
  await form.getByRole("button", { name: "Save without verifying…" }).click();
  await expect(page.getByRole("group", { name: "Confirm saving unverified" })).toContainText("Nothing will be checked");
  await shot(page, "10-provider-confirm-unverified");
  await page.getByRole("button", { name: "Yes, save it unverified" }).click();
  await expect(result.getByRole("status")).toContainText("Saved without verifying");
  // Said once: not again in the engine's own words ("saved later without verifying it (your choice): …").
  await expect(result.getByRole("status")).not.toContainText("without verifying it");
  await expect(page.getByRole("region", { name: "Saved targets" }).getByRole("row").filter({ hasText: "later" })).toContainText("unverified");
  await shot(page, "11-provider-unverified", page.getByRole("region", { name: "Saved targets" }));
  const t = (await cpu.client.targets.list.query()).targets.find((x) => x.id === "later");
  expect(t?.outcome).toBeUndefined();
  expect(t?.checks).toEqual([]);
});

test("run a model here: Start downloads, loads, warms up, verifies live and checks where the weights landed (GPU double, stand-in Hub)", async ({ page }) => {
  // the "CUDA llama-server" is test/fixtures/hardware/fake-runtime.ts (records argv, logs buffers, serves the scripted model)
  const dir = tempDir("setup-e2e-start");
  dirs.push(dir);
  const { buildSync } = await import("esbuild");
  const { chmodSync, mkdirSync } = await import("node:fs");
  const http = await import("node:http");
  buildSync({
    entryPoints: [path.join(ROOT, "test/fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: path.join(dir, "fake-runtime.mjs"),
    logLevel: "error",
  });
  mkdirSync(path.join(dir, "bin"));
  const llama = path.join(dir, "bin", "llama-server");
  writeFileSync(llama, `#!/bin/sh\nOCW_FAKE_MODE=llama exec "${process.execPath}" "${path.join(dir, "fake-runtime.mjs")}" "$@"\n`);
  chmodSync(llama, 0o755);
  writeFileSync(path.join(dir, "devices.txt"), "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24564 MiB, 24064 MiB free)\n");
  const csv = path.join(dir, "nvidia.csv");
  writeFileSync(csv, "0, GPU-0, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 500, 24064, 580.65.06, 8.9\n");
  // the stand-in Hub: one small file per common quant of any repo, streamed slowly enough to watch the bar move
  const body = Buffer.alloc(3 * 1024 * 1024, 7);
  const QUANTS = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "UD-Q4_K_M", "MXFP4"];
  const hub = http.createServer((req, res) => {
    const u = new URL(req.url!, "http://x");
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/main$/.exec(u.pathname);
    if (tree) {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(QUANTS.map((q) => ({ type: "file", path: `model-${q}.gguf`, size: body.length }))));
    }
    if (!/\/resolve\/main\/model-[\w-]+\.gguf$/.test(u.pathname)) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { "content-length": String(body.length) });
    let off = 0;
    const tick = () => {
      if (off >= body.length) return res.end();
      res.write(body.subarray(off, (off += 96 * 1024)));
      setTimeout(tick, 50);
    };
    tick();
  });
  await new Promise<void>((r) => hub.listen(0, "127.0.0.1", () => r()));
  try {
    const e = await engineOn([], 64, {
      PATH: [path.join(dir, "bin"), FAKE_BIN, process.env.PATH ?? ""].join(path.delimiter),
      LLAMA_SERVER: llama,
      OCW_FAKE_NVIDIA_SMI: csv,
      OCW_FAKE_GPU_USE: "1",
      OCW_FAKE_LLAMA_DEVICES: path.join(dir, "devices.txt"),
      OCW_FAKE_LLAMA_BUFFERS: "CUDA0=16000,CPU_Mapped=400",
      OCW_HF_ENDPOINT: `http://127.0.0.1:${(hub.address() as { port: number }).port}`,
    });
    await open(page, e);
    const rec = page.getByRole("region", { name: "Recommended setup" });
    await expect(rec).toContainText("Qwen3.8-27B");
    await expect(page.getByText("not wired")).toHaveCount(0);
    await rec.getByRole("button", { name: /^Start .* here$/ }).click();
    const start = page.getByRole("region", { name: "Model start" });
    await expect(start).toBeVisible();
    // live: the download bar while it runs, then every phase done
    await expect(start.getByRole("progressbar", { name: "Download progress" })).toBeVisible({ timeout: 30_000 });
    await expect(start.getByRole("listitem", { name: "Download: running" })).toBeVisible({ timeout: 30_000 });
    await shot(page, "start-download", start);
    await expect(start.getByRole("listitem", { name: "Weights placement: done" })).toBeVisible({ timeout: 60_000 });
    for (const phase of ["Plan", "Runtime", "Download", "Load", "Warm-up", "Verify"])
      await expect(start.getByRole("listitem", { name: `${phase}: done`, exact: true })).toBeVisible();
    await expect(start.getByRole("list", { name: "Verify checklist" }).getByRole("listitem", { name: "Tool-call round trip: pass" })).toBeVisible();
    await expect(start.getByRole("group", { name: "Where the weights are" })).toContainText("as planned");
    // a clean start is not a restart: the load line says the server is supervised, not that it crashed
    const load = start.getByRole("listitem", { name: "Load: done", exact: true });
    await expect(load).toContainText("(supervised: restarted if it crashes)");
    await expect(load).not.toContainText("restarted after a crash");
    await expect(start.getByRole("status")).toContainText(/built.*saved and active/);
    await expect(page.getByRole("region", { name: "Saved targets" })).toContainText("llamacpp-qwen3.8-27b");
    await shot(page, "start-done", start);
    // The teardown leaves nothing behind: stopping the engine as a person does (`ocw stop`) stops the server it started
    // and its `ocw serving supervise` process (a bare SIGTERM of the engine left both running after the run).
    const recs = JSON.parse(readFileSync(path.join(e.stateDir, "serving.json"), "utf8")) as { pid: number; supervisorPid?: number | null }[];
    const pids = recs.flatMap((r) => [r.pid, r.supervisorPid ?? 0]).filter((p) => p > 0);
    expect(recs.some((r) => r.supervisorPid)).toBe(true);
    expect(pids.every(alive)).toBe(true);
    expect(supervisorsOf(e.stateDir).length).toBeGreaterThan(0);
    await e.stop();
    await expect.poll(() => pids.filter(alive), { timeout: 30_000 }).toEqual([]);
    await expect.poll(() => supervisorsOf(e.stateDir), { timeout: 30_000 }).toEqual([]);
  } finally {
    hub.close();
  }
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    // a zombie (exited, not reaped yet) is gone for our purpose
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

/** `ocw serving supervise` processes of this state dir still running (found by command line and environment in /proc). */
function supervisorsOf(stateDir: string): number[] {
  const found: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (!(cmd.includes("serving") && cmd.includes("supervise"))) continue;
      if (readFileSync(`/proc/${d}/environ`, "utf8").split("\0").includes(`OCW_STATE_DIR=${stateDir}`) && alive(Number(d))) found.push(Number(d));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return found;
}
