/**
 * Model setup over the engine's typed API (what the wizard uses): a real `ocw serve` on a simulated 1×24 GB machine
 * (fake nvidia-smi first on PATH), the same pick as `ocw fit --json`, the catalog with a per-entry fit, bad input as 400.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CatalogView, FitResult } from "../../shared/fit";
import { startEngine, type TestEngine } from "../helpers";
import { startScriptedModel, toolCall, type ScriptedModel } from "../fixtures/scripted-model";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-setup-api-"));
let eng: TestEngine;
let model: ScriptedModel;
const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";

beforeAll(async () => {
  model = await startScriptedModel({
    modelId: "scripted-coder",
    apiKey: "sk-api-test",
    chunkDelayMs: 10,
    scripts: [
      {
        name: "tools",
        match: (c) => c.hasTools,
        script: (c) => (c.toolResults.length ? { text: `It says ${c.lastToolResult!.trim()}.` } : toolCall("read", { filePath: "notes/token.txt" })),
      },
      { match: /sumOfSquares/, script: () => ({ text: GOOD }) },
    ],
    fallback: () => ({ text: "one two three four five six seven eight nine ten eleven twelve" }),
  });
  const csv = path.join(tmp, "nv.csv");
  writeFileSync(csv, "0, GPU-0, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 500, 24064, 580.65.06, 8.9\n");
  eng = await startEngine(path.join(tmp, "state"), {
    PATH: [path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    OCW_FAKE_NVIDIA_SMI: csv,
    OCW_RAM_BYTES: String(64 * 1024 ** 3),
    LLAMA_SERVER: "",
    OCW_LLAMA_CACHE: path.join(tmp, "none"),
    OCW_TEST_SCRIPTED_KEY: "sk-api-test",
    OCW_TEST_WRONG_KEY: "nope",
  });
});
afterAll(async () => {
  await eng?.kill();
  await model?.close();
});

describe("setup.* routes", () => {
  it("hardware, fit and catalog come from the engine's planner", async () => {
    const hw = await eng.client.setup.hardware.query();
    expect(hw.gpus.map((g) => g.name)).toEqual(["NVIDIA GeForce RTX 4090"]);
    const fit = FitResult.parse(await eng.client.setup.fit.query({ slots: 4 }));
    expect([fit.pick?.model, fit.pick?.quant, fit.pick?.placement]).toEqual(["qwen3.8-27b", "Q4_K_M", "gpu"]);
    const cat = (await eng.client.setup.catalog.query({ slots: 4 })).map((c) => CatalogView.parse(c));
    expect(cat.find((c) => c.id === "qwen3.6-27b")?.fit?.placement).toBe("gpu");
    expect(cat.find((c) => c.id === "qwen3.5-397b-a17b")?.fit).toBeNull();
    expect(cat.find((c) => c.id === "qwen3.5-397b-a17b")?.fitProblem).toMatch(/does not fit|no catalog model fits/);
  });
  it("bad input is a 400 with one line", async () => {
    await expect(eng.client.setup.fit.query({ model: "/nope.gguf" })).rejects.toThrow(/no such file/);
    await expect(eng.client.setup.fit.query({ slots: 0 })).rejects.toThrow(/slots must be ≥ 1/);
  });
});

describe("setup.capture / setup.provider: saved only after a real verify", () => {
  it("a dead URL is a 400 with one line, and nothing is saved", async () => {
    await expect(eng.client.setup.capture.mutate({ url: "http://127.0.0.1:9/v1" })).rejects.toThrow(
      /nothing OpenAI-compatible answers at http:\/\/127.0.0.1:9/,
    );
    expect((await eng.client.targets.list.query()).targets).toHaveLength(0);
  });
  it("a key variable unset in the engine's environment is a clear error, and nothing is saved", async () => {
    await expect(eng.client.setup.capture.mutate({ url: model.url, apiKeyEnv: "OCW_UNSET_KEY_VAR" })).rejects.toThrow(
      /OCW_UNSET_KEY_VAR is not set in the engine's environment/,
    );
    await expect(eng.client.setup.provider.mutate({ url: model.url, model: "scripted-coder", apiKeyEnv: "OCW_UNSET_KEY_VAR" })).rejects.toThrow(
      /not set in the engine's environment/,
    );
    await expect(eng.client.setup.capture.mutate({ url: model.url })).rejects.toThrow(/requires a key: name the environment variable/);
    await expect(eng.client.setup.capture.mutate({ url: "not a url" })).rejects.toThrow(/server URL/);
    expect((await eng.client.targets.list.query()).targets).toHaveLength(0);
  });
  it("a wrong provider key is refused before anything is saved", async () => {
    await expect(eng.client.setup.provider.mutate({ url: model.url, model: "scripted-coder", apiKeyEnv: "OCW_TEST_WRONG_KEY" })).rejects.toThrow(
      /refused the key: check the value of OCW_TEST_WRONG_KEY/,
    );
    expect((await eng.client.targets.list.query()).targets).toHaveLength(0);
  });
  it("capture verifies (tool-call round trip included), then saves and activates a built target", async () => {
    const r = await eng.client.setup.capture.mutate({ url: model.url, apiKeyEnv: "OCW_TEST_SCRIPTED_KEY", slots: 2, id: "scripted" });
    expect(r.outcome).toBe("built");
    expect(r.saved).toBe(true);
    expect(r.active).toBe(true);
    expect(r.checks.map((c) => c.name)).toEqual(["reachable", "auth", "slots", "concurrency", "capability", "reasoning", "tools"]);
    const list = await eng.client.targets.list.query();
    expect(list.active).toBe("scripted");
    expect(list.targets.find((t) => t.id === "scripted")).toMatchObject({ outcome: "built", keyRef: "OCW_TEST_SCRIPTED_KEY" });
  });
  it("provider: verified and saved; `unverified: true` saves without a single request, recorded as such", async () => {
    const p = await eng.client.setup.provider.mutate({ url: model.url, model: "scripted-coder", apiKeyEnv: "OCW_TEST_SCRIPTED_KEY", slots: 2 });
    expect([p.outcome, p.saved, p.target.serving.engine]).toEqual(["built", true, "api"]);
    const before = model.requests.length;
    const u = await eng.client.setup.capture.mutate({ url: "http://127.0.0.1:9/v1", model: "later", unverified: true, id: "later" });
    expect(model.requests.length).toBe(before);
    expect(u).toMatchObject({ outcome: "unverified", saved: true, active: true, checks: [] });
    const t = (await eng.client.targets.list.query()).targets.find((x) => x.id === "later");
    expect(t?.outcome).toBeUndefined();
    expect(t?.verifiedAt).toBeNull();
  });
});
