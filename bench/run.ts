// `npm run bench`: figures measured side by side in one run, against the real engine + real opencode + the scripted
// model. Writes bench/report.json and bench/report.md; `--merge-ui FILE` adds the Playwright bench's result to them.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import path from "node:path";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, tempDir, type TestEngine } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";
import { bareRig, batchThroughMcp, benchTarget, type BareBatch, type EngineBatch } from "./batch";
import { engineCost } from "./cost";
import { PACED, PACED_MODEL_MS, serveBenchModelIfAsked, startBenchModelInProcess, startCostModel, type BenchModel } from "./model";
import { FAULT_FILES, runFaultSuite } from "./faults";
import { compareEnv, environOf, opencodeServeUnder } from "./procs";
import { loneStarts, repoCost, startMedians, type WorkerStart } from "./sandbox";
import { concurrent, type Concurrent } from "./scale";
import { fitLive, fitRecorded, timeDetection, type FitResult } from "./fit";
import { gateLatency, gateRig, type Latency } from "./gate";
import { manyWorkers } from "./memory";
import { poolBench } from "./pool";
import { attemptsBench } from "./attempts";
import { setupBench } from "./setup";
import { renderMarkdown, type Report, type UiResult } from "./report";
import { engineStartup, mcpCold, mcpDefinitions, mcpToolsListWarm } from "./startup";
import { fmt, log, median, round, spread, type Spread } from "./stats";

// Started as the cost part's model process (bench/model.ts): serve the model, and nothing of the bench.
await serveBenchModelIfAsked();

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const REPORT_JSON = path.join(ROOT, "bench", "report.json");
const _REPORT_MD = path.join(ROOT, "bench", "report.md");

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const quick = process.argv.includes("--quick");
const reps = Number(flag("--reps") ?? (quick ? 1 : 3));
const manyCount = Number(flag("--workers") ?? (quick ? 32 : 1000));
/** `--scale 64,128`: workers at once, one fresh engine per size. */
const scaleCounts = (flag("--scale") ?? (quick ? "16" : "64,128")).split(",").map((x) => Number(x.trim()));
const scaleCount = Math.min(...scaleCounts);
const loneCount = Number(flag("--lone") ?? (quick ? 3 : 5));
const repoFiles = Number(flag("--repo-files") ?? (quick ? 500 : 3000));
const PARTS = ["startup", "fit", "gate", "batch", "cost", "repo", "scale", "many", "pool", "attempts", "setup", "faults"] as const;
type Part = (typeof PARTS)[number];
/** `--only a,b`: measure just those parts; the rest of the report is the committed one, written to bench/tmp/. */
const only = flag("--only")
  ?.split(",")
  .map((x) => x.trim()) as Part[] | undefined;
const skip = new Set((flag("--skip")?.split(",") ?? []).map((x) => x.trim()));
if (process.argv.includes("--no-faults")) skip.add("faults");
const runs = (p: Part) => (!only || only.includes(p)) && !skip.has(p);
const partial = !!only || skip.size > 0;
/** `--out FILE`: where a partial run writes (default bench/tmp/report.json); `--into-report`: into bench/report.*. */
const outFlag = flag("--out");
const intoReport = process.argv.includes("--into-report");
/** `--many-from FILE`: the many-workers figures from an earlier partial run's report (`--only many --out FILE`). */
const manyFrom = flag("--many-from");
const manyDeadlineMin = Number(flag("--many-minutes") ?? Infinity);
const HELP = `npm run bench -- [--quick] [--reps N] [--workers N] [--scale N[,N…]] [--lone N] [--repo-files N] [--only ${PARTS.join(",")},ui] [--skip parts] [--no-faults] [--no-ui]
  --reps N        repetitions of every repeated figure (default 3, --quick 1)
  --workers N     tiny workers for the engine-memory run (default 1000, --quick 32)
  --scale N,N     workers at once for the concurrency run, one fresh engine per size (default 64,128, --quick 16)
  --lone N        lone workers per repetition for the start-up time, sandbox on and off (default 5, --quick 3)
  --repo-files N  files in the generated repository for private repository vs worktree (default 3000, --quick 500)
  --only / --skip measure only / all but these parts; the report then goes to bench/tmp/report.{md,json}, the
                  parts not measured copied from bench/report.json
  --out FILE      where a partial run writes its report (and FILE's .md); --into-report: into bench/report.*
  --before BUNDLE the cost part also runs this engine bundle (a build of an earlier commit; --before-label names it),
                  taking turns with this build and the bare SDK in every repetition
  --attempt-tasks N  tasks per side of the attempts part (default 8, --quick 4): each once vs 3 attempts each
  --many-minutes M  stop the many-workers run after M minutes (it says how many finished)
  --merge-ui FILE [--startup-only]  put a Playwright bench result into the report (--startup-only: it measured only the start-up)
  --merge-grading FILE  the last record of bench/grading-micro.ts (bench/tmp/grading-micro.jsonl) into the report
  --merge-part PART --from FILE  only put FILE's figures of PART (cost, scale) into the report (bench/report.* with --into-report)
  --merge-many FILE  only put FILE's many-workers figures into the report (bench/report.* with --into-report)
  --many-from FILE  take the many-workers figures from an earlier run's report JSON (e.g. --only many --out FILE)
  --no-faults     leave out the fault and attack suite (the same as --skip faults)
  --no-ui         leave out the Playwright dashboard bench (part "ui": an --only list leaves it out unless it names ui)
  OCW_BENCH_MODEL_INPROC=1  the cost part's scripted model runs in the bench's process (as before), not in a process of its own
  OCW_ENGINE_CPU_PROF=DIR  every engine the bench starts writes a CPU profile (node --cpu-prof) into DIR when it stops`;

/** The fit's headline figures: the live matrix where it ran (the fuller comparison), else the recorded logs. */
function headline(f: FitResult) {
  return {
    maxErrPct: f.maxErrPct,
    meanErrPct: f.meanErrPct,
    totalMaxErrPct: f.totalMaxErrPct,
    totalMeanErrPct: f.totalMeanErrPct,
    source: f.source,
    n: f.cases.length,
    byBuffer: f.byBuffer,
  };
}

const OUT_JSON = () => (outFlag ? path.resolve(outFlag) : partial && !intoReport ? path.join(ROOT, "bench", "tmp", "report.json") : REPORT_JSON);
/** Where the batch's workers spent their time (ms since queued): median and last, per phase, for the log. */
function phases(starts: WorkerStart[]): string {
  const keys = ["workspaceMs", "sessionMs", "firstRequestMs", "askMs", "answeredMs", "settledMs", "verdictMs"] as const;
  return keys
    .map((k) => {
      const xs = starts.map((s) => s[k]).filter((x): x is number => typeof x === "number");
      return xs.length ? `${k.replace(/Ms$/, "")} ${round(median(xs), 0)}/${Math.max(...xs)}` : `${k.replace(/Ms$/, "")} -`;
    })
    .join(", ");
}

