// The engine's own cost, before and after a change, in one run: the engine over MCP against the bare opencode SDK on
// private clones (the engine's kind of workspace), at each batch size with a model that answers at once and with one
// paced like a fast API, the current build and (optionally) a build of an earlier commit taking turns with the bare
// side in every repetition. `npm run bench -- --only cost [--before BUNDLE]`.
import { chmodSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cleanup, startEngine, tempDir, type TestEngine } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";
import { bareRig, batchThroughMcp, benchTarget, type BareBatch, type EngineBatch } from "./batch";
import type { BenchModel } from "./model";
import { log, median, procStat, round, spread, type Spread } from "./stats";
import type { SideRun } from "./trust";

export interface CostSize {
  tasks: number;
  /** Paced: the model waits `pacedMs` before each turn's first token. */
  pacedMs: number;
  /** Engine (this build) ÷ bare SDK on private clones, per repetition. */
  ratio: Spread;
  /** The earlier build ÷ the same bare runs, where one was given. */
  ratioBefore?: Spread;
  engineMs: Spread;
  engineBeforeMs?: Spread;
  bareCloneMs: Spread;
  built: number;
  builtBefore?: number;
  bareBuilt: number;
  /** The tail: from the batch's last first model request to its end (engine / earlier build / bare), medians. */
  tailMs: { engine: number; before?: number; bare: number };
  /** Engine CPU (its own + the git it ran) per batch, medians: CPU does not stretch with load as wall time does. */
  engineCpuSec: { engine: number; before?: number };
  /** The scripted model's CPU per batch (medians), where it ran in a process of its own: the same work for every side. */
  modelCpuSec?: { engine: number; before?: number; bare: number };
  /**
   * What the MCP client received for the engine side's batch (delegate_batch, every wait and approve), medians: the
   * characters of tool-result text (the context a supervising Claude pays) and the tool calls (absent before).
   */
  mcp?: { resultChars: number; toolCalls: number; bridgeCpuSec: number };
}

export interface EngineCost {
  reps: number;
  /** The untimed batch each fresh engine and bare serve runs first, tasks (absent in reports before it: one task). */
  warmUpTasks?: number;
  /**
   * Whether the bare side let go of its opencode instances after each batch, as the engine does (absent in reports
   * before it: the bare serve kept every instance of its repetition, which slowed its later batches).
   */
  bareReleases?: boolean;
  /** Where the scripted model ran: a process of its own (as a real model server), or the bench's (OCW_BENCH_MODEL_INPROC=1). */
  model?: "own process" | "bench process";
  /** What the earlier build is (the --before bundle's label), or null when only this build ran. */
  before: string | null;
  sizes: Record<string, CostSize>;
  sequence: (SideRun & { size: number })[];
  /** 1-minute load average at each batch's start (side, size, rep): the batches' own load. */
  loadAtBatch: { side: string; size: number; rep: number; load: number }[];
  cores: number;
}

type Side = "engine" | "engineBefore" | "bareClone";

/**
 * Each repetition's fresh engines and bare serve first run one untimed batch of this size, alike. The bare side's
 * client runs in this process, warm from every earlier repetition, while each engine (a fresh process) had run one
 * task: its code ran cold (unoptimized) through the timed batches, ~0.3 s more engine CPU per 32-task batch than the
 * same build warm (bench/trace-cost.ts, one engine through all its batches).
 */
// OCW_BENCH_WARM_UP=N: another size (an investigation's). 32 cut the engine's CPU per 32-task batch from 1.40 to 1.11 s
// (medians of 4, engine + its git) and moved no ratio past the noise (stop 45).
const WARM_UP_TASKS = Number(process.env.OCW_BENCH_WARM_UP ?? 16);

/** A wrapper that runs the bridge of the earlier build (startMcp's `command` takes an executable). */
function bridgeOf(bundle: string): string {
  const file = path.join(tempDir("bench-before-bridge"), "ocw");
  writeFileSync(file, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(bundle)} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}

