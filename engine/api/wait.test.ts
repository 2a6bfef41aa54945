// waitForNews against the engine's real worker registry and event bus (pictures folded from recorded events), without
// opencode: what a wait answers, when, and that it lets go of the bus when it ends or its request is cancelled.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { BatchSummary } from "../../shared/batch";
import type { Delivered } from "../../shared/events";
import { WaitInput, type WaitNote } from "../../shared/wait";
import { WorkerSpec } from "../../shared/worker";
import { EventBus } from "../events";
import { WorkerRegistry } from "../registry/registry";
import { WorkerLogStore } from "../store/worker-log";
import { GATHER_IDLE_MS, GATHER_MAX_MS, GATHER_MS, waitForNews, waitStream, type WaitSource } from "./wait";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function rig() {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), "ocw-wait-"));
  dirs.push(stateDir);
  const bus = new EventBus();
  const reg = new WorkerRegistry({ stateDir, bus, logs: new WorkerLogStore(path.join(stateDir, "workers")), log: () => {}, moved: () => {} });
  let listeners = 0;
  const src: WaitSource = {
    bus: {
      subscribe(fn: (d: Delivered) => void) {
        listeners++;
        const off = bus.subscribe(fn);
        return () => {
          listeners--;
          off();
        };
      },
    },
    get: (id) => reg.get(id),
    batch: () => {
      throw new Error("no batches here");
    },
  };
  const create = (id: string, task = `task ${id}`) => {
    reg.record(id, { type: "worker.created", spec: WorkerSpec.parse({ task, directory: "/r" }), batchId: null, targetId: null });
    reg.fire(id, "admit");
    reg.fire(id, "start");
    return id;
  };
  // An ask and the state change it causes, recorded together (as the approvals queue does).
  const ask = (id: string, askId: string) => {
    reg.record(id, {
      type: "ask.opened",
      ask: {
        id: askId,
        workerId: id,
        sessionId: "s",
        kind: "permission",
        tool: "edit",
        what: "/r/a.txt",
        diff: "+a",
        patterns: [],
        always: [],
        createdAt: Date.now(),
        status: "pending",
      },
    });
    reg.fire(id, "ask");
  };
  const finish = (id: string) => {
    reg.fire(id, "settle");
    reg.fire(id, "grade");
    reg.fire(id, "pass");
  };
  // The answers on their way to opencode, as the approvals queue keeps them: begun, then ended (taken or not).
  const inFlight = new Set<string>();
  const ended = new Set<() => void>();
  src.answers = {
    has: (askId) => inFlight.has(askId),
    ended: (fn) => {
      ended.add(fn);
      return () => ended.delete(fn);
    },
  };
  const answering = (askId: string) => inFlight.add(askId);
  const answerEnds = (askId: string) => {
    inFlight.delete(askId);
    for (const fn of ended) fn();
  };
  // opencode took the answer: the ask is decided and the worker goes on.
  const answered = (id: string, askId: string) => {
    reg.record(id, { type: "ask.resolved", askId, status: "decided", decision: "once", by: { kind: "mcp", name: "claude-code" } });
    reg.fire(id, "answered");
    answerEnds(askId);
  };
  return { src, reg, create, ask, finish, answering, answerEnds, answered, listeners: () => listeners, answerListeners: () => ended.size };
}