function write(report: Report, json = OUT_JSON()) {
  mkdirSync(path.dirname(json), { recursive: true });
  writeFileSync(json, JSON.stringify(report, null, 2) + "\n");
  writeFileSync(json.replace(/\.json$/, ".md"), renderMarkdown(report));
}

async function measure() {
  if (process.argv.includes("--help")) return void console.log(HELP);
  for (const [name, v] of Object.entries({
    "--reps": reps,
    "--workers": manyCount,
    "--scale": scaleCounts.every((x) => Number.isInteger(x) && x >= 1) ? scaleCount : NaN,
    "--lone": loneCount,
    "--repo-files": repoFiles,
  }))
    if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer (got ${flag(name)}); see --help`);
  // "ui" (the dashboard bench) is run by scripts/bench.mjs after this file.
  for (const p of [...(only ?? []), ...skip])
    if (!PARTS.includes(p as Part) && p !== "ui") throw new Error(`unknown part "${p}": the parts are ${PARTS.join(", ")}, ui`);
  const started = Date.now();
  // A partial run starts from the committed report and replaces what it measures.
  const base = (partial && existsSync(REPORT_JSON) ? JSON.parse(readFileSync(REPORT_JSON, "utf8")) : {}) as Partial<Report>;
  const range: Record<string, Spread> = { ...(base.range ?? {}) };
  /** Records a repeated figure's spread under its report path and returns its median. */
  const put = (key: string, runs: number[], d = 1) => (range[key] = spread(runs, d)).median;
  const report = { ...base } as Report;
  /** Writes the report as it stands: after every part, so a run cut short still leaves what it measured. */
  const flush = () => {
    // Into an existing report (--only … --into-report): the parts measured now join those it holds, and say when.
    if (partial && intoReport && base.date) {
      const now = PARTS.filter((p) => completed.has(p));
      Object.assign(report, {
        parts: [...new Set([...(base.parts ?? []).filter((p) => !now.includes(p as Part)), ...now])],
        partErrors: { ...Object.fromEntries(Object.entries(base.partErrors ?? {}).filter(([p]) => !now.includes(p as Part))), ...partErrors },
        partLoad: { ...(base.partLoad ?? {}), ...partLoad },
        // An earlier rerun whose parts were all measured again now says nothing of what the report holds.
        reruns: [
          ...(base.reruns ?? []).filter(
            (x) =>
              !x
                .split(" measured again")[0]!
                .split(", ")
                .every((p) => now.includes(p as Part)),
          ),
          `${now.join(", ")} measured again at ${new Date().toISOString()}, ${reps} repetition${reps > 1 ? "s" : ""}, code ${codeAtStart} (load ${loadAtStart.join(", ")} → ${os
            .loadavg()
            .map((x) => round(x, 2))
            .join(", ")}, ${round((Date.now() - started) / 1000)} s) and put into this report`,
        ],
        range,
      });
      write(report);
      return;
    }
    const opencodePkg = path.join(ROOT, "node_modules", "opencode-ai", "package.json");
    Object.assign(report, {
      machine: {
        cpus: os.cpus().length,
        cpu: os.cpus()[0]?.model,
        memGb: round(os.totalmem() / 2 ** 30),
        node: process.version,
        platform: `${os.platform()} ${os.release()}`,
        opencode: existsSync(opencodePkg) ? (JSON.parse(readFileSync(opencodePkg, "utf8")) as { version: string }).version : "unknown",
        loadBefore: loadAtStart,
        commit: codeAtStart,
        loadAfter: os.loadavg().map((x) => round(x, 2)),
      },
      date: new Date().toISOString(),
      quick,
      reps,
      reproduce: "npm ci && npm run bench",
      partErrors,
      partLoad,
      parts: [...PARTS.filter((p) => completed.has(p)), ...(manyFrom ? ["many (separate run)"] : [])],
      ui: partial ? (base.ui ?? null) : null,
      range,
      totalSeconds: round((Date.now() - started) / 1000),
    });
    if (!partial) report.uiError = "the Playwright bench has not run yet";
    write(report);
  };
  const partErrors: Record<string, string> = {};
  const completed = new Set<Part>();
  /** Load average (1, 5, 15 min) when each part starts and ends, and its duration: a figure is read against these. */
  const partLoad: NonNullable<Report["partLoad"]> = {};
  const loadNow = () => os.loadavg().map((x) => round(x, 2));
  const partStart = (part: Part) => {
    const t0 = Date.now();
    const before = loadNow();
    return () => void (partLoad[part] = { before, after: loadNow(), seconds: round((Date.now() - t0) / 1000), cores: CORES });
  };
  /** A part that fails is recorded in the report with its error; the other parts still run. */
  const guard = async (part: Part, fn: () => Promise<void>) => {
    const done = partStart(part);
    try {
      await fn();
      completed.add(part);
    } catch (err) {
      partErrors[part] = (err as Error).stack?.split("\n").slice(0, 4).join(" ") ?? String(err);
      log(`part ${part} failed: ${partErrors[part]}`);
    }
    done();
    flush();
  };

  const model = await startBenchModelInProcess();

  // Start-ups first, while nothing else of the bench runs.
  if (runs("startup")) {
    const done = partStart("startup");
    const startupMs: Record<string, number> = { ...(base.startupMs ?? {}) };
    const engineRuns: number[] = [];
    const detect: Awaited<ReturnType<typeof timeDetection>>[] = [];
    for (let i = 0; i < reps; i++) {
      engineRuns.push(await engineStartup());
      detect.push(await timeDetection());
    }
    startupMs.engine = put("startupMs.engine", engineRuns, 0);
    report.hardware = {
      detectMs: put(
        "hardware.detectMs",
        detect.map((d) => d.ms),
        0,
      ),
      gpus: detect[0]!.gpus,
      probes: detect[0]!.probes,
    };
    log(`engine start-up ${startupMs.engine} ms; hardware detection ${report.hardware.detectMs} ms`);

    const attachTo = await startEngine();
    const warmMcp: number[] = [];
    const coldList: number[] = [];
    const coldCall: number[] = [];
    for (let i = 0; i < reps; i++) {
      warmMcp.push(await mcpToolsListWarm(attachTo.stateDir));
      const c = await mcpCold();
      coldList.push(c.toolsListMs);
      coldCall.push(c.firstCallMs);
    }
    report.mcpContext = { ...report.mcpContext, ...(await mcpDefinitions(attachTo.stateDir)) };
    log(
      `ocw mcp tool definitions: ${report.mcpContext.tools} tools, ${report.mcpContext.definitionChars} characters; instructions ${report.mcpContext.instructionsChars}`,
    );
    await attachTo.kill();
    cleanup(attachTo.stateDir);
    startupMs.mcpToolsList = put("startupMs.mcpToolsList", warmMcp, 0);
    startupMs.mcpToolsListCold = put("startupMs.mcpToolsListCold", coldList, 0);
    startupMs.mcpFirstCallCold = put("startupMs.mcpFirstCallCold", coldCall, 0);
    report.startupMs = startupMs;
    completed.add("startup");
    done();
    log(`ocw mcp → tools/list ${startupMs.mcpToolsList} ms (cold ${startupMs.mcpToolsListCold} ms; first call cold ${startupMs.mcpFirstCallCold} ms)`);
  }

  if (runs("fit")) {
    const done = partStart("fit");
    const recorded = await fitRecorded(ROOT);
    const live = await fitLive();
    log(`fit (${recorded.source}): max ${recorded.maxErrPct} %, mean ${recorded.meanErrPct} %${live ? `; live: max ${live.maxErrPct} %` : ""}`);
    completed.add("fit");
    done();
    report.fit = {
      ...headline(live ?? recorded),
      recorded,
      live,
      ...(live ? {} : { liveSkipped: "not run (no llama-server with its test vocabularies: set LLAMA_SERVER, see scripts/build-llama-server.sh)" }),
    };
  }

  if (runs("gate")) {
    const done = partStart("gate");
    // Gate latency per size, each size repeated.
    const sizes = quick ? [1, 4] : [1, 4, 16, 32];
    const baselineSize = quick ? 4 : 16;
    const gateRuns = new Map<number, { event: Latency; poll: Latency }[]>();
    // One rig for every repetition (finished workers' opencode instances are disposed, so nothing piles up). A second
    // engine hosted in this process after the first was closed got its opencode stream cut at once, again and again,
    // while workers ran (seen here with opencode 1.18.33; not seen across processes), which left later repetitions
    // without start times.
    const rig = await gateRig(model);
    for (let rep = 0; rep < reps; rep++) {
      for (const n of sizes) {
        const r = await gateLatency(rig, n, n === 1 ? (quick ? 3 : 5) : n <= 4 ? 2 : 1);
        gateRuns.set(n, [...(gateRuns.get(n) ?? []), r]);
        log(
          `gate w${n} (run ${rep + 1}/${reps}): event p50 ${r.event.p50} ms p99 ${r.event.p99} ms | 1 s poll p50 ${r.poll.p50} p99 ${r.poll.p99} (stream reopened ${rig.reconnects()}×)`,
        );
      }
    }
    report.gateStreamReconnects = rig.reconnects();
    await rig.close();
    const gateLatencyMs: Record<string, Latency> = {};
    const pollMs: Record<string, Latency> = {};
    for (const [n, all] of gateRuns) {
      // A repetition whose observer saw no ask has no figure: it is left out of the median (its n shows it), not counted as 0.
      const sum = (which: "event" | "poll", into: Record<string, Latency>, key: string) => {
        const runs = all.filter((r) => r[which].n > 0);
        into[`w${n}`] = {
          p50: put(
            `${key}.w${n}.p50`,
            runs.map((r) => r[which].p50),
          ),
          p99: put(
            `${key}.w${n}.p99`,
            runs.map((r) => r[which].p99),
          ),
          n: runs.reduce((a, r) => a + r[which].n, 0),
        };
      };
      sum("event", gateLatencyMs, "gateLatencyMs");
      sum("poll", pollMs, "pollMs");
    }
    report.gateLatencyMs = gateLatencyMs;
    report.pollMs = pollMs;
    completed.add("gate");
    done();
    report.pollBaselineMs = { p50: pollMs[`w${baselineSize}`]!.p50, p99: pollMs[`w${baselineSize}`]!.p99 };
  }

  if (runs("batch")) await guard("batch", () => batches(model, report, put));

  if (runs("cost"))
    await guard("cost", async () => {
      const bundle = flag("--before");
      // The model in a process of its own, as a real model server is (OCW_BENCH_MODEL_INPROC=1: in this process, as before).
      const cost = await startCostModel();
      log(`cost: the scripted model runs in ${cost.where === "own process" ? `a process of its own (pid ${cost.model.pid})` : "the bench's process"}`);
      const c = await engineCost({
        model: cost.model,
        modelWhere: cost.where,
        reps,
        sizes: quick ? [4, 8] : [16, 32],
        pacedMs: PACED_MODEL_MS,
        paced: PACED,
        ...(bundle ? { before: { bundle: path.resolve(bundle), label: flag("--before-label") ?? bundle } } : {}),
      }).finally(() => cost.model.close());
      // A range of an earlier cost part (an earlier build's ratio where none ran now) must not stand beside this one's.
      for (const key of Object.keys(range)) if (key.startsWith("engineCost.")) delete range[key];
      for (const [k, x] of Object.entries(c.sizes)) {
        range[`engineCost.${k}.ratio`] = x.ratio;
        if (x.ratioBefore) range[`engineCost.${k}.ratioBefore`] = x.ratioBefore;
        log(
          `cost ${k}: engine ÷ bare on private clones ${fmt(x.ratio)}${x.ratioBefore ? `; before ${fmt(x.ratioBefore)}` : ""}; tail ${JSON.stringify(x.tailMs)}; engine CPU ${JSON.stringify(x.engineCpuSec)}${x.modelCpuSec ? `; model CPU ${JSON.stringify(x.modelCpuSec)}` : ""}`,
        );
      }
      report.engineCost = c;
      // The context a supervising Claude pays: the tool definitions and instructions (a bridge's tools/list, no engine
      // needed), and a batch of the largest size driven to settled over MCP, from this part's engine side.
      const largest = c.sizes[`w${Math.max(...Object.values(c.sizes).map((x) => x.tasks))}`];
      const defsDir = tempDir("bench-mcp-definitions");
      const defs = await mcpDefinitions(defsDir).finally(() => cleanup(defsDir));
      report.mcpContext = {
        ...report.mcpContext,
        ...defs,
        ...(largest?.mcp ? { batchTasks: largest.tasks, batchResultChars: largest.mcp.resultChars, batchToolCalls: largest.mcp.toolCalls } : {}),
      };
      log(
        `cost: MCP tool definitions ${defs.definitionChars} characters (${defs.tools} tools), instructions ${defs.instructionsChars}; a ${largest?.tasks}-task batch ${largest?.mcp?.resultChars} characters of tool results in ${largest?.mcp?.toolCalls} calls`,
      );
    });

  if (runs("repo"))
    await guard("repo", async () => {
      log(`private repository vs worktree on a ${repoFiles}-file repository (${Math.max(3, reps * 2)} each)…`);
      const c = await repoCost(repoFiles, Math.max(3, reps * 2));
      const priv = put("privateRepo.privateRepo.medianMs", c.privateRepo.ms, 0);
      const wt = put("privateRepo.worktree.medianMs", c.worktree.ms, 0);
      report.privateRepo = { ...c, privateRepoMs: priv, worktreeMs: wt, timeRatio: round(priv / wt, 2) };
      log(
        `  private repo ${priv} ms, ${c.privateRepo.kb} KB (${c.privateRepo.metaKb} KB git) | worktree ${wt} ms, ${c.worktree.kb} KB (${c.worktree.metaKb} KB git)`,
      );
    });

  if (runs("scale"))
    await guard("scale", async () => {
      const bySize: Record<string, Concurrent> = {};
      for (const n of scaleCounts) {
        const engine = await startEngine();
        try {
          log(`${n} workers at once (${n} slots, sandbox on; load ${os.loadavg()[0]!.toFixed(2)} on ${CORES} cores)…`);
          const c = await concurrent(engine, model, n);
          log(
            `  ${c.built}/${c.workers} built in ${(c.wallMs / 1000).toFixed(1)} s, at most ${c.maxActive} at once; engine RSS ${c.engineRssMbBefore} → peak ${c.engineRssMbPeak} MB; ask → subscriber p50 ${c.askToSubscriberMs?.p50} p99 ${c.askToSubscriberMs?.p99} ms (${c.askToSubscriberMs?.n} asks); opencode serve peak ${c.opencodeRssMbPeak} MB (${c.opencodeRssMbPerWorker} MB per worker); ${c.errors.length} errors; load ${c.load?.before} → ${c.load?.after}`,
          );
          for (const e of c.errors) log(`  ${e}`);
          bySize[`w${n}`] = c;
        } finally {
          await engine.kill();
          cleanup(engine.stateDir);
        }
      }
      report.scale = { ...(report.scale ?? {}), concurrent: bySize[`w${scaleCount}`], concurrentBySize: bySize } as Report["scale"];
    });

  if (runs("many"))
    await guard("many", async () => {
      // Many finished workers on a fresh engine, so its "before" holds nothing but one warm-up worker.
      const fresh = await startEngine();
      await fresh.client.targets.save.mutate({ target: scriptedTarget(model.url, 32), activate: true });
      const warmDir = makeRepo();
      const { workerId } = await fresh.client.workers.start.mutate({ task: "BENCH-TINY warm-up", directory: warmDir });
      await settle(fresh.client, [workerId], undefined, 120_000);
      log(`${manyCount} tiny workers through the engine (32 slots)…`);
      let many: Awaited<ReturnType<typeof manyWorkers>>;
      try {
        many = await manyWorkers(fresh, manyCount, Date.now() + manyDeadlineMin * 60_000);
      } catch (err) {
        await fresh.kill();
        throw err;
      }
      log(
        `${manyCount} workers in ${(many.wallMs / 1000).toFixed(1)} s: RSS ${many.rssMbBefore} → ${many.rssMbAfter} MB (peak ${many.rssMbPeak}); logs ${(many.logBytesOfRun / 2 ** 20).toFixed(1)} MB`,
      );
      const engineFigures = { ...(report.engine ?? {}) };
      for (const k of Object.keys(engineFigures)) if (/^(rssMbBefore|rssMbAfter|rssMbPeak|logBytes|finished)\d+$/.test(k)) delete engineFigures[k];
      engineFigures[`rssMbBefore${manyCount}`] = many.rssMbBefore;
      engineFigures[`rssMbAfter${manyCount}`] = many.rssMbAfter;
      engineFigures[`rssMbPeak${manyCount}`] = many.rssMbPeak;
      engineFigures[`logBytes${manyCount}`] = many.logBytesOfRun;
      engineFigures[`finished${manyCount}`] = many.finished;
      report.engine = engineFigures;
      // The engine's shutdown after the run (SIGTERM → exit): it aborts what still runs and stops opencode serve.
      const stopAt = Date.now();
      await fresh.kill();
      many.shutdownMs = Date.now() - stopAt;
      log(`engine shut down in ${many.shutdownMs} ms`);
      report.manyWorkers = many;
      cleanup(fresh.stateDir, warmDir);
    });
  if (manyFrom) takeMany(report, manyFrom);
  await model.close();

  if (runs("pool"))
    await guard("pool", async () => {
      log(`pools: ${quick ? 8 : 32} tasks on 3 endpoints vs one, and an endpoint's death → out of admission (${reps} runs)…`);
      const p = await poolBench({ reps, tasks: quick ? 8 : 32 });
      for (const k of ["poolMs", "singleMs", "ratio", "removalMidCallMs", "removalIdleMs"] as const) range[`pool.${k}`] = p[k];
      report.pool = p;
      log(
        `  pool ÷ one endpoint ${p.ratio.median} [${p.ratio.min}–${p.ratio.max}]; out of admission ${p.removalMidCallMs.median} ms mid-call, ${p.removalIdleMs.median} ms between calls`,
      );
    });

  if (runs("attempts"))
    await guard("attempts", async () => {
      const tasks = Number(flag("--attempt-tasks") ?? (quick ? 4 : 8));
      log(`attempts: ${tasks} tasks once each vs 3 attempts each, on a paced model that solves a task 40 % of the time (${reps} runs)…`);
      const a = await attemptsBench({ reps, tasks });
      for (const k of ["wallMs", "builtRate", "tokens"] as const) {
        range[`attempts.one.${k}`] = a.one[k];
        range[`attempts.three.${k}`] = a.three[k];
      }
      range["attempts.wallRatio"] = a.wallRatio;
      report.attempts = a;
      log(`  built rate ${fmt(a.one.builtRate)} → ${fmt(a.three.builtRate)}; wall time × ${fmt(a.wallRatio)}`);
    });

  if (runs("setup"))
    await guard("setup", async () => {
      log(`setup: time to a verified target with the model on disk vs llama-server's own load (${quick ? 1 : 3} runs)…`);
      const s = await setupBench({ reps: quick ? 1 : 3, log });
      if (s) {
        report.setup = s;
        log(`  setup ÷ llama-server load ${s.ratio} (without verify ${s.ratioWithoutVerify}): ${s.outcome}`);
      }
    });

  if (runs("faults"))
    await guard("faults", async () => {
      log(`the fault and attack suite (${FAULT_FILES_COUNT} files, vitest)…`);
      const f = runFaultSuite(ROOT);
      log(`  ${f.passed} passed, ${f.failed} failed, ${f.skipped} skipped in ${f.wallSec} s${f.error ? `: ${f.error}` : ""}`);
      report.faults = f;
    });

  flush();
  log(`wrote ${path.relative(ROOT, OUT_JSON())} and its .md (${report.totalSeconds} s)`);
}

