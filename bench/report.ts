// The report's shape and its markdown rendering (bench/report.json, bench/report.md).
import type { BatchMiss } from "./batch";
import type { EngineCost } from "./cost";
import type { FaultSuite } from "./faults";
import type { FitResult } from "./fit";
import type { Latency } from "./gate";
import type { ManyWorkers } from "./memory";
import type { PoolBench } from "./pool";
import type { AttemptsBench } from "./attempts";
import type { SetupBench } from "./setup";
import type { EnvComparison } from "./procs";
import type { RepoCost, startMedians } from "./sandbox";
import type { Concurrent } from "./scale";
import { fmt, median, type Spread } from "./stats";
import { goalText, interleaving, overloaded, type PartLoad, type SideRun } from "./trust";

export interface UiResult {
  workers: number;
  streamSec: number;
  fpsW16: number;
  worstFrameMs: number;
  workerDetailFps: number;
  transcriptCharsPerSec: number;
  renderedRows: number;
  firstPaintMs: number | null;
  /** A blank page's frame rate in the same browser at the same moment: the machine's own limit under this load. */
  blankPageFps?: number;
  /** The watched worker's characters as the engine published them over the same stretch, and workers that published none. */
  engineCharsPerSec?: number;
  silentWorkers?: number;
  /** Where first paint went: the document, the scripts (and their size), the first worker card. */
  firstPaint?: { documentMs: number; scriptsMs: number; scriptKb: number; firstCardMs: number };
  longTasks: { count: number; totalMs: number; maxMs: number; windowSec: number };
  heapStartMb: number | null;
  heapEndMb: number | null;
  dashboardStartupMs: Spread | null;
  /** Where the dashboard's start-up went, medians in ms since `ocw serve` was spawned, and the 1-min load before/after. */
  dashboardStartupPhases?: { urlPrintedMs: number; documentMs: number; healthMs: number; pictureMs: number; eventsMs: number; liveMs: number; load: number[]; cores: number };
}

type Phases = ReturnType<typeof startMedians>;

export interface Report {
  machine: { cpus: number; cpu?: string; memGb: number; node: string; platform: string; opencode: string; loadBefore?: number[]; loadAfter?: number[]; commit?: string };
  /** Parts measured again by a later run and put into this report, with when. */
  reruns?: string[];
  /** Parts that failed, with their error (the others still ran). */
  partErrors?: Record<string, string>;
  /** Per part: load average (1, 5, 15 min) when it started and ended, and how long it took (s). */
  partLoad?: Record<string, PartLoad>;
  /** The batch part's timed runs in the order they ran (side, repetition, tasks): shows the sides of each ratio took turns. */
  batchSequence?: (SideRun & { size: number })[];
  /** CPU seconds of each side's `opencode serve` per batch (keys engineW16, bareW16, engineChildrenW16 …): medians. */
  batchOpencodeCpuSec?: Record<string, number>;
  /** The parts this run measured (the others, in a partial run, are the committed report's). */
  parts?: string[];
  date: string;
  quick: boolean;
  reps: number;
  reproduce: string;
  /** Medians over the repetitions; the spread of each is in `range`. */
  gateLatencyMs: Record<string, Latency>;
  pollBaselineMs: { p50: number; p99: number };
  pollMs: Record<string, Latency>;
  /** How often the bench's own connection to opencode's event stream was reopened (asks emitted meanwhile have no start time). */
  gateStreamReconnects?: number;
  batchRatio: Record<string, number>;
  /** Engine ÷ the bare SDK on private clones with their own opencode project id (the engine's workspaces): the engine alone. */
  batchRatioSameWorkspaces?: Record<string, number>;
  batchMs: Record<string, number>;
  /** Engine-side workers of the batches that did not end built (empty in a clean run). */
  batchMisses?: (BatchMiss & { tasks: number; run: number; side?: string })[];
  /** Median per task of start → first model request (engine: queued; bare: its worktree begun), per batch size. */
  batchStartMs?: Record<string, number>;
  /** Where an engine worker's start goes in each batch (medians since queued, over every worker of every repetition). */
  batchStartPhases?: Record<string, Phases>;
  /** The batch part's bare side let go of its opencode instances after each batch, as the engine does (absent before). */
  batchBareReleases?: boolean;
  /** Per batch size: batch start → its last worker's first model request, and from there to the batch's end (engine and bare SDK on private clones). */
  /** The largest batch again with a model that waits `modelMs` before each turn's first token: engine vs bare SDK on private clones. */
  batchPaced?: { tasks: number; modelMs: number; engineMs: number; bareCloneMs: number; ratio: number; built: number; bareBuilt: number };
  batchSplit?: Record<string, { engineToLastFirstRequestMs: number; engineAfterMs: number; bareCloneToLastFirstRequestMs: number; bareCloneAfterMs: number }>;
  /** How the bare-SDK side is made the same as the engine's, and the two opencode serve environments compared. */
  baseline?: { how: string; env: EnvComparison; envNoSandbox: EnvComparison };
  /** Sandbox on vs off (OCW_NO_SANDBOX=1): the batch and the worker start (queued → first model request). */
  sandbox?: {
    tasks: number;
    batchMsOn: number;
    batchMsOff: number;
    batchRatio: number;
    builtOn: number;
    builtOff: number;
    containedOn: string[];
    containedOff: string[];
    loneWorkers: number;
    loneStartMsOn: number;
    loneStartMsOff: number;
    loneStartOverheadMs: number;
    lonePhasesOn: Phases;
    lonePhasesOff: Phases;
    batchStartMsOn: number;
    batchStartMsOff: number;
    batchPhasesOn: Phases;
    batchPhasesOff: Phases;
    goals: { batchRatio: number; startOverheadMs: number };
  };
  /**
   * The same sandboxed engine with a keyed target (its opencode reaches the model through the engine's key gateway, as
   * every managed llama-server's does) against the batch without a key.
   */
  gateway?: {
    tasks: number;
    batchMsKeyed: number;
    batchMsOpen: number;
    batchRatio: number;
    builtKeyed: number;
    engineCpuSecKeyed: number;
    engineCpuSecOpen: number;
  };
  /** A private repository (the engine's createWorkspace) against a git worktree, per worker. */
  privateRepo?: RepoCost & { privateRepoMs: number; worktreeMs: number; timeRatio: number };
  /** opencode serve memory per concurrent worker, and many workers at once. */
  scale?: {
    tasks?: number;
    opencodeRssMbPeak?: number;
    opencodeRssMbIdle?: number;
    opencodeRssMbPerWorker?: number;
    opencodeRssMbPerWorkerAboveIdle?: number;
    bareOpencodeRssMbPeak?: number;
    goalMbPerWorker?: number;
    concurrent?: Concurrent;
    /** The concurrency run per size (`--scale 64,128`), keyed w64, w128. */
    concurrentBySize?: Record<string, Concurrent>;
  };
  /** The engine's own cost against the bare SDK on private clones, this build and an earlier one in the same run. */
  engineCost?: EngineCost;
  /** Grading alone (bench/grading-micro.ts): this build's grading and base-commit checks against an earlier source tree's. */
  gradingAlone?: {
    at: string;
    load: number[];
    cores: number;
    repoFiles: number;
    other: string;
    out: GradingAloneRow[];
    /** The same per repository size (FILES=…), with the CPU each grading took (absent in records before it). */
    bySize?: { repoFiles: number; out: GradingAloneRow[] }[];
  };
  /**
   * Where the engine's wall time goes beyond the bare SDK's (bench/trace-cost.ts, written into the report by hand from
   * its output): a worker's path from queued to verdict per segment, the processes each side starts per worker, and
   * the CPU each side adds, this build against an earlier one.
   */
  costTrace?: {
    at: string;
    /** How it was run (command, sizes, repetitions). */
    how: string;
    load: string;
    segments: { segment: string; engine: string; before: string; bare: string; note: string }[];
    processes: { what: string; engine: string; before: string; bare: string }[];
    cpu: { what: string; engine: string; before: string; bare: string }[];
    notes: string[];
  };
  /** The fault and attack suite, run by the bench (vitest JSON reporter). */
  faults?: FaultSuite;
  /** A batch on a pool of endpoints vs one endpoint with the same total slots; an endpoint's death → out of admission. */
  pool?: PoolBench;
  /** A batch run once per task against the same batch with 3 attempts per task, on a paced model (best-of-N). */
  attempts?: AttemptsBench;
  /** Time to a verified target with the model on disk vs llama-server's own load time, same model and args. */
  setup?: SetupBench;
  engine: Record<string, number | string>;
  manyWorkers: ManyWorkers;
  ui: Omit<UiResult, "dashboardStartupMs"> | null;
  uiError?: string;
  fit: {
    maxErrPct: number;
    meanErrPct: number;
    totalMaxErrPct: number;
    totalMeanErrPct: number;
    source: string;
    n: number;
    byBuffer: FitResult["byBuffer"];
    recorded: FitResult;
    live: FitResult | null;
    liveSkipped?: string;
  };
  hardware: { detectMs: number; gpus: number; probes: string };
  startupMs: Record<string, number>;
  /** The dashboard start-up's phases (from the Playwright bench). */
  dashboardStartupPhases?: UiResult["dashboardStartupPhases"];
  /** The context a supervising Claude pays: tool definitions (sent on every request) and a batch's tool results. */
  mcpContext?: { tools?: number; definitionChars?: number; instructionsChars?: number; batchTasks?: number; batchResultChars?: number; batchToolCalls?: number };
  /** Per repeated figure (dotted path into this report): min, max and every run. */
  range: Record<string, Spread>;
  totalSeconds: number;
}

