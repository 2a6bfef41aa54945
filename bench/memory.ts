// Engine memory over many finished workers: RSS before, during and after, next to what their logs hold on disk.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { follow } from "../engine/api/follow";
import { isAtRest, type Worker } from "../shared/worker";
import { cleanup, makeRepo, type TestEngine } from "../test/helpers";
import { opencodeServeUnder } from "./procs";
import { log, procStat, round, rssPeak, sleep } from "./stats";

export interface ManyWorkers {
  workers: number;
  /** Workers that ran to a verdict (fewer than `workers` only when the run was cut short, see `stopped`). */
  finished: number;
  wallMs: number;
  rssMbBefore: number;
  rssMbAfter: number;
  rssMbPeak: number;
  /** The target's `opencode serve` (a child of the engine): it keeps one instance per worktree it has seen. */
  opencodeRssMbBefore: number | null;
  opencodeRssMbAfter: number | null;
  /** Bytes of every file under <stateDir>/workers: all of their event logs, and those written by this run. */
  logBytes: number;
  logBytesOfRun: number;
  /** RSS as workers finish (about ten points). */
  samples: { finished: number; sec: number; rssMb: number; opencodeRssMb: number | null }[];
  finalStates: Record<string, number>;
  stopped?: string;
  /** SIGTERM to the engine → its exit, after the run (it stops opencode serve and whatever still runs). */
  shutdownMs?: number;
  /** Set when these figures come from a separate run merged into the report. */
  ranSeparately?: string;
}

function bytesUnder(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) total += statSync(path.join(e.parentPath, e.name)).size;
  return total;
}

const rssOf = (pid: number | null) => {
  if (pid === null) return null;
  try {
    return round(procStat(pid).rssMb);
  } catch {
    return null;
  }
};

const memAvailableMb = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0) / 1024;

// The engine's StartBatchInput takes at most 64 tasks.
const CHUNK = 50;
/** When this file appears, the run stops its remaining workers and reports what finished (OCW_BENCH_STOP_FILE). */
const STOP_FILE = process.env.OCW_BENCH_STOP_FILE;
// Below this much free memory the run stops its remaining workers rather than push the machine into the OOM killer:
// opencode serve holds an instance for every worker it runs (5–6 GB here with 32 at once).
const MIN_FREE_MB = Number(process.env.OCW_BENCH_MIN_FREE_MB ?? Math.max(3072, (os.totalmem() / 2 ** 20) * 0.2));

