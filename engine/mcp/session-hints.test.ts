// What Claude reads along a whole session (delegate_batch with `after`, wait, a question, approve, diff, result, a
// conflicting merge), answered without a real engine: an in-memory MCP client against the bridge over a stand-in
// engine client. Each case is a result that misled or left Claude without the id or the hint its next call needs.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { describe, expect, it } from "vitest";
import type { EngineClient } from "../api/client";
import type { EngineLink } from "./link";
import { createMcpServer } from "./server";

async function bridge(client: Record<string, unknown>) {
  const missing = (at: string[]): unknown =>
    new Proxy(() => undefined, {
      get: (_t, k: string) => missing([...at, k]),
      apply: () => Promise.reject(Object.assign(new Error(`no stand-in for ${at.join(".")}`), { data: { code: "NOT_FOUND", ocwCode: "not-found" } })),
    });
  const engine = new Proxy(client, { get: (t, k: string) => (k in t ? t[k] : missing([k])) }) as unknown as EngineClient;
  const link = { stateDir: "/nonexistent", call: <T>(fn: (c: EngineClient) => Promise<T>) => fn(engine), client: async () => engine } as unknown as EngineLink;
  const server = createMcpServer({ link, toolTimeoutMs: null });
  const [a, b] = InMemoryTransport.createLinkedPair();
  const mcp = new Client({ name: "t", version: "1" });
  await Promise.all([server.connect(a), mcp.connect(b)]);
  const raw = (name: string, args: Record<string, unknown>) =>
    mcp.callTool({ name, arguments: args }) as Promise<{ isError?: boolean; content: { text: string }[]; structuredContent: any }>;
  return {
    ok: async (name: string, args: Record<string, unknown>) => {
      const r = await raw(name, args);
      expect(r.isError, r.content[0]?.text).toBeFalsy();
      return r.structuredContent;
    },
    fail: async (name: string, args: Record<string, unknown>) => {
      const r = await raw(name, args);
      expect(r.isError, JSON.stringify(r.structuredContent)).toBe(true);
      return r.content[0]!.text;
    },
    close: () => mcp.close(),
  };
}

const usage = { input: 0, output: 0, reasoning: 0, cost: 0 };
const ask = (id: string, workerId: string, extra: Record<string, unknown> = {}) => ({
  id,
  workerId,
  sessionId: "s",
  kind: "permission",
  tool: "edit",
  what: "b.txt",
  patterns: [],
  always: [],
  createdAt: 0,
  status: "pending",
  ...extra,
});
const ww = (id: string, state: string, asks: unknown[] = [], batchId: string | null = null) => ({
  id,
  title: id,
  batchId,
  state,
  worktree: null,
  asks,
  usage,
  startedAt: 1,
  endedAt: state === "built" ? 2 : null,
  stalled: false,
  verdict: state === "built" ? { verdict: "built", honest: true } : null,
});
const status = { query: async () => ({ pendingApprovals: 0, slots: [], activeTarget: null }) };

describe("wait {} after delegate_batch with `after`", () => {
  it("follows the batch's tasks that started later (it reported 'settled' while one waited on an ask)", async () => {
    const waited: string[][] = [];
    const b = await bridge({
      status,
      workers: {
        startBatch: {
          mutate: async () => ({
            batchId: "b-1",
            workerIds: ["w-a"],
            tasks: [
              { id: "a", workerId: "w-a", after: [] },
              { id: "b", workerId: null, after: ["a"] },
            ],
          }),
        },
        batch: { query: async () => ({ id: "b-1", workerIds: ["w-a", "w-b"], done: false }) },
        get: { query: async ({ workerId }: { workerId: string }) => ww(workerId, "built", [], "b-1") },
        wait: {
          query: async (input: { workerIds: string[] }) => {
            waited.push(input.workerIds);
            const all = [ww("w-a", "built", [], "b-1"), ww("w-b", "waiting-approval", [ask("per_b", "w-b")], "b-1")];
            const workers = all.filter((w) => input.workerIds.includes(w.id));
            return { workerIds: input.workerIds, reason: workers.some((w) => w.asks.length) ? "news" : "settled", workers, batch: null, also: [] };
          },
        },
      },
    });
    const d = await b.ok("delegate_batch", {
      tasks: [
        { id: "a", task: "t a", directory: "/nonexistent/r", checks: [{ file: "a.txt" }], scope: ["a.txt"] },
        { id: "b", after: ["a"], task: "t b", directory: "/nonexistent/r", checks: [{ file: "b.txt" }], scope: ["b.txt"] },
      ],
    });
    // One task waits on another: said in words that read right.
    expect(d.next).toContain("(task b starts once the tasks it comes after are built)");
    const r = await b.ok("wait", { timeoutSec: 1 });
    expect(waited[0]).toContain("w-b");
    expect(r.settled).toBe(false);
    expect(r.pending.map((p: { askId: string }) => p.askId)).toEqual(["per_b"]);
    await b.close();
  });

  it("is not settled while a batch of this session goes on (a task that comes after others has not started yet)", async () => {
    const b = await bridge({
      status,
      workers: {
        startBatch: {
          mutate: async () => ({
            batchId: "b-2",
            workerIds: ["w-a"],
            tasks: [
              { id: "a", workerId: "w-a", after: [] },
              { id: "b", workerId: null, after: ["a"] },
            ],
          }),
        },
        batch: { query: async () => ({ id: "b-2", workerIds: ["w-a"], done: false }) },
        wait: { query: async () => ({ workerIds: ["w-a"], reason: "settled", workers: [ww("w-a", "built", [], "b-2")], batch: null, also: [] }) },
      },
    });
    await b.ok("delegate_batch", {
      tasks: [
        { id: "a", task: "t a", directory: "/nonexistent/r", checks: [{ file: "a.txt" }], scope: ["a.txt"] },
        { id: "b", after: ["a"], task: "t b", directory: "/nonexistent/r", checks: [{ file: "b.txt" }], scope: ["b.txt"] },
      ],
    });
    const r = await b.ok("wait", { timeoutSec: 1 });
    expect(r).toMatchObject({ settled: false, reason: "worker-settled" });
    expect(r.next).toContain('wait {"batchId":"b-2"}');
    await b.close();
  });
});

