/**
 * `ocw`'s own words where the engine's were a GUI's or a whole catalog's: each case failed on the code before its fix.
 * No engine process: the engine's setup functions run in this process (test/setup-port.ts), or a port answers as set.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { HardwareReport } from "../hardware/detect";
import { TargetStore } from "../store/targets";
import { localSetupPort } from "../../test/setup-port";
import { setupStartApi } from "../serving/setup-api";
import { runFit, runSetup, type SetupPort } from "./model-setup";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-cli-words-"));
// A state dir of this file's own, for every case (vitest puts the variable back after).
beforeAll(() => void vi.stubEnv("OCW_STATE_DIR", path.join(dir, "state")));
afterAll(() => void vi.unstubAllEnvs());

const GiB = 1024 ** 3;
const cpuOnly = (ramGiB: number) =>
  ({
    platform: "linux",
    arch: "x64",
    cpu: { model: "t", cores: 2, physicalCores: 2 },
    ram: { totalBytes: ramGiB * GiB, freeBytes: ramGiB * GiB },
    gpus: [],
    llamaDevices: null,
    probes: [],
    problems: [],
    ms: 1,
  }) satisfies HardwareReport;

/** An estimate of one GGUF file as the engine answers setup.estimate, for `slots` slots. */
function estimateFor(slots: number, kvUnified: boolean) {
  return {
    model: { name: "Tiny", source: "/m.gguf", arch: "llama", kind: "dense", quant: "Q8_0" },
    nCtx: 4096 * slots,
    slots,
    nCtxPerSlot: 4096,
    kvUnified,
    swaCells: null,
    kvBytes: 64 * 2 ** 20,
    kvBytesK: 32 * 2 ** 20,
    kvBytesV: 32 * 2 ** 20,
    cacheTypeK: "f16",
    cacheTypeV: "f16",
    recurrentBytes: 0,
    weightsBytes: GiB,
    computeBytes: 100 * 2 ** 20,
    outputBytes: 2 ** 20,
    perDevice: [],
    llamaCpp: null,
    hardware: "CPU only",
    recommendation: null,
    recommendationProblem: "none",
    warnings: [],
  };
}
const estimatePort = (slots: number, kvUnified: boolean) => ({ estimate: async () => estimateFor(slots, kvUnified) }) as unknown as SetupPort;

describe("ocw fit --gguf: the KV cache of one slot", () => {
  it("-np 1: one slot has the whole context — never 'KV split' (there is nothing to split)", async () => {
    const r = await runFit({ gguf: "/m.gguf", parallel: "1" }, estimatePort(1, false));
    expect(r.code).toBe(0);
    const line = r.stdout.split("\n").find((l) => l.startsWith("context:"))!;
    expect(line).not.toMatch(/split|unified/);
    expect(line).toBe("context: n_ctx 4096, 1 slot holds all of it");
  });
  it("several slots still say whether their KV is unified or split", async () => {
    expect((await runFit({ gguf: "/m.gguf", parallel: "4" }, estimatePort(4, false))).stdout).toMatch(
      /^context: n_ctx 16384, 4 slots × 4096 per slot, KV split$/m,
    );
    expect((await runFit({ gguf: "/m.gguf", parallel: "4" }, estimatePort(4, true))).stdout).toMatch(
      /^context: n_ctx 16384, 4 slots × 4096 per slot, KV unified$/m,
    );
  });
});

describe("ocw setup --llama-server PATH that names nothing", () => {
  it("says to leave out the flag — not the GUI's 'leave the field empty'", async () => {
    const store = new TargetStore(path.join(dir, "llama-targets.json"));
    // the engine's own check (setup.start), as the API runs it
    const port = { start: async (input: Parameters<typeof setupStartApi>[0]) => setupStartApi(input, store, () => undefined) } as unknown as SetupPort;
    const missing = path.join(dir, "nope", "llama-server");
    const r = await runSetup({ runtime: "llama.cpp", model: "/m.gguf", slots: "1", yes: true, llamaServer: missing }, port);
    expect(r.code).toBe(2);
    expect(r.stderr).not.toMatch(/field/);
    expect(r.stderr.trim()).toBe(
      `ocw: no llama-server at ${missing} on the engine's machine: check the path, or leave out --llama-server to use the one found or the prebuilt release`,
    );
  });
  it("the same refusal as the API sends it (its kind and data beside the message) is worded for the CLI too", async () => {
    const missing = "/x/llama-server";
    const sent = Object.assign(new Error(`no llama-server at ${missing} on the engine's machine: check the path`), {
      data: { code: "BAD_REQUEST", ocwCode: "bad-input", ocwKind: "input", ocwData: { field: "llamaServer", missing } },
    });
    const port = {
      start: async () => {
        throw sent;
      },
    } as unknown as SetupPort;
    const r = await runSetup({ runtime: "llama.cpp", model: "/m.gguf", slots: "1", yes: true, llamaServer: missing }, port);
    expect(r.stderr.trim()).toBe(
      `ocw: no llama-server at ${missing} on the engine's machine: check the path, or leave out --llama-server to use the one found or the prebuilt release`,
    );
  });
});

describe("ocw fit --model NAME that does not fit", () => {
  it("says that model does not fit, and why — not 'no catalog model fits'", async () => {
    const r = await runFit({ model: "qwen3.6-35b-a3b" }, localSetupPort({ env: {}, hardware: cpuOnly(4) }));
    expect(r.code).toBe(3);
    expect(r.stdout).not.toMatch(/no catalog model fits/);
    expect(r.stdout).toMatch(
      /^no fit: Qwen3\.6-35B-A3B does not fit 1 slot × 32768 tokens on this machine \(no usable GPU and 4\.0 GiB RAM free\): its smallest quant, \S+, is \d+\.\d GiB of weights before any KV cache; /m,
    );
  });
});
