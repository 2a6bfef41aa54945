// The engine's own wait (workers.wait / workers.waitStream) and approvals.decide {withWorker}, against the real engine,
// the real opencode and the scripted model; and the MCP bridge's wait and approve on top of them, one engine request each.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFile, startScriptedModel, type ScriptedModel, writeFile, writesAsTold } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, scriptedTarget, startEngine, type TestEngine } from "../helpers";
import { startMcp, waitUntil, type McpHandle } from "./mcp-helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];
const handles: McpHandle[] = [];
const repo = () => {
  const r = makeRepo();
  repos.push(r);
  return r;
};
/** The gated worker's first model request arrived (resolve) and may go on (open). */
let reached: () => void = () => {};
let gate: Promise<void> = Promise.resolve();
let open: () => void = () => {};
const arm = () => {
  const hit = new Promise<void>((r) => (reached = r));
  gate = new Promise<void>((r) => (open = r));
  return hit;
};

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      writesAsTold("WAIT-WRITE"),
      {
        name: "gated",
        match: /WAIT-GATED file=(\S+)/,
        // Held at its first step until the test opens the gate; then a read (asks nothing), the write (asks), done.
        script: async (ctx) => {
          if (ctx.turnStep === 0) {
            reached();
            await gate;
            return readFile("README.md");
          }
          if (ctx.turnStep === 1) return writeFile(/WAIT-GATED file=(\S+)/.exec(ctx.firstUserText)![1]!, "gated\n");
          return { text: "OUTCOME: built" };
        },
      },
      { name: "hang", match: /WAIT-HANG/, script: () => ({ hang: true, textBeforeHang: "thinking" }) },
    ],
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
}, 60_000);

