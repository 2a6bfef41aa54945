import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { modelMetadata, writeModel } from "../../test/fixtures/gguf/writer";
import type { HardwareReport } from "../hardware/detect";
import { TargetStore } from "../store/targets";
import { localSetupPort } from "../../test/setup-port";
import { runDoctor, runFit, runSetup, runTargets, runTargetUse } from "./model-setup";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-cmd-"));
const GiB = 1024 ** 3;
const hw = (gpus: HardwareReport["gpus"] = []): HardwareReport => ({
  platform: "linux",
  arch: "x64",
  cpu: { model: "t", cores: 2, physicalCores: 2 },
  ram: { totalBytes: 24 * GiB, freeBytes: 20 * GiB },
  gpus,
  llamaDevices: null,
  probes: [],
  problems: [],
  ms: 1,
});

async function metaFile(name: string, meta: Record<string, unknown>): Promise<string> {
  const f = path.join(dir, name);
  writeFileSync(f, JSON.stringify(meta));
  return f;
}

const gpu24 = (): HardwareReport =>
  hw([{ index: 0, vendor: "nvidia", name: "RTX", totalBytes: 24 * GiB, freeBytes: 22 * GiB, usedBytes: 2 * GiB, unified: false, source: "nvidia-smi" }]);

describe("ocw fit", () => {
  it("--metadata --json prints the contract fields with llama-server defaults (with a GPU: 4 slots, unified)", async () => {
    const f = await metaFile("llama.json", await modelMetadata({ arch: "llama" }));
    const r = await runFit({ metadata: f, json: true, llamaFit: false }, localSetupPort({ hardware: gpu24() }));
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ nCtx: 32768, nCtxPerSlot: 32768, slots: 4, kvUnified: true, kvBytes: 33554432, recurrentBytes: 0, weightsBytes: null });
    expect(typeof j.computeBytes).toBe("number");
    expect(Array.isArray(j.perDevice)).toBe(true);
    // the planner's answer for this file: 4 slots in one unified pool, never the c/N split
    expect(j.recommendation.command).toMatch(/-np 4 --kv-unified/);
  });
  it("flags map to llama-server's", async () => {
    const f = await metaFile("llama2.json", await modelMetadata({ arch: "llama" }));
    const r = await runFit(
      {
        metadata: f,
        json: true,
        ctx: "5000",
        parallel: "3",
        kvUnified: false,
        cacheTypeK: "q8_0",
        cacheTypeV: "q8_0",
        llamaFit: false,
      },
      localSetupPort({ hardware: hw() }),
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ nCtx: 5376, nCtxPerSlot: 1792, slots: 3, kvUnified: false, kvBytes: 2_924_544 });
  });
  it("--gguf reads a local file's tensors for weightsBytes", async () => {
    const g = path.join(dir, "m.gguf");
    await writeModel(g, { arch: "llama", nVocab: 1000 });
    const j = JSON.parse((await runFit({ gguf: g, json: true, ctx: "4096", parallel: "1", llamaFit: false }, localSetupPort({ hardware: hw() }))).stdout);
    expect(j.weightsBytes).toBeGreaterThan(0);
    expect(j.kvBytes).toBe(4194304);
  });
  it("--gpus SPEC places layers on the given devices", async () => {
    const g = path.join(dir, "m2.gguf");
    await writeModel(g, { arch: "llama", nVocab: 1000 });
    const j = JSON.parse(
      (await runFit({ gguf: g, json: true, gpus: "8G,8G", ctx: "4096", parallel: "1", llamaFit: false }, localSetupPort({ hardware: hw() }))).stdout,
    );
    expect(j.perDevice.map((d: { layers: number }) => d.layers)).toEqual([3, 1, 0]);
  });
  it("on a CPU only, no --parallel: 1 slot, as `ocw fit` without a file and `ocw setup` plan (one default); --parallel still sets it", async () => {
    const f = await metaFile("llama-cpu.json", await modelMetadata({ arch: "llama" }));
    const j = JSON.parse((await runFit({ metadata: f, json: true, llamaFit: false }, localSetupPort({ hardware: hw() }))).stdout);
    expect(j).toMatchObject({ slots: 1, nCtx: 32768, nCtxPerSlot: 32768 });
    expect(j.recommendation.slots).toBe(1);
    expect(j.recommendation.command).toMatch(/-np 1\b/);
    expect(j.warnings.join("\n")).toMatch(/CPU only: 1 slot by default, as `ocw setup` plans/);
    const plan = JSON.parse((await runFit({ json: true }, localSetupPort({ hardware: hw() }))).stdout);
    expect(plan.pick.slots).toBe(j.recommendation.slots);
    // --ctx without --gguf/--metadata is the context per slot, as `ocw setup --ctx` (it was silently ignored).
    const exact = JSON.parse((await runFit({ json: true, ctx: "16384" }, localSetupPort({ hardware: hw() }))).stdout);
    expect(exact.pick.ctxPerSlot).toBe(16384);
    const badCtx = await runFit({ json: true, ctx: "lots" }, localSetupPort({ hardware: hw() }));
    expect(badCtx.code).toBe(2);
    expect(badCtx.stderr).toMatch(/--ctx must be an integer/);
    const asked = JSON.parse((await runFit({ metadata: f, json: true, parallel: "3", llamaFit: false }, localSetupPort({ hardware: hw() }))).stdout);
    expect(asked.slots).toBe(3);
    expect(asked.warnings.join("\n")).not.toMatch(/CPU only/);
  });
  it("text output is readable", async () => {
    const f = await metaFile("l3.json", await modelMetadata({ arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3 }));
    const r = await runFit({ metadata: f, llamaFit: false }, localSetupPort({ hardware: gpu24() }));
    expect(r.stdout).toMatch(/SWA window 2560 cells/);
    expect(r.stdout).toMatch(/recommended: LLAMA_API_KEY=… llama-server .* -c \d+ -np 4 --kv-unified/);
  });
  const bad: [string, Parameters<typeof runFit>[0], RegExp][] = [
    ["both sources", { metadata: "__OK__", gguf: "__BADJSON__" }, /exactly one of --metadata/],
    ["missing file", { metadata: "/nope.json" }, /no such file/],
    ["bad json", { metadata: "__BADJSON__" }, /not valid JSON/],
    ["bad parallel", { metadata: "__OK__", parallel: "0" }, /--parallel/],
    ["bad cache type", { metadata: "__OK__", cacheTypeK: "q3_k" }, /--cache-type-k must be one of/],
    ["bad fa", { metadata: "__OK__", flashAttn: "maybe" }, /--flash-attn/],
    ["bad gpus", { metadata: "__OK__", gpus: "lots" }, /GPU spec/],
    ["quantized V without FA", { metadata: "__OK__", flashAttn: "off", cacheTypeV: "q4_0" }, /requires flash attention/],
    ["no arch", { metadata: "__NOARCH__" }, /general.architecture/],
    ["missing gguf", { gguf: "/nope.gguf" }, /no such file/],
    ["not a gguf", { gguf: "__BADJSON__" }, /not a GGUF/],
  ];
  for (const [name, o, re] of bad) {
    it(`bad input → exit 2 with one line: ${name}`, async () => {
      const ok = await metaFile("ok.json", await modelMetadata({ arch: "llama" }));
      const badJson = path.join(dir, "bad.json");
      writeFileSync(badJson, "{ nope");
      const noArch = await metaFile("noarch.json", { "llama.block_count": 4 });
      const sub = (v?: string) => (v === "__OK__" ? ok : v === "__BADJSON__" ? badJson : v === "__NOARCH__" ? noArch : v);
      const r = await runFit({ ...o, metadata: sub(o.metadata), gguf: sub(o.gguf), llamaFit: false }, localSetupPort({ hardware: hw() }));
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(re);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    });
  }
});