const input = (x: Record<string, unknown>) => WaitInput.parse(x);
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("waitForNews", () => {
  it("answers an ask that arrives during the wait with the state it caused, then not again once shown", async () => {
    const r = rig();
    const a = r.create("w-a");
    const notes: WaitNote[] = [];
    const p = waitForNews(r.src, input({ workerIds: [a], timeoutMs: 60_000 }), { onNote: (n) => notes.push(n) });
    await tick();
    expect(r.listeners()).toBe(1);
    r.ask(a, "per-1");
    const got = await p;
    expect(got.reason).toBe("news");
    expect(got.workers).toHaveLength(1);
    expect(got.workers[0]).toMatchObject({ id: a, state: "waiting-approval", title: "task w-a", batchId: null, verdict: null });
    expect(got.workers[0]!.asks.map((x) => x.id)).toEqual(["per-1"]);
    // The engine's words apart from the worker's (the asked path).
    expect(notes).toEqual([{ said: "w-a asks edit", untrusted: "/r/a.txt" }, { said: "w-a waiting-approval" }]);
    expect(r.listeners()).toBe(0);
    // Shown already: not news; the wait runs to its timeout.
    const again = await waitForNews(r.src, input({ workerIds: [a], shownAsks: ["per-1"], timeoutMs: 30 }));
    expect(again.reason).toBe("timeout");
    expect(again.workers[0]!.asks).toHaveLength(1);
    expect(again.workers[0]!.asks[0]!.diff).toBe("+a");
    expect(r.listeners()).toBe(0);
    // Without diffs (a caller that shows no forms): the ask as it is, less its diff.
    const slim = await waitForNews(r.src, input({ workerIds: [a], shownAsks: ["per-1"], timeoutMs: 0, diffs: false }));
    expect(slim.workers[0]!.asks[0]).toMatchObject({ id: "per-1", what: "/r/a.txt", tool: "edit" });
    expect(Object.keys(slim.workers[0]!.asks[0]!)).not.toContain("diff");
  });

  it("a worker finishing is news until shown; every worker at rest is settled, with pending asks only in pictures", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    r.ask(a, "per-1");
    r.reg.record(a, { type: "ask.resolved", askId: "per-1", status: "decided", decision: "once", by: { kind: "mcp", name: "t" } });
    r.reg.fire(a, "answered");
    const p = waitForNews(r.src, input({ workerIds: [a, b, a], shownAsks: ["per-1"], timeoutMs: 60_000 }));
    await tick();
    r.finish(a);
    const got = await p;
    expect(got.reason).toBe("news");
    expect(got.workerIds).toEqual([a, b]);
    expect(got.workers.map((w) => w.state)).toEqual(["built", "running"]);
    // The resolved ask is not in the slim picture (only pending ones are).
    expect(got.workers[0]!.asks).toEqual([]);
    expect(await waitForNews(r.src, input({ workerIds: [a, b], shownFinished: [a], timeoutMs: 20 }))).toMatchObject({ reason: "timeout" });
    const q = waitForNews(r.src, input({ workerIds: [a, b], shownFinished: [a], timeoutMs: 60_000, also: [a, b, "w-c"].slice(0, 2) }));
    await tick();
    r.finish(b);
    const done = await q;
    expect(done.reason).toBe("settled");
    expect(done.also).toEqual([]);
  });

  it("a batch whose workers are all at rest but which goes on is not settled: the wait's time runs out", async () => {
    const r = rig();
    const a = r.create("w-a");
    r.finish(a);
    const batch = BatchSummary.parse({
      id: "b-1",
      workerIds: [a],
      states: { [a]: "built" },
      settled: false,
      built: 1,
      honest: 1,
      graded: 1,
      builtRate: 1,
      honestRate: 1,
      verdict: null,
      done: false,
    });
    const got = await waitForNews({ ...r.src, batch: () => batch }, input({ batchId: "b-1", shownFinished: [a], timeoutMs: 20 }));
    expect(got.reason).toBe("timeout");
    expect(got.batch?.done).toBe(false);
  });

  it("unfinished narrows a session's workers to those not at rest; also adds others' pictures once settled", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    r.finish(a);
    const got = await waitForNews(r.src, input({ workerIds: [a, b], unfinished: true, shownFinished: [a], timeoutMs: 0 }));
    expect(got).toMatchObject({ reason: "timeout", workerIds: [b] });
    r.finish(b);
    const all = await waitForNews(r.src, input({ workerIds: [b], timeoutMs: 0, also: [a, b] }));
    expect(all.reason).toBe("settled");
    expect(all.also.map((w) => w.id)).toEqual([a]);
  });

  it("untilGone: the wait also ends once that ask is no longer pending (a form withdrawn)", async () => {
    const r = rig();
    const a = r.create("w-a");
    r.ask(a, "per-1");
    const p = waitForNews(r.src, input({ workerIds: [a], shownAsks: ["per-1"], untilGone: "per-1", timeoutMs: 60_000 }));
    await tick();
    expect(r.listeners()).toBe(1);
    r.reg.record(a, { type: "ask.resolved", askId: "per-1", status: "decided", decision: "once", by: { kind: "person", name: "gui" } });
    const got = await p;
    expect(got.reason).toBe("news");
    expect(got.workers[0]!.asks).toEqual([]);
    // Gone already: at once.
    expect((await waitForNews(r.src, input({ workerIds: [a], untilGone: "per-1", timeoutMs: 60_000 }))).reason).toBe("news");
  });

  it("news that comes in a burst is answered once: what arrives within the gathering window comes in the same answer", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate"] });
    try {
      const r = rig();
      const a = r.create("w-a");
      const b = r.create("w-b");
      // A third at work all along: more news may come while the burst is gathered.
      const c = r.create("w-c");
      let answered = false;
      const p = waitForNews(r.src, input({ workerIds: [a, b, c], timeoutMs: 60_000 })).then((x) => {
        answered = true;
        return x;
      });
      await vi.advanceTimersByTimeAsync(1);
      r.ask(a, "per-a");
      await vi.advanceTimersByTimeAsync(GATHER_MS - 5);
      expect(answered).toBe(false);
      r.ask(b, "per-b");
      // The burst grew in its window: gathered one window more, then answered with both.
      await vi.advanceTimersByTimeAsync(10);
      expect(answered).toBe(false);
      await vi.advanceTimersByTimeAsync(GATHER_MS);
      const got = await p;
      expect(got.reason).toBe("news");
      expect(got.workers.flatMap((w) => w.asks.map((x) => x.id))).toEqual(["per-a", "per-b"]);
      expect(r.listeners()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("with no followed worker on its way to more news (each waits on an ask, or is at rest), the answer does not wait a gathering window", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate"] });
    try {
      const r = rig();
      const a = r.create("w-a");
      const b = r.create("w-b");
      let answered = false;
      const p = waitForNews(r.src, input({ workerIds: [a, b], timeoutMs: 60_000 })).then((x) => {
        answered = true;
        return x;
      });
      await vi.advanceTimersByTimeAsync(1);
      r.ask(a, "per-a");
      // b is at work: a's ask is gathered
      await vi.advanceTimersByTimeAsync(GATHER_IDLE_MS + 1);
      expect(answered).toBe(false);
      // b's ask leaves nobody at work: answered at the window's end, not one window more
      r.ask(b, "per-b");
      await vi.advanceTimersByTimeAsync(GATHER_MS);
      expect(answered).toBe(true);
      expect((await p).workers.flatMap((w) => w.asks.map((x) => x.id))).toEqual(["per-a", "per-b"]);
      // the only one at work asks: answered after GATHER_IDLE_MS (time for the asks of one model step), not GATHER_MS
      const one = r.create("w-one");
      let done = false;
      const q = waitForNews(r.src, input({ workerIds: [one], timeoutMs: 60_000 })).then((x) => ((done = true), x));
      await vi.advanceTimersByTimeAsync(1);
      r.ask(one, "per-one");
      await vi.advanceTimersByTimeAsync(GATHER_IDLE_MS + 1);
      expect(done).toBe(true);
      expect((await q).workers[0]!.asks.map((x) => x.id)).toEqual(["per-one"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a burst that keeps growing is gathered a window at a time, up to GATHER_MAX_MS; one that stops is answered at its window's end", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate"] });
    try {
      const r = rig();
      const ids = Array.from({ length: 20 }, (_, i) => r.create(`w-${i}`));
      const at: number[] = [];
      let t = 0;
      // Time in 1 ms steps, so the moment of the answer is known to the millisecond.
      const advance = async (ms: number) => {
        for (let i = 0; i < ms; i++) {
          await vi.advanceTimersByTimeAsync(1);
          t++;
        }
      };
      const p = waitForNews(r.src, input({ workerIds: ids, timeoutMs: 60_000 })).then((x) => (at.push(t), x));
      await advance(1);
      // An ask every 10 ms (the first at 1 ms), for longer than the longest gathering.
      for (const [i, id] of ids.entries()) {
        r.ask(id, `per-${i}`);
        await advance(10);
      }
      await advance(GATHER_MAX_MS);
      const got = await p;
      // Answered once GATHER_MAX_MS of gathering passed, with every ask asked by then, not the first window's alone.
      expect(at[0]).toBeGreaterThanOrEqual(GATHER_MAX_MS);
      expect(at[0]).toBeLessThan(GATHER_MAX_MS + GATHER_MS);
      const asked = got.workers.flatMap((w) => w.asks).length;
      expect(asked).toBeGreaterThanOrEqual(GATHER_MAX_MS / 10 - 1);
      expect(asked).toBeLessThan(ids.length);
      // A single ask with nothing after it: answered at the end of its one window.
      const one = r.create("w-one");
      let done = false;
      const q = waitForNews(r.src, input({ workerIds: [one], timeoutMs: 60_000 })).then((x) => ((done = true), x));
      await vi.advanceTimersByTimeAsync(1);
      r.ask(one, "per-one");
      await vi.advanceTimersByTimeAsync(GATHER_MS + 1);
      expect(done).toBe(true);
      expect((await q).workers[0]!.asks.map((a) => a.id)).toEqual(["per-one"]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("blocked: answers at once when each worker not at rest waits only on asks the caller was shown (nothing moves until it answers)", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    r.ask(a, "per-1");
    r.finish(b);
    const t0 = Date.now();
    const got = await waitForNews(r.src, input({ workerIds: [a, b], shownAsks: ["per-1"], shownFinished: [b], blocked: true, timeoutMs: 5_000 }));
    expect(got.reason).toBe("blocked");
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(got.workers[0]!.asks.map((x) => x.id)).toEqual(["per-1"]);
    expect(r.listeners()).toBe(0);
    // Without the flag (a form's watch waits for that very ask to go): the wait runs to its timeout, as before.
    expect(await waitForNews(r.src, input({ workerIds: [a, b], shownAsks: ["per-1"], shownFinished: [b], timeoutMs: 30 }))).toMatchObject({
      reason: "timeout",
    });
  });

  it("blocked: another worker still running may bring news, so the wait waits for it (a client calling wait in a loop does not spin)", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    r.ask(a, "per-1");
    const slow = await waitForNews(r.src, input({ workerIds: [a, b], shownAsks: ["per-1"], blocked: true, timeoutMs: 40 }));
    expect(slow.reason).toBe("timeout");
    const p = waitForNews(r.src, input({ workerIds: [a, b], shownAsks: ["per-1"], blocked: true, timeoutMs: 60_000 }));
    await tick();
    r.finish(b);
    // Its finish is news; the open ask is in the picture for the caller to name.
    const got = await p;
    expect(got.reason).toBe("news");
    expect(got.workers.find((w) => w.id === a)!.asks.map((x) => x.id)).toEqual(["per-1"]);
  });

  it("blocked: a worker whose ask is being answered is about to move, and the wait follows it instead of sending the caller round again", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    r.ask(a, "per-1");
    r.finish(b);
    // The caller's approve is on its way to opencode when its wait arrives (Claude sent both in one message).
    r.answering("per-1");
    const p = waitForNews(r.src, input({ workerIds: [a, b], shownAsks: ["per-1"], shownFinished: [b], blocked: true, timeoutMs: 60_000 }));
    await new Promise((res) => setTimeout(res, GATHER_MS * 3));
    r.answered(a, "per-1");
    await tick();
    r.ask(a, "per-2");
    const got = await p;
    expect(got.reason).toBe("news");
    expect(got.workers[0]!.asks.filter((x) => x.status === "pending").map((x) => x.id)).toEqual(["per-2"]);
    expect([r.listeners(), r.answerListeners()]).toEqual([0, 0]);
  });

  it("blocked: an answer that opencode did not take leaves the worker blocked, and the wait says so then", async () => {
    const r = rig();
    const a = r.create("w-a");
    r.ask(a, "per-1");
    r.answering("per-1");
    let done = false;
    const p = waitForNews(r.src, input({ workerIds: [a], shownAsks: ["per-1"], blocked: true, timeoutMs: 60_000 })).then((x) => ((done = true), x));
    await new Promise((res) => setTimeout(res, GATHER_MS * 3));
    expect(done).toBe(false);
    r.answerEnds("per-1");
    expect((await p).reason).toBe("blocked");
  });

  it("blocked: an approve that reaches the engine just after the wait (sent beside it) is seen before the wait answers", async () => {
    const r = rig();
    const a = r.create("w-a");
    r.ask(a, "per-1");
    let done = false;
    const p = waitForNews(r.src, input({ workerIds: [a], shownAsks: ["per-1"], blocked: true, timeoutMs: 60_000 })).then((x) => ((done = true), x));
    r.answering("per-1");
    await new Promise((res) => setTimeout(res, GATHER_MS * 3));
    expect(done).toBe(false);
    r.answered(a, "per-1");
    r.finish(a);
    expect((await p).reason).toBe("settled");
    // With no answer on its way, blocked is still the answer, a moment later.
    const b = r.create("w-b");
    r.ask(b, "per-2");
    const t0 = Date.now();
    expect((await waitForNews(r.src, input({ workerIds: [b], shownAsks: ["per-2"], blocked: true, timeoutMs: 60_000 }))).reason).toBe("blocked");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(GATHER_MS - 1);
  });

  it("a cancelled request ends the wait at once and lets go of the bus", async () => {
    const r = rig();
    const a = r.create("w-a");
    const ac = new AbortController();
    const p = waitForNews(r.src, input({ workerIds: [a], timeoutMs: 600_000 }), { signal: ac.signal });
    await tick();
    expect(r.listeners()).toBe(1);
    ac.abort();
    expect((await p).reason).toBe("aborted");
    expect(r.listeners()).toBe(0);
    // Cancelled before it began: no subscription at all.
    expect((await waitForNews(r.src, input({ workerIds: [a], timeoutMs: 600_000 }), { signal: AbortSignal.abort() })).reason).toBe("aborted");
    expect(r.listeners()).toBe(0);
  });

  it("an unknown worker is the registry's coded not-found error, before anything is followed", async () => {
    const r = rig();
    r.create("w-a");
    await expect(waitForNews(r.src, input({ workerIds: ["w-a", "w-nope"], timeoutMs: 1000 }))).rejects.toMatchObject({
      code: "not-found",
      message: 'unknown worker "w-nope": no worker has that id (`ocw list` or the workers tool lists them)',
    });
    expect(r.listeners()).toBe(0);
  });

  it("an unknown id in also is the coded not-found error at once, not after the whole wait", async () => {
    const r = rig();
    const a = r.create("w-a");
    const ac = new AbortController();
    let outcome: unknown = "pending";
    const p = waitForNews(r.src, input({ workerIds: [a], also: ["w-nope"], timeoutMs: 600_000 }), { signal: ac.signal }).then(
      (x) => (outcome = x),
      (e: unknown) => (outcome = e),
    );
    await tick();
    ac.abort();
    await p;
    expect(outcome).toMatchObject({ code: "not-found", message: 'unknown worker "w-nope": no worker has that id (`ocw list` or the workers tool lists them)' });
    expect(r.listeners()).toBe(0);
  });

  it("refuses input that names neither or both of workerIds and batchId, and a negative timeout", () => {
    expect(WaitInput.safeParse({ timeoutMs: 1 }).error?.issues[0]?.message).toBe("give workerIds or batchId (one of them)");
    expect(WaitInput.safeParse({ workerIds: ["a"], batchId: "b", timeoutMs: 1 }).error?.issues[0]?.message).toBe("give workerIds or batchId (one of them)");
    expect(WaitInput.safeParse({ workerIds: [], timeoutMs: 1 }).success).toBe(false);
    expect(WaitInput.safeParse({ workerIds: ["a"], timeoutMs: -1 }).success).toBe(false);
    expect(WaitInput.safeParse({ workerIds: ["a"], timeoutMs: 1, extra: 1 }).success).toBe(false);
  });

  it("as a stream: the workers it follows, a line per event worth showing, then the result", async () => {
    const r = rig();
    const a = r.create("w-a");
    const items: unknown[] = [];
    const run = (async () => {
      for await (const it of waitStream(r.src, input({ workerIds: [a], timeoutMs: 60_000 }))) items.push(it);
    })();
    await tick();
    r.ask(a, "per-9");
    await run;
    expect(items.slice(0, 3)).toEqual([
      { following: [a] },
      { note: 'w-a asks edit, untrusted: "/r/a.txt"', line: { said: "w-a asks edit", untrusted: "/r/a.txt" } },
      { note: "w-a waiting-approval", line: { said: "w-a waiting-approval" } },
    ]);
    expect(items).toHaveLength(4);
    expect(items[3]).toMatchObject({ result: { reason: "news", workerIds: [a] } });
    expect(r.listeners()).toBe(0);
  });

  it("as a stream: an ask already waiting when the wait begins is a line too, unless this caller was shown it", async () => {
    const r = rig();
    const a = r.create("w-a");
    const b = r.create("w-b");
    // Both asks opened before the wait followed its workers (the race a bridge's wait lost under load: the answer held
    // the ask, its progress never named it).
    r.ask(a, "per-1");
    r.ask(b, "per-2");
    const items: unknown[] = [];
    for await (const it of waitStream(r.src, input({ workerIds: [a, b], shownAsks: ["per-2"], timeoutMs: 60_000 }))) items.push(it);
    expect(items).toHaveLength(3);
    expect(items.slice(0, 2)).toEqual([
      { following: [a, b] },
      { note: 'w-a asks edit, untrusted: "/r/a.txt"', line: { said: "w-a asks edit", untrusted: "/r/a.txt" } },
    ]);
    expect(items[2]).toMatchObject({ result: { reason: "news", workerIds: [a, b] } });
  });
});