/** The commit the bench ran on, and whether the work tree had uncommitted changes (the bench bundles the tree as it is). */
function gitState(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no", "--", "engine", "shared", "renderer", "bench"], {
      cwd: ROOT,
      encoding: "utf8",
    }).trimEnd(); // not trim(): each line starts with its two status columns
    return dirty
      ? `${head} + uncommitted changes in ${[...new Set(dirty.split("\n").map((l) => l.slice(3).split("/").slice(0, 2).join("/")))].join(", ")}`
      : head;
  } catch {
    return "unknown";
  }
}

/** The many-workers figures of an earlier run's report (`--only many --out FILE`) into `report`. */
function takeMany(report: Report, file: string) {
  const other = JSON.parse(readFileSync(file, "utf8")) as Report;
  const engineFigures = { ...(report.engine ?? {}) };
  for (const k of Object.keys(engineFigures)) if (/^(rssMbBefore|rssMbAfter|rssMbPeak|logBytes|finished)\d+$/.test(k)) delete engineFigures[k];
  for (const [k, v] of Object.entries(other.engine)) if (/^(rssMbBefore|rssMbAfter|rssMbPeak|logBytes|finished)\d+$/.test(k)) engineFigures[k] = v;
  report.engine = engineFigures;
  report.manyWorkers = {
    ...other.manyWorkers,
    ranSeparately: `measured by a separate run (${other.date}, load average ${other.machine.loadBefore?.join(", ")} at its start → ${other.machine.loadAfter?.join(", ")} at its end), not in this run's sequence`,
  };
}