describe("ocw setup bad inputs (no server needed)", () => {
  const store = new TargetStore(path.join(dir, "targets.json"));
  const cases: [string, Parameters<typeof runSetup>[0], RegExp][] = [
    ["no mode", {}, /exactly one of/],
    ["two modes", { runtime: "llama.cpp", capture: "http://127.0.0.1:1" }, /exactly one of/],
    ["unknown runtime", { runtime: "tgi", model: "x", slots: "1" }, /not supported/],
    ["not a terminal, no --yes", { runtime: "llama.cpp", model: "/nope.gguf", llamaServer: process.execPath }, /no such file/],
    ["bad slots", { runtime: "llama.cpp", model: "x", slots: "0" }, /--slots must be/],
    ["unknown file", { runtime: "llama.cpp", model: "/nope.gguf", slots: "1", llamaServer: process.execPath }, /no such file/],
    ["bad llama-server path", { runtime: "llama.cpp", model: "/nope.gguf", slots: "1", llamaServer: "/nope/llama-server" }, /no llama-server at/],
    ["unreachable capture", { capture: "http://127.0.0.1:9" }, /nothing OpenAI-compatible answers/],
    ["capture bad url", { capture: "ftp://x" }, /http\(s\) URL/],
    ["unset key var", { capture: "http://127.0.0.1:9", apiKeyEnv: "OCW_TEST_UNSET_VAR" }, /OCW_TEST_UNSET_VAR is not set/],
    ["key instead of var name", { capture: "http://127.0.0.1:9", apiKeyEnv: "sk-abc-123" }, /NAME of an environment variable/],
    ["provider without key var", { provider: "http://127.0.0.1:9", model: "m" }, /--api-key-env/],
    ["provider without model", { provider: "http://127.0.0.1:9", apiKeyEnv: "X" }, /--model/],
    // A user:password@ in the URL: refused, the secret never quoted (it was, four times, after fetch refused it).
    [
      "provider with credentials",
      { provider: "http://u:s3cret@127.0.0.1:9/v1", model: "m", apiKeyEnv: "X" },
      /--provider http:\/\/\*\*\*@127\.0\.0\.1:9\/v1 holds credentials.*--api-key-env VAR/,
    ],
    [
      "capture with credentials",
      { capture: ["http://127.0.0.1:9/v1", "http://tok@127.0.0.1:8/v1"] },
      /--capture http:\/\/\*\*\*@127\.0\.0\.1:8\/v1 holds credentials/,
    ],
    ["capture with a query", { capture: "http://127.0.0.1:9/v1?key=s3cret" }, /--capture http:\/\/127\.0\.0\.1:9\/v1 has a query/],
  ];
  for (const [name, o, re] of cases) {
    it(name, async () => {
      const r = await runSetup({ ...o }, localSetupPort({ store, env: {} }));
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(re);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr + r.stdout).not.toContain("s3cret");
    });
  }
});

