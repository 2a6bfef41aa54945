/**
 * A vLLM or SGLang process (the binary, or `docker|podman run` of its image) as the supervisor starts it: its output to
 * the log file, ready once /health (or /v1/models with the key) answers 200 while it lives. The key is never in argv:
 * vLLM reads VLLM_API_KEY (a container gets `-e VLLM_API_KEY`, the name only), SGLang its 0600 `--config` file.
 * `ocw serving supervise` runs it under engine/process/supervisor.ts, as it runs llama-server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import { type Launched, stopPid } from "../process";
import { httpJson } from "./http";
import { SetupError } from "../models";

interface RuntimeProcessOptions {
  cmd: string;
  args: string[];
  /** Environment additions (the key in VLLM_API_KEY for vLLM); added to this process's own. */
  env: Record<string, string>;
  logFile: string;
  port: number;
  /** The key the server requires (for the /v1/models readiness probe). */
  key: string | null;
  readyTimeoutMs: number;
  /** Outlive this process (an unsupervised start); default false (the supervisor's child). */
  detached?: boolean;
}

/** Waits until /health (or /v1/models with the key) answers 200 while the process lives. */
async function waitRuntimeReady(port: number, key: string | null, child: ChildProcess, logFile: string, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  let exited: string | null = null;
  const onExit = (c: number | null, s: string | null) => (exited = String(c ?? s));
  child.once("exit", onExit);
  try {
    while (performance.now() - t0 < timeoutMs) {
      if (exited !== null || child.exitCode !== null) throw new SetupError("runtime", `exited (${exited ?? child.exitCode}) before it was ready`, { logFile });
      const h = await httpJson(`http://127.0.0.1:${port}/health`, { timeoutMs: 2000 });
      if (h.status === 200) return performance.now() - t0;
      const m = await httpJson(`http://127.0.0.1:${port}/v1/models`, { headers: key ? { authorization: `Bearer ${key}` } : {}, timeoutMs: 2000 });
      if (m.status === 200) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new SetupError("runtime", `did not become ready within ${Math.round(timeoutMs / 1000)} s (see ${logFile})`, { logFile, timeoutMs }, "unavailable");
  } finally {
    child.off("exit", onExit);
  }
}

/** Starts the runtime and resolves once it is ready; a process that exits or never gets ready is stopped and rejects. */
export async function startRuntimeProcess(o: RuntimeProcessOptions): Promise<Launched> {
  mkdirSync(path.dirname(o.logFile), { recursive: true, mode: 0o700 });
  const fd = openSync(o.logFile, "a", 0o600);
  const env: NodeJS.ProcessEnv = { ...process.env, ...o.env };
  delete env.LLAMA_API_KEY;
  const child = spawn(o.cmd, o.args, { env, stdio: ["ignore", fd, fd], detached: o.detached ?? false });
  closeSync(fd);
  if (o.detached) child.unref();
  const spawnErr = new Promise<never>((_, rej) =>
    child.once("error", (e) => rej(new SetupError("runtime", `cannot start ${o.cmd}: ${e.message}`, { cmd: o.cmd }))),
  );
  try {
    const readyMs = await Promise.race([waitRuntimeReady(o.port, o.key, child, o.logFile, o.readyTimeoutMs), spawnErr]);
    return { pid: child.pid!, child, readyMs };
  } catch (e) {
    if (child.pid) await stopPid(child.pid, 3000);
    throw e;
  }
}
