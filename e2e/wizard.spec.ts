// The wizard's "Wizard and targets" flows in Chromium against real engines (`ocw serve`): a start's progress and
// failure next to the Start button clicked (root cause in words, never "fetch failed"); a llama-server path typed in;
// the model servers the engine started (stop, start again, keep after `ocw stop`, delete with Cancel focused; `ocw stop`
// ends them); provider presets and the model list fetched from the provider (a stub OpenAI-compatible server). The
// "CUDA llama-server" is test/fixtures/hardware/fake-runtime.ts, the Hub a local stand-in. Screenshots at 1440×900 and
// 900×700 in test-results/screenshots/wizard-*.png.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { cleanup, ROOT, startEngine, tempDir, type E2EEngine } from "./engine";

const SHOTS = path.join(ROOT, "test-results", "screenshots");
const FAKE_BIN = path.join(ROOT, "test", "fixtures", "hardware", "bin");
const SIZES = [
  { width: 1440, height: 900 },
  { width: 900, height: 700 },
];

test.describe.configure({ mode: "serial" });

const dirs: string[] = [];
const engines: E2EEngine[] = [];
const servers: http.Server[] = [];
let dir: string;
let llama: string;
let csv: string;

const listen = async (s: http.Server) => {
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  servers.push(s);
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function engineWith(env: NodeJS.ProcessEnv): Promise<E2EEngine> {
  const e = await startEngine(path.join(dir, `state-${engines.length}`), {
    PATH: [FAKE_BIN, process.env.PATH ?? ""].join(path.delimiter),
    OCW_RAM_BYTES: String(64 * 1024 ** 3),
    OCW_LLAMA_CACHE: path.join(dir, "no-llama"),
    OCW_FAKE_NVIDIA_SMI: csv,
    OCW_FAKE_ROCM_SMI: "",
    OCW_FAKE_GPU_USE: "1",
    OCW_FAKE_LLAMA_DEVICES: path.join(dir, "devices.txt"),
    OCW_FAKE_LLAMA_BUFFERS: "CUDA0=16000,CPU_Mapped=400",
    LLAMA_SERVER: "",
    ...env,
  });
  engines.push(e);
  return e;
}

async function openSetup(page: Page, e: E2EEngine) {
  await page.goto(e.url);
  await page.getByRole("link", { name: "Setup" }).click();
  await expect(page.getByRole("list", { name: "Detected hardware" })).toBeVisible();
}

/** Both sizes, with `name` scrolled into view first. */
async function shots(page: Page, name: string, at: () => ReturnType<Page["locator"]>) {
  for (const s of SIZES) {
    await page.setViewportSize(s);
    await at().scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(SHOTS, `wizard-${name}-${s.width}x${s.height}.png`) });
  }
  await page.setViewportSize(SIZES[0]!);
}