const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;

function manySection(m: Report["manyWorkers"]): string[] {
  return [
    `${m.workers} tiny workers (one model turn each, no tool call, no checks; 32 slots, all queued at once) on a fresh engine: ${m.finished} finished in ${(m.wallMs / 1000).toFixed(1)} s (${(m.wallMs / 1000 / Math.max(1, m.finished)).toFixed(2)} s per worker).${m.stopped ? ` **${m.stopped}.**` : ""}${m.ranSeparately ? ` (${m.ranSeparately}; its wall time is not comparable: it ran at nice 10 beside other work.)` : ""}`,
    `Engine RSS ${m.rssMbBefore} MB before → ${m.rssMbAfter} MB after (peak ${m.rssMbPeak} MB): **${(m.rssMbAfter - m.rssMbBefore).toFixed(1)} MB** of growth, against ${mb(m.logBytesOfRun)} of their event logs on disk under \`<stateDir>/workers\` (${mb(m.logBytes)} in all). Final states: ${Object.entries(m.finalStates).map(([s, n]) => `${n} ${s}`).join(", ")}.${m.shutdownMs !== undefined ? ` The engine then shut down (SIGTERM → exit) in ${(m.shutdownMs / 1000).toFixed(1)} s.` : ""}`,
    ...(m.samples.length >= 4 ? [trend(m.samples.map((x) => x.rssMb), m.workers)] : []),
    `The target's \`opencode serve\` (a separate process, not the engine; it runs up to 32 worker instances at once, and each finished worker's instance is disposed): ${m.opencodeRssMbBefore ?? "–"} MB → ${m.opencodeRssMbAfter ?? "–"} MB.`,
    "",
    "| finished | s | engine RSS MB | opencode serve RSS MB |",
    "|---|---|---|---|",
    ...m.samples.map((x) => `| ${x.finished} | ${x.sec} | ${x.rssMb} | ${x.opencodeRssMb ?? "–"} |`),
    "",
  ];
}

