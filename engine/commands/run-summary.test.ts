// `ocw run`'s last line for a worker that ended without a verdict (an error, a stop): "not built", with the state and
// its reason. It said "failed", the checks' word for an honest failure, of a worker no check ever ran on.
import { describe, expect, it } from "vitest";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "../../shared/worker";
import { BatchSummary } from "../../shared/batch";
import { batchEndLine, roundLine, workerResult } from "./run";

const worker = (id: string): Worker =>
  reduceWorker(null, {
    workerId: id,
    seq: 1,
    ts: 1_800_000_000_000,
    type: "worker.created",
    spec: WorkerSpec.parse({ task: "fix the parser", directory: "/r" }),
    batchId: null,
    targetId: null,
  } as WorkerEvent);

describe("ocw run's summary line", () => {
  it("an errored worker (no verdict) is 'not built', with the state's reason; never 'failed'", () => {
    const w = { ...worker("w-e"), state: "error" as const, stateReason: "the model API refused the target's key (HTTP 401)" };
    const { summary } = workerResult(w, []);
    expect(summary).toBe("w-e: not built (state error: the model API refused the target's key (HTTP 401); no claim)");
  });

  it("a failed check says where its output is (the summary named the check alone)", () => {
    const verdict = {
      verdict: "honest-failure",
      claim: "built",
      honest: false,
      checks: [{ name: "npm test", passed: false, exitCode: 1, output: "not ok 1" }],
      scope: { passed: true, violations: [] },
    } as unknown as NonNullable<Worker["verdict"]>;
    const w = { ...worker("w-f"), state: "honest-failure" as const, stateReason: "check failed: npm test", verdict };
    expect(workerResult(w, []).summary).toBe(
      "w-f: failed (state failed: check failed: npm test; claim false: said built)\n  why: ocw show w-f (each failed check's output) · ocw logs w-f",
    );
  });

  it("a stopped one too", () => {
    const { summary } = workerResult({ ...worker("w-s"), state: "stopped" as const }, []);
    expect(summary).toBe("w-s: not built (state stopped; no claim)");
  });
});

describe("ocw run --batch's last line (no integration checks)", () => {
  const batch = (built: number) =>
    BatchSummary.parse({
      id: "b-1",
      name: "demo",
      workerIds: ["w-a", "w-b"],
      states: { "w-a": built ? "built" : "honest-failure", "w-b": "honest-failure" },
      settled: true,
      built,
      honest: 2,
      graded: 2,
      builtRate: built / 2,
      honestRate: 1,
      verdict: built ? "built" : "honest-failure",
      done: true,
    });
  it("names the batch, how many were built, and the command that lands them (it was named nowhere)", () => {
    expect(batchEndLine(batch(1))).toBe('batch b-1 "demo": built 1/2 · land the built ones: ocw merge --batch b-1 · ocw show b-1');
    expect(batchEndLine(batch(0))).toBe('batch b-1 "demo": built 0/2 · ocw show b-1');
  });
});

describe("ocw continue's rounds", () => {
  it("read in the verdict's words, as the summary above them (it said 'honest-failure (claim built)')", () => {
    expect(roundLine({ round: 1, verdict: "honest-failure", claim: "built", honest: false })).toBe("  round 1: failed (claim false: said built)");
    expect(roundLine({ round: 2, verdict: "built", claim: "built", honest: true })).toBe("  round 2: built (claim honest)");
    expect(roundLine({ round: 3, verdict: null, claim: null, honest: null })).toBe("  round 3: not graded (no claim)");
  });
});
