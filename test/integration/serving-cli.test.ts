/** `ocw serving list|keep|restart` (the bundle): what the wizard's servers panel does, on the command line. */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../engine/serving/llama-server";
import { BUNDLE, pidAlive, stopDetachedEngine, tempDir } from "../helpers";
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

  it("`ocw stop` stops a server the engine started and remembers it: after the engine is back, `ocw serving restart` starts it as it was", async () => {
    const dir = tempDir("serving-restart");
    const env = { ...process.env, OCW_STATE_DIR: dir, OCW_SUPERVISE: "0" };
    const run = (...args: string[]) => spawnSync(process.execPath, [BUNDLE, ...args], { env, encoding: "utf8" });
    try {
      // a stand-in llama-server: answers /health on its --port
      const bin = path.join(dir, "bin", "llama-server");
      mkdirSync(path.dirname(bin), { recursive: true });
      writeFileSync(
        bin,
        `#!${process.execPath}\nconst port = Number(process.argv[process.argv.indexOf("--port") + 1]);\nrequire("node:http").createServer((q, r) => r.writeHead(200).end("{}")).listen(port, "127.0.0.1");\n`,
      );
      chmodSync(bin, 0o755);
      const port = await freePort();
      const logFile = path.join(dir, "s.log");
      const args = ["-m", "model.gguf", "--port", String(port)];
      const child = spawn(bin, args, { detached: true, stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")] });
      child.unref();
      const health = () =>
        fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.status,
          () => 0,
        );
      for (let i = 0; i < 100 && (await health()) !== 200; i++) await new Promise((r) => setTimeout(r, 50));
      writeFileSync(
        path.join(dir, "serving.json"),
        JSON.stringify([{ targetId: "llamacpp-s", pid: child.pid, port, bin, args, logFile, keyFile: null, startedAt: new Date().toISOString() }]),
      );
      expect(run("serving", "list").stdout).toMatch(new RegExp(`llamacpp-s\\s+running pid ${child.pid}`));
      expect(run("stop").status).toBe(0);
      for (let i = 0; i < 100 && pidAlive(child.pid!); i++) await new Promise((r) => setTimeout(r, 50));
      expect(pidAlive(child.pid!)).toBe(false);
      // remembered stopped (it was forgotten: restart said there was no such server)
      expect(JSON.parse(readFileSync(path.join(dir, "serving.json"), "utf8"))).toMatchObject([{ targetId: "llamacpp-s", pid: 0, port }]);
      const back = run("serving", "restart", "llamacpp-s");
      expect(back.stderr).toBe("");
      expect(back.stdout).toMatch(new RegExp(`llamacpp-s running, pid \\d+ on :${port}`));
      expect(await health()).toBe(200);
      expect(run("serving", "stop").stdout).toMatch(/stopped llama-server pid \d+ \(llamacpp-s/);
    } finally {
      await stopDetachedEngine(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
