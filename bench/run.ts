// `npm run bench`: figures measured side by side in one run, against the real engine + real opencode + the scripted
// model. Writes bench/report.json and bench/report.md; `--merge-ui FILE` adds the Playwright bench's result to them.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { bash, startScriptedModel, writeFile } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";
import { batchThroughBareSdk, batchThroughMcp } from "./batch";
import { fitLive, fitRecorded, timeDetection, type FitResult } from "./fit";
import { gateLatency, gateRig, type Latency } from "./gate";
import { manyWorkers } from "./memory";
import { renderMarkdown, type Report, type UiResult } from "./report";
import { engineStartup, mcpCold, mcpToolsListWarm } from "./startup";
import { log, round, spread, type Spread } from "./stats";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const REPORT_JSON = path.join(ROOT, "bench", "report.json");
const REPORT_MD = path.join(ROOT, "bench", "report.md");

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const quick = process.argv.includes("--quick");
const reps = Number(flag("--reps") ?? (quick ? 1 : 3));
const manyCount = Number(flag("--workers") ?? (quick ? 32 : 500));

/** The fit's headline figures: the live matrix where it ran (the fuller comparison), else the recorded logs. */
function headline(f: FitResult) {
  return { maxErrPct: f.maxErrPct, meanErrPct: f.meanErrPct, totalMaxErrPct: f.totalMaxErrPct, totalMeanErrPct: f.totalMeanErrPct, source: f.source, n: f.cases.length, byBuffer: f.byBuffer };
}

function write(report: Report) {
  writeFileSync(REPORT_JSON, JSON.stringify(report, null, 2) + "\n");
  writeFileSync(REPORT_MD, renderMarkdown(report));
}