/** `--merge-many FILE`: put an earlier run's many-workers figures into the report this run writes to (no measuring). */
function mergeMany(file: string) {
  const report = JSON.parse(readFileSync(OUT_JSON(), "utf8")) as Report;
  takeMany(report, file);
  report.parts = [...(report.parts ?? []).filter((p) => !p.startsWith("many")), "many (separate run)"];
  write(report);
  log(`merged the many-workers figures of ${file} into ${path.relative(ROOT, OUT_JSON())}`);
}

const loadAtStart = os.loadavg().map((x) => round(x, 2));
/** The code the run measures: the tree when it started (npm run bench bundles it then), not when it ends. */
const codeAtStart = gitState();
/** The cores the bench's processes can run on: a load average above it means work waited for a core. */
const CORES = os.availableParallelism?.() ?? os.cpus().length;
const FAULT_FILES_COUNT = FAULT_FILES.length;

/**
 * The batches, each repetition on fresh engines: one sandboxed (the default), one with OCW_NO_SANDBOX=1, and the bare
 * SDK on its own `opencode serve` started with the same class, target and environment. The order of the sides is
 * reversed every other repetition, so in every pair compared (engine ÷ bare, sandbox on ÷ off) each side goes first
 * equally often (with an even number of repetitions).
 */
