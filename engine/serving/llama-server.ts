/**
 * llama.cpp `llama-server` runtime: argument building from a fit, start with a generated key (handed through the
 * LLAMA_API_KEY environment variable, so it never shows in `ps`), readiness via /health while watching the
 * process, log capture and parsing of buffer sizes, crash restart with backoff, clean stop.
 */
import { config } from "../config";
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { stateDir } from "../store";
import { Supervisor, type SupervisorEvents, type SupervisorOptions } from "../process";
import { httpJson } from "./http";
import { SetupError, type SetupErrorData } from "../models";

export interface LlamaPlan {
  /** Local GGUF path, or `-hf` repo[:quant]. */
  model: string;
  hf?: boolean;
  alias?: string;
  nGpuLayers?: number;
  ctx: number;
  parallel: number;
  kvUnified: boolean;
  cacheTypeK?: string;
  cacheTypeV?: string;
  flashAttn?: "on" | "off" | "auto";
  tensorSplit?: number[] | null;
  jinja?: boolean;
  noMmproj?: boolean;
  host?: string;
  port: number;
  /** `-fit off` for deterministic sizing (the plan already fits). Default true. */
  fitOff?: boolean;
  /** -lv 4 so buffer sizes are logged. Default 4. */
  verbosity?: number;
  extra?: string[];
}

export function buildLlamaArgs(p: LlamaPlan): string[] {
  const a: string[] = [p.hf ? "-hf" : "-m", p.model];
  if (p.alias) a.push("--alias", p.alias);
  a.push("--host", p.host ?? "127.0.0.1", "--port", String(p.port));
  a.push("-c", String(p.ctx), "-np", String(p.parallel));
  if (p.kvUnified) a.push("--kv-unified");
  if (p.cacheTypeK && p.cacheTypeK !== "f16") a.push("-ctk", p.cacheTypeK);
  if (p.cacheTypeV && p.cacheTypeV !== "f16") a.push("-ctv", p.cacheTypeV);
  a.push("-fa", p.flashAttn ?? "auto");
  if (p.nGpuLayers !== undefined) a.push("-ngl", String(p.nGpuLayers));
  if (p.tensorSplit && p.tensorSplit.length > 1) a.push("-ts", p.tensorSplit.map((x) => String(Math.round(x))).join(","));
  if (p.jinja !== false) a.push("--jinja");
  if (p.noMmproj) a.push("--no-mmproj");
  if (p.fitOff !== false) a.push("-fit", "off");
  a.push("-lv", String(p.verbosity ?? 4));
  if (p.extra) a.push(...p.extra);
  return a;
}

export class LlamaServerError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("runtime", message, data);
    this.name = "LlamaServerError";
  }
}

/** llama-server: explicit path, $LLAMA_SERVER, PATH, or the build script's cache. */
export function findLlamaServer(explicit?: string | null, env: NodeJS.ProcessEnv = process.env): string | null {
  const cands: string[] = [];
  if (explicit) {
    if (!existsSync(explicit))
      throw new LlamaServerError(`no llama-server at ${explicit}; pass --llama-server PATH or build one with scripts/build-llama-server.sh`);
    return path.resolve(explicit);
  }
  if (env.LLAMA_SERVER) cands.push(env.LLAMA_SERVER);
  for (const dir of (env.PATH ?? "").split(path.delimiter))
    if (dir) cands.push(path.join(dir, process.platform === "win32" ? "llama-server.exe" : "llama-server"));
  const cache = config(env).OCW_LLAMA_CACHE ?? path.join(os.homedir(), ".cache/opencode-worker/llama");
  try {
    for (const d of readdirSync(cache).sort().reverse()) cands.push(path.join(cache, d, "bin", "llama-server"));
  } catch {
    /* no cache */
  }
  // the prebuilt release setup installed (<state>/llama/<tag>-<variant>/…): found again, also offline
  const installed = path.join(stateDir(env), "llama");
  try {
    for (const d of readdirSync(installed)
      .filter((x) => !x.includes(".tmp"))
      .sort()
      .reverse()) {
      const f = findFile(path.join(installed, d), process.platform === "win32" ? "llama-server.exe" : "llama-server", 0);
      if (f) cands.push(f);
    }
  } catch {
    /* nothing installed */
  }
  return cands.find((c) => existsSync(c)) ?? null;
}

