import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connect, type EngineClient } from "../engine/api/client";
import { follow } from "../engine/api/follow";
import { readLock, supervisorOf } from "../engine/api/lock";
import { alive } from "../engine/process/process";
import { projectRoot } from "../engine/paths";
import type { Target } from "../shared/target";
import { isAtRest, pendingAsks, type Worker } from "../shared/worker";

export const ROOT = projectRoot();
export const BUNDLE = path.join(ROOT, "dist", "ocw.mjs");

/**
 * A wall-clock margin for a correctness test, stretched by the machine's load: `ms` on a machine with a core to spare,
 * times the load per core (the 1-minute average) above that, at most 10×. Such a limit tells "bounded" from "never" (a
 * wait that returns, a bridge not blocked); how fast is the bench's figure, and the fault table's (test:faults).
 */
export function loadScaledMs(ms: number, load = os.loadavg()[0] ?? 0, cores = os.availableParallelism()): number {
  return Math.round(ms * Math.min(10, Math.max(1, load / cores)));
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `ocw-${prefix}-`));
}

/** A real git repository with one commit holding `files`. */
export function makeRepo(files: Record<string, string> = { "README.md": "# test repo\n" }): string {
  const dir = tempDir("repo");
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
  return dir;
}

export interface TestEngine {
  stateDir: string;
  proc: ChildProcess;
  client: EngineClient;
  url: string;
  stderr: () => string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `ocw serve` (the real bundle, or `bundle`: the bench's build of an earlier commit) in its own state dir and connects to it. */
export async function startEngine(stateDir = tempDir("state"), env: NodeJS.ProcessEnv = {}, bundle = BUNDLE): Promise<TestEngine> {
  const prof = process.env.OCW_ENGINE_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.OCW_ENGINE_CPU_PROF}`] : [];
  // OCW_ENGINE_NODE_FLAGS="--heap-prof --heap-prof-dir=DIR": node flags for every engine started here (an investigation's).
  prof.push(...((env.OCW_ENGINE_NODE_FLAGS ?? process.env.OCW_ENGINE_NODE_FLAGS)?.split(" ").filter(Boolean) ?? []));
  const proc = spawn(process.execPath, [...prof, bundle, "serve"], {
    env: { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (b) => (err += b.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (b) => {
      out += b.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) resolve(line.trim());
    });
    proc.once("exit", (code) => reject(new Error(`ocw serve exited ${code}: ${err}`)));
    setTimeout(() => reject(new Error(`ocw serve printed no URL in 20 s: ${err}`)), 20_000);
  });
  const lock = readLock(stateDir)!;
  return {
    stateDir,
    proc,
    url,
    client: connect(lock, "gui:test"),
    stderr: () => err,
    kill: (signal = "SIGTERM") =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode) return resolve();
        proc.once("exit", () => resolve());
        proc.kill(signal);
      }),
  };
}

/** `ocw ARGS` of the bundle against the engine of `stateDir` (with `env` added): its exit code and output (killed after `timeoutMs`). */
export function runOcw(
  stateDir: string,
  args: string[],
  timeoutMs = 60_000,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BUNDLE, ...args], { env: { ...process.env, OCW_STATE_DIR: stateDir, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout!.on("data", (b) => (stdout += b));
    p.stderr!.on("data", (b) => (stderr += b));
    const t = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("exit", (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** What `ocw run` of one task is given: the repository, the task, its one `--check`, and the scripted model's URL as the endpoint. */
export interface OcwRun {
  dir: string;
  task: string;
  check: string;
  endpoint: string;
}

/** The arguments of `ocw run` of `run` on the scripted model (test/fixtures/scripted-model.ts: scripted-1), then `flags`. */
export function ocwRunArgs(run: OcwRun, ...flags: string[]): string[] {
  return ["run", "--dir", run.dir, "--task", run.task, "--check", run.check, "--endpoint", run.endpoint, "--model", "scripted-1", ...flags];
}

export function scriptedTarget(url: string, slots = 4, id = "scripted"): Target {
  return { id, model: "scripted-1", endpoint: url, keyRef: null, serving: { engine: "scripted", endpoints: [], slots }, checks: [] };
}

/** Waits until every worker is final; answers each ask with `decide` when given. */
export async function settle(
  client: EngineClient,
  ids: string[],
  decide?: (ask: Worker["asks"][number]) => "once" | "always" | "reject" | null,
  timeoutMs = 150_000,
) {
  const answered = new Set<string>();
  const answer = (workers: Map<string, Worker>) => {
    if (!decide) return;
    for (const w of workers.values())
      for (const a of pendingAsks(w)) {
        if (answered.has(a.id)) continue;
        const d = decide(a);
        if (!d) continue;
        answered.add(a.id);
        void client.approvals.decide.mutate({ askId: a.id, decision: d }).catch(() => answered.delete(a.id));
      }
  };
  const r = await follow(client, ids, { onEvent: (_e, ws) => answer(ws), until: (ws) => (answer(ws), false), timeoutMs });
  if (r.reason !== "settled") throw new Error(`workers did not settle in time: ${[...r.workers.values()].map((w) => `${w.id}=${w.state}`).join(", ")}`);
  return r.workers;
}

/** Waits until a worker has a pending ask (or settles), and returns its picture. */
export async function untilAsk(client: EngineClient, id: string, timeoutMs = 60_000): Promise<Worker> {
  const r = await follow(client, [id], { until: (ws) => pendingAsks(ws.get(id)!).length > 0 && ws.get(id)!.state === "waiting-approval", timeoutMs });
  return r.workers.get(id)!;
}

export async function untilState(client: EngineClient, id: string, pred: (w: Worker) => boolean, timeoutMs = 60_000): Promise<Worker> {
  const r = await follow(client, [id], { until: (ws) => pred(ws.get(id)!), timeoutMs });
  if (!pred(r.workers.get(id)!)) throw new Error(`worker ${id} is ${r.workers.get(id)!.state} after ${r.reason}`);
  return r.workers.get(id)!;
}

/** Whether a process with this pid exists (signal 0). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * An engine a client started (`ocw mcp`, `ocw run`) outlives it by design: shut it down through its API and wait for it
 * and its supervisor to exit (the supervisor still writes to the state dir as it lets go of it: removing the folder
 * under it failed with ENOTEMPTY); SIGKILL what is left after 15 s.
 */
export async function stopDetachedEngine(stateDir: string): Promise<void> {
  const lock = readLock(stateDir);
  if (!lock) return;
  const procs = [{ pid: lock.pid, startTime: lock.startTime }, supervisorOf(lock)].filter((p): p is NonNullable<typeof p> => !!p);
  await connect(lock, "cli:test")
    .shutdown.mutate()
    .catch(() => undefined);
  const deadline = Date.now() + 15_000;
  while (procs.some((p) => alive(p)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const p of procs) if (alive(p)) process.kill(p.pid, "SIGKILL");
}

export function cleanup(...dirs: string[]) {
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
}

export { isAtRest };
