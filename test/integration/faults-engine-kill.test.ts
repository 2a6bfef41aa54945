// kill -9 of the engine in the middle of a batch with pending approvals, while an MCP client (the real `ocw mcp`
// bridge over stdio) and an API event subscriber are attached. The engine was started by the bridge, so it runs under
// its supervisor: it must be back and serving within 2 s on the same address, the subscriber must receive every logged
// event without being re-created, and no verdict or approval record may be lost.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../engine/api/client";
import { readLock } from "../../engine/api/lock";
import { WorkerLogStore } from "../../engine/store/worker-log";
import type { EngineEvent } from "../../shared/events";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, stopDetachedEngine, tempDir } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

const stateDir = tempDir("kill-engine");
const repo = makeRepo();
let model: ScriptedModel;
let mcp: McpHandle;

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "write",
        match: /KILL-WRITE (\d+)/,
        script: (c) => (c.turnStep === 0 ? writeFile(`k${/KILL-WRITE (\d+)/.exec(c.firstUserText)![1]}.txt`, "k\n") : { text: "OUTCOME: built" }),
      },
    ],
  });
  mcp = await startMcp(stateDir, "mcp-kill");
});

afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await stopDetachedEngine(stateDir);
  await model?.close();
  cleanup(stateDir, repo);
});

/**
 * Calls the bridge's `wait` until `pred` holds, approving nothing. A wait reports only what changed since the last
 * one, so `pending` here is every ask the waits of this batch have shown so far (none of them answered).
 */
const shownAsks = new Map<string, any[]>();
async function waitFor(batchId: string, pred: (r: any) => boolean): Promise<any> {
  const deadline = Date.now() + 120_000;
  const shown = shownAsks.get(batchId) ?? [];
  shownAsks.set(batchId, shown);
  while (Date.now() < deadline) {
    const r = await mcp.call("wait", { batchId, timeoutSec: 10, elicit: false });
    shown.push(...r.pending);
    r.pending = [...shown];
    if (pred(r)) return r;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error("the batch never reached the expected picture");
}

/** A live process, not a zombie waiting for init to reap it (Linux /proc). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Every event an API client receives, from now on. */
async function subscribe(api: ReturnType<typeof connect>) {
  const received: { cursor: string; event: EngineEvent }[] = [];
  const sub = api.events.subscribe(
    { lastEventId: (await api.health.query()).cursor },
    { onData: (t) => received.push({ cursor: t.id, event: t.data as EngineEvent }) },
  );
  return { received, unsubscribe: () => sub.unsubscribe() };
}

/** The subscriber got every logged event of these workers, once each and in cursor order, with no reset. */
async function expectNothingMissed(workerIds: string[], received: { cursor: string; event: EngineEvent }[]) {
  const logs = new WorkerLogStore(path.join(stateDir, "workers"));
  const onDisk = workerIds.flatMap((id) => logs.load(id).events.map((e) => `${e.workerId}#${e.seq}`));
  const got = () =>
    new Set(received.filter((d) => "seq" in d.event).map((d) => `${(d.event as { workerId: string }).workerId}#${(d.event as { seq: number }).seq}`));
  const deadline = Date.now() + 15_000;
  while (onDisk.some((k) => !got().has(k)) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 100));
  expect(onDisk.filter((k) => !got().has(k))).toEqual([]);
  expect(received.some((d) => d.event.type === "reset")).toBe(false);
  const cursors = received.map((d) => Number(d.cursor.split(":")[1]));
  expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
  expect(new Set(cursors).size).toBe(cursors.length);
}

/** Resumes the workers through the bridge and approves every ask until the batch settles. */
async function resumeAndFinish(batchId: string, workerIds: string[]): Promise<any> {
  for (const id of workerIds) await mcp.call("resume", { workerId: id });
  let r: any;
  for (let i = 0; i < 30; i++) {
    r = await mcp.call("wait", { batchId, timeoutSec: 10, elicit: false });
    for (const p of r.pending) await mcp.call("approve", { askId: p.askId, decision: "once" });
    if (r.settled) break;
  }
  return r;
}