function findFile(dir: string, name: string, depth: number): string | null {
  if (depth > 3) return null;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isFile() && e.name === name) return path.join(dir, e.name);
  }
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      const f = findFile(path.join(dir, e.name), name, depth + 1);
      if (f) return f;
    }
  }
  return null;
}

export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on("error", reject);
    s.listen(0, host, () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

export interface LoggedSizes {
  modelMiB: Record<string, number>;
  kv: { MiB: number; cells: number; layers: number; seqs: number; streams: number; kMiB: number; vMiB: number; kType: string; vType: string }[];
  recurrent: { MiB: number; cells: number; layers: number; seqs: number; rMiB: number; sMiB: number }[];
  computeMiB: Record<string, number>;
  outputMiB: Record<string, number>;
  nSlots: number | null;
  nCtxSlot: number | null;
  kvUnified: boolean | null;
  nCtx: number | null;
}

/** Parses the buffer-size lines llama-server prints at -lv 4 (timestamps and level prefixes are ignored). */
export function parseServerLog(log: string): LoggedSizes {
  const r: LoggedSizes = { modelMiB: {}, kv: [], recurrent: [], computeMiB: {}, outputMiB: {}, nSlots: null, nCtxSlot: null, kvUnified: null, nCtx: null };
  for (const line of log.split(/\r?\n/)) {
    let m: RegExpExecArray | null;
    if ((m = /load_tensors:\s+(\S+) model buffer size =\s+([\d.]+) MiB/.exec(line))) r.modelMiB[m[1]!] = (r.modelMiB[m[1]!] ?? 0) + Number(m[2]);
    else if (
      (m =
        /llama_kv_cache: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+)\/(\d+) seqs\), K \((\w+)\):\s+([\d.]+) MiB, V \((\w+)\):\s+([\d.]+) MiB/.exec(
          line,
        ))
    ) {
      r.kv.push({
        MiB: Number(m[1]),
        cells: Number(m[2]),
        layers: Number(m[3]),
        seqs: Number(m[4]),
        streams: Number(m[5]),
        kType: m[6]!,
        kMiB: Number(m[7]),
        vType: m[8]!,
        vMiB: Number(m[9]),
      });
    } else if (
      (m =
        /llama_memory_recurrent: size =\s+([\d.]+) MiB \(\s*(\d+) cells,\s+(\d+) layers,\s+(\d+) seqs.*?R \(\w+\):\s+([\d.]+) MiB, S \(\w+\):\s+([\d.]+) MiB/.exec(
          line,
        ))
    ) {
      r.recurrent.push({ MiB: Number(m[1]), cells: Number(m[2]), layers: Number(m[3]), seqs: Number(m[4]), rMiB: Number(m[5]), sMiB: Number(m[6]) });
    } else if ((m = /(\S+) compute buffer size =\s+([\d.]+) MiB/.exec(line))) r.computeMiB[m[1]!] = Number(m[2]);
    else if ((m = /(\S+)\s+output buffer size =\s+([\d.]+) MiB/.exec(line))) r.outputMiB[m[1]!] = Number(m[2]);
    else if ((m = /n_slots = (\d+), n_ctx_slot = (\d+), kv_unified = '(\w+)'/.exec(line))) {
      r.nSlots = Number(m[1]);
      r.nCtxSlot = Number(m[2]);
      r.kvUnified = m[3] === "true";
    } else if ((m = /llama_context: n_ctx\s+= (\d+)/.exec(line))) r.nCtx = Number(m[1]);
  }
  return r;
}

