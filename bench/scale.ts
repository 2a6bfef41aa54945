// Scale: many workers at once on this machine, through the real engine and opencode serve, every ask approved.
import { readFileSync } from "node:fs";
import { follow } from "../engine/api/follow";
import { isActive, isAtRest, pendingAsks, type Worker } from "../shared/worker";
import type { ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, type TestEngine } from "../test/helpers";
import { benchTarget } from "./batch";
import { opencodeServeUnder, rssMbOf, samplePeak } from "./procs";
import { log, pct, median, procStat, round, rssPeak } from "./stats";
import os from "node:os";

export interface Concurrent {
  workers: number;
  wallMs: number;
  built: number;
  /** Workers in starting/running/waiting-approval at the same moment, at most (from the engine's events). */
  maxActive: number;
  finalStates: Record<string, number>;
  /** Reasons of the workers that did not end built, and `[error]` lines of the engine's log during the run. */
  errors: string[];
  engineRssMbPeak: number;
  opencodeRssMbBefore: number | null;
  opencodeRssMbPeak: number | null;
  /** Peak opencode serve RSS divided by the workers that ran at once. */
  opencodeRssMbPerWorker: number | null;
  stopped?: string;
  /** How often the bench's own event stream / queries to the engine failed (fetch failed) and were reopened. */
  connectionDrops: number;
  /**
   * Ask → subscriber: from the engine taking opencode's `permission.asked` (the ask's createdAt, the engine's clock) to
   * this bench's subscriber of the engine's API holding `ask.opened` (same machine, same clock), over every ask.
   */
  askToSubscriberMs?: { p50: number; p99: number; max: number; n: number };
  /** Engine RSS when the batch started (after a warm-up worker). */
  engineRssMbBefore?: number;
  /** Load average (1 min) at the batch's start and end, and the machine's cores. */
  load?: { before: number; after: number; cores: number };
}

const memAvailableMb = () => Number(/MemAvailable:\s+(\d+)/.exec(readFileSync("/proc/meminfo", "utf8"))?.[1] ?? 0) / 1024;
const MIN_FREE_MB = Number(process.env.OCW_BENCH_MIN_FREE_MB ?? 3072);

