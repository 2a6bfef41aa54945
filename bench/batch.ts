// A batch of scripted tasks through the engine, driven over MCP the way Claude Code drives it (delegate_batch → wait →
// approve), against the same work driven by the bare opencode SDK.
import { execFileSync } from "node:child_process";
import path from "node:path";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createOpencodeClient } from "@opencode-ai/sdk/v2";
import { runChecks } from "../engine/grading/checks";
import { WORKER_AGENT } from "../engine/harness/config";
import { OpencodeServer } from "../engine/harness/opencode-server";
import type { ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, tempDir } from "../test/helpers";
import type { McpHandle } from "../test/integration/mcp-helpers";
import { procStat, round, rssPeak } from "./stats";

/** A worker of an engine-side batch that did not end built. */
export type BatchMiss = { workerId: string; state: string; reason: string | null };

export interface EngineBatch {
  wallMs: number;
  built: number;
  /** CPU seconds and peak RSS of the engine process during the batch. */
  cpuSec: number;
  rssMb: number;
  /** CPU seconds of the `ocw mcp` bridge process during the batch. */
  bridgeCpuSec: number;
  toolCalls: number;
  /** The workers that did not end built, with their state and reason (none in a clean run). */
  misses: BatchMiss[];
}

const tasks = (dir: string, n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ task: `BENCH-BATCH ${i} ${tag}`, directory: dir, checks: [{ file: `f${i}.txt` }] }));

/** n tasks through `ocw mcp`: delegate_batch, then wait / approve every pending ask until the batch settles. */
export async function batchThroughMcp(mcp: McpHandle, enginePid: number, n: number, tag = ""): Promise<EngineBatch> {
  const dir = makeRepo();
  const bridgePid = (mcp.client.transport as StdioClientTransport).pid!;
  const before = procStat(enginePid);
  const bridgeBefore = procStat(bridgePid);
  const peak = rssPeak(enginePid);
  let calls = 0;
  const call = <T = any>(tool: string, args: Record<string, unknown>) => (calls++, mcp.call<T>(tool, args));
  const t0 = Date.now();
  const b = await call<{ batchId: string }>("delegate_batch", { tasks: tasks(dir, n, tag) });
  const deadline = t0 + 15 * 60_000;
  let r: { settled: boolean; pending: { askId: string }[]; batch: { built: number }; workers: BatchMiss[] };
  for (;;) {
    r = await call("wait", { batchId: b.batchId, timeoutSec: 100, elicit: false });
    if (r.settled) break;
    if (Date.now() > deadline) throw new Error(`MCP batch of ${n} did not settle in 15 minutes`);
    // All pending asks at once: the bench measures the engine and the bridge, not a model's serial turn-taking.
    await Promise.all(r.pending.map((p) => call("approve", { askId: p.askId, decision: "once" })));
  }
  const wallMs = Date.now() - t0;
  const rssMb = peak.stop();
  const after = procStat(enginePid);
  cleanup(dir);
  return { wallMs, built: r.batch.built, cpuSec: round(after.cpuSec - before.cpuSec, 2), rssMb: round(rssMb), bridgeCpuSec: round(procStat(bridgePid).cpuSec - bridgeBefore.cpuSec, 2), toolCalls: calls, misses: r.workers.filter((w) => w.state !== "built").map(({ workerId, state, reason }) => ({ workerId, state, reason })) };
}

/** The same tasks on one bare `opencode serve`: a worktree and a session each, every ask approved, the same check. */
export async function batchThroughBareSdk(model: ScriptedModel, n: number): Promise<{ wallMs: number; built: number }> {
  const home = tempDir("bench-bare");
  const server = new OpencodeServer({ target: scriptedTarget(model.url, n, "bare"), home });
  await server.start();
  const client = createOpencodeClient({ baseUrl: server.url!, headers: { Authorization: server.authHeader } });
  const dir = makeRepo();
  const pending = new Map<string, () => void>();
  server.on("event", (e: { type: string; directory?: string; properties: Record<string, any> }) => {
    // Asks live in the instance of their directory: the reply must name it.
    if (e.type === "permission.asked") void client.permission.reply({ requestID: e.properties.id, directory: e.directory, reply: "once" });
    if (e.type === "session.idle") pending.get(e.properties.sessionID)?.();
  });
  const one = async (i: number, branch: string, text: string) => {
    const wt = path.join(home, "wt", branch);
    execFileSync("git", ["-C", dir, "worktree", "add", "-q", "-b", `bare/${branch}`, wt, "HEAD"]);
    const s = (await client.session.create({ directory: wt, title: `bare ${branch}` })).data!;
    const idle = new Promise<void>((r) => pending.set(s.id, r));
    await client.session.promptAsync({ sessionID: s.id, directory: wt, agent: WORKER_AGENT, parts: [{ type: "text", text }] });
    await idle;
    const [c] = await runChecks([{ file: `f${i}.txt` }], wt);
    return c!.passed;
  };
  // One untimed task first, as the engine side is warm too: opencode's first session pays a one-off bootstrap.
  await one(0, "warm", "BENCH-BATCH 0 warm-up");
  const t0 = Date.now();
  const built = await Promise.all(Array.from({ length: n }, (_, i) => one(i, `w${i}`, `BENCH-BATCH ${i}`)));
  const wallMs = Date.now() - t0;
  await server.stop();
  cleanup(dir, home);
  return { wallMs, built: built.filter(Boolean).length };
}