export async function engineCost(opts: {
  model: BenchModel;
  modelWhere?: "own process" | "bench process";
  reps: number;
  sizes: number[];
  pacedMs: number;
  paced: string;
  before?: { bundle: string; label: string };
}): Promise<EngineCost> {
  const { model, reps, pacedMs } = opts;
  const sides: Side[] = opts.before ? ["engine", "bareClone", "engineBefore"] : ["engine", "bareClone"];
  const bridge = opts.before ? bridgeOf(opts.before.bundle) : undefined;
  const runs = new Map<string, (EngineBatch | BareBatch)[]>();
  const sequence: EngineCost["sequence"] = [];
  const loadAtBatch: EngineCost["loadAtBatch"] = [];
  /** Per side and size: the model process's CPU seconds in each batch (its own process only). */
  const modelCpu = new Map<string, number[]>();
  const up = async (bundle?: string) => {
    const e: TestEngine = await startEngine(tempDir("state"), {}, bundle);
    await e.client.targets.save.mutate({ target: benchTarget(opts.model.url), activate: true });
    const mcp = await startMcp(e.stateDir, "claude-code", bundle ? { command: bridge } : {});
    await batchThroughMcp(mcp, e, model, WARM_UP_TASKS, `warm-up-cost${bundle ? "-before" : ""}`);
    return { e, mcp };
  };
  const down = async (x: { e: TestEngine; mcp: Awaited<ReturnType<typeof startMcp>> } | null) => {
    if (!x) return;
    await x.mcp.close();
    await x.e.kill();
    cleanup(x.e.stateDir);
  };
  for (let rep = 0; rep < reps; rep++) {
    const now = await up();
    const before = opts.before ? await up(opts.before.bundle).catch(async (err) => (await down(now), Promise.reject(err))) : null;
    const bare = await bareRig(model, "private-clone").catch(async (err) => (await down(before), await down(now), Promise.reject(err)));
    await bare.run(WARM_UP_TASKS, `c${rep}warm-up`).catch(async (err) => (await bare.close(), await down(before), await down(now), Promise.reject(err)));
    try {
      for (const size of [...opts.sizes, -opts.sizes.at(-1)!]) {
        const n = Math.abs(size);
        const paced = size < 0;
        // Odd repetitions run the sides in reverse: each pair takes turns going first.
        for (const side of rep % 2 ? [...sides].reverse() : sides) {
          sequence.push({ side, rep, size });
          loadAtBatch.push({ side, size, rep, load: round(os.loadavg()[0]!, 2) });
          const tag = `c${rep}n${n}${side}${paced ? ` ${opts.paced}` : ""}`;
          const m0 = model.pid ? procStat(model.pid).cpuSec : null;
          // This process's CPU: the bare side's SDK client, the MCP client, and the model where it runs here.
          const b0 = process.cpuUsage();
          const r =
            side === "bareClone"
              ? await bare.run(n, tag)
              : await batchThroughMcp((side === "engine" ? now : before!).mcp, (side === "engine" ? now : before!).e, model, n, tag);
          runs.set(`${side}${size}`, [...(runs.get(`${side}${size}`) ?? []), r]);
          const b1 = process.cpuUsage(b0);
          const benchCpu = round((b1.user + b1.system) / 1e6, 2);
          const mCpu = m0 !== null ? round(procStat(model.pid!).cpuSec - m0, 2) : null;
          if (mCpu !== null) modelCpu.set(`${side}${size}`, [...(modelCpu.get(`${side}${size}`) ?? []), mCpu]);
          log(
            `cost ${n} tasks${paced ? `, paced ${pacedMs} ms` : ""}, ${side} (run ${rep + 1}/${reps}): ${r.wallMs} ms, ${r.built} built${"cpuSec" in r ? `; engine CPU ${r.cpuSec} + ${r.childrenCpuSec} s of its git` : ""}${mCpu !== null ? `; model CPU ${mCpu} s` : ""}; bench process CPU ${benchCpu} s; load ${os
              .loadavg()
              .map((x) => round(x, 2))
              .join(", ")}`,
          );
        }
      }
    } finally {
      await bare.close();
      await down(before);
      await down(now);
    }
  }
  const sizes: Record<string, CostSize> = {};
  for (const size of [...opts.sizes, -opts.sizes.at(-1)!]) {
    const n = Math.abs(size);
    const eng = runs.get(`engine${size}`) as EngineBatch[];
    const bare = runs.get(`bareClone${size}`) as BareBatch[];
    const bef = runs.get(`engineBefore${size}`) as EngineBatch[] | undefined;
    const lastFirst = (r: EngineBatch) => Math.max(...r.starts.map((x) => x.firstRequestAt ?? 0)) - r.startedAt;
    sizes[size < 0 ? `paced${n}` : `w${n}`] = {
      tasks: n,
      pacedMs: size < 0 ? pacedMs : 0,
      ratio: spread(
        eng.map((r, i) => r.wallMs / bare[i]!.wallMs),
        2,
      ),
      ...(bef
        ? {
            ratioBefore: spread(
              bef.map((r, i) => r.wallMs / bare[i]!.wallMs),
              2,
            ),
            engineBeforeMs: spread(
              bef.map((r) => r.wallMs),
              0,
            ),
            builtBefore: Math.min(...bef.map((r) => r.built)),
          }
        : {}),
      engineMs: spread(
        eng.map((r) => r.wallMs),
        0,
      ),
      bareCloneMs: spread(
        bare.map((r) => r.wallMs),
        0,
      ),
      built: Math.min(...eng.map((r) => r.built)),
      bareBuilt: Math.min(...bare.map((r) => r.built)),
      tailMs: {
        engine: round(median(eng.map((r) => r.wallMs - lastFirst(r))), 0),
        ...(bef ? { before: round(median(bef.map((r) => r.wallMs - lastFirst(r))), 0) } : {}),
        bare: round(median(bare.map((r) => r.wallMs - Math.max(...r.startMs))), 0),
      },
      engineCpuSec: {
        engine: round(median(eng.map((r) => r.cpuSec + r.childrenCpuSec)), 2),
        ...(bef ? { before: round(median(bef.map((r) => r.cpuSec + r.childrenCpuSec)), 2) } : {}),
      },
      mcp: {
        resultChars: round(median(eng.map((r) => r.resultChars)), 0),
        toolCalls: round(median(eng.map((r) => r.toolCalls)), 0),
        bridgeCpuSec: round(median(eng.map((r) => r.bridgeCpuSec)), 2),
      },
      ...(modelCpu.has(`engine${size}`) && modelCpu.has(`bareClone${size}`)
        ? {
            modelCpuSec: {
              engine: round(median(modelCpu.get(`engine${size}`)!), 2),
              ...(modelCpu.has(`engineBefore${size}`) ? { before: round(median(modelCpu.get(`engineBefore${size}`)!), 2) } : {}),
              bare: round(median(modelCpu.get(`bareClone${size}`)!), 2),
            },
          }
        : {}),
    };
  }
  return {
    reps,
    warmUpTasks: WARM_UP_TASKS,
    bareReleases: true,
    ...(opts.modelWhere ? { model: opts.modelWhere } : {}),
    before: opts.before?.label ?? null,
    sizes,
    sequence,
    loadAtBatch,
    cores: os.availableParallelism?.() ?? os.cpus().length,
  };
}