afterAll(async () => {
  for (const h of handles) await h.close().catch(() => undefined);
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

describe("workers.wait: the engine waits for the caller's news", () => {
  it("an ask arriving during the wait ends it with the ask and the state it caused; shown, it is news no more; the worker finishing settles it", async () => {
    const hit = arm();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "WAIT-GATED file=g.txt",
      directory: repo(),
      checks: [{ file: "g.txt" }],
      scope: ["g.txt"],
    });
    await hit;
    // The worker is on the model and has asked nothing yet: the ask comes while the wait runs.
    const sentAt = Date.now();
    const waiting = engine.client.workers.wait.query({ workerIds: [workerId], timeoutMs: 60_000 });
    setTimeout(open, 300);
    const r = await waiting;
    expect(r.reason).toBe("news");
    expect(r.workerIds).toEqual([workerId]);
    expect(r.batch).toBeNull();
    const w = r.workers[0]!;
    expect(w).toMatchObject({ id: workerId, state: "waiting-approval", title: "WAIT-GATED file=g.txt", verdict: null, stalled: false });
    expect(w.asks).toHaveLength(1);
    expect(w.asks[0]).toMatchObject({ tool: "edit", status: "pending", workerId });
    expect(w.asks[0]!.createdAt).toBeGreaterThanOrEqual(sentAt);
    // The slim picture: none of the worker's transcript, task text beyond its title, checks or steers.
    expect(Object.keys(w).sort()).toEqual(["asks", "batchId", "endedAt", "id", "stalled", "startedAt", "state", "title", "usage", "verdict", "worktree"]);
    const askId = w.asks[0]!.id;

    // Shown already: the wait runs to its timeout and reports the ask as still pending.
    const again = await engine.client.workers.wait.query({ workerIds: [workerId], shownAsks: [askId], timeoutMs: 300 });
    expect(again.reason).toBe("timeout");
    expect(again.workers[0]!.asks.map((a) => a.id)).toEqual([askId]);

    // decide {withWorker}: the answer carries the worker's picture, no second request needed.
    const d = await engine.client.approvals.decide.mutate({ askId, decision: "once", withWorker: true });
    expect(d).toMatchObject({ id: askId, status: "decided", decision: "once", workerId });
    expect(d.worker).toMatchObject({ id: workerId, asks: [] });
    expect(d.worker!.state).not.toBe("waiting-approval");

    const done = await engine.client.workers.wait.query({ workerIds: [workerId], shownAsks: [askId], timeoutMs: 60_000 });
    expect(done.reason).toBe("settled");
    expect(done.workers[0]).toMatchObject({ state: "built", verdict: { verdict: "built", honest: true }, asks: [] });
    expect(done.workers[0]!.endedAt).not.toBeNull();
  });

  it("a batch: a worker finishing is news until shown; the batch's summary comes with each answer; an unknown batch is a coded not-found", async () => {
    const dir = repo();
    const b = await engine.client.workers.startBatch.mutate({
      tasks: [
        { task: "WAIT-WRITE file=a.txt text=a", directory: dir, checks: [{ file: "a.txt" }], scope: ["a.txt"] },
        { task: "WAIT-HANG forever", directory: dir, checks: [{ file: "never.txt" }], scope: ["never.txt"] },
      ],
    });
    const [writer, hanger] = b.workerIds as [string, string];
    let r = await engine.client.workers.wait.query({ batchId: b.batchId, timeoutMs: 60_000 });
    expect(r.reason).toBe("news");
    expect(r.workerIds).toEqual([writer, hanger]);
    expect(r.batch).toMatchObject({ id: b.batchId, done: false, settled: false, total: 2 });
    // The batch's rates and state, not its per-task and per-worker lists (the answer's workerIds and pictures carry those).
    expect(Object.keys(r.batch!)).not.toContain("tasks");
    expect(Object.keys(r.batch!)).not.toContain("states");
    // A workspace path only where an ask's paths are made relative to it.
    expect(r.workers.map((w) => (w.asks.length ? typeof w.worktree : w.worktree))).toEqual(["string", null]);
    const ask = r.workers.find((w) => w.id === writer)!.asks[0]!;
    // Without withWorker, decide answers the ask alone, as before.
    expect(Object.keys(await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" }))).not.toContain("worker");
    r = await engine.client.workers.wait.query({ batchId: b.batchId, shownAsks: [ask.id], timeoutMs: 60_000 });
    expect(r.reason).toBe("news");
    expect(r.workers.map((w) => w.state)).toEqual(["built", "running"]);
    expect(r.batch).toMatchObject({ built: 1, graded: 1, done: false });
    // Shown finished: no news while the other one runs.
    r = await engine.client.workers.wait.query({ batchId: b.batchId, shownAsks: [ask.id], shownFinished: [writer], timeoutMs: 300 });
    expect(r.reason).toBe("timeout");
    await engine.client.workers.stop.mutate({ workerId: hanger });
    r = await engine.client.workers.wait.query({ batchId: b.batchId, shownAsks: [ask.id], shownFinished: [writer], timeoutMs: 60_000, also: [writer] });
    expect(r.reason).toBe("settled");
    expect(r.batch).toMatchObject({ done: true, settled: true, built: 1, builtRate: 0.5 });
    // `also` leaves out the workers waited on.
    expect(r.also).toEqual([]);

    const err = await engine.client.workers.wait.query({ batchId: "b-nope", timeoutMs: 1000 }).catch((e: { message: string; data: unknown }) => e);
    expect(err).toMatchObject({ message: 'unknown batch "b-nope"', data: { code: "NOT_FOUND", ocwCode: "not-found" } });
    const both = await engine.client.workers.wait
      .query({ batchId: b.batchId, workerIds: [writer], timeoutMs: 1000 })
      .catch((e: { message: string; data: unknown }) => e);
    expect(both).toMatchObject({ message: "give workerIds or batchId (one of them)", data: { code: "BAD_REQUEST", ocwCode: "bad-input" } });
    const unknown = await engine.client.workers.wait.query({ workerIds: ["w-nope"], timeoutMs: 1000 }).catch((e: { message: string; data: unknown }) => e);
    expect(unknown).toMatchObject({
      message: 'unknown worker "w-nope": no worker has that id (`ocw list` or the workers tool lists them)',
      data: { ocwCode: "not-found" },
    });
  });

  it("a cancelled request ends the wait; the stream form sends the workers it follows, event lines, then the answer", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "WAIT-HANG forever", directory: repo(), checks: [{ file: "never.txt" }] });
    const ac = new AbortController();
    const cancelled = engine.client.workers.wait.query({ workerIds: [workerId], timeoutMs: 600_000 }, { signal: ac.signal });
    setTimeout(() => ac.abort(), 200);
    await expect(cancelled).rejects.toThrow();
    // The engine goes on answering (a wait holds no lock and no slot).
    expect((await engine.client.workers.wait.query({ workerIds: [workerId], timeoutMs: 0 })).reason).toBe("timeout");

    const items: unknown[] = [];
    const result = await new Promise((resolve, reject) => {
      const sub = engine.client.workers.waitStream.subscribe(
        { workerIds: [workerId], timeoutMs: 60_000 },
        {
          onData: (item) => {
            items.push(item);
            if ("result" in item) {
              sub.unsubscribe();
              resolve(item.result);
            }
          },
          onError: reject,
        },
      );
      setTimeout(() => void engine.client.workers.stop.mutate({ workerId }), 300);
    });
    expect(items[0]).toEqual({ following: [workerId] });
    // The reason is text a client wrote (a worker's or model's, elsewhere): apart from the engine's words, and marked.
    expect(items).toContainEqual({
      note: `${workerId} stopped, untrusted: "stopped by test"`,
      line: { said: `${workerId} stopped`, untrusted: "stopped by test" },
    });
    expect(result).toMatchObject({ reason: "settled", workers: [{ id: workerId, state: "stopped" }] });
  });

  it("the stream form takes an input too long for a URL (sent as a POST body): its lines and answer as for a short one", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "WAIT-HANG forever", directory: repo(), checks: [{ file: "never.txt" }] });
    // ~30 KB of input: past what a request's head may carry (Node refuses over 16 KiB with a 431).
    const workerIds = Array.from({ length: 1500 }, () => workerId);
    const items: unknown[] = [];
    const result = await new Promise((resolve, reject) => {
      const sub = engine.client.workers.waitStream.subscribe(
        { workerIds, timeoutMs: 60_000 },
        {
          onData: (item) => {
            items.push(item);
            if ("following" in item) void engine.client.workers.stop.mutate({ workerId });
            if ("result" in item) {
              sub.unsubscribe();
              resolve(item.result);
            }
          },
          onError: reject,
        },
      );
    });
    expect(items[0]).toEqual({ following: [workerId] });
    expect(items).toContainEqual(expect.objectContaining({ line: expect.objectContaining({ said: `${workerId} stopped` }) }));
    expect(result).toMatchObject({ reason: "settled", workerIds: [workerId], workers: [{ id: workerId, state: "stopped" }] });
  });

  it("a wait goes in a request of its own: a query sent beside it is not held until the wait ends", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "WAIT-HANG forever", directory: repo(), checks: [{ file: "never.txt" }] });
    // The same client, the same tick: with both in one batched request, the get would answer only when the wait does.
    const waiting = engine.client.workers.wait.query({ workerIds: [workerId], timeoutMs: 60_000 });
    const got = engine.client.workers.get.query({ workerId });
    const first = await Promise.race([waiting.then(() => "wait"), got.then(() => "get")]);
    expect(first).toBe("get");
    await engine.client.workers.stop.mutate({ workerId });
    expect((await waiting).reason).toBe("settled");
  });
});

