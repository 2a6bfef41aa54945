/**
 * `ocw fit --gguf FILE` recommends a launch for the file: its slots must hold a worker's first turn (OpenCode's first
 * request + its answer), which is what verify then demands — a recommendation below it is a server no worker can use.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { HardwareReport } from "../../engine/hardware";
import { fitFile, fitPlan } from "../../engine/serving/setup-commands";
import { MIN_SLOT_CTX } from "../../engine/serving/verify";
import { writeModel } from "../fixtures/gguf/writer";

const GiB = 1024 ** 3;
const cpuOnly: HardwareReport = {
  platform: "linux",
  arch: "x64",
  cpu: { model: "test", cores: 8, physicalCores: 8 },
  ram: { totalBytes: 32 * GiB, freeBytes: 24 * GiB },
  gpus: [],
  llamaDevices: [],
  probes: [],
  problems: [],
  ms: 0,
};

describe("ocw fit --gguf: the recommendation holds a worker's first turn", () => {
  it("a model trained for 4096 tokens gets no recommendation (saying why), not a 4096-token slot verify would fail", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-fitctx-"));
    const file = path.join(dir, "short.gguf");
    await writeModel(file, { arch: "llama", nVocab: 512, nCtxTrain: 4096, name: "tiny-short" });
    const r = await fitFile({ gguf: file, llamaFit: false }, { hardware: cpuOnly });
    expect(r.recommendation?.ctxPerSlot, r.recommendation?.command).toBeUndefined();
    expect(r.recommendationProblem).toMatch(/trained for 4096 tokens.*first turn needs/);
    // trained for more: recommended, with a slot that holds the first turn
    const longer = path.join(dir, "long.gguf");
    await writeModel(longer, { arch: "llama", nVocab: 512, nCtxTrain: 32768, name: "tiny-long" });
    const ok = await fitFile({ gguf: longer, llamaFit: false }, { hardware: cpuOnly });
    expect(ok.recommendation?.ctxPerSlot).toBeGreaterThanOrEqual(MIN_SLOT_CTX);
  }, 60_000);

  it("ocw fit --model FILE --min-ctx 2048: a minimum below the first turn is raised to it, never planned as asked", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-fitctx-"));
    const file = path.join(dir, "short.gguf");
    await writeModel(file, { arch: "llama", nVocab: 512, nCtxTrain: 4096, name: "tiny-short" });
    const r = await fitPlan({ model: file, slots: 1, minCtx: 2048 }, { hardware: cpuOnly });
    expect(r.pick?.ctxPerSlot, r.pick?.command).toBeUndefined();
    expect(r.problem).toBeTruthy();
  }, 60_000);
});