async function measure() {
  if (!Number.isInteger(reps) || reps < 1) throw new Error(`--reps must be a positive integer (got ${flag("--reps")})`);
  const started = Date.now();
  const range: Record<string, Spread> = {};
  /** Records a repeated figure's spread under its report path and returns its median. */
  const put = (key: string, runs: number[], d = 1) => (range[key] = spread(runs, d)).median;

  const model = await startScriptedModel({
    scripts: [
      { name: "gate", match: /BENCH-GATE/, script: (c) => (c.turnStep === 0 ? bash("echo gate") : { text: "OUTCOME: built" }) },
      { name: "batch", match: /BENCH-BATCH (\d+)/, script: (c) => (c.turnStep === 0 ? writeFile(`f${/BENCH-BATCH (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" }) },
      { name: "tiny", match: /BENCH-TINY/, script: () => ({ text: "OUTCOME: honest-failure — bench" }) },
    ],
  });

  // Start-ups first, while nothing else of the bench runs.
  const startupMs: Record<string, number> = {};
  const engineRuns: number[] = [];
  const detect: Awaited<ReturnType<typeof timeDetection>>[] = [];
  for (let i = 0; i < reps; i++) {
    engineRuns.push(await engineStartup());
    detect.push(await timeDetection());
  }
  startupMs.engine = put("startupMs.engine", engineRuns, 0);
  const hardware = { detectMs: put("hardware.detectMs", detect.map((d) => d.ms), 0), gpus: detect[0]!.gpus, probes: detect[0]!.probes };
  log(`engine start-up ${startupMs.engine} ms; hardware detection ${hardware.detectMs} ms`);

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
  await attachTo.kill();
  cleanup(attachTo.stateDir);
  startupMs.mcpToolsList = put("startupMs.mcpToolsList", warmMcp, 0);
  startupMs.mcpToolsListCold = put("startupMs.mcpToolsListCold", coldList, 0);
  startupMs.mcpFirstCallCold = put("startupMs.mcpFirstCallCold", coldCall, 0);
  log(`ocw mcp → tools/list ${startupMs.mcpToolsList} ms (cold ${startupMs.mcpToolsListCold} ms; first call cold ${startupMs.mcpFirstCallCold} ms)`);

  const recorded = await fitRecorded(ROOT);
  const live = await fitLive();
  log(`fit (${recorded.source}): max ${recorded.maxErrPct} %, mean ${recorded.meanErrPct} %${live ? `; live: max ${live.maxErrPct} %` : ""}`);

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
      log(`gate w${n} (run ${rep + 1}/${reps}): event p50 ${r.event.p50} ms p99 ${r.event.p99} ms | 1 s poll p50 ${r.poll.p50} p99 ${r.poll.p99} (stream reopened ${rig.reconnects()}×)`);
    }
  }
  const gateStreamReconnects = rig.reconnects();
  await rig.close();
  const gateLatencyMs: Record<string, Latency> = {};
  const pollMs: Record<string, Latency> = {};
  for (const [n, all] of gateRuns) {
    // A repetition whose observer saw no ask has no figure: it is left out of the median (its n shows it), not counted as 0.
    const sum = (which: "event" | "poll", into: Record<string, Latency>, key: string) => {
      const runs = all.filter((r) => r[which].n > 0);
      into[`w${n}`] = { p50: put(`${key}.w${n}.p50`, runs.map((r) => r[which].p50)), p99: put(`${key}.w${n}.p99`, runs.map((r) => r[which].p99)), n: runs.reduce((a, r) => a + r[which].n, 0) };
    };
    sum("event", gateLatencyMs, "gateLatencyMs");
    sum("poll", pollMs, "pollMs");
  }
  const pollBaselineMs = { p50: pollMs[`w${baselineSize}`]!.p50, p99: pollMs[`w${baselineSize}`]!.p99 };

  // Batches, each repetition on a fresh engine (as the gate rig); the bridge attaches to it through the state dir's
  // lock file, as Claude Code's would.
  const batchSizes = quick ? [4] : [16, 32];
  type BatchRun = { bare: number; eng: number; ratio: number; cpu: number; rss: number; bridge: number; built: number; bareBuilt: number };
  const batchRuns = new Map<number, BatchRun[]>();
  const batchMisses: Report["batchMisses"] = [];
  for (let rep = 0; rep < reps; rep++) {
    const engine = await startEngine();
    await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 32), activate: true });
    const mcp = await startMcp(engine.stateDir, "claude-code");
    await batchThroughMcp(mcp, engine.proc.pid!, 1, "warm-up");
    for (const n of batchSizes) {
      const bare = await batchThroughBareSdk(model, n);
      const eng = await batchThroughMcp(mcp, engine.proc.pid!, n, `r${rep}`);
      const run = { bare: bare.wallMs, eng: eng.wallMs, ratio: eng.wallMs / bare.wallMs, cpu: eng.cpuSec, rss: eng.rssMb, bridge: eng.bridgeCpuSec, built: eng.built, bareBuilt: bare.built };
      batchRuns.set(n, [...(batchRuns.get(n) ?? []), run]);
      log(`batch ${n} (run ${rep + 1}/${reps}): engine + MCP ${eng.wallMs} ms (${eng.built} built, ${eng.toolCalls} tool calls) vs bare SDK ${bare.wallMs} ms (${bare.built} built): ratio ${round(run.ratio, 2)}`);
      for (const m of eng.misses) {
        log(`  not built: ${m.workerId} ${m.state}: ${m.reason ?? "(no reason)"}`);
        batchMisses.push({ tasks: n, run: rep + 1, ...m });
      }
    }
    await mcp.close();
    await engine.kill();
    cleanup(engine.stateDir);
  }
  const batchRatio: Record<string, number> = {};
  const batchMs: Record<string, number> = {};
  const engineFigures: Record<string, number | string> = {};
  for (const [n, runs] of batchRuns) {
    const w = `w${n}`;
    const W = `W${n}`;
    batchRatio[w] = put(`batchRatio.${w}`, runs.map((r) => r.ratio), 2);
    batchMs[`engine${W}`] = put(`batchMs.engine${W}`, runs.map((r) => r.eng), 0);
    batchMs[`bare${W}`] = put(`batchMs.bare${W}`, runs.map((r) => r.bare), 0);
    batchMs[`built${W}`] = Math.min(...runs.map((r) => r.built));
    batchMs[`bareBuilt${W}`] = Math.min(...runs.map((r) => r.bareBuilt));
    engineFigures[`cpuSeconds${W}`] = put(`engine.cpuSeconds${W}`, runs.map((r) => r.cpu), 2);
    engineFigures[`rssMb${W}`] = put(`engine.rssMb${W}`, runs.map((r) => r.rss));
    engineFigures[`bridgeCpuSeconds${W}`] = put(`engine.bridgeCpuSeconds${W}`, runs.map((r) => r.bridge), 2);
  }

  // Many finished workers on a fresh engine, so its "before" holds nothing but one warm-up worker.
  const fresh = await startEngine();
  await fresh.client.targets.save.mutate({ target: scriptedTarget(model.url, 32), activate: true });
  const warmDir = makeRepo();
  const { workerId } = await fresh.client.workers.start.mutate({ task: "BENCH-TINY warm-up", directory: warmDir });
  await settle(fresh.client, [workerId], undefined, 120_000);
  log(`${manyCount} tiny workers through the engine (32 slots)…`);
  const many = await manyWorkers(fresh, manyCount);
  log(`${manyCount} workers in ${(many.wallMs / 1000).toFixed(1)} s: RSS ${many.rssMbBefore} → ${many.rssMbAfter} MB (peak ${many.rssMbPeak}); logs ${(many.logBytesOfRun / 2 ** 20).toFixed(1)} MB`);
  engineFigures[`rssMbBefore${manyCount}`] = many.rssMbBefore;
  engineFigures[`rssMbAfter${manyCount}`] = many.rssMbAfter;
  engineFigures[`rssMbPeak${manyCount}`] = many.rssMbPeak;
  engineFigures[`logBytes${manyCount}`] = many.logBytesOfRun;
  engineFigures[`finished${manyCount}`] = many.finished;
  await fresh.kill();
  cleanup(fresh.stateDir, warmDir);
  await model.close();

  const opencodePkg = path.join(ROOT, "node_modules", "opencode-ai", "package.json");
  const report: Report = {
    machine: {
      cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memGb: round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}`,
      opencode: existsSync(opencodePkg) ? (JSON.parse(readFileSync(opencodePkg, "utf8")) as { version: string }).version : "unknown",
    },
    date: new Date().toISOString(),
    quick,
    reps,
    reproduce: "npm ci && npm run bench",
    gateLatencyMs,
    pollBaselineMs,
    pollMs,
    gateStreamReconnects,
    batchRatio,
    batchMs,
    batchMisses,
    engine: engineFigures,
    manyWorkers: many,
    ui: null,
    uiError: "the Playwright bench has not run yet",
    fit: {
      ...headline(live ?? recorded),
      recorded,
      live,
      ...(live ? {} : { liveSkipped: "not run (no llama-server with its test vocabularies: set LLAMA_SERVER, see scripts/build-llama-server.sh)" }),
    },
    hardware,
    startupMs,
    range,
    totalSeconds: round((Date.now() - started) / 1000),
  };
  write(report);
  log(`wrote ${path.relative(ROOT, REPORT_MD)} and ${path.relative(ROOT, REPORT_JSON)} (${report.totalSeconds} s)`);
}

/** Adds the Playwright bench's result file (e2e/bench/dashboard.bench.ts) to the report written by `measure`. */
function mergeUi(file: string, error: string | undefined) {
  const report = JSON.parse(readFileSync(REPORT_JSON, "utf8")) as Report;
  const ui = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<UiResult>) : null;
  const { dashboardStartupMs, ...stream } = ui ?? {};
  if (dashboardStartupMs) {
    report.startupMs.dashboard = dashboardStartupMs.median;
    report.range["startupMs.dashboard"] = dashboardStartupMs;
  }
  if (stream.fpsW16 !== undefined) {
    report.ui = stream as Report["ui"];
    delete report.uiError;
  } else report.uiError = error ?? "the Playwright bench wrote no streaming result";
  if (error && report.ui) report.uiError = error;
  report.totalSeconds = round(report.totalSeconds + Number(process.env.OCW_BENCH_UI_SECONDS ?? 0));
  write(report);
  console.error(renderMarkdown(report));
}

const merge = flag("--merge-ui");
(merge ? Promise.resolve(mergeUi(merge, process.env.OCW_BENCH_UI_ERROR || undefined)) : measure()).then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