describe("the MCP bridge's wait and approve: one engine request each, outputs as before", () => {
  /** API requests the engine has had from this MCP client (its x-ocw-client header). */
  const requests = async (name: string) => (await engine.client.clients.query()).find((c) => c.kind === "mcp" && c.name === name)?.requests ?? 0;

  it("a form for an ask is withdrawn when the ask is answered elsewhere, and the same wait goes on", async () => {
    let shown: () => void = () => {};
    const formShown = new Promise<void>((r) => (shown = r));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BUNDLE, "mcp"],
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", OCW_STATE_DIR: engine.stateDir, OCW_STALL_SEC: "600" },
      stderr: "pipe",
    });
    const client = new Client({ name: "wait1-forms", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } });
    // A person who looks at the form and never answers it.
    client.setRequestHandler(ElicitRequestSchema, () => {
      shown();
      return new Promise<ElicitResult>(() => {});
    });
    await client.connect(transport);
    // What the bridge sends: the form's request, and its withdrawal (a cancellation naming that request).
    const messages: { id?: number | string; method?: string; params?: { requestId?: number | string; reason?: string } }[] = [];
    const deliver = transport.onmessage!;
    transport.onmessage = (m) => {
      messages.push(m as never);
      deliver(m);
    };
    try {
      const d = (
        await client.callTool({
          name: "delegate",
          arguments: { task: "WAIT-WRITE file=f.txt text=f", directory: repo(), checks: [{ file: "f.txt" }], scope: ["f.txt"] },
        })
      ).structuredContent as { workerId: string };
      const waiting = client.callTool({ name: "wait", arguments: { workerId: d.workerId, timeoutSec: 100 } }, undefined, { timeout: 150_000 });
      await formShown;
      const ask = (await engine.client.workers.get.query({ workerId: d.workerId })).asks.find((a) => a.status === "pending")!;
      await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" });
      const r = (await waiting).structuredContent as { reason: string; state: string; answeredInForm?: unknown; pending: unknown[] };
      const form = messages.find((m) => m.method === "elicitation/create")!;
      const withdrawal = messages.find((m) => m.method === "notifications/cancelled" && m.params?.requestId === form.id);
      // Withdrawn because the ask was answered (an abort), not at the form's timeout.
      expect(withdrawal?.params?.reason).toMatch(/abort/i);
      expect(r).toMatchObject({ reason: "settled", state: "built", pending: [] });
      expect(r.answeredInForm).toBeUndefined();
    } finally {
      await client.close();
    }
  });

  it("wait (with and without progress) and approve each make one request; progress carries the event lines; the session's totals come once settled", async () => {
    const mcp = await startMcp(engine.stateDir, "wait1-count");
    handles.push(mcp);
    const other = await mcp.call("delegate", { task: "WAIT-WRITE file=o.txt text=o", directory: repo(), checks: [{ file: "o.txt" }], scope: ["o.txt"] });
    const hit = arm();
    const d = await mcp.call("delegate", { task: "WAIT-GATED file=h.txt", directory: repo(), checks: [{ file: "h.txt" }], scope: ["h.txt"] });
    await hit;
    const progress: string[] = [];
    let before = await requests("wait1-count");
    // The ask may come once the engine follows the worker (its first progress line says so): its lines come after.
    const w1 = await mcp.call(
      "wait",
      { workerId: d.workerId, timeoutSec: 60 },
      {
        onprogress: (p) => {
          progress.push(p.message ?? "");
          if (p.message?.startsWith("waiting on")) open();
        },
      },
    );
    expect(await requests("wait1-count")).toBe(before + 1);
    expect(w1).toMatchObject({ reason: "approval-pending", state: "waiting-approval", settled: false, unanswered: 1 });
    expect(w1.pending[0]).toMatchObject({ workerId: d.workerId, tool: "edit", untrusted: { what: "h.txt" } });
    expect(progress[0]).toBe(`waiting on ${d.workerId}`);
    // An event line while it waits (the lines of the events that end it may reach the client after its result, which
    // the SDK's client then drops: a notification is handled a microtask after a response read in the same chunk).
    expect(progress).toContain(`${d.workerId} read completed`);

    before = await requests("wait1-count");
    const a = await mcp.call("approve", { askId: w1.pending[0].askId, decision: "once" });
    expect(await requests("wait1-count")).toBe(before + 1);
    expect(a).toMatchObject({ askId: w1.pending[0].askId, workerId: d.workerId, status: "decided", decision: "once", by: "mcp:wait1-count" });
    expect(a.workerState).not.toBe("waiting-approval");
    expect(a.next).toMatch(/still working: call wait again \{"workerId":"/);

    // The other worker's ask, answered so that both settle.
    const o = await waitUntil(mcp, { workerId: other.workerId }, (r) => r.pending.length > 0 || r.settled);
    if (o.pending.length) await mcp.call("approve", { askId: o.pending[0].askId, decision: "once" });
    await waitUntil(mcp, { workerId: other.workerId }, (r) => r.settled);

    before = await requests("wait1-count");
    const w2 = await mcp.call("wait", { workerId: d.workerId, timeoutSec: 60 });
    expect(await requests("wait1-count")).toBe(before + 1);
    expect(w2).toMatchObject({ state: "built", settled: true, reason: "settled", pending: [], unanswered: 0 });
    expect(w2.finished).toEqual([{ workerId: d.workerId, state: "built", verdict: "built", honest: true, totals: w2.totals }]);
    // This session delegated another worker too: the session's totals are both workers'.
    const mineOther = await mcp.call("worker_status", { workerId: other.workerId });
    expect(w2.session.tokens).toBe(w2.totals.tokens + mineOther.totals.tokens);
    expect(w2.session.tokens).toBeGreaterThan(w2.totals.tokens);
    // Shown finished: a second wait has no news and says so.
    const w3 = await mcp.call("wait", { workerId: d.workerId, timeoutSec: 5 });
    expect(w3).toMatchObject({ settled: true, reason: "settled", finished: [] });
  });
});
