// Pools: a batch on a 3-endpoint pool against the same batch on one endpoint with the same total slots, and the time
// from an endpoint's death to its removal from admission — mid-call (a worker's model call fails) and between calls
// (only the periodic probe can see it). The endpoints are the scripted model (it plays llama.cpp's /slots), so the
// ratio is the engine's cost of a pool (admission by live capacity, one provider per endpoint), not the servers'.
import type { Target } from "../shared/target";
import { isActive } from "../shared/worker";
import { startScriptedModel, writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, settle, startEngine, untilAsk, type TestEngine } from "../test/helpers";
import { log, sleep, spread, type Spread } from "./stats";

export interface PoolBench {
  tasks: number;
  endpoints: number;
  slotsPerEndpoint: number;
  /** The engine's pool probe period the run used (OCW_POOL_PROBE_MS, its default unless set). */
  probeMs: number;
  reps: number;
  /** Wall time of the batch on the pool and on one endpoint with the same total slots, per repetition. */
  poolMs: Spread;
  singleMs: Spread;
  /** pool ÷ one endpoint, per repetition. */
  ratio: Spread;
  builtPool: number;
  builtSingle: number;
  /** Most workers of ours at once on any one endpoint of the pool (never above its slots). */
  maxOnEndpoint: number;
  /** Endpoint killed → the engine shows it down (out of admission): while a worker's model call was open on it … */
  removalMidCallMs: Spread;
  /** … and while its workers were between calls (waiting on a person), where only the periodic probe sees it. */
  removalIdleMs: Spread;
  /** Workers of the dead endpoint moved to the others and ended (of those on it), over every repetition. */
  moved: { on: number; endedElsewhere: number };
}

const SCRIPTS = (m: { hang: boolean }) => [
  {
    name: "pool",
    match: /BENCH-POOL (\d+)/,
    script: (c: { turnStep: number; firstUserText: string }) =>
      c.turnStep === 0 ? writeFile(`p${/BENCH-POOL (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" },
  },
  { name: "hang", match: /BENCH-HANG/, script: () => (m.hang ? { hang: true as const } : { text: "OUTCOME: honest-failure — bench" }) },
  {
    name: "ask",
    match: /BENCH-ASK (\d+)/,
    script: (c: { turnStep: number; firstUserText: string }) =>
      c.turnStep === 0 ? writeFile(`a${/BENCH-ASK (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" },
  },
];

async function endpoints(n: number, slots: number, hang: { hang: boolean }): Promise<ScriptedModel[]> {
  return Promise.all(Array.from({ length: n }, () => startScriptedModel({ modelId: "pool-coder", slots, chunkDelayMs: 5, scripts: SCRIPTS(hang) })));
}

const poolTarget = (id: string, ms: ScriptedModel[], slots: number): Target => ({
  id,
  model: "pool-coder",
  endpoint: ms[0]!.url,
  keyRef: null,
  serving: { engine: "llama.cpp", endpoints: ms.length > 1 ? ms.map((m) => ({ url: m.url, slots })) : [], slots: slots * ms.length },
  checks: [],
});

async function batch(engine: TestEngine, targetId: string, n: number, tag: string): Promise<{ wallMs: number; built: number; maxOn: number }> {
  const dir = makeRepo();
  const t0 = performance.now();
  let maxOn = 0;
  let on = true;
  const sampler = (async () => {
    while (on) {
      const ws = await engine.client.workers.list.query().catch(() => []);
      const per = new Map<string, number>();
      for (const w of ws) if (w.targetId === targetId && w.endpoint && isActive(w.state)) per.set(w.endpoint, (per.get(w.endpoint) ?? 0) + 1);
      maxOn = Math.max(maxOn, ...per.values(), 0);
      await sleep(100);
    }
  })();
  try {
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: Array.from({ length: n }, (_, i) => ({ task: `BENCH-POOL ${i} ${tag}`, directory: dir, targetId, checks: [{ file: `p${i}.txt` }] })),
    });
    const done = await settle(engine.client, workerIds, () => "once", 600_000);
    return { wallMs: performance.now() - t0, built: [...done.values()].filter((w) => w.state === "built").length, maxOn };
  } finally {
    on = false;
    await sampler;
    cleanup(dir);
  }
}

/** Kills (closes) one endpoint of the pool under its workers and times until the engine shows it down. */
async function removal(
  engine: TestEngine,
  ms: ScriptedModel[],
  targetId: string,
  how: "mid-call" | "idle",
  hang: { hang: boolean },
): Promise<{ ms: number; on: number; endedElsewhere: number }> {
  const dir = makeRepo();
  const victim = ms.at(-1)!;
  hang.hang = true;
  try {
    // One worker per slot of the pool, so the victim has workers; mid-call they hang in a model call, idle they wait on an ask.
    const slots = ms.length * 2;
    const task = (i: number) => (how === "mid-call" ? `BENCH-HANG ${i}` : `BENCH-ASK ${i}`);
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: Array.from({ length: slots }, (_, i) => ({ task: task(i), directory: dir, targetId })),
    });
    const deadline = Date.now() + 120_000;
    let onVictim: string[] = [];
    for (; Date.now() < deadline; await sleep(50)) {
      const ws = (await engine.client.workers.list.query()).filter((w) => workerIds.includes(w.id));
      onVictim = ws
        .filter((w) => w.endpoint === victim.url && (how === "mid-call" ? w.state === "running" && victim.inFlight() > 0 : w.state === "waiting-approval"))
        .map((w) => w.id);
      if (onVictim.length) break;
    }
    if (!onVictim.length) throw new Error(`no worker reached the victim endpoint ${how} within 120 s`);
    if (how === "idle") await untilAsk(engine.client, onVictim[0]!, 10_000);
    const t0 = performance.now();
    await victim.close();
    let took = NaN;
    for (const end = Date.now() + 60_000; Date.now() < end; await sleep(20)) {
      const pool = (await engine.client.targets.endpoints.query()).find((t) => t.targetId === targetId);
      if (pool?.endpoints.find((e) => e.url === victim.url)?.healthy === false) {
        took = performance.now() - t0;
        break;
      }
    }
    // The rest end: hanging calls are released (the scripted steps answer), asks approved.
    hang.hang = false;
    const others = workerIds.filter((id) => !onVictim.includes(id));
    for (const id of others) await engine.client.workers.stop.mutate({ workerId: id }).catch(() => undefined);
    const done = await settle(engine.client, onVictim, () => "once", 300_000).catch(() => new Map());
    const endedElsewhere = onVictim.filter((id) => {
      const w = done.get(id);
      return w && w.endpoint !== victim.url;
    }).length;
    await settle(engine.client, others, () => "once", 120_000).catch(() => undefined);
    return { ms: took, on: onVictim.length, endedElsewhere };
  } finally {
    hang.hang = false;
    cleanup(dir);
  }
}