describe("kill -9 mid-batch, with an MCP client and an event subscriber attached", () => {
  it("of the engine: back within 2 s on the same address; the subscriber misses no event; no verdict or approval is lost; the interrupted workers resume", async () => {
    expect((await mcp.call("setup_status")).problem).toMatch(/no active target/); // the bridge started the engine
    const first = readLock(stateDir)!;
    expect(first.supervisorPid).toBeTruthy();
    const api = connect(first, "gui:subscriber");
    await api.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });

    const { received, unsubscribe } = await subscribe(api);

    const batch = await mcp.call("delegate_batch", {
      tasks: [0, 1, 2, 3].map((i) => ({ task: `KILL-WRITE ${i}`, directory: repo, checks: [{ file: `k${i}.txt`, equals: "k" }], scope: [`k${i}.txt`] })),
    });
    // Two workers are approved and settle; two are left waiting on their approval when the engine dies.
    let r = await waitFor(batch.batchId, (x) => x.pending.length === 4);
    for (const p of r.pending.slice(0, 2)) await mcp.call("approve", { askId: p.askId, decision: "once" });
    const pendingIds: string[] = r.pending.slice(2).map((p: any) => p.workerId);
    r = await waitFor(batch.batchId, (x) => x.counts.built === 2);
    const before = await api.workers.list.query();
    expect(before.filter((w) => w.verdict?.verdict === "built")).toHaveLength(2);

    const oldServe = (await api.status.query()).opencode[0]!.pid!;
    const killedAt = Date.now();
    process.kill(first.pid, "SIGKILL");
    let back: ReturnType<typeof readLock> = null;
    while (Date.now() - killedAt < 10_000) {
      back = readLock(stateDir);
      if (
        back &&
        back.pid !== first.pid &&
        (await fetch(`http://127.0.0.1:${back.port}/trpc/health`, { headers: { authorization: `Bearer ${back.token}` } }).then(
          (x) => x.ok,
          () => false,
        ))
      )
        break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const backMs = Date.now() - killedAt;
    console.log(`engine back and serving ${backMs} ms after kill -9 (pid ${first.pid} → ${back?.pid})`);
    expect(back && back.pid !== first.pid).toBe(true);
    expect(backMs).toBeLessThan(2000);
    expect({ port: back!.port, token: back!.token, supervisorPid: back!.supervisorPid }).toEqual({
      port: first.port,
      token: first.token,
      supervisorPid: first.supervisorPid,
    });
    // The dead engine's opencode serve serves nobody: the new engine ended it at start, before any worker needed one.
    await expect.poll(() => running(oldServe), { timeout: 3000 }).toBe(false);

    // Every worker, verdict and approval record is there; the waiting ones are interrupted with their asks cancelled.
    const after = await api.workers.list.query();
    expect(after.map((w) => w.id)).toEqual(before.map((w) => w.id));
    for (const b of before) {
      const a = after.find((w) => w.id === b.id)!;
      if (pendingIds.includes(b.id)) {
        expect(a.state).toBe("interrupted");
        expect(a.asks.map((x) => [x.id, x.status])).toEqual(b.asks.map((x) => [x.id, "cancelled"]));
      } else expect({ state: a.state, verdict: a.verdict, asks: a.asks }).toEqual({ state: b.state, verdict: b.verdict, asks: b.asks });
    }

    // The MCP client resumes and approves through the same bridge process; the batch finishes.
    r = await resumeAndFinish(batch.batchId, pendingIds);
    expect(r.batch).toMatchObject({ settled: true, built: 4, builtRate: 1 });
    // The subscriber, never re-created, got every logged event of the batch in order, across the restart.
    await expectNothingMissed(batch.workerIds, received);
    unsubscribe();
    // One engine on the state dir, under one supervisor.
    expect(readdirSync(path.join(stateDir)).filter((f) => f === "engine.starting")).toEqual([]);
  });

  it("of opencode serve: the waiting workers are interrupted with their asks cancelled and recorded, settled ones keep their verdicts, all resume to built", async () => {
    const api = connect(readLock(stateDir)!, "gui:subscriber");
    const { received, unsubscribe } = await subscribe(api);
    const batch = await mcp.call("delegate_batch", {
      tasks: [4, 5, 6].map((i) => ({ task: `KILL-WRITE ${i}`, directory: repo, checks: [{ file: `k${i}.txt`, equals: "k" }], scope: [`k${i}.txt`] })),
    });
    let r = await waitFor(batch.batchId, (x) => x.pending.length === 3);
    await mcp.call("approve", { askId: r.pending[0].askId, decision: "once" });
    const pendingIds: string[] = r.pending.slice(1).map((p: any) => p.workerId);
    await waitFor(batch.batchId, (x) => (x.counts.built ?? 0) >= 1);
    const before = await api.workers.list.query();
    const serve = (await api.status.query()).opencode[0]!;
    process.kill(serve.pid!, "SIGKILL");
    const interrupted = await waitFor(batch.batchId, (x) => x.counts.interrupted === pendingIds.length);
    expect(interrupted.counts.built).toBe(1);
    const after = await api.workers.list.query();
    for (const b of before.filter((w) => batch.workerIds.includes(w.id))) {
      const a = after.find((w) => w.id === b.id)!;
      if (pendingIds.includes(b.id)) expect(a.asks.map((x) => [x.id, x.status, x.by?.kind])).toEqual(b.asks.map((x) => [x.id, "cancelled", "engine"]));
      else expect({ verdict: a.verdict, asks: a.asks }).toEqual({ verdict: b.verdict, asks: b.asks });
    }
    r = await resumeAndFinish(batch.batchId, pendingIds);
    expect(r.batch).toMatchObject({ settled: true, built: 3, builtRate: 1 });
    expect((await api.status.query()).opencode[0]!.pid).not.toBe(serve.pid);
    await expectNothingMissed(batch.workerIds, received);
    unsubscribe();
  });
});
