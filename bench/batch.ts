// A batch of scripted tasks through the engine, driven over MCP the way Claude Code drives it (delegate_batch → wait →
// approve), against the same work driven by the bare opencode SDK on an `opencode serve` started the same way.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { runChecks } from "../engine/grading/checks";
import { WORKER_AGENT } from "../engine/harness/config";
import { OpencodeServer } from "../engine/harness/opencode-server";
import { cleanup, makeRepo, scriptedTarget, tempDir, type TestEngine } from "../test/helpers";
import type { McpHandle } from "../test/integration/mcp-helpers";
import { requestLog, type BenchModel } from "./model";
import { commandHelperUnder, opencodeServeUnder, rssMbOf, samplePeak } from "./procs";
import { workerStarts, type WorkerStart } from "./sandbox";
import { cpuWithChildren, procStat, round, rssPeak, untilQuiet } from "./stats";

const execFileP = promisify(execFile);

/** A worker of an engine-side batch that did not end built. */
export type BatchMiss = { workerId: string; state: string; reason: string | null };

export interface EngineBatch {
  wallMs: number;
  /** When the batch began (epoch ms, before delegate_batch). */
  startedAt: number;
  /** Per MCP tool: how long each call took (ms), and `waitReturnedAt`: when each wait returned (ms since delegate_batch). */
  callMs: Record<string, number[]>;
  built: number;
  /** CPU seconds and peak RSS of the engine process during the batch (CPU: with its command helper's own). */
  cpuSec: number;
  /** CPU seconds of the processes the engine (or its command helper) ran and reaped during the batch: its git (workspaces, grading, publishing). */
  childrenCpuSec: number;
  rssMb: number;
  /** CPU seconds of the `ocw mcp` bridge process during the batch. */
  bridgeCpuSec: number;
  toolCalls: number;
  /** Characters of tool-result text the client received (delegate_batch, every wait and approve): the context it costs. */
  resultChars: number;
  /** The workers that did not end built, with their state and reason (none in a clean run). */
  misses: BatchMiss[];
  /** The engine's `opencode serve` (the process itself, inside its sandbox when there is one): RSS before and peak. */
  opencodeRssMbBefore: number | null;
  opencodeRssMbPeak: number | null;
  /** Per worker: queued → first model request, from the worker's events and the scripted model's request log. */
  starts: WorkerStart[];
  /** CPU seconds of the engine's `opencode serve` during the batch, and of the processes it ran (git, shells). */
  opencodeCpuSec: number | null;
  opencodeChildrenCpuSec: number | null;
  /** How the batch's workers were contained ("bwrap" / "none"), from their records. */
  sandbox: string[];
  /** HTTP requests the bridge made to the engine's API during the batch (the engine's count for its MCP client name). */
  bridgeRequests: number | null;
}

/** The scripted target both sides run on: the same id, model, endpoint and slots, so opencode's config is the same. */
export const benchTarget = (url: string, slots = 32) => scriptedTarget(url, slots);

const tasks = (dir: string, n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ task: `BENCH-BATCH ${i} ${tag}`, directory: dir, checks: [{ file: `f${i}.txt` }] }));