/**
 * `reps` repetitions, each on a fresh engine and fresh endpoints: the pool batch and the one-endpoint batch (taking
 * turns going first), then an endpoint's death mid-call and between calls.
 */
export async function poolBench(o: { reps: number; tasks?: number; endpoints?: number; slotsPerEndpoint?: number }): Promise<PoolBench> {
  const tasks = o.tasks ?? 32;
  const n = o.endpoints ?? 3;
  const slots = o.slotsPerEndpoint ?? 4;
  const poolRuns: number[] = [];
  const singleRuns: number[] = [];
  const midCall: number[] = [];
  const idle: number[] = [];
  let builtPool = tasks;
  let builtSingle = tasks;
  let maxOnEndpoint = 0;
  const moved = { on: 0, endedElsewhere: 0 };
  const probeMs = Number(process.env.OCW_POOL_PROBE_MS ?? 2000);
  for (let rep = 0; rep < o.reps; rep++) {
    const hang = { hang: false };
    const pool = await endpoints(n, slots, hang);
    const [single] = await endpoints(1, slots * n, hang);
    const engine = await startEngine();
    try {
      await engine.client.targets.save.mutate({ target: poolTarget("bench-pool", pool, slots), activate: true });
      await engine.client.targets.save.mutate({ target: poolTarget("bench-single", [single!], slots * n), activate: false });
      // Warm: one task on each (opencode's start for the target is not the figure).
      await batch(engine, "bench-pool", 1, `warm${rep}`);
      await batch(engine, "bench-single", 1, `warm${rep}`);
      const sides = rep % 2 ? (["single", "pool"] as const) : (["pool", "single"] as const);
      for (const side of sides) {
        const r = await batch(engine, side === "pool" ? "bench-pool" : "bench-single", tasks, `r${rep}`);
        if (side === "pool") {
          poolRuns.push(r.wallMs);
          builtPool = Math.min(builtPool, r.built);
          maxOnEndpoint = Math.max(maxOnEndpoint, r.maxOn);
        } else {
          singleRuns.push(r.wallMs);
          builtSingle = Math.min(builtSingle, r.built);
        }
        log(
          `pool bench (run ${rep + 1}/${o.reps}): ${tasks} tasks on ${side === "pool" ? `${n} endpoints × ${slots} slots` : `1 endpoint × ${slots * n} slots`}: ${Math.round(r.wallMs)} ms, ${r.built} built`,
        );
      }
      for (const how of ["mid-call", "idle"] as const) {
        // A fresh pool for each death (the victim does not come back in this bench; the test covers its return).
        const ms = await endpoints(n, 2, hang);
        await engine.client.targets.save.mutate({ target: poolTarget(`bench-death-${how}`, ms, 2), activate: false });
        try {
          const r = await removal(engine, ms, `bench-death-${how}`, how, hang);
          (how === "mid-call" ? midCall : idle).push(r.ms);
          moved.on += r.on;
          moved.endedElsewhere += r.endedElsewhere;
          log(
            `pool bench (run ${rep + 1}/${o.reps}): endpoint killed ${how}: out of admission after ${Math.round(r.ms)} ms; ${r.endedElsewhere} of its ${r.on} workers ended on another endpoint`,
          );
        } finally {
          for (const m of ms) await m.close().catch(() => undefined);
        }
      }
    } finally {
      await engine.kill();
      cleanup(engine.stateDir);
      for (const m of [...pool, single!]) await m.close().catch(() => undefined);
    }
  }
  return {
    tasks,
    endpoints: n,
    slotsPerEndpoint: slots,
    probeMs,
    reps: o.reps,
    poolMs: spread(poolRuns, 0),
    singleMs: spread(singleRuns, 0),
    ratio: spread(
      poolRuns.map((p, i) => p / singleRuns[i]!),
      2,
    ),
    builtPool,
    builtSingle,
    maxOnEndpoint,
    removalMidCallMs: spread(midCall, 0),
    removalIdleMs: spread(idle, 0),
    moved,
  };
}