const benchLoop = monitorEventLoopDelay({ resolution: 10 });
benchLoop.enable();

async function batches(model: BenchModel, report: Report, put: (key: string, runs: number[], d?: number) => number) {
  const batchSizes = quick ? [4, 8] : [16, 32];
  const sandboxSize = batchSizes[0]!;
  type Side = "engine" | "noSandbox" | "keyed" | "bare" | "bareClone" | "enginePaced" | "bareClonePaced";
  const pacedSize = batchSizes.at(-1)!;
  // The keyed engine's target names a key variable, so its opencode reaches the model through the engine's key gateway,
  // as every managed llama-server's does (the scripted model ignores the key the gateway adds).
  const keyVar = "OCW_BENCH_MODEL_KEY";
  const runsOf = new Map<string, (EngineBatch | BareBatch)[]>();
  const add = (side: Side, n: number, r: EngineBatch | BareBatch) => runsOf.set(`${side}${n}`, [...(runsOf.get(`${side}${n}`) ?? []), r]);
  const lone: Record<"on" | "off", WorkerStart[][]> = { on: [], off: [] };
  const batchMisses: NonNullable<Report["batchMisses"]> = [];
  /** Every timed batch in the order it ran: the report checks from it that the sides of each ratio took turns. */
  const sequence: NonNullable<Report["batchSequence"]> = [];
  let env: ReturnType<typeof compareEnv> | null = null;
  let envNoSandbox: ReturnType<typeof compareEnv> | null = null;
  const up = async (kind: "sandbox" | "noSandbox" | "keyed") => {
    const e = await startEngine(
      tempDir("state"),
      kind === "noSandbox" ? { OCW_NO_SANDBOX: "1" } : kind === "keyed" ? { [keyVar]: randomBytes(16).toString("hex") } : {},
    );
    const target = benchTarget(model.url);
    await e.client.targets.save.mutate({ target: kind === "keyed" ? { ...target, keyRef: keyVar } : target, activate: true });
    const mcp = await startMcp(e.stateDir, "claude-code");
    await batchThroughMcp(mcp, e, model, 1, `warm-up-${kind}`);
    return { e, mcp };
  };
  const down = async ({ e, mcp }: { e: TestEngine; mcp: Awaited<ReturnType<typeof startMcp>> }) => {
    await mcp.close();
    await e.kill();
    cleanup(e.stateDir);
  };
  for (let rep = 0; rep < reps; rep++) {
    const sb = await up("sandbox");
    const nosb = await up("noSandbox").catch(async (err) => (await down(sb), Promise.reject(err)));
    const keyed = await up("keyed").catch(async (err) => (await down(nosb), await down(sb), Promise.reject(err)));
    const bare = await bareRig(model).catch(async (err) => (await down(keyed), await down(nosb), await down(sb), Promise.reject(err)));
    const bareClone = await bareRig(model, "private-clone").catch(
      async (err) => (await bare.close(), await down(keyed), await down(nosb), await down(sb), Promise.reject(err)),
    );
    try {
      if (!env) {
        const bareEnv = environOf(bare.pid);
        env = compareEnv(environOf(opencodeServeUnder(sb.e.proc.pid!)!), bareEnv);
        envNoSandbox = compareEnv(environOf(opencodeServeUnder(nosb.e.proc.pid!)!), bareEnv);
        log(
          `opencode serve environments: engine vs bare ${env.identical ? "the same" : "DIFFER"} (${env.same.length} variables equal; per instance: ${Object.keys(env.perInstance).join(", ")}${env.identical ? "" : `; unexpected: ${JSON.stringify(env.unexpected)}`})`,
        );
      }
      // Lone workers: the start of one worker on an idle engine, sandbox on and off, alternating.
      for (const [which, eng] of (rep % 2
        ? [
            ["off", nosb],
            ["on", sb],
          ]
        : [
            ["on", sb],
            ["off", nosb],
          ]) as ["on" | "off", typeof sb][]) {
        const s = await loneStarts(eng.e.client, model, loneCount);
        lone[which].push(s);
        log(`lone worker start, sandbox ${which} (run ${rep + 1}/${reps}): queued → first model request ${startMedians(s).firstRequestMs} ms`);
      }
      for (const size of [...batchSizes, -pacedSize]) {
        const paced = size < 0;
        const n = Math.abs(size);
        const sides: Side[] = paced
          ? ["enginePaced", "bareClonePaced"]
          : n === sandboxSize
            ? ["bare", "engine", "bareClone", "noSandbox", "keyed"]
            : ["bare", "engine", "bareClone"];
        // Odd repetitions run the sides in reverse: each pair (engine/bare, sandbox on/off) takes turns going first.
        const order = rep % 2 ? [...sides].reverse() : sides;
        for (const side of order) {
          sequence.push({ side, rep, size });
          // The bench process also serves the scripted model: a stall of its own would delay both sides' requests.
          benchLoop.reset();
          const stall = () => `bench process's longest stall ${round(benchLoop.max / 1e6, 0)} ms`;
          if (side === "bare" || side === "bareClone" || side === "bareClonePaced") {
            const b = await (side === "bare" ? bare : bareClone).run(n, `r${rep}n${n}${paced ? ` ${PACED}` : ""}`);
            add(side, n, b);
            log(
              `batch ${n} bare SDK${side === "bare" ? "" : " on private clones"}${paced ? `, model paced ${PACED_MODEL_MS} ms a turn` : ""} (run ${rep + 1}/${reps}): ${b.wallMs} ms, ${b.built} built; start median ${round(median(b.startMs), 0)} ms; workspace ${round(median(b.phaseMs.workspace), 0)}/${Math.max(...b.phaseMs.workspace)}, session ${round(median(b.phaseMs.session), 0)}/${Math.max(...b.phaseMs.session)}, firstRequest ${round(median(b.startMs), 0)}/${Math.max(...b.startMs)}; opencode serve ${b.opencodeRssMbBefore} → peak ${b.opencodeRssMbPeak} MB, CPU ${b.opencodeCpuSec} s + ${b.opencodeChildrenCpuSec} s of its children; ${stall()}; load ${os
                .loadavg()
                .map((x) => round(x, 2))
                .join(", ")}`,
            );
            continue;
          }
          const eng = side === "engine" || side === "enginePaced" ? sb : side === "keyed" ? keyed : nosb;
          const r = await batchThroughMcp(eng.mcp, eng.e, model, n, `r${rep}${side}${paced ? ` ${PACED}` : ""}`);
          add(side, n, r);
          // The context a supervising Claude pays for the largest batch (the first run of it; the engine side).
          if (side === "engine" && n === batchSizes.at(-1) && !report.mcpContext?.batchResultChars)
            report.mcpContext = { ...report.mcpContext, batchTasks: n, batchResultChars: r.resultChars, batchToolCalls: r.toolCalls };
          const tail = [...r.starts].sort((a, b) => (b.verdictMs ?? 0) - (a.verdictMs ?? 0))[0];
          if (tail)
            log(
              `  the last verdict's worker: ${(["workspaceMs", "sessionMs", "firstRequestMs", "askMs", "answeredMs", "lastRequestMs", "settledMs", "verdictMs"] as const).map((k) => `${k.replace("Ms", "")} ${tail[k] ?? "–"}`).join(" → ")}`,
            );
          log(
            `batch ${n} ${side === "engine" ? "engine + MCP" : side === "enginePaced" ? `engine + MCP, model paced ${PACED_MODEL_MS} ms a turn` : side === "keyed" ? "engine + MCP, keyed target (key gateway)" : "engine + MCP, no sandbox"} (run ${rep + 1}/${reps}): ${r.wallMs} ms (${r.built} built, sandbox ${r.sandbox.join("/")}, ${r.toolCalls} tool calls, ${r.resultChars} chars of tool results); start median ${startMedians(r.starts).firstRequestMs} ms; ${phases(r.starts)}; engine CPU ${r.cpuSec} s + ${r.childrenCpuSec} s of its git; MCP ${Object.entries(
              r.callMs,
            )
              .map(([k, xs]) => `${k} ${xs.length}× ${k === "waitReturnedAt" ? xs.join("/") : `${round(median(xs), 0)}/${Math.max(...xs)}`}`)
              .join(
                ", ",
              )}; opencode serve ${r.opencodeRssMbBefore} → peak ${r.opencodeRssMbPeak} MB, CPU ${r.opencodeCpuSec} s + ${r.opencodeChildrenCpuSec} s of its children; ${stall()}; load ${os
              .loadavg()
              .map((x) => round(x, 2))
              .join(", ")}`,
          );
          for (const m of r.misses) {
            log(`  not built: ${m.workerId} ${m.state}: ${m.reason ?? "(no reason)"}`);
            batchMisses.push({
              tasks: n,
              run: rep + 1,
              ...(side === "noSandbox"
                ? { side: "no sandbox" }
                : side === "keyed"
                  ? { side: "keyed target" }
                  : side === "enginePaced"
                    ? { side: "paced model" }
                    : {}),
              ...m,
            });
          }
        }
      }
    } finally {
      await bareClone.close();
      await bare.close();
      await down(keyed);
      await down(nosb);
      await down(sb);
    }
  }

  const batchRatio: Record<string, number> = {};
  const batchRatioSameWorkspaces: Record<string, number> = {};
  const batchMs: Record<string, number> = {};
  const startMs: Record<string, number> = {};
  const startPhases: NonNullable<Report["batchStartPhases"]> = {};
  const batchSplit: NonNullable<Report["batchSplit"]> = {};
  const opencodeCpu: Record<string, number> = {};
  const engineFigures: Record<string, number | string> = { ...(report.engine ?? {}) };
  const get = <T>(side: Side, n: number) => runsOf.get(`${side}${n}`) as T[];
  for (const n of batchSizes) {
    const w = `w${n}`;
    const W = `W${n}`;
    const eng = get<EngineBatch>("engine", n);
    const bare = get<BareBatch>("bare", n);
    // Ratio per repetition (engine and bare of the same repetition, on the same machine minutes apart).
    batchRatio[w] = put(
      `batchRatio.${w}`,
      eng.map((r, i) => r.wallMs / bare[i]!.wallMs),
      2,
    );
    batchMs[`engine${W}`] = put(
      `batchMs.engine${W}`,
      eng.map((r) => r.wallMs),
      0,
    );
    batchMs[`bare${W}`] = put(
      `batchMs.bare${W}`,
      bare.map((r) => r.wallMs),
      0,
    );
    const bareClone = get<BareBatch>("bareClone", n);
    batchRatioSameWorkspaces[w] = put(
      `batchRatioSameWorkspaces.${w}`,
      eng.map((r, i) => r.wallMs / bareClone[i]!.wallMs),
      2,
    );
    batchMs[`bareClone${W}`] = put(
      `batchMs.bareClone${W}`,
      bareClone.map((r) => r.wallMs),
      0,
    );
    batchMs[`bareCloneBuilt${W}`] = Math.min(...bareClone.map((r) => r.built));
    batchMs[`built${W}`] = Math.min(...eng.map((r) => r.built));
    batchMs[`bareBuilt${W}`] = Math.min(...bare.map((r) => r.built));
    startMs[`engine${W}`] = put(
      `batchStartMs.engine${W}`,
      eng.map((r) => median(r.starts.map((x) => x.firstRequestMs).filter((x): x is number => x !== null))),
      0,
    );
    startMs[`bare${W}`] = put(
      `batchStartMs.bare${W}`,
      bare.map((r) => median(r.startMs)),
      0,
    );
    startPhases[`engine${W}`] = startMedians(eng.flatMap((r) => r.starts));
    // The batch split at its last worker's first model request: what comes before is start-up under load (workspaces,
    // sessions, opencode's prompts), what comes after is the tail (the last asks, the last turns, grading, the answer).
    const lastFirst = (r: EngineBatch) => Math.max(...r.starts.map((x) => x.firstRequestAt ?? 0)) - r.startedAt;
    batchSplit[w] = {
      engineToLastFirstRequestMs: put(`batchSplit.${w}.engineToLastFirstRequestMs`, eng.map(lastFirst), 0),
      engineAfterMs: put(
        `batchSplit.${w}.engineAfterMs`,
        eng.map((r) => r.wallMs - lastFirst(r)),
        0,
      ),
      bareCloneToLastFirstRequestMs: put(
        `batchSplit.${w}.bareCloneToLastFirstRequestMs`,
        bareClone.map((r) => Math.max(...r.startMs)),
        0,
      ),
      bareCloneAfterMs: put(
        `batchSplit.${w}.bareCloneAfterMs`,
        bareClone.map((r) => r.wallMs - Math.max(...r.startMs)),
        0,
      ),
    };
    // opencode serve's own CPU and that of what it ran (git, shells): the same work on both sides should cost the same.
    const cpuOf = (xs: (EngineBatch | BareBatch)[], k: "opencodeCpuSec" | "opencodeChildrenCpuSec") =>
      xs.map((r) => r[k]).filter((x): x is number => x !== null);
    for (const [side, xs] of [
      ["engine", eng],
      ["bare", bare],
      ["bareClone", bareClone],
    ] as const) {
      const self = cpuOf(xs, "opencodeCpuSec");
      const kids = cpuOf(xs, "opencodeChildrenCpuSec");
      if (self.length) opencodeCpu[`${side}${W}`] = put(`batchOpencodeCpuSec.${side}${W}`, self, 1);
      if (kids.length) opencodeCpu[`${side}Children${W}`] = put(`batchOpencodeCpuSec.${side}Children${W}`, kids, 1);
    }
    engineFigures[`cpuSeconds${W}`] = put(
      `engine.cpuSeconds${W}`,
      eng.map((r) => r.cpuSec),
      2,
    );
    engineFigures[`rssMb${W}`] = put(
      `engine.rssMb${W}`,
      eng.map((r) => r.rssMb),
    );
    engineFigures[`bridgeCpuSeconds${W}`] = put(
      `engine.bridgeCpuSeconds${W}`,
      eng.map((r) => r.bridgeCpuSec),
      2,
    );
    engineFigures[`childrenCpuSeconds${W}`] = put(
      `engine.childrenCpuSeconds${W}`,
      eng.map((r) => r.childrenCpuSec),
      2,
    );
  }
  report.batchRatio = batchRatio;
  report.batchRatioSameWorkspaces = batchRatioSameWorkspaces;
  report.batchMs = batchMs;
  report.batchMisses = batchMisses;
  report.batchStartMs = startMs;
  report.batchStartPhases = startPhases;
  report.batchBareReleases = true;
  report.batchSplit = batchSplit;
  report.batchSequence = sequence;
  const pacedEng = get<EngineBatch>("enginePaced", pacedSize);
  const pacedBare = get<BareBatch>("bareClonePaced", pacedSize);
  if (pacedEng?.length && pacedBare?.length) {
    report.batchPaced = {
      tasks: pacedSize,
      modelMs: PACED_MODEL_MS,
      engineMs: put(
        "batchPaced.engineMs",
        pacedEng.map((r) => r.wallMs),
        0,
      ),
      bareCloneMs: put(
        "batchPaced.bareCloneMs",
        pacedBare.map((r) => r.wallMs),
        0,
      ),
      ratio: put(
        "batchPaced.ratio",
        pacedEng.map((r, i) => r.wallMs / pacedBare[i]!.wallMs),
        2,
      ),
      built: Math.min(...pacedEng.map((r) => r.built)),
      bareBuilt: Math.min(...pacedBare.map((r) => r.built)),
    };
  }
  report.batchOpencodeCpuSec = opencodeCpu;
  report.engine = engineFigures;

  // Sandbox on vs off: the batch and the worker start.
  const on = get<EngineBatch>("engine", sandboxSize);
  const off = get<EngineBatch>("noSandbox", sandboxSize);
  const firsts = (xs: WorkerStart[]) => xs.map((s) => s.firstRequestMs).filter((x): x is number => x !== null);
  const loneOn = lone.on.map((s) => median(firsts(s)));
  const loneOff = lone.off.map((s) => median(firsts(s)));
  const sk = `sandbox`;
  const sandbox = {
    tasks: sandboxSize,
    batchMsOn: put(
      `${sk}.batchMsOn`,
      on.map((r) => r.wallMs),
      0,
    ),
    batchMsOff: put(
      `${sk}.batchMsOff`,
      off.map((r) => r.wallMs),
      0,
    ),
    batchRatio: put(
      `${sk}.batchRatio`,
      on.map((r, i) => r.wallMs / off[i]!.wallMs),
      2,
    ),
    builtOn: Math.min(...on.map((r) => r.built)),
    builtOff: Math.min(...off.map((r) => r.built)),
    containedOn: [...new Set(on.flatMap((r) => r.sandbox))],
    containedOff: [...new Set(off.flatMap((r) => r.sandbox))],
    loneWorkers: loneCount,
    loneStartMsOn: put(`${sk}.loneStartMsOn`, loneOn, 0),
    loneStartMsOff: put(`${sk}.loneStartMsOff`, loneOff, 0),
    loneStartOverheadMs: put(
      `${sk}.loneStartOverheadMs`,
      loneOn.map((x, i) => x - loneOff[i]!),
      0,
    ),
    lonePhasesOn: startMedians(lone.on.flat()),
    lonePhasesOff: startMedians(lone.off.flat()),
    batchStartMsOn: put(
      `${sk}.batchStartMsOn`,
      on.map((r) => median(firsts(r.starts))),
      0,
    ),
    batchStartMsOff: put(
      `${sk}.batchStartMsOff`,
      off.map((r) => median(firsts(r.starts))),
      0,
    ),
    batchPhasesOn: startMedians(on.flatMap((r) => r.starts)),
    batchPhasesOff: startMedians(off.flatMap((r) => r.starts)),
    goals: { batchRatio: 1.05, startOverheadMs: 100 },
  };
  report.sandbox = sandbox;
  const viaGateway = get<EngineBatch>("keyed", sandboxSize);
  report.gateway = {
    tasks: sandboxSize,
    batchMsKeyed: put(
      "gateway.batchMsKeyed",
      viaGateway.map((r) => r.wallMs),
      0,
    ),
    batchMsOpen: put(
      "gateway.batchMsOpen",
      on.map((r) => r.wallMs),
      0,
    ),
    batchRatio: put(
      "gateway.batchRatio",
      viaGateway.map((r, i) => r.wallMs / on[i]!.wallMs),
      2,
    ),
    builtKeyed: Math.min(...viaGateway.map((r) => r.built)),
    engineCpuSecKeyed: put(
      "gateway.engineCpuSecKeyed",
      viaGateway.map((r) => r.cpuSec),
      2,
    ),
    engineCpuSecOpen: put(
      "gateway.engineCpuSecOpen",
      on.map((r) => r.cpuSec),
      2,
    ),
  };
  log(
    `key gateway: batch ${report.gateway.batchMsKeyed} vs ${report.gateway.batchMsOpen} ms without a key (ratio ${report.gateway.batchRatio}); engine CPU ${report.gateway.engineCpuSecKeyed} vs ${report.gateway.engineCpuSecOpen} s`,
  );
  log(
    `sandbox: batch ${sandbox.batchMsOn} vs ${sandbox.batchMsOff} ms (ratio ${sandbox.batchRatio}); lone start ${sandbox.loneStartMsOn} vs ${sandbox.loneStartMsOff} ms (+${sandbox.loneStartOverheadMs} ms)`,
  );

  const big = batchSizes.at(-1)!;
  const e32 = get<EngineBatch>("engine", big);
  const b32 = get<BareBatch>("bare", big);
  const perWorker = (peak: number | null, n: number) => (peak === null ? null : peak / n);
  report.scale = {
    ...(report.scale ?? {}),
    tasks: big,
    opencodeRssMbPeak: put(
      `scale.opencodeRssMbPeak`,
      e32.map((r) => r.opencodeRssMbPeak ?? NaN),
    ),
    opencodeRssMbIdle: put(
      `scale.opencodeRssMbIdle`,
      e32.map((r) => r.opencodeRssMbBefore ?? NaN),
    ),
    opencodeRssMbPerWorker: put(
      `scale.opencodeRssMbPerWorker`,
      e32.map((r) => perWorker(r.opencodeRssMbPeak, big) ?? NaN),
    ),
    opencodeRssMbPerWorkerAboveIdle: put(
      `scale.opencodeRssMbPerWorkerAboveIdle`,
      e32.map((r) => ((r.opencodeRssMbPeak ?? NaN) - (r.opencodeRssMbBefore ?? NaN)) / big),
    ),
    bareOpencodeRssMbPeak: put(
      `scale.bareOpencodeRssMbPeak`,
      b32.map((r) => r.opencodeRssMbPeak ?? NaN),
    ),
    goalMbPerWorker: 120,
  } as Report["scale"];
  report.baseline = {
    how: "Both sides run `opencode serve` through the engine's own OpencodeServer class (engine/harness/opencode-server.ts) with the same target (so the same OPENCODE_CONFIG_CONTENT) and the same OFFLINE_ENV from engine/harness/config.ts, Malloc=1 included; the bench reads each serve's environment back from /proc/<pid>/environ and compares them.",
    env: env!,
    envNoSandbox: envNoSandbox!,
  };
}