/** `count` tiny workers (one model turn, no tool call, no checks) through the engine, all queued at once. */
/** `deadlineMs`: past it, the workers not yet finished are stopped and the run says so (`stopped`). */
export async function manyWorkers(engine: TestEngine, count: number, deadlineMs = Infinity): Promise<ManyWorkers> {
  const pid = engine.proc.pid!;
  // The serve process itself (inside bubblewrap, not the bwrap around it).
  const oc = opencodeServeUnder(pid);
  const logs = path.join(engine.stateDir, "workers");
  const dir = makeRepo();
  // Let start-up garbage settle so "before" is the engine at rest with its earlier workers.
  await sleep(2000);
  const rssMbBefore = round(procStat(pid).rssMb);
  const opencodeRssMbBefore = rssOf(oc);
  const logsBefore = bytesUnder(logs);
  const peak = rssPeak(pid, 500);
  const t0 = Date.now();
  const ids: string[] = [];
  for (let i = 0; i < count; i += CHUNK) {
    const n = Math.min(CHUNK, count - i);
    // The engine checks the model endpoint before it takes work (3 s); on a loaded machine the scripted model in this
    // process can miss that: try again rather than lose the run.
    for (let attempt = 1; ; attempt++) {
      try {
        const r = await engine.client.workers.startBatch.mutate({
          tasks: Array.from({ length: n }, (_, j) => ({ task: `BENCH-TINY ${i + j}`, directory: dir })),
        });
        ids.push(...r.workerIds);
        break;
      } catch (err) {
        if (attempt >= 10 || !/cannot reach the model endpoint/.test((err as Error).message)) throw err;
        log(`  startBatch refused (${(err as Error).message}); again in 2 s`);
        await sleep(2000);
      }
    }
  }
  const samples: ManyWorkers["samples"] = [];
  const sample = (finished: number) => {
    samples.push({ finished, sec: round((Date.now() - t0) / 1000), rssMb: round(procStat(pid).rssMb), opencodeRssMb: rssOf(oc) });
    log(`  ${finished}/${count} finished: engine RSS ${samples.at(-1)!.rssMb} MB, opencode serve ${samples.at(-1)!.opencodeRssMb} MB`);
  };
  const every = Math.max(1, Math.round(count / 10));
  let nextSample = every;
  let stopped: string | undefined;
  let current = new Map<string, Worker>();
  const finishedIn = (ws: Map<string, Worker>) => [...ws.values()].filter((w) => isAtRest(w.state)).length;
  const watchdog = setInterval(() => {
    const free = memAvailableMb();
    const asked = STOP_FILE && existsSync(STOP_FILE);
    if (stopped || (free >= MIN_FREE_MB && Date.now() < deadlineMs && !asked)) return;
    stopped =
      free < MIN_FREE_MB
        ? `stopped after ${finishedIn(current)} workers: ${Math.round(free)} MB of memory left (opencode serve at ${rssOf(oc)} MB)`
        : asked
          ? `stopped after ${finishedIn(current)} workers: asked to stop (${STOP_FILE} appeared) to leave the machine to the rest of the bench`
          : `stopped after ${finishedIn(current)} workers: the run's time limit (${((deadlineMs - t0) / 60_000).toFixed(0)} min) was reached`;
    log(stopped);
    for (const w of current.values())
      if (!isAtRest(w.state)) void engine.client.workers.stop.mutate({ workerId: w.id, reason: "bench: memory low" }).catch(() => undefined);
  }, 2000);
  let r!: Awaited<ReturnType<typeof follow>>;
  try {
    // A dropped connection (ECONNRESET under load) is followed again from a fresh snapshot; a dead engine ends the run.
    for (let attempt = 0; ; attempt++) {
      try {
        r = await follow(engine.client, ids, {
          timeoutMs: 3 * 60 * 60_000,
          onEvent: (_e, ws) => {
            current = ws;
            const finished = finishedIn(ws);
            if (finished >= nextSample) {
              sample(finished);
              nextSample = finished + every;
            }
          },
        });
        break;
      } catch (err) {
        if (engine.proc.exitCode !== null || engine.proc.signalCode || attempt >= 20)
          throw new Error(
            `the engine ended during the many-workers run (${engine.proc.exitCode ?? engine.proc.signalCode}): ${(err as Error).message}; its log: ${engine.stderr().slice(-2000)}`,
          );
        log(
          `  following the workers failed (${(err as Error).message}: ${String((err as { cause?: Error }).cause?.message ?? "")}); the engine is up: following again`,
        );
        await sleep(2000);
      }
    }
  } finally {
    clearInterval(watchdog);
  }
  if (r.reason !== "settled") throw new Error(`the ${count} workers did not settle: ${r.reason}`);
  const ws = r.workers;
  const wallMs = Date.now() - t0;
  await sleep(2000);
  const rssMbAfter = round(procStat(pid).rssMb);
  const rssMbPeak = round(peak.stop());
  const logBytes = bytesUnder(logs);
  const finalStates: Record<string, number> = {};
  for (const w of ws.values()) finalStates[w.state] = (finalStates[w.state] ?? 0) + 1;
  const finished = count - (finalStates.stopped ?? 0);
  samples.push({ finished, sec: round(wallMs / 1000), rssMb: rssMbAfter, opencodeRssMb: rssOf(oc) });
  cleanup(dir);
  return {
    workers: count,
    finished,
    wallMs,
    rssMbBefore,
    rssMbAfter,
    rssMbPeak,
    opencodeRssMbBefore,
    opencodeRssMbAfter: rssOf(oc),
    logBytes,
    logBytesOfRun: logBytes - logsBefore,
    samples,
    finalStates,
    ...(stopped ? { stopped } : {}),
  };
}
