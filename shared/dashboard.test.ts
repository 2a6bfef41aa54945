import { describe, expect, it } from "vitest";
import { batchLabel, dashboardGroups, matches, NO_FILTER, urgency, urgencyCounts } from "./dashboard";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent, type WorkerState } from "./worker";

let seq = 0;
function worker(id: string, state: WorkerState, o: { batch?: string; task?: string; dir?: string; target?: string; ask?: boolean; at?: number } = {}): Worker {
  const ev = (body: Record<string, unknown>) => ({ workerId: id, seq: ++seq, ts: o.at ?? seq, ...body }) as WorkerEvent;
  let w = reduceWorker(
    null,
    ev({
      type: "worker.created",
      spec: WorkerSpec.parse({ task: o.task ?? `task ${id}`, directory: o.dir ?? "/repo" }),
      batchId: o.batch ?? null,
      targetId: o.target ?? "t",
    }),
  );
  if (o.ask)
    w = reduceWorker(
      w,
      ev({
        type: "ask.opened",
        ask: {
          id: `a-${id}`,
          workerId: id,
          sessionId: "s",
          kind: "permission",
          tool: "bash",
          what: "ls",
          patterns: [],
          always: [],
          createdAt: 1,
          status: "pending",
        },
      }),
    );
  if (state !== "queued") w = reduceWorker(w, ev({ type: "worker.state", state }));
  return w;
}

describe("dashboard order: needs you, running, queued, settled", () => {
  it("ranks each worker", () => {
    expect(urgency(worker("a", "waiting-approval", { ask: true }))).toBe(0);
    expect(urgency(worker("b", "running", { ask: true }))).toBe(0);
    expect(urgency(worker("c", "grading"))).toBe(1);
    expect(urgency(worker("d", "queued"))).toBe(2);
    expect(urgency(worker("e", "built"))).toBe(3);
    expect(urgency(worker("f", "interrupted"))).toBe(3);
  });

  it("puts the batch with an ask first, a settled batch last even when newer, single tasks by their own urgency", () => {
    const old = [worker("o1", "running", { batch: "B-old", at: 1 }), worker("o2", "waiting-approval", { batch: "B-old", ask: true, at: 1 })];
    const done = [worker("n1", "built", { batch: "B-new", at: 9 }), worker("n2", "honest-failure", { batch: "B-new", at: 9 })];
    const single = [worker("s1", "queued", { at: 5 })];
    const mid = [worker("m1", "running", { batch: "B-mid", at: 3 })];
    const groups = dashboardGroups([...old, ...mid, ...single, ...done]);
    expect(groups.map((g) => g.batchId)).toEqual(["B-old", "B-mid", "", "B-new"]);
    // Inside a batch: the ask before the running worker, though it was submitted second.
    expect(groups[0]!.workers.map((w) => w.id)).toEqual(["o2", "o1"]);
    expect(groups.map((g) => g.settled)).toEqual([false, false, false, true]);
  });

  it("filters by state, repository, target, batch and searches task text and id", () => {
    const ws = [
      worker("w-alpha", "running", { task: "Add a --verbose flag", dir: "/a", target: "local", batch: "B1" }),
      worker("w-beta", "built", { task: "Fix the parser", dir: "/b", target: "api" }),
      worker("w-gamma", "waiting-approval", { task: "Rename verbose option", dir: "/a", target: "api", ask: true, batch: "B1" }),
    ];
    const ids = (f: Partial<typeof NO_FILTER>) => ws.filter((w) => matches(w, { ...NO_FILTER, ...f })).map((w) => w.id);
    expect(ids({ state: "needs-you" })).toEqual(["w-gamma"]);
    expect(ids({ state: "settled" })).toEqual(["w-beta"]);
    expect(ids({ repo: "/a" })).toEqual(["w-alpha", "w-gamma"]);
    expect(ids({ target: "api" })).toEqual(["w-beta", "w-gamma"]);
    expect(ids({ batch: "single" })).toEqual(["w-beta"]);
    expect(ids({ batch: "B1", search: "VERBOSE" })).toEqual(["w-alpha", "w-gamma"]);
    expect(ids({ search: "verbose flag" })).toEqual(["w-alpha"]);
    expect(ids({ search: "beta" })).toEqual(["w-beta"]);
    expect(urgencyCounts(ws)).toEqual({ all: 3, "needs-you": 1, running: 1, queued: 0, settled: 1 });
  });

  it("leaves archived batches out, and shows only them when asked", () => {
    const ws = [worker("x1", "built", { batch: "B-arch" }), worker("x2", "running", { batch: "B-live" }), worker("x3", "built")];
    const archived = new Set(["B-arch"]);
    expect(dashboardGroups(ws, NO_FILTER, archived).map((g) => g.batchId)).toEqual(["B-live", ""]);
    expect(dashboardGroups(ws, NO_FILTER, archived, true).map((g) => g.batchId)).toEqual(["B-arch"]);
  });
});

describe("search over transcript text and batch names", () => {
  it("a worker the engine found the words in matches though its task and id do not", () => {
    const ws = [worker("w-a", "running", { task: "fix the parser" }), worker("w-b", "running", { task: "add a flag" })];
    const f = { ...NO_FILTER, search: "segfault" };
    expect(dashboardGroups(ws, f).length).toBe(0);
    const g = dashboardGroups(ws, f, new Set(), false, { hits: new Set(["w-b"]) });
    expect(g.flatMap((x) => x.workers.map((w) => w.id))).toEqual(["w-b"]);
  });
  it("a batch's name is searched, and read instead of its id", () => {
    const ws = [worker("w-c", "running", { batch: "b-123", task: "x" }), worker("w-d", "running", { batch: "b-456", task: "y" })];
    const names = { "b-123": "Nightly refactor" };
    const g = dashboardGroups(ws, { ...NO_FILTER, search: "nightly" }, new Set(), false, { names });
    expect(g.map((x) => x.batchId)).toEqual(["b-123"]);
    expect(batchLabel("b-123", names)).toBe("Nightly refactor");
    expect(batchLabel("b-456", names)).toBe("b-456");
  });
});