/** n tasks through `ocw mcp`: delegate_batch, then wait / approve every pending ask until the batch settles. */
export async function batchThroughMcp(mcp: McpHandle, engine: TestEngine, model: BenchModel, n: number, tag = ""): Promise<EngineBatch> {
  const enginePid = engine.proc.pid!;
  const dir = makeRepo();
  const bridgePid = (mcp.client.transport as StdioClientTransport).pid!;
  const before = procStat(enginePid);
  const kidsBefore = cpuWithChildren(enginePid);
  // The engine's command helper starts its git: its CPU and its children's are the engine's.
  const helper = commandHelperUnder(enginePid);
  const helperBefore = cpuWithChildren(helper);
  const bridgeBefore = procStat(bridgePid);
  const peak = rssPeak(enginePid);
  const oc = opencodeServeUnder(enginePid);
  const ocBefore = rssMbOf(oc);
  const ocPeak = samplePeak(oc);
  const ocCpu = cpuWithChildren(oc);
  // The bridge names itself "mcp:<client name>"; the engine counts that caller's API requests (its `clients` list).
  const bridgeRequests = async () => {
    const all = await engine.client.clients.query().catch(() => null);
    return all ? all.filter((c) => c.kind === "mcp").reduce((n, c) => n + c.requests, 0) : null;
  };
  const requestsBefore = await bridgeRequests();
  let calls = 0;
  let resultChars = 0;
  const callMs: Record<string, number[]> = {};
  const call = async <T = any>(tool: string, args: Record<string, unknown>) => {
    calls++;
    const t = Date.now();
    try {
      const out = await mcp.call<T>(tool, args);
      // The bridge's text content is this JSON (what a client that reads structuredContent sees too).
      resultChars += JSON.stringify(out).length;
      return out;
    } finally {
      (callMs[tool] ??= []).push(Date.now() - t);
    }
  };
  const t0 = Date.now();
  const b = await call<{ batchId: string; workerIds: string[] }>("delegate_batch", { tasks: tasks(dir, n, tag) });
  const deadline = t0 + 15 * 60_000;
  // wait returns what changed since the last wait: new asks, workers finished since, and the batch's rates once settled.
  let r: { settled: boolean; pending: { askId: string }[]; batch?: { built: number } };
  for (;;) {
    r = await call("wait", { batchId: b.batchId, timeoutSec: 100, elicit: false });
    (callMs.waitReturnedAt ??= []).push(Date.now() - t0);
    if (r.settled) break;
    if (Date.now() > deadline) throw new Error(`MCP batch of ${n} did not settle in 15 minutes`);
    // All pending asks at once: the bench measures the engine and the bridge, not a model's serial turn-taking.
    await Promise.all(r.pending.map((p) => call("approve", { askId: p.askId, decision: "once" })));
  }
  const wallMs = Date.now() - t0;
  const requestsAfter = await bridgeRequests();
  await untilQuiet([enginePid, oc, helper]);
  const rssMb = peak.stop();
  const ocPeakMb = oc === null ? null : round(ocPeak.stop());
  const ocCpuAfter = cpuWithChildren(oc);
  const after = procStat(enginePid);
  const kidsAfter = cpuWithChildren(enginePid);
  const helperAfter = cpuWithChildren(helper);
  const helperSelf = helperBefore && helperAfter ? helperAfter.self - helperBefore.self : 0;
  const helperKids = helperBefore && helperAfter ? helperAfter.children - helperBefore.children : 0;
  const ids = b.workerIds;
  const starts = await workerStarts(engine.client, model, ids);
  const final = await Promise.all(ids.map((id) => engine.client.workers.get.query({ workerId: id })));
  const sandbox = [...new Set(final.map((w) => w.sandbox ?? "unrecorded"))];
  cleanup(dir);
  return {
    callMs,
    wallMs,
    startedAt: t0,
    built: r.batch?.built ?? final.filter((w) => w.state === "built").length,
    cpuSec: round(after.cpuSec - before.cpuSec + helperSelf, 2),
    childrenCpuSec: round((kidsAfter?.children ?? 0) - (kidsBefore?.children ?? 0) + helperKids, 2),
    rssMb: round(rssMb),
    bridgeCpuSec: round(procStat(bridgePid).cpuSec - bridgeBefore.cpuSec, 2),
    toolCalls: calls,
    resultChars,
    misses: final.filter((w) => w.state !== "built").map((w) => ({ workerId: w.id, state: w.state, reason: w.stateReason })),
    opencodeRssMbBefore: ocBefore,
    opencodeRssMbPeak: ocPeakMb,
    starts,
    sandbox,
    bridgeRequests: requestsBefore !== null && requestsAfter !== null ? requestsAfter - requestsBefore : null,
    opencodeCpuSec: ocCpu && ocCpuAfter ? round(ocCpuAfter.self - ocCpu.self, 2) : null,
    opencodeChildrenCpuSec: ocCpu && ocCpuAfter ? round(ocCpuAfter.children - ocCpu.children, 2) : null,
  };
}

