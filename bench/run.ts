// `npm run bench`: figures measured side by side in one run, against the real engine + real opencode + the scripted model.
// Writes bench/report.json and bench/report.md.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import type { EngineEvent } from "../shared/events";
import { connect, type EngineClient } from "../engine/api/client";
import { hostEngine } from "../engine/api/host";
import { WORKER_AGENT } from "../engine/harness/config";
import { readSse } from "../engine/harness/sse";
import { OpencodeServer } from "../engine/harness/opencode-server";
import { runChecks } from "../engine/grading/checks";
import { bash, startScriptedModel, writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, tempDir, type TestEngine } from "../test/helpers";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", "..");
const quick = process.argv.includes("--quick");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
};
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
function procStat(pid: number): { cpuSec: number; rssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const tick = 100; // CLK_TCK on Linux
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return { cpuSec: (Number(f[11]) + Number(f[12])) / tick, rssMb: rssKb / 1024 };
}

/**
 * Permission ask → visible to an API subscriber. The clock starts when opencode emits `permission.asked` (seen on our
 * own direct connection to its event stream) and stops when a subscriber of the engine's API holds `ask.opened`.
 * Baseline on the same asks: a client polling the approvals list every second (the seed's approach).
 */
async function gateLatency(gate: GateRig, n: number, rounds: number) {
  const event: number[] = [];
  const poll: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const dir = makeRepo();
    const seenEvent = new Map<string, number>();
    const seenPoll = new Map<string, number>();
    const cursor = (await gate.client.health.query()).cursor;
    const sub = gate.client.events.subscribe({ lastEventId: cursor }, { onData: ({ data }) => { const e = data as EngineEvent; if (e.type === "ask.opened") seenEvent.set(e.ask.id, Date.now()); } });
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const a of await gate.client.approvals.list.query()) {
          if (!seenPoll.has(a.id)) seenPoll.set(a.id, Date.now());
          // Answer only once both observers have seen the ask, so neither measurement is cut short.
          else if (seenEvent.has(a.id)) void gate.client.approvals.decide.mutate({ askId: a.id, decision: "once" }).catch(() => undefined);
        }
        await sleep(1000);
      }
    })();
    const { workerIds } = await gate.client.workers.startBatch.mutate({ tasks: Array.from({ length: n }, (_, i) => ({ task: `BENCH-GATE ${r}-${i}`, directory: dir })) });
    await settle(gate.client, workerIds, undefined, 300_000);
    polling = false;
    await poller;
    sub.unsubscribe();
    for (const [id, t] of seenEvent) {
      const t0 = gate.emitted.get(id);
      if (t0 === undefined) continue;
      event.push(t - t0);
      if (seenPoll.has(id)) poll.push(seenPoll.get(id)! - t0);
    }
    cleanup(dir);
  }
  return { event: { p50: round(median(event)), p99: round(pct(event, 99)), n: event.length }, poll: { p50: round(median(poll)), p99: round(pct(poll, 99)), n: poll.length } };
}

interface GateRig {
  client: EngineClient;
  emitted: Map<string, number>;
  close(): Promise<void>;
}

/** An engine hosted in this process, so the bench can also listen to its opencode server directly. */
async function gateRig(model: ScriptedModel): Promise<GateRig> {
  const stateDir = tempDir("bench-gate");
  const hosted = await hostEngine({ stateDir });
  const client = connect({ port: hosted.port, token: hosted.token }, "gui:bench");
  await client.targets.save.mutate({ target: scriptedTarget(model.url, 32, "gate"), activate: true });
  // Warm up: start opencode serve and bootstrap once, then open our own stream to it.
  const warm = makeRepo();
  const { workerId } = await client.workers.start.mutate({ task: "BENCH-GATE warm-up", directory: warm });
  await settle(client, [workerId], () => "once", 120_000);
  const server = hosted.engine.serverFor("gate")!;
  const emitted = new Map<string, number>();
  const abort = new AbortController();
  void (async () => {
    for await (const raw of readSse(`${server.url}/global/event`, { Authorization: server.authHeader }, abort.signal)) {
      const p = (raw as { payload?: { type?: string; properties?: { id?: string } } }).payload;
      if (p?.type === "permission.asked" && p.properties?.id) emitted.set(p.properties.id, Date.now());
    }
  })().catch(() => undefined);
  return {
    client,
    emitted,
    close: async () => {
      abort.abort();
      await hosted.close();
      cleanup(stateDir, warm);
    },
  };
}