describe("ocw setup --runtime llama.cpp without --model takes the planner's pick", () => {
  const store = new TargetStore(path.join(dir, "plan-targets.json"));
  const rtx = hw([
    {
      index: 0,
      vendor: "nvidia",
      name: "NVIDIA GeForce RTX 4090",
      totalBytes: 24 * GiB,
      freeBytes: 23.5 * GiB,
      usedBytes: 0.5 * GiB,
      unified: false,
      source: "nvidia-smi",
    },
  ]);
  it("nothing fits (CPU only, 8 GiB): exit 2 with what to change, before any download", async () => {
    const small: HardwareReport = { ...hw(), ram: { totalBytes: 8 * GiB, freeBytes: 8 * GiB } };
    const r = await runSetup({ runtime: "llama.cpp", yes: true, llamaServer: process.execPath }, localSetupPort({ store, hardware: small, env: {} }));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ocw: nothing in the catalog fits this machine: .*API provider/);
  });
  it("without --model no --slots is needed; it goes on to set up the pick (here: stopped by the missing llama-server)", async () => {
    const r = await runSetup(
      { runtime: "llama.cpp", yes: true, json: true, llamaServer: "/nope/llama-server" },
      localSetupPort({ store, hardware: rtx, env: {} }),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no llama-server at \/nope\/llama-server/);
  });
});

describe("targets / target use / doctor", () => {
  it("lists and activates", async () => {
    const store = new TargetStore(path.join(dir, "t2.json"));
    const port = localSetupPort({ store });
    expect((await runTargets({}, port)).stdout).toMatch(/no targets/);
    store.save({
      id: "a",
      model: "m",
      endpoint: "http://127.0.0.1:1/v1",
      serving: { engine: "capture", endpoints: [], slots: 2 },
      checks: [],
      outcome: "underpowered",
    });
    expect((await runTargetUse("nope", port)).code).toBe(2);
    const u = await runTargetUse("a", port);
    expect(u.code).toBe(0);
    expect(u.stdout).toMatch(/warning: its last verification was underpowered/);
    expect(JSON.parse((await runTargets({ json: true }, port)).stdout).active).toBe("a");
    // each line names its model (ad-hoc `--endpoint` targets of one URL differ only by it); no outcome reads "unverified", not "?"
    store.save({ id: "adhoc-1", model: "other-model", endpoint: "http://127.0.0.1:1/v1", serving: { engine: "api", endpoints: [], slots: 4 }, checks: [] });
    const lines = (await runTargets({}, port)).stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^\* a +underpowered +capture +2 slots {2}http:\/\/127\.0\.0\.1:1\/v1 {2}model m$/);
    expect(lines[1]).toMatch(/^ {2}adhoc-1 +unverified +api +4 slots {2}http:\/\/127\.0\.0\.1:1\/v1 {2}model other-model$/);
  });
  it("doctor --json", async () => {
    const r = await runDoctor(
      {
        json: true,
      },
      localSetupPort({
        hardware: hw([
          { index: 0, vendor: "nvidia", name: "RTX", totalBytes: 24 * GiB, freeBytes: 20 * GiB, usedBytes: 4 * GiB, unified: false, source: "nvidia-smi" },
        ]),
      }),
    );
    expect(JSON.parse(r.stdout).hardware.gpus[0].name).toBe("RTX");
    const t = await runDoctor({}, localSetupPort({ hardware: hw() }));
    expect(t.stdout).toMatch(/none detected \(CPU only\)/);
    // What contains worker commands, and what binds their processes and memory (cgroup v1/v2, systemd-run, prlimit only).
    expect(t.stdout).toMatch(/^sandbox {4}(bubblewrap|none: .+)$/m);
    expect(t.stdout).toMatch(/^limits {5}(cgroup v[12] \(pids, memory|prlimit only|checks: systemd-run)/m);
    expect(JSON.parse(r.stdout).sandbox.limits).toBeTruthy();
  });
});

