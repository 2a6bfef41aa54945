// Budgets and the watchdog on a fake clock: the wall budget stops a worker when its time (counted from its first
// start, across resumes) is up, the token budget when its usage passes the limit, and a silent running worker is
// flagged stalled once.
import { describe, expect, it } from "vitest";
import { testRegistry } from "../../test/fixtures/registry";
import { Budgets, type Clock } from "./budgets";

function fakeClock(start = Date.now()) {
  let now = start;
  const timers: { at: number; fn: () => void; every?: number }[] = [];
  const handle = (t: (typeof timers)[number]) => ({ unref() {}, [Symbol.toPrimitive]: () => timers.indexOf(t) }) as unknown as NodeJS.Timeout;
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return handle(t);
    },
    setInterval: (fn, ms) => {
      const t = { at: now + ms, fn, every: ms };
      timers.push(t);
      return handle(t);
    },
  };
  const advance = (ms: number) => {
    const end = now + ms;
    for (;;) {
      const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      now = due.at;
      if (due.every) due.at += due.every;
      else timers.splice(timers.indexOf(due), 1);
      due.fn();
    }
    now = end;
  };
  return { clock, advance, set: (t: number) => (now = t) };
}

function setup(stallMs = 60_000) {
  const r = testRegistry();
  const c = fakeClock();
  const stops: [string, string][] = [];
  const budgets = new Budgets({ registry: r.registry, stallMs, clock: c.clock, stop: async (id, reason) => void stops.push([id, reason]) });
  return { ...r, ...c, budgets, stops };
}

describe("budgets", () => {
  it("the wall budget stops a worker when its seconds are up, not before", () => {
    const { worker, budgets, advance, stops, registry, set } = setup();
    const w = worker("running", { spec: { budget: { wallSec: 30 } } });
    set(registry.get(w.id).startedAt!);
    budgets.armWall(w.id);
    advance(29_000);
    expect(stops).toEqual([]);
    advance(1_000);
    expect(stops).toEqual([[w.id, "budget: wall clock of 30s used up"]]);
  });

  it("a resumed worker's wall budget counts from its first start (time already used is not given back)", () => {
    const { worker, budgets, advance, stops, registry, set } = setup();
    const w = worker("running", { spec: { budget: { wallSec: 30 } } });
    set(registry.get(w.id).startedAt! + 20_000);
    budgets.armWall(w.id);
    advance(9_999);
    expect(stops).toEqual([]);
    advance(1);
    expect(stops).toHaveLength(1);
  });

  it("a task that names no wall budget still has the default one (4 h, OCW_WORKER_WALL_SEC); 0 turns it off", () => {
    const { worker, budgets, advance, stops, registry, set } = setup();
    const w = worker("running");
    set(registry.get(w.id).startedAt!);
    budgets.armWall(w.id);
    advance(4 * 3600_000 - 1);
    expect(stops).toEqual([]);
    advance(1);
    expect(stops).toEqual([[w.id, "budget: wall clock of 14400s used up"]]);
    const before = process.env.OCW_WORKER_WALL_SEC;
    process.env.OCW_WORKER_WALL_SEC = "0";
    try {
      const off = setup();
      off.budgets.armWall(off.worker("running").id);
      off.advance(10 * 86_400_000);
      expect(off.stops).toEqual([]);
    } finally {
      if (before === undefined) delete process.env.OCW_WORKER_WALL_SEC;
      else process.env.OCW_WORKER_WALL_SEC = before;
    }
  });

  it("usage is the sum over the session's messages on top of what was recorded before; over the token budget it stops", () => {
    const { worker, budgets, stops, registry } = setup();
    const w = worker("running", { spec: { budget: { tokens: 1000 } } });
    registry.record(w.id, { type: "usage", usage: { input: 100, output: 0, reasoning: 0, cost: 0.5 } });
    budgets.onUsage(w.id, "m1", { input: 300, output: 50, reasoning: 0, cost: 0.1 });
    budgets.onUsage(w.id, "m1", { input: 300, output: 50, reasoning: 0, cost: 0.1 }); // the same again: not recorded
    budgets.onUsage(w.id, "m2", { input: 400, output: 100, reasoning: 0, cost: 0.2 });
    expect(registry.get(w.id).usage).toEqual({ input: 800, output: 150, reasoning: 0, cost: expect.closeTo(0.8, 5) });
    expect(stops).toEqual([]);
    budgets.onUsage(w.id, "m2", { input: 400, output: 150, reasoning: 1, cost: 0.2 });
    expect(stops).toEqual([[w.id, "budget: 1000 tokens used up"]]);
  });

  it("a failed stop becomes a notice, never an unhandled rejection", async () => {
    const r = testRegistry();
    const budgets = new Budgets({ registry: r.registry, stallMs: 60_000, clock: fakeClock().clock, stop: () => Promise.reject(new Error("disk full")) });
    const w = r.worker("running", { spec: { budget: { tokens: 1 } } });
    budgets.onUsage(w.id, "m", { input: 5, output: 0, reasoning: 0, cost: 0 });
    await new Promise((res) => setTimeout(res, 0));
    expect(r.lines.at(-1)).toMatch(/\[error\] budget: 1 tokens used up, but disk full/);
  });

  it("the watchdog flags a silent running worker once, and not a waiting or a busy one", () => {
    const { worker, advance, registry } = setup(10_000);
    const quiet = worker("running");
    const waiting = worker("waiting-approval");
    const busy = worker("running");
    for (let i = 0; i < 6; i++) {
      advance(2_000);
      registry.rt(busy.id).heard(Date.now() + 10 ** 9); // keeps sending events
    }
    advance(20_000);
    const stalled = (id: string) => registry.get(id).stalled;
    expect(stalled(quiet.id)).toBeTruthy();
    expect(stalled(waiting.id)).toBeFalsy();
    expect(stalled(busy.id)).toBeFalsy();
  });
});