export interface BareBatch {
  wallMs: number;
  /** Per task: its start (worktree add begins) → the first chat request of its session at the model. */
  startMs: number[];
  /**
   * Per task, ms since its start: its workspace made, its session created (where the start goes); its first ask
   * opened and answered (opencode's `permission.replied`), its last chat request at the model, its session's last idle
   * (the same points the engine side reads from its workers' events, bench/sandbox.ts).
   */
  phaseMs: { workspace: number[]; session: number[]; ask: number[]; answered: number[]; lastRequest: number[]; idle: number[] };
  built: number;
  opencodeRssMbBefore: number | null;
  opencodeRssMbPeak: number | null;
  /** CPU seconds of the bare `opencode serve` during the batch, and of the processes it ran (git). */
  opencodeCpuSec: number | null;
  opencodeChildrenCpuSec: number | null;
}

/**
 * The bare-SDK side: one `opencode serve` started by the engine's own OpencodeServer class, unconfined (no sandbox, no
 * engine), with the same target (so the same opencode config) and the same OFFLINE_ENV (Malloc=1 included) as the
 * engine's; kept for every batch of a repetition, as the engine keeps its serve, and warmed the same way.
 */
export interface BareRig {
  pid: number;
  run(n: number, tag: string): Promise<BareBatch>;
  close(): Promise<void>;
}

/**
 * How the bare side makes a task's workspace. "worktree": `git worktree add`, what one writes with the SDK. opencode
 * takes every worktree of a repository for one project and refreshes all of them at each session's instance boot
 * (O(N²) git processes; the engine avoids that with private repositories of their own project id). "private-clone":
 * the engine's way without the engine — `git clone --shared` and a random opencode project id — so engine ÷ bare then
 * measures the engine alone.
 */
export type BareWorkspaces = "worktree" | "private-clone";

/** The bare SDK on a started serve: every ask approved as it is asked; `idle(sessionId)` resolves at the session's next idle. */
export function bareSdk(server: OpencodeServer) {
  const client = createOpencodeClient({ baseUrl: server.url!, headers: { Authorization: server.authHeader } });
  const pending = new Map<string, () => void>();
  /** Per session: when its first ask was opened and answered, and its last idle (epoch ms). */
  const seen = new Map<string, { ask?: number; answered?: number; idle?: number }>();
  const at = (sessionId: string) => seen.get(sessionId) ?? (seen.set(sessionId, {}), seen.get(sessionId)!);
  server.on("event", (e: { type: string; directory?: string; properties: Record<string, any> }) => {
    // Asks live in the instance of their directory: the reply must name it.
    if (e.type === "permission.asked") {
      at(e.properties.sessionID).ask ??= Date.now();
      void client.permission.reply({ requestID: e.properties.id, directory: e.directory, reply: "once" });
    }
    if (e.type === "permission.replied") at(e.properties.sessionID).answered ??= Date.now();
    if (e.type === "session.idle") {
      at(e.properties.sessionID).idle = Date.now();
      pending.get(e.properties.sessionID)?.();
    }
  });
  const idle = (sessionId: string) => new Promise<void>((r) => pending.set(sessionId, r)).finally(() => pending.delete(sessionId));
  return { client, idle, seen };
}

