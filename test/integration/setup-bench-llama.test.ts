/**
 * The benchmark after start and after capture, against a real llama-server (CPU build) on a tiny GGUF: prefill and
 * decode tokens/s at 1 stream and at N (the slots), from llama-server's own timings; stored with the target and shown
 * by `ocw targets`; a capture of the same server measures it too (`ocw setup --capture … --bench-sec`). The planner's
 * command carries `--metrics`, so Prometheus /metrics answers (501 without it). Skipped with the reason when
 * LLAMA_SERVER is not set (scripts/build-llama-server.sh builds one).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupJob } from "../../shared/setup";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";
import { BUNDLE, startEngine, stopDetachedEngine, type TestEngine } from "../helpers";

const run = promisify(execFile);
const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN}`
    : null;
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-bench-llama-"));
const state = path.join(tmp, "state");
let eng: TestEngine;
let models: { llama: string };

async function finished(jobId: string): Promise<SetupJob> {
  for (const t0 = Date.now(); Date.now() - t0 < 300_000; await new Promise((r) => setTimeout(r, 250))) {
    const j = await eng.client.setup.job.query({ jobId });
    if (j && j.state !== "running") return j;
  }
  throw new Error(`job ${jobId} did not finish`);
}

describe.skipIf(!!SKIP)(`the benchmark after setup, real llama-server${SKIP ? ` (skipped: ${SKIP})` : ""}`, () => {
  beforeAll(async () => {
    mkdirSync(path.join(tmp, "models"), { recursive: true });
    models = await writeTinyModels(path.join(tmp, "models"), VOCAB!);
    eng = await startEngine(state, {
      LLAMA_SERVER: BIN!,
      PATH: [path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter),
      OCW_RAM_BYTES: String(16 * 1024 ** 3),
    });
  }, 120_000);
  afterAll(async () => {
    const file = path.join(state, "serving.json");
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
    // The CLI's own state dir: its commands started an engine there.
    await stopDetachedEngine(path.join(tmp, "cli-state"));
  });

  it("start: prefill and decode at 1 and 2 streams from llama-server's timings, saved with the target, shown by `ocw targets`; capture measures it too", async () => {
    const j = await finished(
      (await eng.client.setup.start.mutate({ model: models.llama, slots: 2, ctx: 8192, id: "bench", acceptUnderpowered: true, benchSec: 3 })).jobId,
    );
    expect(j.failure).toBeNull();
    expect(j.phases.find((p) => p.name === "bench")).toMatchObject({ status: "done", detail: expect.stringMatching(/^measured: prefill \d+ tok\/s/) });
    const b = j.result!.bench!;
    // A request that failed says why in the warning (seen once in CI under load, its cause not recorded then).
    expect(b, `the bench's warning: ${b.warning}`).toMatchObject({ source: "timings", slots: 2, failed: 0 });
    expect(b.requests).toBeGreaterThanOrEqual(3); // one alone, then a round of two at once
    for (const k of ["prefillTps1", "decodeTps1", "decodeTpsN", "decodeTpsPerStreamN", "prefillTpsN"] as const) expect(b[k]).toBeGreaterThan(0);
    expect(b.promptTokens).toBeGreaterThan(256);
    // stored with the target (the engine's single writer), and the target list says it
    const saved = (await eng.client.targets.list.query()).targets.find((t) => t.id === "bench")!;
    expect(saved.bench).toEqual(b);
    const { stdout } = await run(process.execPath, [BUNDLE, "targets"], { env: { ...process.env, OCW_STATE_DIR: state } });
    expect(stdout).toMatch(/bench .*\n\s+measured: prefill \d+ tok\/s, decode \d+ tok\/s \(1 stream\); \d+ tok\/s in all, \d+ per stream \(2 streams\)/);

    // --metrics is on the launched command: Prometheus /metrics answers with the key
    expect(j.launchedCommand).toContain("--metrics");
    const key = readFileSync(saved.keyFile!, "utf8").trim();
    const base = saved.endpoint.replace(/\/v1$/, "");
    const metrics = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${key}` } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/llamacpp:prompt_tokens_total/);

    // a capture of the same server is measured on verify too, and the CLI prints it
    const cap = await run(process.execPath, [BUNDLE, "setup", "--capture", base, "--api-key-env", "BENCH_KEY", "--bench-sec", "2", "--yes", "--json"], {
      env: { ...process.env, OCW_STATE_DIR: path.join(tmp, "cli-state"), BENCH_KEY: key },
      timeout: 240_000,
    }).catch((e: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: e.stdout ?? "", stderr: `${e.code}: ${e.stderr}` }));
    const out = JSON.parse(cap.stdout) as { bench: typeof b | null; target: { bench?: typeof b } };
    expect(out.bench).toMatchObject({ source: "timings", slots: 2, failed: 0 });
    expect(out.bench!.decodeTps1).toBeGreaterThan(0);
    expect(out.target.bench).toEqual(out.bench);
  }, 600_000);
});
