// Where the engine's wall time goes beyond the bare SDK's: the cost part's two sides (engine over MCP, bare SDK on
// private clones) on the same scripted model, sides taking turns, with each worker's timeline and, with STRACE=1, the
// processes each side started during the batch (strace -f on the engine and its opencode serve / the bare serve;
// STRACE_EXPR=trace=mkdir,openat,… traces those calls instead, STRACE_KEEP=PREFIX keeps each log).
// `npx jiti bench/trace-cost.ts [N] [REPS] [paced]` (a scratch tool of the cost investigation; not part of `npm run bench`).
// For ratios, run it bundled as the bench is (esbuild, as scripts/bench.mjs does, then `node`): under jiti the bare
// side's client, which runs in this process, ran ~15 % slower (32 tasks: bare 5.0–5.5 s against 4.3–4.5 s bundled, the
// engine side unchanged), which made the engine look at par. Phases and CPU hold either way. The scripted model runs in
// a process of its own, as the cost part's does (OCW_BENCH_MODEL_INPROC=1: in this process, as before).
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { cleanup, startEngine, tempDir } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";
import { bareRig, batchThroughMcp, benchTarget, type BareBatch } from "./batch";
import { serveBenchModelIfAsked, startCostModel } from "./model";
import { commandHelperUnder, opencodeServeUnder } from "./procs";
import { cpuWithChildren, median, procStat, round } from "./stats";

// Bundled, this file is also the model's process (bench/model.ts): then it serves the model and does nothing else.
await serveBenchModelIfAsked();

const n = Number(process.argv[2] ?? 16);
const reps = Number(process.argv[3] ?? 2);
const paced = process.argv[4] === "paced";
const STRACE = process.env.STRACE === "1";
/** BEFORE=BUNDLE: an engine of an earlier build takes its turn too (its own bridge), against the same bare runs. */
const BEFORE = process.env.BEFORE;

const { model, where } = await startCostModel();
console.log(`the scripted model runs in ${where === "own process" ? `a process of its own (pid ${model.pid})` : "this process"}`);
/** The model process's CPU seconds so far (null when it runs in this process). */
const modelCpu = () => (model.pid ? procStat(model.pid).cpuSec : null);

/** strace -f on these pids while fn runs: the programs each exec'd, counted. */
async function traced<T>(pids: number[], fn: () => Promise<T>): Promise<{ r: T; execs: Record<string, number> }> {
  if (!STRACE) return { r: await fn(), execs: {} };
  const out = path.join(tempDir("strace"), "log");
  const io = process.env.IOTRACE === "1";
  const st = spawn(
    "strace",
    [
      ...(io ? [] : ["-f"]),
      "-qq",
      "-e",
      io ? "trace=writev,write,accept4,read,readv" : (process.env.STRACE_EXPR ?? "trace=execve"),
      "-e",
      "signal=none",
      "-s",
      io ? "300" : "96",
      "-o",
      out,
      ...pids.flatMap((p) => ["-p", String(p)]),
    ],
    {
      stdio: "ignore",
    },
  );
  await new Promise((r) => setTimeout(r, 800));
  const r = await fn();
  st.kill("SIGINT");
  await new Promise((r) => st.once("exit", r));
  const execs: Record<string, number> = {};
  if (process.env.STRACE_KEEP) (await import("node:fs")).copyFileSync(out, `${process.env.STRACE_KEEP}-${pids[0]}.log`);
  if (process.env.IOTRACE === "1") {
    const { copyFileSync } = await import("node:fs");
    copyFileSync(out, `/work/iotrace-${pids[0]}.log`);
  }
  for (const line of readFileSync(out, "utf8").split("\n")) {
    const m = /execve\("([^"]+)", \[([^\]]*)\]/.exec(line);
    if (!m || line.includes("= -1")) continue;
    const argv = m[2]!.split(", ").map((s) => s.replace(/^"|"$/g, ""));
    const prog = path.basename(m[1]!);
    const sub =
      prog === "git" ? argv.find((a, i) => i > 0 && !a.startsWith("-") && !/^[A-Za-z_.]+=/.test(a) && argv[i - 1] !== "-C" && argv[i - 1] !== "-c") : undefined;
    const key = sub ? `git ${sub}` : prog;
    execs[key] = (execs[key] ?? 0) + 1;
  }
  rmSync(path.dirname(out), { recursive: true, force: true });
  return { r, execs };
}

