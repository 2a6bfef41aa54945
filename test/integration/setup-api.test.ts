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

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-setup-api-"));
let eng: TestEngine;

beforeAll(async () => {
  const csv = path.join(tmp, "nv.csv");
  writeFileSync(csv, "0, GPU-0, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 500, 24064, 580.65.06, 8.9\n");
  eng = await startEngine(path.join(tmp, "state"), {
    PATH: [path.join(__dirname, "../fixtures/hardware/bin"), path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
    OCW_FAKE_NVIDIA_SMI: csv, OCW_RAM_BYTES: String(64 * 1024 ** 3), LLAMA_SERVER: "", OCW_LLAMA_CACHE: path.join(tmp, "none"),
  });
});
afterAll(async () => {
  await eng?.kill();
});

describe("setup.* routes", () => {
  it("hardware, fit and catalog come from the engine's planner", async () => {
    const hw = await eng.client.setup.hardware.query();
    expect(hw.gpus.map((g) => g.name)).toEqual(["NVIDIA GeForce RTX 4090"]);
    const fit = FitResult.parse(await eng.client.setup.fit.query({ slots: 4 }));
    expect([fit.pick?.model, fit.pick?.quant, fit.pick?.placement]).toEqual(["qwen3.6-27b", "Q4_K_M", "gpu"]);
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