/** 16 tasks through the engine (worktrees, approvals, grading) vs the same work driven by the bare SDK. */
async function batchThroughEngine(engine: TestEngine, n: number) {
  const dir = makeRepo();
  const pid = engine.proc.pid!;
  const before = procStat(pid);
  let maxRss = before.rssMb;
  const sampler = setInterval(() => (maxRss = Math.max(maxRss, procStat(pid).rssMb)), 200);
  const t0 = Date.now();
  const { workerIds } = await engine.client.workers.startBatch.mutate({
    tasks: Array.from({ length: n }, (_, i) => ({ task: `BENCH-BATCH ${i}`, directory: dir, checks: [{ file: `f${i}.txt` }] })),
  });
  const ws = await settle(engine.client, workerIds, () => "once", 600_000);
  const wall = Date.now() - t0;
  clearInterval(sampler);
  const after = procStat(pid);
  const built = [...ws.values()].filter((w) => w.state === "built").length;
  cleanup(dir);
  return { wallMs: wall, built, cpuSec: round(after.cpuSec - before.cpuSec, 2), rssMb: round(maxRss) };
}

async function batchThroughBareSdk(model: ScriptedModel, n: number) {
  const home = tempDir("bench-bare");
  const server = new OpencodeServer({ target: scriptedTarget(model.url, n, "bare"), home });
  await server.start();
  const client = createOpencodeClient({ baseUrl: server.url!, headers: { Authorization: server.authHeader } });
  const dir = makeRepo();
  const t0 = Date.now();
  const pending = new Map<string, () => void>();
  server.on("event", (e: { type: string; directory?: string; properties: Record<string, any> }) => {
    // Asks live in the instance of their directory: the reply must name it.
    if (e.type === "permission.asked") void client.permission.reply({ requestID: e.properties.id, directory: e.directory, reply: "once" });
    if (e.type === "session.idle") pending.get(e.properties.sessionID)?.();
  });
  const built = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const wt = path.join(home, "wt", `w${i}`);
      execFileSync("git", ["-C", dir, "worktree", "add", "-q", "-b", `bare/${i}`, wt, "HEAD"]);
      const s = (await client.session.create({ directory: wt, title: `bare ${i}` })).data!;
      const idle = new Promise<void>((r) => pending.set(s.id, r));
      await client.session.promptAsync({ sessionID: s.id, directory: wt, agent: WORKER_AGENT, parts: [{ type: "text", text: `BENCH-BATCH ${i}` }] });
      await idle;
      const [c] = await runChecks([{ file: `f${i}.txt` }], wt);
      return c!.passed;
    }),
  );
  const wall = Date.now() - t0;
  await server.stop();
  cleanup(dir, home);
  return { wallMs: wall, built: built.filter(Boolean).length };
}