/** `n` write-a-file tasks at once (n slots) on `engine`, each ask approved as it opens, graded with a file check. */
export async function concurrent(engine: TestEngine, model: ScriptedModel, n: number): Promise<Concurrent> {
  await engine.client.targets.save.mutate({ target: { ...benchTarget(model.url, n), id: `scale${n}` }, activate: true });
  const dir = makeRepo();
  const warm = await engine.client.workers.start.mutate({ task: "BENCH-TINY warm-up", directory: dir });
  for (let i = 0; ; i++) {
    try {
      await follow(engine.client, [warm.workerId], { timeoutMs: 180_000 });
      break;
    } catch (err) {
      if (i >= 5) throw err;
    }
  }
  const pid = engine.proc.pid!;
  const oc = opencodeServeUnder(pid);
  const ocBefore = rssMbOf(oc);
  const ocPeak = samplePeak(oc);
  const engineRssMbBefore = round(procStat(pid).rssMb);
  const enginePeak = rssPeak(pid, 250);
  const loadBefore = round(os.loadavg()[0]!, 2);
  const askLatency: number[] = [];
  const errLen = engine.stderr().length;
  let stopped: string | undefined;
  let maxActive = 0;
  const answered = new Set<string>();
  const t0 = Date.now();
  const tasks = Array.from({ length: n }, (_, i) => ({ task: `BENCH-BATCH ${i} scale`, directory: dir, checks: [{ file: `f${i}.txt` }] }));
  let workerIds: string[] = [];
  // The engine checks the model endpoint first (3 s); on a loaded machine the scripted model can miss that: try again.
  for (let attempt = 1; ; attempt++) {
    try {
      // A batch holds at most 64 tasks (the API's limit): more at once are several batches started together.
      const chunks = Array.from({ length: Math.ceil(tasks.length / 64) }, (_, i) => tasks.slice(i * 64, i * 64 + 64));
      workerIds = (await Promise.all(chunks.map((chunk) => engine.client.workers.startBatch.mutate({ tasks: chunk })))).flatMap((r) => r.workerIds);
      break;
    } catch (err) {
      if (attempt >= 10 || !/cannot reach the model endpoint/.test((err as Error).message)) throw err;
      log(`  startBatch refused (${(err as Error).message}); again in 2 s`);
      await new Promise((res) => setTimeout(res, 2000));
    }
  }
  let current = new Map<string, Worker>();
  const watchdog = setInterval(() => {
    const free = memAvailableMb();
    if (stopped || free >= MIN_FREE_MB) return;
    stopped = `stopped: ${Math.round(free)} MB of memory left (opencode serve at ${rssMbOf(oc)} MB)`;
    log(stopped);
    for (const w of current.values())
      if (!isAtRest(w.state)) void engine.client.workers.stop.mutate({ workerId: w.id, reason: "bench: memory low" }).catch(() => undefined);
  }, 1000);
  let r!: Awaited<ReturnType<typeof follow>>;
  let dropped = 0;
  try {
    // A dropped connection (fetch failed / ECONNRESET under load) is followed again from a fresh snapshot, and counted.
    for (;;) {
      try {
        r = await follow(engine.client, workerIds, {
          timeoutMs: 20 * 60_000,
          onEvent: (e, ws) => {
            if (e.type === "ask.opened") askLatency.push(Date.now() - e.ask.createdAt);
            current = ws;
            maxActive = Math.max(maxActive, [...ws.values()].filter((w) => isActive(w.state)).length);
            for (const w of ws.values())
              for (const a of pendingAsks(w))
                if (!answered.has(a.id)) {
                  answered.add(a.id);
                  void engine.client.approvals.decide.mutate({ askId: a.id, decision: "once" }).catch(() => answered.delete(a.id));
                }
          },
        });
        break;
      } catch (err) {
        if (engine.proc.exitCode !== null || engine.proc.signalCode || ++dropped > 20)
          throw new Error(
            `following ${n} workers failed (${(err as Error).message}); engine ${engine.proc.exitCode ?? engine.proc.signalCode ?? "up"}; its log: ${engine.stderr().slice(-1500)}`,
          );
        log(
          `  following the workers failed (${(err as Error).message}: ${String((err as { cause?: Error }).cause?.message ?? "")}); the engine is up: following again`,
        );
      }
    }
  } finally {
    clearInterval(watchdog);
  }
  const wallMs = Date.now() - t0;
  const ocPeakMb = oc === null ? null : round(ocPeak.stop());
  const engineRssMbPeak = round(enginePeak.stop());
  const finalStates: Record<string, number> = {};
  const errors: string[] = [];
  for (const w of r.workers.values()) {
    finalStates[w.state] = (finalStates[w.state] ?? 0) + 1;
    if (w.state !== "built") errors.push(`${w.id} ${w.state}: ${w.stateReason ?? "(no reason)"}`);
  }
  if (r.reason !== "settled") errors.push(`the run did not settle: ${r.reason}`);
  errors.push(
    ...engine
      .stderr()
      .slice(errLen)
      .split("\n")
      .filter((l) => /\[error\]|Error:/.test(l))
      .slice(0, 20),
  );
  cleanup(dir);
  return {
    workers: n,
    wallMs,
    built: finalStates.built ?? 0,
    maxActive,
    connectionDrops: dropped,
    finalStates,
    errors,
    engineRssMbPeak,
    opencodeRssMbBefore: ocBefore,
    opencodeRssMbPeak: ocPeakMb,
    opencodeRssMbPerWorker: ocPeakMb === null || !maxActive ? null : round(ocPeakMb / maxActive),
    ...(stopped ? { stopped } : {}),
    askToSubscriberMs: {
      p50: round(median(askLatency)),
      p99: round(pct(askLatency, 99)),
      max: askLatency.length ? Math.max(...askLatency) : NaN,
      n: askLatency.length,
    },
    engineRssMbBefore,
    load: { before: loadBefore, after: round(os.loadavg()[0]!, 2), cores: os.availableParallelism?.() ?? os.cpus().length },
  };
}