export function renderMarkdown(r: Report): string {
  const R = (key: string, unit = "") => fmt(r.range[key], unit);
  const gateSizes = Object.keys(r.gateLatencyMs);
  const batchSizes = Object.keys(r.batchRatio);
  const m = r.manyWorkers;
  const ui = r.ui;
  const f = r.fit;
  const lines = [
    "# opencode-worker benchmark report",
    "",
    `Run ${r.date} on ${r.machine.cpus} × ${r.machine.cpu}, ${r.machine.memGb} GiB, Node ${r.machine.node}, ${r.machine.platform}; opencode-ai ${r.machine.opencode}.${r.machine.commit ? ` Code: ${r.machine.commit}.` : ""}`,
    `Reproduce: \`${r.reproduce}\` (add \`-- --quick\` for a short run, \`-- --reps N\` for N repetitions). Real engine, real opencode, scripted model.`,
    `${r.quick ? "**Quick run** (smaller sizes; not the figures to quote). " : ""}Repeated figures are the median of ${r.reps} run${r.reps > 1 ? "s" : ""}${r.reps > 1 ? ", with [min–max]" : ""}${r.reruns?.length ? "; parts measured again later (see \"Measured again\" at the end) carry that run's repetitions, code and date" : ""}.`,
    "",
    ...goalsSection(r),
    "## Permission ask → visible to an API subscriber",
    "Clock starts when opencode emits `permission.asked` (on a direct connection of the bench to its event stream); stops when a subscriber of the engine's API holds the engine's `ask.opened` event.",
    "Baseline measured on the same asks: a client polling the approvals list every second (the seed's approach).",
    "Both clocks are in the bench process, which reads opencode's stream itself and also hosts the engine. A figure below 0 means the engine's subscriber had the ask before the bench's own reader of opencode's stream had run: the two readers take turns on one event loop, so the figures are good to a few ms.",
    "",
    "| workers | event p50 ms | event p99 ms | asks | 1 s poll p50 ms | 1 s poll p99 ms |",
    "|---|---|---|---|---|---|",
    ...gateSizes.map((w) => `| ${w.slice(1)} | ${R(`gateLatencyMs.${w}.p50`)} | ${R(`gateLatencyMs.${w}.p99`)} | ${r.gateLatencyMs[w]!.n} | ${R(`pollMs.${w}.p50`)} | ${R(`pollMs.${w}.p99`)} |`),
    ...(r.gateStreamReconnects ? ["", `The bench's own connection to opencode's stream was reopened ${r.gateStreamReconnects}× during the run; asks emitted meanwhile have no start time and are not counted.`] : []),
    "",
    `## Batch through the engine over MCP vs the bare opencode SDK`,
    "Engine side: a real stdio MCP client (the MCP SDK's, as Claude Code uses) on `ocw mcp`, attached to the running engine: `delegate_batch`, then `wait` (no forms) and `approve` for every pending ask until the batch settles and is graded.",
    `Bare side: one \`opencode serve\` (kept for the repetition, as the engine keeps its own${r.batchBareReleases ? "; the instances a batch booted let go after it, as the engine does once none of its workers is at work" : ""}), one git worktree and session per task, every ask approved as it is asked, the same file check afterwards. Both sides warm (one untimed task first); each repetition starts fresh engines and a fresh bare serve, and the sides take turns going first. The engine side includes its sandbox, private repositories, grading (engine commit + fresh sandboxed checkout) and logging. After an engine batch the bench waits until the engine and its opencode are quiet before the next side starts: the engine disposes the batch's opencode instances once its last worker is graded, and that CPU is counted on the engine's side, never in the next side's time. Ratio: engine ÷ bare of the same repetition. Goal: ratio ≤ 1.05.`,
    ...(r.baseline ? ["", baselineText(r.baseline)] : []),
    ...(r.batchStartPhases
      ? ["", `Engine worker start, medians since queued: ${Object.entries(r.batchStartPhases).map(([k, p]) => `${k.replace("engineW", "")} tasks: private repository ${p.workspaceMs ?? "–"} ms → session ${p.sessionMs ?? "–"} ms → first model request ${p.firstRequestMs ?? "–"} ms${p.askMs != null ? ` → ask ${p.askMs} ms → answered over MCP ${p.answeredMs ?? "–"} ms → settled ${p.settledMs ?? "–"} ms → verdict ${p.verdictMs ?? "–"} ms` : ""}`).join("; ")}.`]
      : []),
    "",
    "| tasks | engine + MCP ms | bare SDK ms | ratio | built (engine / bare) | task start → first model request ms (engine / bare) |",
    "|---|---|---|---|---|---|",
    ...batchSizes.map((w) => {
      const W = w.toUpperCase();
      return `| ${w.slice(1)} | ${R(`batchMs.engine${W}`)} | ${R(`batchMs.bare${W}`)} | ${goalText(r.range[`batchRatio.${w}`], 1.05)} | ${r.batchMs[`built${W}`]} / ${r.batchMs[`bareBuilt${W}`]} of ${w.slice(1)} | ${r.batchStartMs ? `${R(`batchStartMs.engine${W}`)} / ${R(`batchStartMs.bare${W}`)}` : "–"} |`;
    }),
    ...(r.batchRatioSameWorkspaces
      ? [
          "",
          "The same batches against the bare SDK on the engine's kind of workspace: a private `git clone --shared` per task with a random opencode project id (without it, opencode takes all worktrees of a repository for one project and runs git in every one of them at each session's start). This ratio is the engine's own cost — MCP, asks, grading, logging, sandbox — with the workspace method the same on both sides:",
          "",
          "| tasks | engine + MCP ms | bare SDK on private clones ms | ratio | built (bare) |",
          "|---|---|---|---|---|",
          ...batchSizes.map((w) => {
            const W = w.toUpperCase();
            return `| ${w.slice(1)} | ${R(`batchMs.engine${W}`)} | ${R(`batchMs.bareClone${W}`)} | ${goalText(r.range[`batchRatioSameWorkspaces.${w}`], 1.05)} | ${r.batchMs[`bareCloneBuilt${W}`]} of ${w.slice(1)} |`;
          }),
          ...(r.batchSplit
            ? [
                "",
                "Where the two sides part, each batch split at its last worker's first model request (before it: start-up under load — workspaces, sessions, opencode turning prompts into requests; after it: the last asks and turns, the checks, and the answer). The bare side approves each ask inside its event handler and checks the files in place; the engine's tail holds the ask's round trip over MCP, grading (an engine commit and a fresh sandboxed checkout) and the final `wait`'s answer:",
                "",
                "| tasks | engine: start → last first request ms | bare on private clones ms | engine: after it ms | bare on private clones ms |",
                "|---|---|---|---|---|",
                ...batchSizes.filter((w) => r.batchSplit![w]).map((w) => `| ${w.slice(1)} | ${R(`batchSplit.${w}.engineToLastFirstRequestMs`)} | ${R(`batchSplit.${w}.bareCloneToLastFirstRequestMs`)} | ${R(`batchSplit.${w}.engineAfterMs`)} | ${R(`batchSplit.${w}.bareCloneAfterMs`)} |`),
              ]
            : []),
          ...(r.batchPaced
            ? [
                "",
                `The scripted model answers at once, so the figures above are the engine's cost at its largest share: the machine is busy with nothing but opencode, the engine and git. The same ${r.batchPaced.tasks}-task batch with a model that takes ${r.batchPaced.modelMs} ms before each turn's first token (a fast API; a local model takes longer), same repetitions: engine + MCP ${R("batchPaced.engineMs")} ms, bare SDK on private clones ${R("batchPaced.bareCloneMs")} ms, ${goalText(r.range["batchPaced.ratio"], 1.05)}; built ${r.batchPaced.built} / ${r.batchPaced.bareBuilt} of ${r.batchPaced.tasks}.`,
              ]
            : []),
        ]
      : []),
    ...(r.batchOpencodeCpuSec && Object.keys(r.batchOpencodeCpuSec).length
      ? [
          "",
          "CPU seconds of each side's `opencode serve` during the batch (its own + the processes it ran, mostly git), read from /proc: unlike wall time, it does not stretch with other work on the machine. " +
            batchSizes.map((w) => { const W = w.toUpperCase(); return `${w.slice(1)} tasks: engine ${R(`batchOpencodeCpuSec.engine${W}`)} + ${R(`batchOpencodeCpuSec.engineChildren${W}`)} s, bare ${R(`batchOpencodeCpuSec.bare${W}`)} + ${R(`batchOpencodeCpuSec.bareChildren${W}`)} s${r.range[`batchOpencodeCpuSec.bareClone${W}`] ? `, bare on private clones ${R(`batchOpencodeCpuSec.bareClone${W}`)} + ${R(`batchOpencodeCpuSec.bareCloneChildren${W}`)} s` : ""}`; }).join("; ") + ".",
        ]
      : []),
    ...(r.batchMisses?.length
      ? ["", "Engine-side workers that did not end built (the lowest count of the runs is shown above):", ...r.batchMisses.map((x) => `- ${x.tasks} tasks, run ${x.run}: ${x.workerId} ${x.state}: ${x.reason ?? "(no reason)"}`)]
      : []),
    ...sandboxSection(r),
    ...costSection(r),
    ...gradingAloneSection(r),
    ...costTraceSection(r),
    ...repoSection(r),
    "",
    "## Engine process",
    `During the ${batchSizes[0]!.slice(1)}-task batch: engine CPU ${R(`engine.cpuSeconds${batchSizes[0]!.toUpperCase()}`, " s")} + ${R(`engine.childrenCpuSeconds${batchSizes[0]!.toUpperCase()}`, " s")} of the git it ran (workspaces, grading, publishing), peak RSS ${R(`engine.rssMb${batchSizes[0]!.toUpperCase()}`, " MB")}; the \`ocw mcp\` bridge ${R(`engine.bridgeCpuSeconds${batchSizes[0]!.toUpperCase()}`, " s")} CPU (opencode serve is a separate process, not counted).`,
    "",
    // A full run writes the report after every part: the many-workers run comes after the batches.
    ...(m ? manySection(m) : ["The many-workers run has not run yet.", ""]),
    ...scaleSection(r),
    ...poolSection(r),
    ...attemptsSection(r),
    ...setupSection(r),
    "",
    `## Dashboard in Chromium with ${ui?.workers ?? 32} streaming workers`,
    ...(ui
      ? [
          `${ui.workers} workers streaming (20 ms chunks); ${ui.streamSec} s on the dashboard. Frames per second on the dashboard **${ui.fpsW16.toFixed(1)}** (goal ≥ 60: ${ui.fpsW16 >= 60 ? "met" : "not met"}; worst frame ${ui.worstFrameMs.toFixed(0)} ms)${ui.blankPageFps !== undefined ? `; a blank page in the same browser at the same moment: ${ui.blankPageFps.toFixed(1)} fps (the machine's limit under this load)` : ""}. Live transcript of one worker ${ui.workerDetailFps.toFixed(1)} fps (${ui.renderedRows} rows rendered, ${ui.transcriptCharsPerSec} characters a second arriving${ui.engineCharsPerSec !== undefined ? `; the engine published ${ui.engineCharsPerSec} a second for it, and ${ui.silentWorkers ?? 0} workers published none` : ""}).`,
          `First contentful paint on a reload with all of them live: ${ui.firstPaintMs === null ? "–" : `${ui.firstPaintMs.toFixed(0)} ms (goal ≤ 500: ${ui.firstPaintMs <= 500 ? "met" : "not met"})`}${ui.firstPaint ? ` (document ${ui.firstPaint.documentMs} ms, scripts ${ui.firstPaint.scriptsMs} ms for ${ui.firstPaint.scriptKb} kB, first worker card ${ui.firstPaint.firstCardMs} ms)` : ""}. Long tasks (> 50 ms, PerformanceObserver \`longtask\`) over the ${ui.longTasks.windowSec} s on the dashboard: ${ui.longTasks.count} (${ui.longTasks.totalMs.toFixed(0)} ms in all, longest ${ui.longTasks.maxMs.toFixed(0)} ms).`,
          `JS heap after a forced GC: ${ui.heapStartMb ?? "–"} MB at the start → ${ui.heapEndMb ?? "–"} MB after ${ui.streamSec} s.`,
        ]
      : [`Not measured: ${r.uiError ?? "the Playwright bench did not run"}.`]),
    "",
    "## Fit: the estimator against a real llama-server",
    `${f.source}, ${f.n} server${f.n === 1 ? "" : "s"}: llama.cpp's logged buffers (model, KV, recurrent, output, compute) vs \`engine/models/estimate.ts\` on the same model and flags.`,
    `Over every logged buffer: max error **${f.maxErrPct} %**, mean ${f.meanErrPct} %; whole-server memory: max ${f.totalMaxErrPct} %, mean ${f.totalMeanErrPct} %.`,
    "",
    "| buffer | max error % | mean error % | logged in |",
    "|---|---|---|---|",
    ...Object.entries(f.byBuffer).map(([b, e]) => `| ${b} | ${e.maxErrPct} | ${e.meanErrPct} | ${e.n} |`),
    "",
    f.live
      ? `The recorded logs (${f.recorded.source}, ${f.recorded.cases.length} servers): max ${f.recorded.maxErrPct} %, mean ${f.recorded.meanErrPct} %.`
      : `Live matrix (the 19 servers of test/integration/setup-fit-matrix.test.ts): ${f.liveSkipped}.`,
    `Hardware detection (\`detectHardware()\`, the real probes on this machine): ${R("hardware.detectMs", " ms")} (${r.hardware.gpus} GPU${r.hardware.gpus === 1 ? "" : "s"}; ${r.hardware.probes}).`,
    "",
    "## Start-up",
    "",
    "| what | ms |",
    "|---|---|",
    `| \`ocw serve\` spawned → URL printed (engine ready) | ${R("startupMs.engine")} |`,
    `| \`ocw serve\` spawned (fresh state dir) → Chromium shows the dashboard live | ${R("startupMs.dashboard")} |`,
    ...(r.dashboardStartupPhases
      ? [
          `| … of which (medians since spawned): URL printed ${r.dashboardStartupPhases.urlPrintedMs} → page document ${r.dashboardStartupPhases.documentMs} → health answered ${r.dashboardStartupPhases.healthMs} → workers/status/targets ${r.dashboardStartupPhases.pictureMs} → event stream answered ${r.dashboardStartupPhases.eventsMs} → live ${r.dashboardStartupPhases.liveMs}; load (1 min) ${r.dashboardStartupPhases.load.join(" → ")} on ${r.dashboardStartupPhases.cores} cores${Math.max(...r.dashboardStartupPhases.load) > r.dashboardStartupPhases.cores ? " (**above the core count**)" : ""} | |`,
        ]
      : []),
    `| \`ocw mcp\` spawned → initialize → \`tools/list\` answered, engine running | ${R("startupMs.mcpToolsList")} |`,
    `| the same, no engine running | ${R("startupMs.mcpToolsListCold")} |`,
    `| \`ocw mcp\` spawned, no engine → first tool call answered (the bridge starts the engine) | ${R("startupMs.mcpFirstCallCold")} |`,
    "",
    ...(r.mcpContext
      ? [
          "## Context a supervising Claude pays",
          "",
          "| what | characters |",
          "|---|---|",
          `| tool definitions (name + description + input schema, ${r.mcpContext.tools ?? "?"} tools), sent on every request | ${r.mcpContext.definitionChars ?? "not measured"} (peer: opencode-subagent-mcp's 5 tools, 3.5 KB) |`,
          `| server instructions | ${r.mcpContext.instructionsChars ?? "not measured"} |`,
          `| a ${r.mcpContext.batchTasks ?? 32}-task batch driven to settled over MCP (delegate_batch, every wait and approve) | ${r.mcpContext.batchResultChars ?? "not measured"} in ${r.mcpContext.batchToolCalls ?? "?"} calls (contract: ≤ 60,000) |`,
          "",
        ]
      : []),
    ...faultSection(r),
    ...(r.reruns?.length ? ["## Measured again", ...r.reruns.map((x) => `- ${x}`), ""] : []),
    ...(r.partLoad && Object.keys(r.partLoad).length
      ? [
          "## Load on the machine per part",
          `Load average (1, 5, 15 min) of this ${r.machine.cpus}-core machine when each part started and ended: other work shows here. A part whose 1-minute load was above the core count at its start or end is marked: its processes waited for a core, so its wall times (and a ratio of two of them) carry that wait.`,
          "",
          "| part | load at start | load at end | s | |",
          "|---|---|---|---|---|",
          ...Object.entries(r.partLoad).map(
            ([p, l]) => `| ${p} | ${l.before.join(", ")} | ${l.after.join(", ")} | ${l.seconds} | ${overloaded(l, l.cores ?? r.machine.cpus) ? `**above the ${l.cores ?? r.machine.cpus} cores**` : ""}`.trimEnd() + " |",
          ),
          "",
        ]
      : []),
    ...(r.partErrors && Object.keys(r.partErrors).length ? ["## Parts that failed", ...Object.entries(r.partErrors).map(([p, e]) => `- ${p}: ${e}`), ""] : []),
    `Whole run: ${r.totalSeconds} s.${r.machine.loadBefore ? ` Load average (1, 5, 15 min) at the start ${r.machine.loadBefore.join(", ")}, at the end ${r.machine.loadAfter?.join(", ")} (${r.machine.cpus} cores; other work on the machine shows here).` : ""}${r.parts && r.parts.length < 8 ? ` This run measured: ${r.parts.join(", ")}; the rest is from the previous report.` : ""}`,
    "",
  ];
  return lines.join("\n");
}

/** Whether engine RSS rose with the number of finished workers: the later half of the samples against the earlier. */
function trend(rss: number[], workers: number): string {
  const half = Math.floor(rss.length / 2);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const early = mean(rss.slice(0, half));
  const late = mean(rss.slice(half));
  const perWorkerKb = ((late - early) * 1024) / (workers / 2);
  return `Trend: engine RSS averaged ${early.toFixed(1)} MB over the first half of the samples and ${late.toFixed(1)} MB over the second (${late <= early ? "no growth with the number of finished workers, so what is left over the fresh engine does not scale with them" : `${perWorkerKb.toFixed(1)} KB more per finished worker`}).`;
}

const met = (ok: boolean) => (ok ? "met" : "**not met**");

/** Which part measured a figure of the report (for its load). */
const PART_OF: [RegExp, string][] = [
  [/^(batch|sandbox|gateway|engine\.)/, "batch"],
  [/^startupMs\.(engine|mcp)/, "startup"],
  [/^gate|^poll/, "gate"],
  [/^engineCost\./, "cost"],
];

/**
 * Every goal the report states, each with its figure, the spread of its repetitions and what that spread allows one to
 * say (met / not met, or within noise), the load its part ran under, and for a ratio whether its two sides took turns.
 */
function goalsSection(r: Report): string[] {
  const rows: string[] = [];
  const cores = r.machine.cpus;
  const loadOf = (key: string) => {
    const part = PART_OF.find(([re]) => re.test(key))?.[1];
    const l = part ? r.partLoad?.[part] : undefined;
    if (!l) return "–";
    const over = overloaded(l, l.cores ?? cores);
    return `${l.before[0]} → ${l.after[0]}${over ? ` (**above its ${l.cores ?? cores} cores**)` : ""}`;
  };
  const turns = (a: string, b: string, size: number) => {
    const seq = r.batchSequence?.filter((x) => x.size === size);
    if (!seq?.length) return "–";
    const t = interleaving(seq, a, b);
    return t.why ? `**no**: ${t.why}` : `yes${t.gap ? ` (up to ${t.gap} other run${t.gap > 1 ? "s" : ""} between a pair)` : ", back to back"}`;
  };
  const add = (what: string, key: string, goal: number, atMost: boolean, sides?: [string, string, number]) => {
    if (!r.range[key]) return;
    rows.push(`| ${what} | ${goalText(r.range[key], goal, atMost)} | ${loadOf(key)} | ${sides ? turns(...sides) : "–"} |`);
  };
  for (const [k, x] of Object.entries(r.engineCost?.sizes ?? {})) {
    const size = x.pacedMs ? -x.tasks : x.tasks;
    const what = `${x.tasks} tasks${x.pacedMs ? `, model paced ${x.pacedMs} ms a turn` : ""}`;
    const seq = r.engineCost!.sequence.filter((s) => s.size === size);
    const t = (a: string) => {
      const i = interleaving(seq, a, "bareClone");
      return i.why ? `**no**: ${i.why}` : `yes${i.gap ? ` (up to ${i.gap} other run${i.gap > 1 ? "s" : ""} between a pair)` : ", back to back"}`;
    };
    if (r.range[`engineCost.${k}.ratio`]) rows.push(`| engine ÷ bare SDK on private clones, ${what} (cost part, this build) | ${goalText(r.range[`engineCost.${k}.ratio`], 1.05)} | ${loadOf(`engineCost.${k}`)} | ${t("engine")} |`);
    // Only where this cost part ran an earlier build beside this one (a range left from an earlier run says nothing of it).
    if (r.engineCost?.before && r.range[`engineCost.${k}.ratioBefore`])
      rows.push(`| the same, ${r.engineCost!.before ?? "earlier build"} | ${goalText(r.range[`engineCost.${k}.ratioBefore`], 1.05)} | ${loadOf(`engineCost.${k}`)} | ${t("engineBefore")} |`);
  }
  for (const w of Object.keys(r.batchRatioSameWorkspaces ?? {})) {
    const n = Number(w.slice(1));
    add(`engine ÷ bare SDK on private clones, ${n} tasks`, `batchRatioSameWorkspaces.${w}`, 1.05, true, ["engine", "bareClone", n]);
  }
  if (r.batchPaced) add(`the same, ${r.batchPaced.tasks} tasks, model paced ${r.batchPaced.modelMs} ms a turn`, "batchPaced.ratio", 1.05, true, ["enginePaced", "bareClonePaced", -r.batchPaced.tasks]);
  for (const w of Object.keys(r.batchRatio ?? {})) {
    const n = Number(w.slice(1));
    add(`engine ÷ bare SDK on worktrees, ${n} tasks`, `batchRatio.${w}`, 1.05, true, ["engine", "bare", n]);
  }
  if (r.sandbox) {
    add(`sandbox on ÷ off, ${r.sandbox.tasks} tasks`, "sandbox.batchRatio", r.sandbox.goals.batchRatio, true, ["engine", "noSandbox", r.sandbox.tasks]);
    add("lone worker start, sandbox on − off, ms", "sandbox.loneStartOverheadMs", r.sandbox.goals.startOverheadMs, true);
  }
  if (!rows.length) return [];
  const over = Object.entries(r.partLoad ?? {}).filter(([, l]) => overloaded(l, l.cores ?? cores));
  return [
    "## Goals against the noise of their repetitions",
    `Each goal's figure is the median of its repetitions, [min–max] beside it. From 6 repetitions on, the noise stated is the interval that holds the true median with at least 95 % confidence (a pair of order statistics chosen from the binomial distribution: nothing assumed of the runs' distribution, only that they are independent): a goal outside it is met or not met, a goal inside it is **within noise** — that many runs cannot tell the median's side of the goal from chance, and more runs narrow it. Below 6 repetitions no such interval exists, and the runs' spread stands in (± is half the range): within noise where some runs met the goal and some did not. "Took turns": the two sides of the ratio ran one after the other in each repetition, the side going first alternating, so a drift in the machine's load weighs on both alike.${over.length ? ` Parts measured with the machine's load above its ${cores} cores: ${over.map(([p]) => p).join(", ")}; their wall times carry the wait for a core, and a ratio of two of them the difference in that wait.` : ""}`,
    "",
    "| figure | median [min–max] — against the goal | load (1 min) of its part, start → end | sides took turns |",
    "|---|---|---|---|",
    ...rows,
    "",
  ];
}

function baselineText(b: NonNullable<Report["baseline"]>): string {
  const e = b.env;
  const offline = Object.entries(e.offline.engine).map(([k, v]) => `${k}=${v ?? "(unset)"}${e.offline.bare[k] === v ? "" : ` vs bare ${e.offline.bare[k] ?? "(unset)"}`}`);
  return [
    `Same opencode on both sides: ${b.how}`,
    `Read back from the running processes: ${e.same.length} variables equal (OFFLINE_ENV on both: ${offline.join(", ")}; OPENCODE_CONFIG_CONTENT ${e.same.includes("OPENCODE_CONFIG_CONTENT") ? "identical" : "**differs**"}); different by design: ${Object.entries(e.perInstance).map(([k, why]) => `${k} (${why})`).join(", ")}.`,
    e.identical ? "Nothing else differs." : `**Also different (a fairness problem): ${Object.entries(e.unexpected).map(([k, v]) => `${k}: engine ${v.engine} / bare ${v.bare}`).join("; ")}.**`,
    `The unsandboxed engine's serve against the bare one: ${b.envNoSandbox.identical ? "the same apart from the same per-instance variables" : `also differs in ${Object.keys(b.envNoSandbox.unexpected).join(", ")}`}.`,
  ].join(" ");
}

function sandboxSection(r: Report): string[] {
  const s = r.sandbox;
  if (!s) return [];
  const R = (key: string, unit = "") => fmt(r.range[key], unit);
  const ph = (p: Report["sandbox"] extends infer S ? (S extends { lonePhasesOn: infer P } ? P : never) : never) =>
    `slot ${p.admitMs ?? "–"} ms → private repository ${p.workspaceMs ?? "–"} ms → session ${p.sessionMs ?? "–"} ms → first request ${p.firstRequestMs ?? "–"} ms (n ${p.n})`;
  return [
    "",
    "## Sandbox on vs off",
    `The same engine build, one started as usual (every worker's \`opencode serve\` in bubblewrap, every bash command and check in its own nested sandbox; workers recorded as ${s.containedOn.join("/")}) and one with \`OCW_NO_SANDBOX=1\` (recorded as ${s.containedOff.join("/")}), in the same repetitions as the batches above. Both use private repositories and the engine's grading. Worker start: \`worker.created\` (queued) in the worker's event log → the first chat request of its session in the scripted model's request log.`,
    "",
    "| | sandbox on | sandbox off | on ÷ off / overhead | goal |",
    "|---|---|---|---|---|",
    `| ${s.tasks}-task batch over MCP, ms | ${R("sandbox.batchMsOn")} | ${R("sandbox.batchMsOff")} | **${R("sandbox.batchRatio")}** | ≤ ${s.goals.batchRatio}: ${met(s.batchRatio <= s.goals.batchRatio)} |`,
    `| lone worker start (median of ${s.loneWorkers} per run), ms | ${R("sandbox.loneStartMsOn")} | ${R("sandbox.loneStartMsOff")} | **+${R("sandbox.loneStartOverheadMs")}** | ≤ +${s.goals.startOverheadMs} ms: ${met(s.loneStartOverheadMs <= s.goals.startOverheadMs)} |`,
    `| worker start within the ${s.tasks}-task batch (median per run), ms | ${R("sandbox.batchStartMsOn")} | ${R("sandbox.batchStartMsOff")} | +${Math.round(s.batchStartMsOn - s.batchStartMsOff)} | – |`,
    `| built | ${s.builtOn} of ${s.tasks} | ${s.builtOff} of ${s.tasks} | | |`,
    "",
    `Where a lone worker's start goes (medians since queued), sandbox on: ${ph(s.lonePhasesOn)}; off: ${ph(s.lonePhasesOff)}.`,
    `In the batch, on: ${ph(s.batchPhasesOn)}; off: ${ph(s.batchPhasesOff)}.`,
    ...gatewayLines(r),
  ];
}

function gatewayLines(r: Report): string[] {
  const g = r.gateway;
  if (!g) return [];
  const R = (key: string, unit = "") => fmt(r.range[key], unit);
  return [
    "",
    `Through the key gateway: a third engine of the same build, sandboxed, whose target names a key variable, so its opencode reaches the model through the engine's loopback gateway (engine/gateway/), which adds the key, as every managed llama-server's opencode does; the batches above use a target without a key. Same repetitions, same ${g.tasks}-task batch: ${R("gateway.batchMsKeyed", " ms")} through the gateway against ${R("gateway.batchMsOpen", " ms")} without a key, **${R("gateway.batchRatio")}**; engine CPU ${R("gateway.engineCpuSecKeyed", " s")} against ${R("gateway.engineCpuSecOpen", " s")}; built ${g.builtKeyed} of ${g.tasks}.`,
  ];
}

function costSection(r: Report): string[] {
  const c = r.engineCost;
  if (!c) return [];
  const rows = Object.values(c.sizes);
  const loads = c.loadAtBatch.map((x) => x.load);
  return [
    "",
    `## The engine's own cost${c.before ? ", before and after," : ""} in one run`,
    `The engine over MCP (as above) against the bare SDK on private clones, ${c.reps} repetition${c.reps > 1 ? "s" : ""}, each on fresh engines and a fresh bare serve, each of which first runs one untimed ${c.warmUpTasks ?? 1}-task batch (the bare side's client, in the bench's process, is warm from the repetitions before; a fresh engine's code is not); in every repetition the sides run one after another at each size, the order reversed every other repetition.${c.bareReleases ? " After each batch the bare side lets go of the opencode instances it booted, as the engine does once none of its workers is at work, so both sides start each batch from a serve in the same state (measured before this: one bare serve kept through 12 batches of 32 went from 4.4–4.8 s to 7.0 s a batch while the engine's stayed flat, so a repetition's later bare batches ran slower and flattered the engine)." : " The bare serve kept every instance its repetition booted (it never let them go, while the engine does): its later batches ran slower, which flattered the engine."}${c.before ? ` Beside this build, an engine built from ${c.before} (its own \`ocw mcp\` bridge too) takes its turn in the same repetitions, against the same bare runs.` : ""} Load average (1 min) at the batches' starts: ${Math.min(...loads)}–${Math.max(...loads)} (median ${median(loads)}) on ${c.cores} cores${Math.max(...loads) > c.cores ? ": **above the core count**, so every figure here carries waits for a core" : ""}.${c.model === "own process" ? " The scripted model ran in a process of its own, as a real model server does (the bare side's SDK client runs in the bench's process)." : c.model === "bench process" ? " The scripted model ran in the bench's process, beside the bare side's SDK client (OCW_BENCH_MODEL_INPROC=1)." : ""}`,
    "",
    `| tasks | engine ms | ${c.before ? "earlier build ms | " : ""}bare on private clones ms | engine ÷ bare | ${c.before ? "earlier ÷ bare | " : ""}tail after the last first request, ms (engine${c.before ? " / earlier" : ""} / bare) | engine CPU + its git, s${c.before ? " (this / earlier)" : ""} | built |`,
    `|---|---|${c.before ? "---|" : ""}---|---|${c.before ? "---|" : ""}---|---|---|`,
    ...rows.map(
      (x) =>
        `| ${x.tasks}${x.pacedMs ? `, paced ${x.pacedMs} ms` : ""} | ${fmt(x.engineMs)} | ${c.before ? `${fmt(x.engineBeforeMs)} | ` : ""}${fmt(x.bareCloneMs)} | ${goalText(x.ratio, 1.05)} | ${c.before ? `${goalText(x.ratioBefore, 1.05)} | ` : ""}${x.tailMs.engine}${c.before ? ` / ${x.tailMs.before}` : ""} / ${x.tailMs.bare} | ${x.engineCpuSec.engine}${c.before ? ` / ${x.engineCpuSec.before}` : ""} | ${x.built}${c.before ? ` / ${x.builtBefore}` : ""} / ${x.bareBuilt} of ${x.tasks} |`,
    ),
    ...(c.before
      ? [
          "",
          `This build against ${c.before}, per size: ${rows
            .map((x) => {
              const b = x.ratioBefore!;
              const apart = x.ratio.max < b.min || b.max < x.ratio.min;
              return `${x.tasks}${x.pacedMs ? " paced" : ""}: ${apart ? `**apart** (${x.ratio.max < b.min ? "this build lower" : "this build higher"} in every repetition)` : "the ranges overlap, no difference shown"}`;
            })
            .join("; ")}.`,
        ]
      : []),
    ...(rows.some((x) => x.mcp)
      ? [
          "",
          `What the MCP client received on the engine side (delegate_batch, every wait and approve; medians): ${rows
            .filter((x) => x.mcp)
            .map(
              (x) =>
                `${x.tasks} tasks${x.pacedMs ? " paced" : ""}: ${x.mcp!.resultChars.toLocaleString("en-US")} characters of tool results in ${x.mcp!.toolCalls} calls, the \`ocw mcp\` bridge ${x.mcp!.bridgeCpuSec} s of CPU`,
            )
            .join("; ")}.`,
        ]
      : []),
  ];
}

/** One build's row of the grading-alone run (bench/grading-micro.ts). */
interface GradingAloneRow {
  side: string;
  gradings: number;
  built: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  /** The engine's own CPU per grading (its thread and its thread pool), median; absent in records before it. */
  engineCpuMs?: number;
  /** The CPU of the processes it started (git, and the counting shim's sh), mean per grading. */
  gitCpuMs?: number;
  gitProcessesPerGrading: number;
  baseChecksMedianMs: number;
  gitProcessesPerBaseCheck: number;
}

function gradingAloneSection(r: Report): string[] {
  const g = r.gradingAlone;
  if (!g) return [];
  if (g.bySize)
    return [
      "",
      `Grading alone (\`FILES=${g.bySize.map((x) => x.repoFiles).join(",")} npx jiti bench/grading-micro.ts DIR N LABEL\`, ${g.at}): a worker that wrote one file in a repository of that many files, graded a second after its checkout with a file check, no sandbox, under jiti (unbundled TypeScript: both builds' CPU runs higher than the bundled engine's); this build and the source tree of ${g.other}, taking turns worker by worker; CPU as this process counts it (the engine's thread and its thread pool) and as its reaped children count it (git, with the counting shim's sh); git processes counted by a logging \`git\` first on PATH. Load (1 min) ${g.load.join(" → ")} on ${g.cores} cores${Math.max(...g.load) > g.cores ? " (**above the core count**)" : ""}.`,
      "",
      "| repository files | build | gradings (built) | grading ms, median [min–max] | engine CPU ms per grading, median | git CPU ms per grading | git processes per grading |",
      "|---|---|---|---|---|---|---|",
      ...g.bySize.flatMap((s) =>
        s.out.map(
          (x) =>
            `| ${s.repoFiles} | ${x.side} | ${x.gradings} (${x.built}) | ${x.medianMs} [${x.minMs}–${x.maxMs}] | ${x.engineCpuMs ?? "–"} | ${x.gitCpuMs ?? "–"} | ${x.gitProcessesPerGrading} |`,
        ),
      ),
    ];
  return [
    "",
    `Grading alone (\`npx jiti bench/grading-micro.ts DIR N LABEL\`, ${g.at}): a worker that wrote one file in a ${g.repoFiles}-file repository, graded with a file check, no sandbox; this build and the source tree of ${g.other}, taking turns worker by worker; git processes counted by a logging \`git\` first on PATH. Load (1 min) ${g.load.join(" → ")} on ${g.cores} cores${Math.max(...g.load) > g.cores ? " (**above the core count**)" : ""}.`,
    "",
    "| build | gradings (built) | grading ms, median [min–max] | git processes per grading | checks on the base commit ms, median | git processes there |",
    "|---|---|---|---|---|---|",
    ...g.out.map((x) => `| ${x.side} | ${x.gradings} (${x.built}) | ${x.medianMs} [${x.minMs}–${x.maxMs}] | ${x.gitProcessesPerGrading} | ${x.baseChecksMedianMs} | ${x.gitProcessesPerBaseCheck} |`),
  ];
}

function costTraceSection(r: Report): string[] {
  const t = r.costTrace;
  if (!t) return [];
  return [
    "",
    `### Where the engine's time goes beyond the bare SDK (trace, ${t.at})`,
    `${t.how} Load (1 min): ${t.load}.`,
    "",
    "| a worker's path, medians of per-batch medians (ms) | this build | earlier build | bare SDK on private clones | |",
    "|---|---|---|---|---|",
    ...t.segments.map((x) => `| ${x.segment} | ${x.engine} | ${x.before} | ${x.bare} | ${x.note} |`),
    "",
    "| processes per worker | this build | earlier build | bare SDK on private clones |",
    "|---|---|---|---|",
    ...t.processes.map((x) => `| ${x.what} | ${x.engine} | ${x.before} | ${x.bare} |`),
    "",
    "| CPU per batch, s (median) | this build | earlier build | bare SDK on private clones |",
    "|---|---|---|---|",
    ...t.cpu.map((x) => `| ${x.what} | ${x.engine} | ${x.before} | ${x.bare} |`),
    "",
    ...t.notes.map((n) => `- ${n}`),
  ];
}

function repoSection(r: Report): string[] {
  const p = r.privateRepo;
  if (!p) return [];
  const R = (key: string) => fmt(r.range[key]);
  return [
    "",
    "## Private repository vs git worktree",
    `A generated repository of ${p.files} files (${p.repoMb} MB on disk, packed). Private repository: the engine's \`createWorkspace\` (one script: \`git init\`, the user's objects as its alternate, \`git checkout -b\` of the worker's branch; no remote; the engine's own bare repository for grading is made by grading's first snapshot). Worktree: \`git worktree add -b\`. ${p.privateRepo.ms.length} of each, alternating.`,
    "",
    "| per worker | time ms | disk KB (files + git) | of which git metadata KB |",
    "|---|---|---|---|",
    `| private repository | ${R("privateRepo.privateRepo.medianMs")} | ${p.privateRepo.kb} | ${p.privateRepo.metaKb} |`,
    `| git worktree | ${R("privateRepo.worktree.medianMs")} | ${p.worktree.kb} | ${p.worktree.metaKb} (its admin folder in the user's .git, index included) |`,
    "",
    `Time: the private repository takes ${p.timeRatio}× a worktree's.`,
  ];
}

function scaleSection(r: Report): string[] {
  const s = r.scale;
  if (!s) return [];
  const R = (key: string, unit = "") => fmt(r.range[key], unit);
  const c = s.concurrent;
  const out = ["", "## Scale"];
  if (s.opencodeRssMbPerWorker !== undefined)
    out.push(
      `opencode serve during the ${s.tasks}-task engine batch (the serve process itself, inside its sandbox, sampled every 250 ms): idle ${R("scale.opencodeRssMbIdle", " MB")} → peak ${R("scale.opencodeRssMbPeak", " MB")}: **${R("scale.opencodeRssMbPerWorker", " MB")} per concurrent worker** (peak ÷ ${s.tasks}; goal ≤ ${s.goalMbPerWorker} MB: ${met(s.opencodeRssMbPerWorker <= (s.goalMbPerWorker ?? 120))}), ${R("scale.opencodeRssMbPerWorkerAboveIdle", " MB")} each above idle. The bare side's serve on the same batch peaked at ${R("scale.bareOpencodeRssMbPeak", " MB")}.`,
    );
  const sizes = Object.values(s.concurrentBySize ?? {});
  if (sizes.length)
    out.push(
      "",
      "Many workers at once on this machine, each size on a fresh engine (as many slots as workers, sandbox on; each worker writes a file after an approved ask and is graded with a file check). Ask → subscriber: from the engine taking opencode's `permission.asked` (the ask's `createdAt`) to the bench's subscriber of the engine's API holding `ask.opened`, over every ask of the run (opencode's own hop to the engine is not in it; the gate table above has it at up to 32).",
      "",
      "| workers at once | built | errors | wall s | most active at once | engine RSS MB: start → peak | ask → subscriber p50 / p99 / max ms (asks) | opencode serve peak MB | load (1 min) start → end |",
      "|---|---|---|---|---|---|---|---|---|",
      ...sizes.map(
        (x) =>
          `| ${x.workers} | ${x.built} of ${x.workers} | ${x.errors.length ? `**${x.errors.length}**: ${x.errors.slice(0, 3).join("; ")}` : "none"} | ${(x.wallMs / 1000).toFixed(1)} | ${x.maxActive} | ${x.engineRssMbBefore ?? "–"} → ${x.engineRssMbPeak} | ${x.askToSubscriberMs ? `${x.askToSubscriberMs.p50} / ${x.askToSubscriberMs.p99} / ${x.askToSubscriberMs.max} (${x.askToSubscriberMs.n})` : "–"} | ${x.opencodeRssMbPeak ?? "–"} | ${x.load ? `${x.load.before} → ${x.load.after}${x.load.before > x.load.cores || x.load.after > x.load.cores ? ` (**above its ${x.load.cores} cores**)` : ""}` : "–"} |`,
      ),
    );
  else if (c)
    out.push(
      "",
      `${c.workers} workers at once (${c.workers} slots, sandbox on, each writes a file after an approved ask and is graded with a file check): ${c.built} of ${c.workers} built in ${(c.wallMs / 1000).toFixed(1)} s, at most ${c.maxActive} active at the same moment; ${c.errors.length ? `**${c.errors.length} errors**: ${c.errors.slice(0, 5).join("; ")}` : "no error"}${c.stopped ? ` (${c.stopped})` : ""}${c.connectionDrops ? `; the bench's own connection to the engine failed (fetch failed) ${c.connectionDrops}× and was reopened, the engine staying up` : ""}. Final states: ${Object.entries(c.finalStates).map(([k, v]) => `${v} ${k}`).join(", ")}.`,
      `opencode serve ${c.opencodeRssMbBefore} MB → peak ${c.opencodeRssMbPeak} MB (${c.opencodeRssMbPerWorker} MB per worker at ${c.maxActive} at once); engine peak RSS ${c.engineRssMbPeak} MB.`,
    );
  return out;
}

function poolSection(r: Report): string[] {
  const p = r.pool;
  if (!p) return [];
  return [
    "",
    "## Pools",
    `${p.tasks} tasks (each writes a file after an approved ask, graded with a file check) on a pool of ${p.endpoints} endpoints × ${p.slotsPerEndpoint} slots, against the same batch on one endpoint with ${p.endpoints * p.slotsPerEndpoint} slots; the scripted model plays llama.cpp's \`/slots\`, so this is the engine's cost of a pool (admission by live capacity, one opencode provider per endpoint), not a server's throughput. ${p.reps} repetition${p.reps > 1 ? "s" : ""}, each on a fresh engine, the sides taking turns going first. Pool probe period ${p.probeMs} ms.`,
    "",
    "| | pool | one endpoint | pool ÷ one |",
    "|---|---|---|---|",
    `| ${p.tasks}-task batch, ms | ${fmt(p.poolMs)} | ${fmt(p.singleMs)} | **${fmt(p.ratio)}** |`,
    `| built | ${p.builtPool} of ${p.tasks} | ${p.builtSingle} of ${p.tasks} | |`,
    "",
    `Most of the engine's workers at once on one endpoint of the pool: ${p.maxOnEndpoint} (its slots: ${p.slotsPerEndpoint}).`,
    `An endpoint killed under its workers → the engine shows it down, out of admission: **${fmt(p.removalMidCallMs, " ms")}** while a worker's model call was open on it (the failed call triggers a probe at once); **${fmt(p.removalIdleMs, " ms")}** while its workers were between calls, waiting on a person (only the periodic probe sees it: at most one period plus the probe's timeout). Its workers moved and ended on another endpoint: ${p.moved.endedElsewhere} of ${p.moved.on}.`,
  ];
}

function attemptsSection(r: Report): string[] {
  const a = r.attempts;
  if (!a) return [];
  const pctOf = (s: Spread) => (s.runs.length > 1 ? `${Math.round(s.median * 100)} % [${Math.round(s.min * 100)}–${Math.round(s.max * 100)}]` : `${Math.round(s.median * 100)} %`);
  return [
    "",
    "## Attempts (best-of-N)",
    `${a.tasks} tasks, each once, against the same ${a.tasks} tasks with 3 attempts each (\`attempts: 3\`: the held-back check picks the winner; the attempts still running are stopped once one is built), on one target with ${a.slots} slots and a paced scripted model: ${a.pacedMs} ms of silence before each turn, and an attempt solves its task with probability ${a.solveP} (seeded draws). ${a.reps} repetition${a.reps > 1 ? "s" : ""}, each on a fresh engine, the sides taking turns going first.`,
    "",
    "| | one attempt | 3 attempts | 3 ÷ 1 |",
    "|---|---|---|---|",
    `| batch wall time, ms | ${fmt(a.one.wallMs)} | ${fmt(a.three.wallMs)} | **${fmt(a.wallRatio)}** |`,
    `| built rate (tasks) | ${pctOf(a.one.builtRate)} | **${pctOf(a.three.builtRate)}** | |`,
    `| tokens | ${fmt(a.one.tokens)} | ${fmt(a.three.tokens)} | |`,
    "",
    `Attempts stopped because another attempt of their task was built: ${a.three.stoppedForWinner} over all repetitions.`,
  ];
}

function setupSection(r: Report): string[] {
  const s = r.setup;
  if (!s) return [];
  const med = (xs: number[]) => median(xs);
  return [
    "",
    "## Setup",
    `Time to a verified target with the model on disk (\`setup.start\`: start, warm-up, verify, save) against llama-server's own load time with the same model and arguments (spawn → /health 200), ${s.reps} alternating pair${s.reps > 1 ? "s" : ""}. Model ${s.model}, ${s.slots} slots × ${s.ctxPerSlot} tokens. Goal ≤ 1.2×.`,
    "",
    "| | median ms | runs |",
    "|---|---|---|",
    `| llama-server alone | ${med(s.llamaLoadMs)} | ${s.llamaLoadMs.join(", ")} |`,
    `| setup to a verified target | ${med(s.setupMs)} | ${s.setupMs.join(", ")} |`,
    `| ratio | **${s.ratio}** (without verify: ${s.ratioWithoutVerify}) | |`,
    "",
    `Phases (median ms): ${Object.entries(s.phases).map(([k, v]) => `${k} ${v}`).join(", ")}. ${s.outcome}. ${s.note}`,
  ];
}

function faultSection(r: Report): string[] {
  const f = r.faults;
  if (!f) return [];
  const esc = (x: string) => x.replace(/\|/g, "\\|");
  return [
    "## Fault and attack suite",
    `\`${f.command}\` (the files of \`npm run test:faults\` plus the containment attacks), run by the bench: ${f.passed} passed, ${f.failed} failed, ${f.skipped} skipped in ${f.wallSec} s.${f.error ? ` **${f.error}**` : ""} "Records lost" and "escapes" are 0 where the test passed and asserts exactly that (goal 0 for both); "–" where the test is about something else.`,
    "",
    "| injected | times | what held | result | records lost | escapes |",
    "|---|---|---|---|---|---|",
    ...f.rows.map((x) => `| ${esc(x.injected)} | ${esc(x.times)} | ${esc(x.held)} | ${x.status === "passed" ? `passed (${x.durationSec} s)` : `**${x.status}**${x.note ? `: ${esc(x.note)}` : ""}`} | ${x.recordsLost} | ${x.escapes} |`),
    "",
  ];
}