export interface StartOptions {
  bin: string;
  args: string[];
  apiKey: string | null;
  /** Extra environment from the plan (a replica's CUDA_VISIBLE_DEVICES …); the key is never here. */
  env?: Record<string, string>;
  logFile: string;
  port: number;
  host?: string;
  readyTimeoutMs?: number;
  /** Detach (the server outlives this process). */
  detached?: boolean;
}

export interface Started {
  pid: number;
  child: ChildProcess;
  readyMs: number;
}

function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!k.startsWith("LLAMA_ARG_") && k !== "LLAMA_API_KEY") out[k] = v;
  return out;
}

/** Waits until /health is 200 while the process lives; throws with the log tail when it exits first. */
export async function waitHealthy(url: string, child: ChildProcess | null, logFile: string | null, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  let exited: number | string | null = null;
  const onExit = (code: number | null, sig: string | null) => (exited = code ?? sig ?? "exit");
  child?.once("exit", onExit);
  try {
    while (performance.now() - t0 < timeoutMs) {
      if (exited !== null || (child && child.exitCode !== null)) {
        const tail =
          logFile && existsSync(logFile)
            ? readFileSync(logFile, "utf8")
                .split("\n")
                .filter((l) => /\bE |error|failed/i.test(l))
                .slice(-3)
                .join(" | ")
            : "";
        throw new LlamaServerError(`llama-server exited (${exited ?? child?.exitCode}) before it was ready${tail ? `: ${tail}` : ""}`);
      }
      const r = await httpJson(`${url}/health`, { timeoutMs: 2000 });
      if (r.status === 200) return performance.now() - t0;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new LlamaServerError(`llama-server did not become healthy within ${timeoutMs} ms (see ${logFile})`);
  } finally {
    child?.off("exit", onExit);
  }
}

export async function startLlamaServer(o: StartOptions): Promise<Started> {
  mkdirSync(path.dirname(o.logFile), { recursive: true, mode: 0o700 });
  const fd = openSync(o.logFile, "a", 0o600);
  const env = { ...scrubEnv(process.env), ...o.env };
  if (o.apiKey) env.LLAMA_API_KEY = o.apiKey;
  // a prebuilt release keeps its shared libraries (libggml-cuda.so …) next to the binary
  env.LD_LIBRARY_PATH = [path.dirname(o.bin), env.LD_LIBRARY_PATH].filter(Boolean).join(path.delimiter);
  const child = spawn(o.bin, o.args, { env, stdio: ["ignore", fd, fd], detached: o.detached ?? false });
  const spawnErr = new Promise<never>((_, rej) => child.once("error", (e) => rej(new LlamaServerError(`cannot start ${o.bin}: ${e.message}`))));
  closeSync(fd);
  if (o.detached) child.unref();
  const readyMs = await Promise.race([waitHealthy(`http://${o.host ?? "127.0.0.1"}:${o.port}`, child, o.logFile, o.readyTimeoutMs ?? 120000), spawnErr]).catch(
    (e) => {
      try {
        child.kill("SIGKILL");
      } catch {
        /* gone */
      }
      throw e;
    },
  );
  return { pid: child.pid!, child, readyMs };
}

// Process identity and stopping live in the one process module; re-exported for the serving commands that use them.
export { pidAlive, signalablePid, stopPid, type SupervisorEvents } from "../process";

// Restart after a crash: the one supervisor of engine/process/ (also vLLM's and SGLang's, runtime-process.ts).

/**
 * Keeps a llama-server running: restarts it with exponential backoff (1 s, 2 s, 4 s … capped at 30 s) when it
 * dies unexpectedly; gives up after `maxRestarts` crashes within `windowMs`. `stop()` is a clean stop.
 */
export class LlamaSupervisor extends Supervisor {
  constructor(o: StartOptions & SupervisorOptions, ev: SupervisorEvents = {}) {
    super(() => startLlamaServer({ ...o, detached: false }), ev, o);
  }
}
