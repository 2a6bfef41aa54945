/**
 * Replicas from setup (issue 16): on a (simulated) 2-GPU machine `ocw setup --runtime llama.cpp --model FILE --slots 4`
 * plans one llama-server per GPU as a pool, starts both — each with its GPU alone (CUDA_VISIBLE_DEVICES, --device
 * CUDA0), each keyed through LLAMA_API_KEY (never argv) — verifies each, and saves one target whose
 * `serving.endpoints` lists both; `ocw targets --json` shows the two endpoints, `ocw serving stop --target` ends both.
 * The GPUs are doubles: the fake nvidia-smi on PATH, and a wrapper around the real CPU llama-server that lists two
 * CUDA devices, records each start's CUDA_VISIBLE_DEVICES and argv, and drops `--device` (a CPU build has none).
 * Without LLAMA_SERVER every test reports itself skipped with the reason.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";
import { BUNDLE } from "../helpers";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN} (share/vocab) and OCW_LLAMA_VOCAB_DIR unset`
    : null;
const FIX = path.join(__dirname, "../fixtures/hardware");
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-replicas-"));
const state = path.join(tmp, "state");
process.env.OCW_STATE_DIR = state;
process.env.PATH = `${path.join(FIX, "bin")}${path.delimiter}${process.env.PATH}`;
process.env.OCW_FAKE_NVIDIA_SMI = path.join(FIX, "nvidia-smi-2gpu.csv"); // RTX 4090 (22.0 GiB free) + RTX 3090 (23.3 GiB free)

const { runSetup, runServingStop } = await import("../../engine/commands/model-setup");
const { localSetupPort } = await import("../setup-port");
const { stopDetachedEngine } = await import("../helpers");
const { pidAlive } = await import("../../engine/serving/llama-server");
const { readKey } = await import("../../engine/serving/keys");

const starts = path.join(tmp, "starts.log");
function wrapper(): string {
  const f = path.join(tmp, "llama-server");
  writeFileSync(
    f,
    [
      "#!/bin/sh",
      `if [ "$1" = "--list-devices" ]; then cat '${path.join(FIX, "list-devices-cuda2.txt")}'; exit 0; fi`,
      `if [ "$1" = "--version" ]; then exec '${BIN}' --version; fi`,
      `printf '%s|%s|%s\\n' "\${CUDA_VISIBLE_DEVICES-unset}" "\${LLAMA_API_KEY:+key-in-env}" "$*" >> '${starts}'`,
      "skip=0",
      'for a in "$@"; do',
      "  shift",
      '  if [ "$skip" = 1 ]; then skip=0; continue; fi',
      '  if [ "$a" = "--device" ]; then skip=1; continue; fi',
      '  set -- "$@" "$a"',
      "done",
      `exec '${BIN}' "$@"`,
    ].join("\n") + "\n",
  );
  chmodSync(f, 0o755);
  return f;
}

afterAll(async () => {
  // `ocw targets --json` below asks the engine, which it starts in this state dir
  await stopDetachedEngine(state);
  await runServingStop({}, localSetupPort());
});

describe("ocw setup on 2 GPUs: one llama-server per GPU, one pool target", () => {
  let j: any;
  it("plans 2 replicas × 2 slots, starts both with their GPU alone and the key in the environment, verifies each", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    mkdirSync(path.join(tmp, "models"), { recursive: true });
    const models = await writeTinyModels(path.join(tmp, "models"), VOCAB!);
    // 8,192 per slot: the floor verify puts under every slot (OpenCode's first request with our agent is ~6k tokens).
    const r = await runSetup(
      { runtime: "llama.cpp", model: models.llama, slots: "4", ctx: "8192", llamaServer: wrapper(), yes: true, json: true },
      localSetupPort(),
    );
    expect(r.stderr).toBe("");
    j = JSON.parse(r.stdout);
    console.log(`pick: ${j.job.pick.reason}`);
    for (const p of j.job.phases) console.log(`  ${p.name}: ${p.status} (${p.ms} ms) — ${p.detail.slice(0, 300)}`);
    expect(j.job.pick.pool.replicas).toBe(2);
    expect(j.job.pick.pool.endpoints.map((e: any) => [e.devices, e.slots, e.ctxPerSlot])).toEqual([
      [["CUDA1"], 2, 8192],
      [["CUDA0"], 2, 8192],
    ]);
    expect(j.job.pick.reason).toMatch(/2 replicas, one llama-server per GPU/);
    // each start: its own GPU visible (the 3090 has more free memory: it is the first replica), the key in the env
    const lines = readFileSync(starts, "utf8")
      .trim()
      .split("\n")
      .map((l) => l.split("|"));
    expect(lines.map((l) => l[0]).sort()).toEqual(["0", "1"]);
    expect(lines.every((l) => l[1] === "key-in-env")).toBe(true);
    const key = readKey(j.target.keyFile);
    for (const l of lines) {
      expect(l[2]).toMatch(/--device CUDA0 /);
      expect(l[2]).toMatch(/-c 16384 -np 2 --kv-unified/);
      expect(l[2]).not.toContain(key);
    }
    expect(j.job.servers).toHaveLength(2);
    expect(new Set(j.job.servers.map((s: any) => s.port)).size).toBe(2);
    // verified one by one; a random-weight model is underpowered, nothing worse
    expect(j.outcome).toBe("underpowered");
    expect(j.checks.filter((c: any) => c.name === "slots").map((c: any) => c.passed)).toEqual([true, true]);
    expect(j.checks.filter((c: any) => c.name === "slots").map((c: any) => c.evidence.slice(0, 10))).toEqual(["replica 1:", "replica 2:"]);
    // the double is a CPU build: placement honestly says the weights are in RAM, not on the GPUs the plan named
    expect(j.job.placement.passed).toBe(false);
    // each replica is checked against the vendor tool too, on its own GPU (matched by index: the names can be equal)
    const ev = j.job.placement.evidence.join(" | ");
    expect(ev).toMatch(/replica 1: device memory: CUDA0 NVIDIA GeForce RTX \d+ .* GiB used/);
    expect(ev).toMatch(/replica 2: device memory: CUDA0 NVIDIA GeForce RTX \d+ .* GiB used/);
    // what each replica holds is recorded by its GPU's nvidia-smi index (planned bytes: the CPU double moved nothing)
    const recs = JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8"));
    for (const r of recs) expect(r.gpuBytes.map((g: { index: number }) => String(g.index))).toEqual([r.env.CUDA_VISIBLE_DEVICES]);
  }, 900_000);

  it("one target with both endpoints; `ocw targets --json` lists them healthy with 2 slots each", async (ctx) => {
    if (SKIP || !j) return ctx.skip(SKIP ?? "setup did not run");
    expect(j.target.serving.endpoints.map((e: any) => e.slots)).toEqual([2, 2]);
    expect(j.target.serving).toMatchObject({ engine: "llama.cpp", slots: 4, perSlotCtx: 8192 });
    const out = await promisify(execFile)(process.execPath, [BUNDLE, "targets", "--json"], { env: { ...process.env, OCW_STATE_DIR: state }, timeout: 60_000 });
    const t = JSON.parse(out.stdout).targets.find((x: any) => x.id === j.target.id);
    expect(t.endpoints.map((e: any) => [e.url, e.healthy, e.slots])).toEqual(j.job.servers.map((s: any) => [s.url, true, 2]));
    const recs = JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8"));
    const rows = recs.map((r: any) => [r.targetId, r.replicaOf, r.env.CUDA_VISIBLE_DEVICES]).sort((a: string[], b: string[]) => a[0]!.localeCompare(b[0]!));
    expect(rows).toEqual([
      [`${j.target.id}@1`, j.target.id, "1"],
      [`${j.target.id}@2`, j.target.id, "0"],
    ]);
  });

  it("ocw serving stop --target ID stops both replicas", async (ctx) => {
    if (SKIP || !j) return ctx.skip(SKIP ?? "setup did not run");
    const out = await runServingStop({ target: j.target.id }, localSetupPort());
    expect(out.stdout.match(/stopped llama-server pid/g)).toHaveLength(2);
    for (const s of j.job.servers) expect(pidAlive(s.pid)).toBe(false);
    expect(existsSync(path.join(state, "serving.json")) ? JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8")) : []).toEqual([]);
  });
});