test.beforeAll(async () => {
  dir = tempDir("wizard-e2e");
  dirs.push(dir);
  const { buildSync } = await import("esbuild");
  buildSync({
    entryPoints: [path.join(ROOT, "test/fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: path.join(dir, "fake-runtime.mjs"),
    logLevel: "error",
  });
  mkdirSync(path.join(dir, "bin"));
  llama = path.join(dir, "bin", "llama-server");
  writeFileSync(llama, `#!/bin/sh\nOCW_FAKE_MODE=llama exec "${process.execPath}" "${path.join(dir, "fake-runtime.mjs")}" "$@"\n`);
  chmodSync(llama, 0o755);
  writeFileSync(path.join(dir, "devices.txt"), "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24564 MiB, 24064 MiB free)\n");
  csv = path.join(dir, "nvidia.csv");
  writeFileSync(csv, "0, GPU-0, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 500, 24064, 580.65.06, 8.9\n");
});

test.afterAll(async () => {
  for (const e of engines) {
    await e.client.shutdown.mutate().catch(() => undefined);
    await e.kill();
  }
  for (const s of servers) s.close();
  cleanup(...dirs);
});

test("Start … here: a bad llama-server path and an unreachable Hub are said next to the button, in words", async ({ page }) => {
  const hubPort = await closedPort();
  const e = await engineWith({ OCW_HF_ENDPOINT: `http://127.0.0.1:${hubPort}` });
  await openSetup(page, e);
  await page.setViewportSize(SIZES[1]!);
  const rec = page.getByRole("region", { name: "Recommended setup" });
  await expect(rec).toContainText("Qwen3.8-27B");
  const field = page.getByRole("textbox", { name: /llama-server binary/ });
  await field.fill("/nope/llama-server");
  const button = rec.getByRole("button", { name: /^Start .* here$/ });
  await button.click();
  const status = rec.getByRole("alert", { name: "Start status" });
  await expect(status).toContainText("no llama-server at /nope/llama-server on the engine's machine");
  await expect(status).toBeInViewport();

  await field.fill(llama);
  await button.click();
  const line = rec.getByRole("status", { name: "Start status" });
  await expect(line).toContainText(`Download: cannot reach 127.0.0.1:${hubPort}: nothing listens there (connection refused)`, { timeout: 60_000 });
  await expect(line).toBeInViewport();
  // the phases and the remedy under the same card, the cause said once there; never a bare "fetch failed"
  const start = rec.getByRole("region", { name: "Model start" });
  await expect(start.getByRole("listitem", { name: "Runtime: done" })).toContainText(llama);
  await expect(start.getByRole("alert")).toContainText("What to do:");
  await expect(page.getByText("fetch failed")).toHaveCount(0);
  expect(await start.getByText(`cannot reach 127.0.0.1:${hubPort}`).count()).toBe(1);
  await shots(page, "start-failed", () => rec.getByRole("button", { name: /^Start .* here$/ }));
});

/** An engine with the stand-in Hub and the "CUDA llama-server" found on its PATH: "Start … here" runs to the end. */
async function engineWithHub(): Promise<E2EEngine> {
  const body = Buffer.alloc(512 * 1024, 7);
  const QUANTS = ["Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "UD-Q4_K_M", "MXFP4"];
  const hub = await listen(
    http.createServer((req, res) => {
      const u = new URL(req.url!, "http://x");
      if (/^\/api\/models\/[^/]+\/[^/]+\/tree\/main$/.test(u.pathname)) {
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify(QUANTS.map((q) => ({ type: "file", path: `model-${q}.gguf`, size: body.length }))));
      }
      if (!/\/resolve\/main\/model-[\w-]+\.gguf$/.test(u.pathname)) return res.writeHead(404).end();
      res.writeHead(200, { "content-length": String(body.length) }).end(body);
    }),
  );
  const e = await engineWith({
    OCW_HF_ENDPOINT: hub,
    LLAMA_SERVER: llama,
    PATH: [path.join(dir, "bin"), FAKE_BIN, process.env.PATH ?? ""].join(path.delimiter),
  });
  return e;
}

test("servers the engine started: stop, start again, keep after ocw stop, delete (Cancel focused); ocw stop ends them", async ({ page }) => {
  const e = await engineWithHub();
  await openSetup(page, e);
  const rec = page.getByRole("region", { name: "Recommended setup" });
  await rec.getByRole("button", { name: /^Start .* here$/ }).click();
  await expect(rec.getByRole("status", { name: "Start status" })).toContainText(/built.*saved and active/, { timeout: 90_000 });

  const panel = page.getByRole("region", { name: "Model servers" });
  const row = panel.getByRole("listitem", { name: /^Server llamacpp-/ });
  await expect(row).toContainText("running");
  const [srv] = await e.client.servers.list.query();
  expect(srv!.running).toBe(true);
  await shots(page, "servers-running", () => panel);

  await row.getByRole("button", { name: "Stop" }).click();
  await expect(row).toContainText("stopped");
  expect(() => process.kill(srv!.pid, 0)).toThrow();
  await row.getByRole("button", { name: "Start again" }).click();
  await expect(row).toContainText(/running.*pid/, { timeout: 60_000 });

  const keep = row.getByRole("checkbox", { name: /keep running after/ });
  await keep.check();
  await expect.poll(async () => (await e.client.servers.list.query())[0]!.keep).toBe(true);
  await keep.uncheck();
  await expect.poll(async () => (await e.client.servers.list.query())[0]!.keep).toBe(false);

  await row.getByRole("button", { name: /^Delete server/ }).click();
  const confirm = row.getByRole("group", { name: /Confirm deleting server/ });
  await expect(confirm.getByRole("button", { name: "Cancel" })).toBeFocused();
  await shots(page, "server-delete-confirm", () => panel);
  await confirm.getByRole("button", { name: "Cancel" }).click();
  await expect(row).toContainText("running");

  // `ocw stop` (the shutdown the CLI sends): the server the engine started stops with it
  const [again] = await e.client.servers.list.query();
  process.kill(again!.pid, 0);
  await e.client.shutdown.mutate();
  await expect
    .poll(
      () => {
        try {
          process.kill(again!.pid, 0);
          return "alive";
        } catch {
          return "gone";
        }
      },
      { timeout: 20_000 },
    )
    .toBe("gone");
});

test("API provider: presets fill the URL and key variable; the model list comes from the provider", async ({ page }) => {
  const prov = await listen(
    http.createServer((req, res) => {
      if (req.url !== "/v1/models") return res.writeHead(404).end();
      if (req.headers.authorization !== "Bearer sk-wizard-prov") return res.writeHead(401).end('{"error":"bad key"}');
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ data: [{ id: "qwen/qwen3-coder", context_length: 262144 }, { id: "deepseek/deepseek-chat-v3" }] }));
    }),
  );
  const e = await engineWith({ WIZARD_PROV_KEY: "sk-wizard-prov", OCW_HF_ENDPOINT: "http://127.0.0.1:9" });
  await openSetup(page, e);
  await page.getByRole("radio", { name: /Use an API provider/ }).check();
  const form = page.getByRole("form", { name: "Use an API provider" });
  const preset = form.getByRole("combobox", { name: "Provider" });
  for (const [label, url, env] of [
    ["OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"],
    ["DeepSeek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"],
    ["Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"],
  ] as const) {
    await preset.selectOption({ label: `${label} — ${url}` });
    await expect(form.getByRole("textbox", { name: "Base URL" })).toHaveValue(url);
    await expect(form.getByRole("textbox", { name: "Key environment variable" })).toHaveValue(env);
  }
  await preset.selectOption({ label: "Any OpenAI-compatible API (type its base URL)" });
  await form.getByRole("textbox", { name: "Base URL" }).fill(`${prov}/v1`);
  await form.getByRole("textbox", { name: "Key environment variable" }).fill("NOT_SET_ANYWHERE");
  await form.getByRole("button", { name: "List models" }).click();
  await expect(form.getByRole("alert", { name: "Model list error" })).toContainText(
    "environment variable NOT_SET_ANYWHERE is not set in the engine's environment",
  );
  await form.getByRole("textbox", { name: "Key environment variable" }).fill("WIZARD_PROV_KEY");
  await form.getByRole("button", { name: "List models" }).click();
  const list = form.getByRole("combobox", { name: "Models the provider lists" });
  await expect(list).toContainText("2 models listed by the provider");
  await list.selectOption("qwen/qwen3-coder");
  await expect(form.getByRole("textbox", { name: "Model id" })).toHaveValue("qwen/qwen3-coder");
  await expect(form.getByRole("alert")).toHaveCount(0);
  // a key typed in the form (an app started from a dock has no variable): the list is read with it, the variable unused
  await form.getByRole("textbox", { name: "Key environment variable" }).fill("NOT_SET_ANYWHERE");
  await form.getByLabel(/^API key \(typed here/).fill("sk-wizard-prov");
  await expect(form.getByText("Key environment variable (not used: a key is typed above)")).toBeVisible();
  await form.getByRole("button", { name: "List models" }).click();
  await expect(list).toContainText("2 models listed by the provider");
  await expect(form.getByRole("alert")).toHaveCount(0);
  await shots(page, "provider-models", () => form);

  // a running server to capture lists what it serves the same way
  await page.getByRole("radio", { name: /Capture a running server/ }).check();
  const cap = page.getByRole("form", { name: "Capture a running server" });
  await cap.getByRole("textbox", { name: "Server URL" }).fill(`${prov}/v1`);
  await cap.getByLabel(/^Key environment variable/).fill("WIZARD_PROV_KEY");
  await cap.getByRole("button", { name: "List models" }).click();
  await cap.getByRole("combobox", { name: "Models the server lists" }).selectOption("deepseek/deepseek-chat-v3");
  await expect(cap.getByRole("textbox", { name: /^Model/ })).toHaveValue("deepseek/deepseek-chat-v3");
});

test("deleting a target stops and forgets the server the engine started for it", async ({ page }) => {
  const e = await engineWithHub();
  await openSetup(page, e);
  const rec = page.getByRole("region", { name: "Recommended setup" });
  await rec.getByRole("button", { name: /^Start .* here$/ }).click();
  await expect(rec.getByRole("status", { name: "Start status" })).toContainText(/built.*saved and active/, { timeout: 90_000 });
  const [srv] = await e.client.servers.list.query();
  const targets = page.getByRole("region", { name: "Saved targets" });
  await targets.getByRole("button", { name: /^Delete target/ }).click();
  await targets
    .getByRole("group", { name: /Confirm deleting target/ })
    .getByRole("button", { name: "Delete", exact: true })
    .click();
  await expect(page.getByRole("region", { name: "Model servers" })).toContainText("None");
  expect(await e.client.servers.list.query()).toEqual([]);
  await expect
    .poll(
      () => {
        try {
          process.kill(srv!.pid, 0);
          return "alive";
        } catch {
          return "gone";
        }
      },
      { timeout: 20_000 },
    )
    .toBe("gone");
});