export async function bareRig(model: BenchModel, workspaces: BareWorkspaces = "worktree"): Promise<BareRig> {
  const home = tempDir("bench-bare");
  const server = new OpencodeServer({ target: benchTarget(model.url), home });
  await server.start();
  const { client, idle: idleOf, seen } = bareSdk(server);
  // One git worktree at a time (git's own locks), each task's session started as soon as its worktree is there.
  let gitChain: Promise<unknown> = Promise.resolve();
  /** Per task of the batch: its session and when it started, for the model's request log read after the batch. */
  const sessions: { id: string; t0: number }[] = [];
  /** The workspaces of the batch (and of the warm-up), whose opencode instances are let go after it. */
  const dirs: string[] = [];
  /**
   * Lets go of every instance the batch booted, once it is over (outside its timed window), as the engine does when none
   * of a server's workers is at work (engine/workers/release.ts). Kept, they slowed every later batch of this serve:
   * one serve kept through a bench of 12 batches of 32 (384 instances) went from 4.4–4.8 s to 7.0 s a batch, while the
   * engine's side stayed at 4.6–5.6 s, and engine ÷ bare drifted from 1.15 to 0.79.
   */
  const release = async () => {
    const batch = dirs.splice(0);
    await Promise.all(batch.map((directory) => client.instance.dispose({ directory })));
  };
  const phaseMs = {
    workspace: [] as number[],
    session: [] as number[],
    ask: [] as number[],
    answered: [] as number[],
    lastRequest: [] as number[],
    idle: [] as number[],
  };
  const one = async (dir: string, i: number, branch: string, text: string) => {
    const t0 = Date.now();
    const wt = path.join(home, "wt", branch);
    if (workspaces === "private-clone") {
      await execFileP("git", ["clone", "-q", "--shared", "--template=", dir, wt]);
      writeFileSync(path.join(wt, ".git", "opencode"), randomBytes(20).toString("hex") + "\n");
    } else {
      const made = gitChain.then(() => execFileP("git", ["-C", dir, "worktree", "add", "-q", "-b", `bare/${branch}`, wt, "HEAD"]));
      gitChain = made.catch(() => undefined);
      await made;
    }
    dirs.push(wt);
    phaseMs.workspace.push(Date.now() - t0);
    const s = (await client.session.create({ directory: wt, title: `bare ${branch}` })).data!;
    phaseMs.session.push(Date.now() - t0);
    const idle = idleOf(s.id);
    await client.session.promptAsync({ sessionID: s.id, directory: wt, agent: WORKER_AGENT, parts: [{ type: "text", text }] });
    await idle;
    sessions.push({ id: s.id, t0 });
    const e = seen.get(s.id);
    seen.delete(s.id);
    for (const k of ["ask", "answered", "idle"] as const) if (e?.[k] !== undefined) phaseMs[k].push(e[k]! - t0);
    const [c] = await runChecks([{ file: `f${i}.txt` }], wt);
    return c!.passed;
  };
  // One untimed task first, as the engine side is warm too: opencode's first session pays a one-off bootstrap.
  const warm = makeRepo();
  await one(warm, 0, "warm", "BENCH-BATCH 0 warm-up");
  await release();
  const pid = opencodeServeUnder(server.pid!)!;
  return {
    pid,
    async run(n, tag) {
      const dir = makeRepo();
      sessions.length = 0;
      for (const k of Object.keys(phaseMs) as (keyof typeof phaseMs)[]) phaseMs[k].length = 0;
      const before = rssMbOf(pid);
      const peak = samplePeak(pid);
      const cpu0 = cpuWithChildren(pid);
      const t0 = Date.now();
      const built = await Promise.all(Array.from({ length: n }, (_, i) => one(dir, i, `${tag}-w${i}`, `BENCH-BATCH ${i} ${tag}`)));
      const wallMs = Date.now() - t0;
      const p = round(peak.stop());
      // The engine lets go of its instances once its batch is over: the same here, so the next batch starts from a serve
      // in the same state on both sides. As the engine's serve is measured (batchThroughMcp): until it is quiet, so what
      // a batch leaves running (those disposals included) counts too.
      await release();
      await untilQuiet([pid]);
      const cpu1 = cpuWithChildren(pid);
      // The model's request log after the batch (fetched from its process where it has one): each session's first and last chat request.
      const requests = await requestLog(model);
      const startMs: number[] = [];
      for (const { id, t0: start } of sessions) {
        const chats = requests.filter((r) => r.kind === "chat" && r.sessionId === id);
        if (chats[0]) startMs.push(chats[0].at - start);
        if (chats.length) phaseMs.lastRequest.push(chats.at(-1)!.at - start);
      }
      cleanup(dir);
      return {
        wallMs,
        startMs,
        phaseMs: Object.fromEntries(Object.entries(phaseMs).map(([k, v]) => [k, [...v]])) as BareBatch["phaseMs"],
        built: built.filter(Boolean).length,
        opencodeRssMbBefore: before,
        opencodeRssMbPeak: p,
        opencodeCpuSec: cpu0 && cpu1 ? round(cpu1.self - cpu0.self, 2) : null,
        opencodeChildrenCpuSec: cpu0 && cpu1 ? round(cpu1.children - cpu0.children, 2) : null,
      };
    },
    async close() {
      await server.stop();
      cleanup(warm, home);
    },
  };
}
