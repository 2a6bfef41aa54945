/**
 * setup.start against a real llama-server (CPU build) on a real `ocw serve`: a local tiny GGUF planned by the planner,
 * launched with its command, verified (tool-call round trip included), the weights confirmed in RAM from the server's
 * own log; a damaged GGUF fails the load phase with llama-server's own log line. Skipped with the reason when
 * LLAMA_SERVER is not set (scripts/build-llama-server.sh builds one).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupJob } from "../../shared/setup";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";
import { startEngine, type TestEngine } from "../helpers";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN}`
    : null;
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-start-llama-"));
let eng: TestEngine;
let models: { llama: string };

async function finished(jobId: string): Promise<SetupJob> {
  for (const t0 = Date.now(); Date.now() - t0 < 240_000; await new Promise((r) => setTimeout(r, 250))) {
    const j = await eng.client.setup.job.query({ jobId });
    if (j && j.state !== "running") return j;
  }
  throw new Error(`job ${jobId} did not finish`);
}

describe.skipIf(!!SKIP)(`setup.start with a real llama-server${SKIP ? ` (skipped: ${SKIP})` : ""}`, () => {
  beforeAll(async () => {
    mkdirSync(path.join(tmp, "models"), { recursive: true });
    models = await writeTinyModels(path.join(tmp, "models"), VOCAB!);
    eng = await startEngine(path.join(tmp, "state"), {
      LLAMA_SERVER: BIN!,
      PATH: [path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
      OCW_RAM_BYTES: String(16 * 1024 ** 3),
    });
  }, 120_000);
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
  });

  it("a local GGUF: the planner's command on the CPU, verified, the weights in RAM as planned", async () => {
    // exactly 8192 per slot (the planner would otherwise give the tiny model its whole 32k, and verify fills the pool;
    // less than MIN_SLOT_CTX, 7168, could not take OpenCode's first request)
    const j = await finished((await eng.client.setup.start.mutate({ model: models.llama, slots: 2, ctx: 8192, id: "tiny", acceptUnderpowered: true })).jobId);
    expect(j.failure).toBeNull();
    expect(j.phases.map((p) => [p.name, p.status])).toEqual([
      ["plan", "done"],
      ["runtime", "done"],
      ["download", "skipped"],
      ["load", "done"],
      ["warmup", "done"],
      ["verify", "done"],
      ["placement", "done"],
      ["bench", "skipped"],
    ]);
    expect(j.plannedCommand).toMatch(/-c 16384 -np 2 --kv-unified .*-ngl 0/);
    expect(j.launchedCommand).toContain(`-m ${models.llama}`);
    expect(j.placement?.evidence.join(" ")).toMatch(/model buffers CPU/);
    expect(j.checks.find((c) => c.name === "slots")?.passed).toBe(true);
    expect(j.result?.saved).toBe(true);
  }, 240_000);

  it("a damaged GGUF fails the load with llama-server's own line", async () => {
    const bad = path.join(tmp, "models", "damaged.gguf");
    const b = readFileSync(models.llama);
    writeFileSync(bad, b.subarray(0, Math.floor(b.length * 0.6)));
    const j = await finished((await eng.client.setup.start.mutate({ model: bad, slots: 1, minCtx: 1024, id: "damaged" })).jobId);
    expect(j.state).toBe("failed");
    expect(j.failure?.phase).toMatch(/plan|load/);
    if (j.failure?.phase === "load") {
      expect(j.failure.kind).toBe("model-load");
      expect(j.failure.logLine).toMatch(/load|file|bounds/i);
    }
  }, 240_000);
});
