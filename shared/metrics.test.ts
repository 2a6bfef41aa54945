import { describe, expect, it } from "vitest";
import { modelMs, throughput } from "./metrics";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "./worker";

let seq = 0;
const ev = (ts: number, body: Record<string, unknown>) => ({ workerId: "w1", seq: ++seq, ts, ...body }) as WorkerEvent;
const ask = (id: string) => ({
  id,
  workerId: "w1",
  sessionId: "s",
  kind: "permission",
  tool: "bash",
  what: "ls",
  patterns: [],
  always: [],
  createdAt: 1,
  status: "pending",
});

/** A worker driven through `steps` (ts, event body) from its creation at 0. */
function drive(steps: [number, Record<string, unknown>][]): Worker {
  let w = reduceWorker(null, ev(0, { type: "worker.created", spec: WorkerSpec.parse({ task: "t", directory: "/r" }), batchId: null, targetId: "t" }));
  for (const [ts, b] of steps) w = reduceWorker(w, ev(ts, b));
  return w;
}

describe("model time: running with no ask waiting for a person", () => {
  it("leaves out queued, starting, waiting for a person and settled time", () => {
    const w = drive([
      [10_000, { type: "worker.state", state: "starting" }], // queued 10 s
      [12_000, { type: "worker.state", state: "running" }], // starting 2 s
      [22_000, { type: "worker.state", state: "waiting-approval" }], // 10 s on the model
      [82_000, { type: "worker.state", state: "running" }], // a person took 60 s
      [87_000, { type: "worker.state", state: "settled" }], // 5 s on the model
      [99_000, { type: "worker.state", state: "built" }],
    ]);
    expect(modelMs(w, 500_000)).toBe(15_000);
    expect(w.modelSince).toBeNull();
  });

  it("an ask pending while the state still says running stops the clock until it is answered", () => {
    const w = drive([
      [0, { type: "worker.state", state: "running" }],
      [4_000, { type: "ask.opened", ask: ask("a1") }],
      [40_000, { type: "ask.resolved", askId: "a1", status: "decided", decision: "once" }],
      [46_000, { type: "worker.state", state: "settled" }],
    ]);
    expect(modelMs(w, 100_000)).toBe(10_000);
  });

  it("counts the open interval up to now while it runs", () => {
    const w = drive([[1_000, { type: "worker.state", state: "running" }]]);
    expect(modelMs(w, 6_000)).toBe(5_000);
  });

  it("a worker from an older log (no model-time fields) counts nothing rather than failing", () => {
    const w = { modelMs: undefined, modelSince: undefined } as unknown as Worker;
    expect(modelMs(w, 10)).toBe(0);
  });
});

describe("throughput: live tokens and tok/s over model time", () => {
  const usage = { input: 1000, output: 200, reasoning: 100, cost: 0 };
  it("adds the streamed text not reported yet (4 characters a token) to the reported tokens", () => {
    const w = { ...drive([[0, { type: "worker.state", state: "running" }]]), usage };
    const t = throughput(w, 10_000, 400);
    expect(t).toMatchObject({ tokens: 1400, output: 400, estimated: 100, modelSec: 10 });
    expect(t.tokPerSec).toBe(40);
  });

  it("tok/s is output over model time, not over wall time (60 s waiting for a person left out)", () => {
    const w = {
      ...drive([
        [0, { type: "worker.state", state: "running" }],
        [10_000, { type: "worker.state", state: "waiting-approval" }],
        [70_000, { type: "worker.state", state: "running" }],
        [80_000, { type: "worker.state", state: "built" }],
      ]),
      usage: { input: 0, output: 400, reasoning: 0, cost: 0 },
    };
    // 400 tokens in 20 s on the model = 20 tok/s (over the 80 s wall clock it would read 5).
    expect(throughput(w, 1e9).tokPerSec).toBe(20);
  });

  it("no tok/s with no time on the model or no output", () => {
    const w = { ...drive([[0, { type: "worker.state", state: "running" }]]), usage };
    expect(throughput(w, 0).tokPerSec).toBeNull();
    expect(throughput({ ...w, modelSince: null }, 10_000).tokPerSec).toBeNull();
    expect(throughput({ ...w, usage: { input: 50, output: 0, reasoning: 0, cost: 0 } }, 10_000).tokPerSec).toBeNull();
  });
});
