/** `ocw serving list|keep|restart` (the bundle): what the wizard's servers panel does, on the command line. */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BUNDLE, stopDetachedEngine, tempDir } from "../helpers";
import { rmSync } from "node:fs";

const state = tempDir("serving-cli");
afterAll(async () => {
  // `ocw serving …` asks the engine's servers API: the engine the first call started in this state dir stops here
  await stopDetachedEngine(state);
  rmSync(state, { recursive: true, force: true });
});
const ocw = (...args: string[]) =>
  spawnSync(process.execPath, [BUNDLE, "serving", ...args], { env: { ...process.env, OCW_STATE_DIR: state }, encoding: "utf8" });

describe("ocw serving", () => {
  it("lists a stopped server, keeps it after `ocw stop` and back; an unknown target and a vLLM restart are clear errors", () => {
    writeFileSync(
      path.join(state, "serving.json"),
      JSON.stringify([
        {
          targetId: "llamacpp-a",
          pid: 0,
          port: 41001,
          bin: "/opt/llama/llama-server",
          args: [],
          logFile: path.join(state, "a.log"),
          keyFile: null,
          startedAt: "2026-01-01T00:00:00Z",
        },
        {
          targetId: "vllm-b",
          pid: 0,
          port: 41002,
          bin: "/usr/bin/vllm",
          args: [],
          logFile: path.join(state, "b.log"),
          keyFile: null,
          startedAt: "2026-01-01T00:00:00Z",
        },
      ]),
    );
    let r = ocw("list");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/llamacpp-a\s+stopped\s+:41001 {2}stops with ocw stop/);
    r = ocw("keep", "llamacpp-a");
    expect(r.stdout).toBe("llamacpp-a: kept running after ocw stop\n");
    expect(ocw("list").stdout).toMatch(/llamacpp-a\s+stopped\s+:41001 {2}kept after ocw stop/);
    expect(ocw("keep", "llamacpp-a", "--off").stdout).toBe("llamacpp-a: stops with ocw stop\n");
    r = ocw("keep", "nope");
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('ocw: no model server started by the engine for "nope" (servers you started yourself are stopped where you started them)\n');
    r = ocw("restart", "vllm-b");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/vllm-b runs vllm, not llama-server/);
  });
});