/** Adds the Playwright bench's result file (e2e/bench/dashboard.bench.ts) to the report written by `measure`. */
function mergeUi(file: string, error: string | undefined) {
  const report = JSON.parse(readFileSync(OUT_JSON(), "utf8")) as Report;
  const ui = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<UiResult>) : null;
  const { dashboardStartupMs, dashboardStartupPhases, ...stream } = ui ?? {};
  if (dashboardStartupPhases) report.dashboardStartupPhases = dashboardStartupPhases;
  if (dashboardStartupMs) {
    report.startupMs.dashboard = dashboardStartupMs.median;
    report.range["startupMs.dashboard"] = dashboardStartupMs;
  }
  if (stream.fpsW16 !== undefined) {
    report.ui = stream as Report["ui"];
    delete report.uiError;
  } else if (dashboardStartupMs && report.ui && !error && process.argv.includes("--startup-only")) {
    // Only the start-up was measured again (`-g "ocw serve"`): the streaming figures stay those of their own run.
    const p = dashboardStartupPhases;
    report.reruns = [
      ...(report.reruns ?? []).filter((x) => !x.startsWith("dashboard start-up measured again")),
      `dashboard start-up measured again at ${new Date().toISOString()}, ${dashboardStartupMs.runs.length} repetitions, code ${gitState()}${p ? ` (load ${p.load.join(" → ")} on ${p.cores} cores)` : ""}; the streaming dashboard figures are from the earlier run`,
    ];
  } else report.uiError = error ?? "the Playwright bench wrote no streaming result";
  if (error && report.ui) report.uiError = error;
  report.totalSeconds = round(report.totalSeconds + Number(process.env.OCW_BENCH_UI_SECONDS ?? 0));
  write(report);
  console.error(renderMarkdown(report));
}