/** PROF_WINDOWS=FILE: each engine batch's window on the monotonic clock (µs, as a CPU profile's timestamps), one line a batch. */
async function windowed<T>(side: string, fn: () => Promise<T>): Promise<T> {
  const t0 = process.hrtime.bigint() / 1000n;
  const r = await fn();
  if (process.env.PROF_WINDOWS) (await import("node:fs")).appendFileSync(process.env.PROF_WINDOWS, `${t0} ${process.hrtime.bigint() / 1000n} ${side}\n`);
  return r;
}

const med = (xs: (number | null | undefined)[]) => {
  const v = xs.filter((x): x is number => typeof x === "number");
  return v.length ? round(median(v), 0) : null;
};
const max = (xs: (number | null | undefined)[]) => {
  const v = xs.filter((x): x is number => typeof x === "number");
  return v.length ? Math.max(...v) : null;
};

const tag = paced ? " paced" : "";
const up = async (bundle?: string) => {
  // BEFORE_ENV=K=V,K2=V2: environment for the earlier build's engine only (an A/B of a switch read from the environment).
  const env =
    bundle && process.env.BEFORE_ENV
      ? Object.fromEntries(process.env.BEFORE_ENV.split(",").map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]))
      : {};
  const e = await startEngine(tempDir("state"), env, bundle);
  await e.client.targets.save.mutate({ target: benchTarget(model.url), activate: true });
  let command: string | undefined;
  if (bundle) {
    command = path.join(tempDir("before-bridge"), "ocw");
    writeFileSync(command, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(bundle)} "$@"\n`);
    chmodSync(command, 0o755);
  }
  const mcp = await startMcp(e.stateDir, "claude-code", command ? { command } : {});
  await batchThroughMcp(mcp, e, model, 1, `warm-up${bundle ? "-before" : ""}`);
  return { e, mcp, oc: opencodeServeUnder(e.proc.pid!)! };
};
const engines: Record<string, Awaited<ReturnType<typeof up>>> = { engine: await up() };
if (BEFORE) engines.before = await up(path.resolve(BEFORE));
const bare = await bareRig(model, "private-clone");
const results: { side: string; wall: number; tail: number; load: number; detail: string; execs: Record<string, number>; cpu?: number }[] = [];
try {
  for (let rep = 0; rep < reps; rep++) {
    // NOBARE=1: only the two engines, taking turns (a before/after of the engine alone).
    const sides = (BEFORE ? ["engine", "bare", "before"] : ["engine", "bare"]).filter((x) => !(process.env.NOBARE === "1" && x === "bare"));
    for (const side of rep % 2 ? sides.reverse() : sides) {
      const load = round(os.loadavg()[0]!, 2);
      const m0 = modelCpu();
      // This process (the MCP client or the bare SDK client, and the scripted model where it runs here) and what it
      // reaped meanwhile (the bare side's clones; the engine, its servers and the model's process are not reaped during a batch).
      const me0 = cpuWithChildren(process.pid)!;
      if (side !== "bare") {
        const { e, mcp, oc } = engines[side]!;
        const { r, execs } = await traced([e.proc.pid!, oc, ...(commandHelperUnder(e.proc.pid!) ? [commandHelperUnder(e.proc.pid!)!] : [])], () =>
          windowed(side, () => batchThroughMcp(mcp, e, model, n, `t${rep}${side}${tag}`)),
        );
        const s = r.starts;
        const lastFirst = Math.max(...s.map((x) => x.firstRequestAt ?? 0)) - r.startedAt;
        const detail = (["admitMs", "workspaceMs", "sessionMs", "firstRequestMs", "askMs", "answeredMs", "lastRequestMs", "settledMs", "verdictMs"] as const)
          .map((k) => `${k.replace(/Ms$/, "")} ${med(s.map((x) => x[k]))}/${max(s.map((x) => x[k]))}`)
          .join(", ");
        // Per worker from its log: the baseline recorded, grading began, the verdict; and the batch's last verdict → wait's end.
        const evs = await Promise.all(
          r.starts.map((x) => e.client.workers.events.query({ workerId: x.workerId }) as Promise<{ type: string; ts: number; state?: string }[]>),
        );
        const rel = (es: { type: string; ts: number; state?: string }[], f: (x: { type: string; state?: string }) => boolean) => {
          const c = es.find((x) => x.type === "worker.created")?.ts;
          const hit = es.find(f);
          return c && hit ? hit.ts - c : null;
        };
        const baseline = evs.map((es) => rel(es, (x) => x.type === "worker.baseline"));
        const grading = evs.map((es) => rel(es, (x) => x.type === "worker.state" && x.state === "grading"));
        const prompted = evs.map((es) => rel(es, (x) => x.type === "worker.state" && x.state === "running"));
        const sessionRec = evs.map((es) => rel(es, (x) => x.type === "worker.session"));
        const lastVerdict = Math.max(...evs.map((es) => es.find((x) => x.type === "verdict")?.ts ?? 0));
        const extra = `; baseline ${med(baseline)}/${max(baseline)}, session recorded ${med(sessionRec)}/${max(sessionRec)}, prompted ${med(prompted)}/${max(prompted)}, grading ${med(grading)}/${max(grading)}; last verdict → batch end ${r.startedAt + r.wallMs - lastVerdict} ms`;
        results.push({
          side,
          cpu: round(r.cpuSec + r.childrenCpuSec + r.bridgeCpuSec, 2),
          wall: r.wallMs,
          tail: r.wallMs - lastFirst,
          load,
          detail: `${detail}; engine CPU ${r.cpuSec}+${r.childrenCpuSec} s, bridge ${r.bridgeCpuSec} s (${r.bridgeRequests} requests), opencode ${r.opencodeCpuSec}+${r.opencodeChildrenCpuSec} s; calls ${JSON.stringify(Object.fromEntries(Object.entries(r.callMs).map(([k, v]) => [k, v.length + "×" + med(v)])))}; waits returned at ${r.callMs.waitReturnedAt?.join(",")}; built ${r.built}${extra}`,
          execs,
        });
      } else {
        const { r, execs } = await traced([bare.pid, process.pid], () => bare.run(n, `b${rep}${tag}`));
        const b = r as BareBatch;
        results.push({
          side,
          wall: b.wallMs,
          tail: b.wallMs - Math.max(...b.startMs),
          load,
          detail: `workspace ${med(b.phaseMs.workspace)}/${max(b.phaseMs.workspace)}, session ${med(b.phaseMs.session)}/${max(b.phaseMs.session)}, firstRequest ${med(b.startMs)}/${max(b.startMs)}, ask ${med(b.phaseMs.ask)}/${max(b.phaseMs.ask)}, answered ${med(b.phaseMs.answered)}/${max(b.phaseMs.answered)}, lastRequest ${med(b.phaseMs.lastRequest)}/${max(b.phaseMs.lastRequest)}, idle ${med(b.phaseMs.idle)}/${max(b.phaseMs.idle)}; opencode ${b.opencodeCpuSec}+${b.opencodeChildrenCpuSec} s; built ${b.built}`,
          execs,
        });
      }
      const x = results.at(-1)!;
      const m1 = modelCpu();
      const me1 = cpuWithChildren(process.pid)!;
      x.detail += `; this process ${round(me1.self - me0.self, 2)} s, its reaped children ${round(me1.children - me0.children, 2)} s`;
      console.log(
        `${side} n=${n}${tag} rep ${rep}: wall ${x.wall} ms, tail ${x.tail} ms, load ${x.load}${m0 !== null && m1 !== null ? `, model CPU ${round(m1 - m0, 2)} s` : ""}\n  ${x.detail}${STRACE ? `\n  execs ${JSON.stringify(x.execs)}` : ""}`,
      );
    }
  }
  const w = (side: string) => results.filter((r) => r.side === side).map((r) => r.wall);
  for (const side of Object.keys(engines)) {
    const vs = process.env.NOBARE === "1" ? "before" : "bare";
    if (side === vs) continue;
    const ratios = w(side).map((x, i) => round(x / w(vs)[i]!, 2));
    console.log(
      `${side} ÷ ${vs} (CPU: ${results
        .filter((r) => r.side === side)
        .map((r) => r.cpu)
        .join(", ")} vs ${results
        .filter((r) => r.side === vs)
        .map((r) => r.cpu)
        .join(", ")})`,
    );
    console.log(`${side} ÷ ${vs}: ${ratios.join(", ")}; median ${round(median(ratios), 2)} [${Math.min(...ratios)}–${Math.max(...ratios)}]`);
  }
  console.log(
    `load now ${os
      .loadavg()
      .map((x) => round(x, 2))
      .join(", ")}`,
  );
} finally {
  await bare.close();
  for (const { e, mcp } of Object.values(engines)) {
    await mcp.close();
    await e.kill();
    cleanup(e.stateDir);
  }
  await model.close();
}
process.exit(0);