describe("ocw doctor: which llama-server the engine uses", () => {
  const fake = path.join(dir, "engine-llama-server");
  writeFileSync(fake, "#!/bin/sh\n", { mode: 0o755 });
  const engineEnv = { LLAMA_SERVER: fake, PATH: "", OCW_LLAMA_CACHE: dir, OCW_STATE_DIR: dir, HOME: dir };
  const port = () => localSetupPort({ hardware: hw(), env: engineEnv });
  it("names the engine's llama-server and where it came from", async () => {
    const t = await runDoctor({}, port(), { LLAMA_SERVER: fake });
    expect(t.stdout).toContain(`llama-server ${fake} (used by the engine; from the engine's LLAMA_SERVER)`);
    expect(t.stdout).not.toMatch(/^note/m);
    expect(JSON.parse((await runDoctor({ json: true }, port(), {})).stdout)).toMatchObject({ llamaServer: fake, engineLlamaServer: fake });
  });
  it("a shell's LLAMA_SERVER that differs from the engine's: says the engine's environment counts, and how to restart it with yours", async () => {
    const mine = "/opt/my llama/llama-server";
    const t = await runDoctor({}, port(), { LLAMA_SERVER: mine });
    expect(t.stdout).toContain(
      `note       this shell's LLAMA_SERVER (${mine}) is not the engine's (${fake}): the engine's environment is the one that counts.`,
    );
    expect(t.stdout).toContain("`ocw stop`");
    expect(t.stdout).toContain("`LLAMA_SERVER='/opt/my llama/llama-server' ocw doctor`");
    const j = JSON.parse((await runDoctor({ json: true }, port(), { LLAMA_SERVER: mine })).stdout);
    expect(j.llamaServerEnvNote).toMatch(/the engine's environment is the one that counts/);
    // the engine with none set: said as unset
    const none = await runDoctor({}, localSetupPort({ hardware: hw(), env: { ...engineEnv, LLAMA_SERVER: "" } }), { LLAMA_SERVER: mine });
    expect(none.stdout).toMatch(/is not the engine's \(unset\)/);
  });
});

describe("ocw doctor: ripgrep, which opencode's grep and glob tools run", () => {
  it("on the engine's PATH: named; absent: says what fails offline and how to install it", async () => {
    const bin = mkdtempSync(path.join(os.tmpdir(), "ocw-rg-"));
    writeFileSync(path.join(bin, "rg"), "#!/bin/sh\n", { mode: 0o755 });
    const env = { PATH: bin, OCW_LLAMA_CACHE: dir, OCW_STATE_DIR: dir, HOME: dir };
    const found = await runDoctor({}, localSetupPort({ hardware: hw(), env }), {});
    expect(found.stdout).toContain(`ripgrep    ${path.join(bin, "rg")}\n`);
    const none = await runDoctor({}, localSetupPort({ hardware: hw(), env: { ...env, PATH: dir } }), {});
    expect(none.stdout).toMatch(/^ripgrep {4}not on the engine's PATH: opencode downloads ripgrep from GitHub .*\(apt install ripgrep/m);
    expect(JSON.parse((await runDoctor({ json: true }, localSetupPort({ hardware: hw(), env: { ...env, PATH: dir } }), {})).stdout).ripgrep).toBeNull();
  });
});

describe("ocw fit: plans too slow for an agent (issue 27)", () => {
  it("--slots 16 on a CPU is refused (exit 3, `refused` in the JSON, the text says what was refused); --allow-slow plans it", async () => {
    const cpu: HardwareReport = { ...hw(), ram: { totalBytes: 32 * 1024 ** 3, freeBytes: 32 * 1024 ** 3 } };
    const r = await runFit({ slots: "16", json: true }, localSetupPort({ hardware: cpu }));
    expect(r.code).toBe(3);
    const j = JSON.parse(r.stdout);
    expect([j.pick, j.refused.length > 0, j.problem]).toEqual([null, true, expect.stringMatching(/too slow .*--allow-slow/)]);
    expect((await runFit({ slots: "16" }, localSetupPort({ hardware: cpu }))).stdout).toMatch(
      /refused as too slow: .* tokens\/s per slot × 16; --allow-slow plans it/,
    );
    const forced = await runFit({ slots: "16", json: true, allowSlow: true }, localSetupPort({ hardware: cpu }));
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.stdout).pick.speed.tooSlow).toBe(true);
  });
});