/** Report keys and range prefixes of the parts `--merge-part` can take from another run's report. */
const PART_KEYS: Partial<Record<Part, { keys: (keyof Report)[]; range: string }>> = {
  cost: { keys: ["engineCost"], range: "engineCost." },
  scale: { keys: ["scale"], range: "scale." },
};

/** `--merge-part PART --from FILE`: that part's figures of an earlier partial run (`--only PART --out FILE`) into the report, with when. */
function mergePart(part: Part, file: string) {
  const spec = PART_KEYS[part];
  if (!spec) throw new Error(`--merge-part takes ${Object.keys(PART_KEYS).join(", ")}`);
  const other = JSON.parse(readFileSync(file, "utf8")) as Report;
  if (!other.parts?.includes(part)) throw new Error(`${file} did not measure ${part} (it measured ${other.parts?.join(", ") || "nothing"})`);
  const report = JSON.parse(readFileSync(OUT_JSON(), "utf8")) as Report;
  for (const k of spec.keys) (report as unknown as Record<string, unknown>)[k] = other[k];
  for (const k of Object.keys(report.range)) if (k.startsWith(spec.range)) delete report.range[k];
  for (const [k, v] of Object.entries(other.range)) if (k.startsWith(spec.range)) report.range[k] = v;
  report.partLoad = { ...(report.partLoad ?? {}), [part]: other.partLoad![part]! };
  const l = other.partLoad![part]!;
  report.reruns = [
    ...(report.reruns ?? []).filter((x) => x.split(" measured again")[0] !== part),
    `${part} measured again at ${other.date}, ${other.reps} repetition${other.reps > 1 ? "s" : ""}, code ${other.machine.commit ?? "?"} (load ${l.before.join(", ")} → ${l.after.join(", ")}, ${l.seconds} s) and put into this report`,
  ];
  report.parts = [...new Set([...(report.parts ?? []), part])];
  write(report);
  log(`merged the ${part} figures of ${file} into ${path.relative(ROOT, OUT_JSON())}`);
}

/** `--merge-grading FILE`: the last line of bench/grading-micro.ts's record (bench/tmp/grading-micro.jsonl) into the report. */
function mergeGrading(file: string) {
  const lines = readFileSync(file, "utf8").trim().split("\n");
  const report = JSON.parse(readFileSync(OUT_JSON(), "utf8")) as Report;
  report.gradingAlone = JSON.parse(lines.at(-1)!);
  write(report);
  log(`merged the grading-alone figures of ${file} into ${path.relative(ROOT, OUT_JSON())}`);
}

const merge = flag("--merge-ui");
const mergePartName = flag("--merge-part") as Part | undefined;
const mergeManyFile = flag("--merge-many");
(flag("--merge-grading")
  ? Promise.resolve(mergeGrading(flag("--merge-grading")!))
  : mergePartName
    ? Promise.resolve(mergePart(mergePartName, flag("--from") ?? ""))
    : merge
      ? Promise.resolve(mergeUi(merge, process.env.OCW_BENCH_UI_ERROR || undefined))
      : mergeManyFile
        ? Promise.resolve(mergeMany(mergeManyFile))
        : measure()
).then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