async function main() {
  const started = Date.now();
  const model = await startScriptedModel({
    scripts: [
      { name: "gate", match: /BENCH-GATE/, script: (c) => (c.turnStep === 0 ? bash("echo gate") : { text: "OUTCOME: built" }) },
      { name: "batch", match: /BENCH-BATCH (\d+)/, script: (c) => (c.turnStep === 0 ? writeFile(`f${/BENCH-BATCH (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" }) },
    ],
  });
  const t0 = Date.now();
  const engine = await startEngine();
  const engineReadyMs = Date.now() - t0;
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 32), activate: true });

  const sizes = quick ? [1, 4] : [1, 4, 16, 32];
  const rig = await gateRig(model);
  const gate: Record<string, { p50: number; p99: number; n: number }> = {};
  let pollBaseline = { p50: 0, p99: 0, n: 0 };
  const pollAll: { p50: number; p99: number }[] = [];
  for (const n of sizes) {
    const r = await gateLatency(rig, n, n === 1 ? (quick ? 3 : 5) : n <= 4 ? 2 : 1);
    gate[`w${n}`] = r.event;
    pollAll.push(r.poll);
    if (n === 16 || (quick && n === 4)) pollBaseline = r.poll;
    console.error(`gate w${n}: event p50 ${r.event.p50} ms p99 ${r.event.p99} ms | 1 s poll p50 ${r.poll.p50} p99 ${r.poll.p99}`);
  }

  await rig.close();
  const batchN = quick ? 4 : 16;
  const bare = await batchThroughBareSdk(model, batchN);
  const viaEngine = await batchThroughEngine(engine, batchN);
  console.error(`batch ${batchN}: engine ${viaEngine.wallMs} ms vs bare SDK ${bare.wallMs} ms`);
  let w32: { wallMs: number } | null = null;
  let bare32: { wallMs: number } | null = null;
  if (!quick) {
    bare32 = await batchThroughBareSdk(model, 32);
    w32 = await batchThroughEngine(engine, 32);
  }
  await engine.kill();
  await model.close();
  cleanup(engine.stateDir);

  const report = {
    machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memGb: round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}` },
    date: new Date().toISOString(),
    quick,
    gateLatencyMs: gate,
    pollBaselineMs: { p50: pollBaseline.p50, p99: pollBaseline.p99 },
    batchRatio: { [`w${batchN}`]: round(viaEngine.wallMs / bare.wallMs, 2), ...(w32 && bare32 ? { w32: round(w32.wallMs / bare32.wallMs, 2) } : {}) } as Record<string, number>,
    batchMs: { engine: viaEngine.wallMs, bareSdk: bare.wallMs, built: viaEngine.built, bareBuilt: bare.built, ...(w32 && bare32 ? { engineW32: w32.wallMs, bareSdkW32: bare32.wallMs } : {}) },
    engine: { cpuSecondsW16: viaEngine.cpuSec, rssMbW16: viaEngine.rssMb },
    startupMs: { engine: engineReadyMs },
    totalSeconds: round((Date.now() - started) / 1000),
  };
  writeFileSync(path.join(ROOT, "bench", "report.json"), JSON.stringify(report, null, 2) + "\n");
  const md = [
    "# opencode-worker benchmark report",
    "",
    `Run ${report.date} on ${report.machine.cpus} × ${report.machine.cpu}, ${report.machine.memGb} GiB, Node ${report.machine.node}, ${report.machine.platform}.`,
    "Reproduce: `npm ci && npm run bench` (add `-- --quick` for a short run). Real engine, real opencode-ai 1.18.33, scripted model.",
    "",
    "## Permission ask → visible to an API subscriber",
    "Clock starts when opencode emits `permission.asked` (on a direct connection of the bench to its event stream); stops when a subscriber of the engine's API holds the engine's `ask.opened` event.",
    "Baseline measured on the same asks: a client polling the approvals list every second (the seed's approach).",
    "",
    "| workers | event p50 ms | event p99 ms | n | 1 s poll p50 ms | 1 s poll p99 ms |",
    "|---|---|---|---|---|---|",
    ...sizes.map((n, i) => `| ${n} | ${gate[`w${n}`]!.p50} | ${gate[`w${n}`]!.p99} | ${gate[`w${n}`]!.n} | ${pollAll[i]!.p50} | ${pollAll[i]!.p99} |`),
    "",
    `## Batch of ${batchN} scripted tasks: engine vs bare SDK`,
    `Both: one opencode serve, one git worktree per task, every ask approved, the same file check run afterwards. Engine: ${viaEngine.wallMs} ms (${viaEngine.built}/${batchN} built); bare SDK: ${bare.wallMs} ms (${bare.built}/${batchN}). **Ratio ${report.batchRatio[`w${batchN}`]}** (goal ≤ 1.10).`,
    ...(w32 && bare32 ? [`At 32 workers: engine ${w32.wallMs} ms vs bare ${bare32.wallMs} ms, ratio ${report.batchRatio.w32}.`] : []),
    "",
    "## Engine process during the batch",
    `CPU ${viaEngine.cpuSec} s, peak RSS ${viaEngine.rssMb} MB (the engine process only; opencode serve is a separate process).`,
    "",
    `Engine start-up (spawn → URL printed): ${engineReadyMs} ms. Whole run: ${report.totalSeconds} s.`,
    "",
  ].join("\n");
  writeFileSync(path.join(ROOT, "bench", "report.md"), md);
  console.error(md);
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
