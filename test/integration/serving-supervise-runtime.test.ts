/**
 * vLLM (and SGLang) run under the same supervisor as llama-server (engine/process/supervisor.ts through the bundle's
 * `ocw serving supervise`): a stub `vllm` binary (test/fixtures/hardware/fake-runtime.ts) that crashes once after
 * serving is restarted, gets its key again from VLLM_API_KEY (never argv), and the crash is reported in the record and
 * `ocw serving list`; `serving stop` stops the supervisor first, then the server.
 */
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { buildSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pidAlive } from "../../engine/process/process";
import { generateKey, keyFilePath, storeKey } from "../../engine/serving/keys";
import { freePort } from "../../engine/serving/llama-server";
import { listServing, putServing, type ServingRecord, startSupervised, stopServing } from "../../engine/serving/setup";
import { BUNDLE, stopDetachedEngine } from "../helpers";

const run = promisify(execFile);
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-supervise-runtime-"));
const state = path.join(tmp, "state");
const fake = path.join(tmp, "fake-runtime.mjs");
const vllm = path.join(tmp, "bin", "vllm");
let prevState: string | undefined;

beforeAll(() => {
  buildSync({
    entryPoints: [path.join(__dirname, "../fixtures/hardware/fake-runtime.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: fake,
    logLevel: "error",
  });
  // a `vllm` on its own path, as `findRuntime` finds one: the fake in vLLM mode
  mkdirSync(path.dirname(vllm), { recursive: true });
  writeFileSync(vllm, `#!/bin/sh\nOCW_FAKE_MODE=vllm exec ${JSON.stringify(process.execPath)} ${JSON.stringify(fake)} "$@"\n`);
  chmodSync(vllm, 0o755);
  prevState = process.env.OCW_STATE_DIR;
  process.env.OCW_STATE_DIR = state;
});
afterAll(async () => {
  await stopServing().catch(() => {});
  // The CLI's commands started an engine in this state dir.
  await stopDetachedEngine(state);
  if (prevState === undefined) delete process.env.OCW_STATE_DIR;
  else process.env.OCW_STATE_DIR = prevState;
});

async function until<T>(what: string, f: () => T | null | undefined | false, timeoutMs = 60_000): Promise<T> {
  for (const t0 = Date.now(); Date.now() - t0 < timeoutMs; await new Promise((r) => setTimeout(r, 100))) {
    const v = f();
    if (v) return v;
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("vLLM under the supervisor", () => {
  it("a vllm that crashes once is restarted with its key, and the crash is reported", async () => {
    const port = await freePort();
    const key = generateKey();
    const keyFile = keyFilePath("vllm-stub");
    storeKey(keyFile, key);
    const marker = path.join(tmp, "crashed-once");
    const rec: ServingRecord = {
      targetId: "vllm-stub",
      runtime: "vllm",
      pid: 0,
      startTime: null,
      supervisorPid: null,
      port,
      bin: vllm,
      args: ["serve", "org/model", "--served-model-name", "m", "--host", "127.0.0.1", "--port", String(port), "--max-num-seqs", "2"],
      // the plan's environment (never the key: the supervisor hands it over from the key file)
      env: { OCW_FAKE_CRASH_ONCE: marker, OCW_FAKE_CRASH_AFTER_MS: "800", OCW_FAKE_LOAD_MS: "100" },
      logFile: path.join(state, "logs", "vllm-stub.log"),
      keyFile,
      startedAt: new Date().toISOString(),
    };
    putServing(rec);
    const first = await startSupervised([process.execPath, BUNDLE], rec, 60_000);
    const r1 = listServing().find((r) => r.targetId === "vllm-stub")!;
    expect(r1.supervisorPid).toEqual(expect.any(Number));
    expect(pidAlive(r1.supervisorPid!)).toBe(true);

    // it crashes once (the marker says so), and the supervisor starts it again: a new pid, restarts 1, the crash recorded
    await until("the crash", () => existsSync(marker));
    const r2 = await until("the restart", () => listServing().find((r) => r.targetId === "vllm-stub" && r.restarts === 1 && r.pid !== first.pid));
    expect(pidAlive(first.pid)).toBe(false);
    expect(pidAlive(r2.pid)).toBe(true);
    expect(r2.lastCrash).toMatch(/exited 1/);
    expect(readFileSync(rec.logFile, "utf8")).toMatch(/illegal memory access/);
    // the restarted server (recorded once ready) requires the key, and has it (VLLM_API_KEY from the key file; never argv)
    const models = (auth: boolean) =>
      fetch(`http://127.0.0.1:${port}/v1/models`, { headers: auth ? { authorization: `Bearer ${key}` } : {} }).then((r) => r.status);
    expect(await models(true)).toBe(200);
    expect(await models(false)).toBe(401);
    expect(r2.args.join(" ")).not.toContain(key);

    // `ocw serving list` says it
    const { stdout } = await run(process.execPath, [BUNDLE, "serving", "list"], { env: { ...process.env, OCW_STATE_DIR: state } });
    expect(stdout).toMatch(/vllm-stub\s+running pid \d+\s+:\d+ .*restarted 1×\s+last crash: .*exited 1/);

    // stop: the supervisor first (no restart follows), then the server
    const sup = r2.supervisorPid!;
    const stopped = await stopServing("vllm-stub");
    expect(stopped.stopped.map((r) => r.targetId)).toEqual(["vllm-stub"]);
    expect(pidAlive(sup)).toBe(false);
    expect(pidAlive(r2.pid)).toBe(false);
    expect(listServing()).toEqual([]);
  }, 120_000);
});