describe("wait with an ask shown before and still unanswered", () => {
  it("names its askId once, without saying the same thing twice", async () => {
    const b = await bridge({
      workers: {
        wait: {
          query: async () => ({ workerIds: ["w-1"], reason: "news", workers: [ww("w-1", "waiting-approval", [ask("per_1", "w-1")])], batch: null, also: [] }),
        },
      },
    });
    const first = await b.ok("wait", { workerId: "w-1", timeoutSec: 1 });
    expect(first.pending).toHaveLength(1);
    const again = await b.ok("wait", { workerId: "w-1", timeoutSec: 1 });
    expect(again.pending).toEqual([]);
    expect(again.next).toMatch(/1 ask shown before is still unanswered/);
    expect(again.next).toContain("per_1");
    expect(again.next).not.toMatch(/answer 1 pending approval/);
    await b.close();
  });
});

describe("a question ask in wait", () => {
  it("carries its options and says that it takes answers (approve {askId, decision} alone is refused for it)", async () => {
    const q = ask("que_1", "w-1", {
      kind: "question",
      tool: "question",
      what: "Which colour?",
      questions: [
        {
          question: "Which colour?",
          header: "Colour",
          options: [
            { label: "Red", description: "warm" },
            { label: "Blue", description: "cold" },
          ],
        },
      ],
    });
    const b = await bridge({
      workers: { wait: { query: async () => ({ workerIds: ["w-1"], reason: "news", workers: [ww("w-1", "waiting-approval", [q])], batch: null, also: [] }) } },
    });
    const r = await b.ok("wait", { workerId: "w-1", timeoutSec: 1 });
    expect(r.pending[0].untrusted.questions).toEqual([{ question: "Which colour?", options: ["Red", "Blue"], multiple: false }]);
    expect(r.next).toContain("answers");
    await b.close();
  });
});

describe("approve on a batch's worker", () => {
  it("points the next wait at the batch, not at the one worker (its siblings' asks would go unseen)", async () => {
    const b = await bridge({
      approvals: {
        decide: {
          mutate: async () => ({
            id: "per_1",
            workerId: "w-2",
            status: "decided",
            decision: "once",
            by: { kind: "mcp", name: "t" },
            worker: ww("w-2", "running", [], "b-1"),
          }),
        },
      },
    });
    const r = await b.ok("approve", { askId: "per_1", decision: "once" });
    expect(r.next).toContain('wait {"batchId":"b-1"}');
    await b.close();
  });
});

describe("diff of a graded worker that changed nothing", () => {
  it("says it changed nothing, not 'no changes (yet)'", async () => {
    const w = {
      ...ww("w-1", "honest-failure"),
      baseCommit: "abc",
      branch: "ocw/w-1",
      merged: null,
      verdict: { verdict: "honest-failure", scope: { changedFiles: [] } },
    };
    const b = await bridge({ workers: { get: { query: async () => w }, diff: { query: async () => ({ diff: "" }) } } });
    const r = await b.ok("diff", { workerId: "w-1" });
    expect(r.next).not.toContain("(yet)");
    expect(r.next).toMatch(/changed no file/);
    await b.close();
  });
});

describe("result of a worker that was never graded", () => {
  it("says why its verdict reads honest-failure (stopped: no check ran), in verdictReason", async () => {
    const w = {
      ...ww("w-1", "stopped"),
      spec: { task: "t", directory: "/r", scope: [], checks: [] },
      stateReason: "stopped by mcp:t",
      rounds: [],
      steers: [],
      baseline: null,
      branch: "ocw/w-1",
      worktree: "/x",
      baseBranch: "main",
      merged: null,
      repo: "/r",
      attempt: null,
    };
    const b = await bridge({ workers: { get: { query: async () => w } } });
    const r = await b.ok("result", { workerId: "w-1" });
    expect(r).toMatchObject({ graded: false, verdict: "honest-failure" });
    expect(r.verdictReason).toMatch(/not graded/);
    await b.close();
  });
});

describe("a merge that conflicts", () => {
  it("names the files once, and says 'nothing was changed' once", async () => {
    const w = { ...ww("w-1", "built"), branch: "ocw/w-1", baseBranch: "main", repo: "/r", verdict: { verdict: "built", scope: { changedFiles: ["c.txt"] } } };
    const b = await bridge({
      workers: {
        get: { query: async () => w },
        merge: {
          mutate: async () =>
            Promise.reject(
              Object.assign(new Error(`merging into main conflicts in (file names from the worker's change, untrusted: ["c.txt"]); nothing was changed.`), {
                data: { code: "CONFLICT", ocwCode: "conflict" },
              }),
            ),
        },
      },
    });
    const msg = await b.fail("merge", { workerId: "w-1" });
    expect(msg.match(/nothing was changed/g)).toHaveLength(1);
    expect(msg.match(/c\.txt/g)).toHaveLength(1);
    expect(msg).toMatch(
      /^the merge of ocw\/w-1 into main conflicts in \(file names from the worker's change, untrusted: \["c\.txt"\]\); nothing was changed\. To go on:/,
    );
    await b.close();
  });
});
