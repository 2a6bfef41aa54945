import { describe, expect, it } from "vitest";
import { attemptGroup, changedLines, isNoop, isWeakEvidence, mergedSibling, pickWinner, stoppedForWinnerReason } from "./attempts";
import { ledger } from "./ledger";
import type { Verdict } from "./verdict";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "./worker";

const spec = WorkerSpec.parse({ task: "t", directory: "/repo" });
let seq = 0;
const ev = (workerId: string, body: Record<string, unknown>, ts = 1000 + ++seq) => ({ workerId, seq: ++seq, ts, ...body }) as WorkerEvent;

function verdict(v: Partial<Verdict> & { lines?: number; files?: string[] }): Verdict {
  const files = v.files ?? ["a.txt"];
  const lines = v.lines ?? 1;
  return {
    verdict: "built",
    claim: "built",
    claimReason: null,
    honest: true,
    checks: [],
    scope: { passed: true, violations: [], changedFiles: files },
    gradedAt: 5000,
    branch: null,
    worktree: null,
    commit: null,
    diffStat: files.length ? ` a.txt | ${lines} +\n 1 file changed, ${lines} insertion${lines === 1 ? "" : "s"}(+)` : "",
    mergeHint: null,
    ...v,
  } as Verdict;
}

/** A finished worker: created (optionally as an attempt), started, ended in `state` with `v`. */
function worker(
  id: string,
  o: {
    target?: string;
    group?: string;
    index?: number;
    all?: boolean;
    state?: Worker["state"];
    reason?: string;
    /** Its stop event's `lostTo`: left out, the event has none (an older engine's log). */
    lostTo?: string | null;
    v?: Verdict;
    tokens?: number;
    start?: number;
    end?: number;
  },
): Worker {
  let w = reduceWorker(
    null,
    ev(
      id,
      {
        type: "worker.created",
        spec,
        batchId: null,
        targetId: o.target ?? "t1",
        ...(o.group ? { attempt: { groupId: o.group, index: o.index ?? 1, of: 3, all: !!o.all } } : {}),
      },
      100,
    ),
  );
  w = reduceWorker(w, ev(id, { type: "worker.state", state: "starting" }, o.start ?? 1000));
  if (o.tokens) w = reduceWorker(w, ev(id, { type: "usage", usage: { input: o.tokens, output: 0, reasoning: 0, cost: 0 } }, o.start ?? 1000));
  if (o.v) w = reduceWorker(w, ev(id, { type: "verdict", verdict: o.v }, o.end ?? 3000));
  return reduceWorker(
    w,
    ev(
      id,
      {
        type: "worker.state",
        state: o.state ?? o.v?.verdict ?? "stopped",
        ...(o.reason ? { reason: o.reason } : {}),
        ...(o.lostTo !== undefined ? { lostTo: o.lostTo } : {}),
      },
      o.end ?? 3000,
    ),
  );
}

describe("attempts", () => {
  it("changed lines come from the verdict's diff stat; a verdict with no changed file is a no-op", () => {
    expect(changedLines(verdict({ diffStat: " x | 5 +++--\n 2 files changed, 3 insertions(+), 2 deletions(-)" }))).toBe(5);
    expect(changedLines(verdict({ diffStat: " 1 file changed, 4 deletions(-)" }))).toBe(4);
    expect(changedLines(verdict({ files: [] }))).toBe(0);
    expect(isNoop(verdict({ files: [] }))).toBe(true);
    expect(isNoop(verdict({}))).toBe(false);
    // The grading side may flag it in its own words: read defensively.
    expect(isNoop({ ...verdict({}), noop: true } as Verdict)).toBe(true);
    expect(isNoop({ ...verdict({}), flags: ["no-op"] } as unknown as Verdict)).toBe(true);
    expect(isWeakEvidence({ ...verdict({}), flags: { weakEvidence: true } } as unknown as Verdict)).toBe(true);
    expect(isWeakEvidence({ ...verdict({}), weakEvidence: true } as Verdict)).toBe(true);
    expect(isWeakEvidence(verdict({}))).toBe(false);
  });

  it("the winner is built and honest, with the fewest changed lines, then the earliest verdict; a no-op or a dishonest build never wins", () => {
    const ws = [
      worker("w1", { group: "g", index: 1, v: verdict({ lines: 9, gradedAt: 100 }) }),
      worker("w2", { group: "g", index: 2, v: verdict({ lines: 2, gradedAt: 300 }) }),
      worker("w3", { group: "g", index: 3, v: verdict({ lines: 2, gradedAt: 200 }) }),
      worker("w4", { group: "g", index: 4, v: verdict({ lines: 1, honest: false, claim: "honest-failure" }) }),
      worker("w5", { group: "g", index: 5, v: verdict({ files: [], gradedAt: 50 }) }),
      worker("w6", { group: "g", index: 6, state: "honest-failure", v: verdict({ verdict: "honest-failure", lines: 1, claim: "honest-failure" }) }),
      worker("w7", { group: "g", index: 7, state: "stopped", reason: stoppedForWinnerReason("w3"), lostTo: "w3" }),
    ];
    expect(pickWinner(ws)?.id).toBe("w3");
    const g = attemptGroup("g", [...ws].reverse());
    expect(g.winner).toBe("w3");
    expect(g.attempts.map((a) => a.workerId)).toEqual(["w1", "w2", "w3", "w4", "w5", "w6", "w7"]);
    expect(g.attempts[4]).toMatchObject({ noop: true, changedLines: 0 });
    expect(g.attempts[6]).toMatchObject({ verdict: null, honest: null, stoppedForWinner: true, lostTo: "w3", state: "stopped" });
    expect(g.settled).toBe(true);
    expect(pickWinner(ws.filter((w) => ["w4", "w5", "w6"].includes(w.id)))).toBeNull();
    // Once merged, an attempt stays the winner.
    const merged = ws.map((w) => (w.id === "w1" ? { ...w, merged: { into: "main", commit: "c" } } : w));
    expect(pickWinner(merged)?.id).toBe("w1");
  });
});

describe("lostTo", () => {
  it("a losing attempt names the attempt it lost to in its record, not in its reason's words", () => {
    const lost = (o: { state?: Worker["state"]; reason?: string; lostTo?: string | null }) => worker("x", { group: "g", state: "stopped", ...o }).lostTo;
    expect(lost({ reason: stoppedForWinnerReason("w-3"), lostTo: "w-3" })).toBe("w-3");
    // The engine's words can change: the record still says whom it lost to.
    expect(lost({ reason: "stopped: attempt 3 was built", lostTo: "w-3" })).toBe("w-3");
    // A stop this engine recorded for any other cause says so (null), whatever its reason's words (a person's, here
    // reading like the engine's): no loser.
    expect(lost({ reason: stoppedForWinnerReason("w-3"), lostTo: null })).toBeNull();
    expect(lost({ reason: "stopped by a person", lostTo: null })).toBeNull();
    // Resumed since (running, graded again): no longer stopped for anyone.
    expect(lost({ state: "running", reason: stoppedForWinnerReason("w-3"), lostTo: "w-3" })).toBeNull();
  });

  it("a log of an older engine (no lostTo on its stop) is read by its reason's words, as those engines wrote them", () => {
    const lost = (reason?: string) => worker("x", { group: "g", state: "stopped", ...(reason ? { reason } : {}) }).lostTo;
    expect(lost(stoppedForWinnerReason("w-3"))).toBe("w-3");
    expect(attemptGroup("g", [worker("x", { group: "g", state: "stopped", reason: stoppedForWinnerReason("w-3") })]).attempts[0]).toMatchObject({
      stoppedForWinner: true,
      lostTo: "w-3",
    });
    expect(lost("stopped by a person")).toBeNull();
    expect(lost()).toBeNull();
  });
});

describe("mergedSibling", () => {
  it("the attempt of the same task that was merged (not reverted): never the worker itself, nor one of another group", () => {
    const a = worker("a1", { group: "g", index: 1, state: "honest-failure" });
    const b = { ...worker("a2", { group: "g", index: 2, v: verdict({}) }), merged: { into: "main", commit: "c" } };
    const other = { ...worker("b1", { group: "h", index: 1, v: verdict({}) }), merged: { into: "main", commit: "d" } };
    expect(mergedSibling(a, [a, b, other])?.id).toBe("a2");
    expect(mergedSibling(b, [a, b, other])).toBeNull();
    expect(mergedSibling(a, [a, { ...b, reverted: { into: "main", commit: "r" } }, other])).toBeNull();
    expect(mergedSibling(worker("solo", {}), [b])).toBeNull();
  });
});

describe("ledger", () => {
  it("per target: pass@1 over graded attempts, pass@k over tasks, honest rate, cost per built task; a no-op built never counts", () => {
    const ws = [
      // target t1: one task of three attempts (one built, one failed, one stopped for the winner) …
      worker("a1", { target: "t1", group: "g1", index: 1, v: verdict({}), tokens: 100, start: 1000, end: 3000 }),
      worker("a2", {
        target: "t1",
        group: "g1",
        index: 2,
        state: "honest-failure",
        v: verdict({ verdict: "honest-failure", claim: "honest-failure" }),
        tokens: 50,
        start: 1000,
        end: 2000,
      }),
      worker("a3", { target: "t1", group: "g1", index: 3, state: "stopped", reason: stoppedForWinnerReason("a1"), tokens: 50, start: 1000, end: 2000 }),
      // … one single task that built nothing but was called built (a no-op): not counted as built …
      worker("s1", { target: "t1", v: verdict({ files: [] }), tokens: 100, start: 1000, end: 2000 }),
      // … and one dishonest failure.
      worker("s2", { target: "t1", state: "honest-failure", v: verdict({ verdict: "honest-failure", claim: "built", honest: false }), start: 1000, end: 2000 }),
      worker("b1", { target: "t2", state: "error" }),
    ];
    const rows = ledger(ws);
    expect(rows).toHaveLength(1); // t2 has no graded worker
    expect(rows[0]).toMatchObject({
      target: "t1",
      tasks: 3,
      graded: 4,
      passAt1: 0.25,
      k: 3,
      passAtK: 1 / 3,
      built: 1,
      roundsToBuilt: 1,
      honestRate: 0.75,
      tokensPerBuilt: 300,
      secPerBuilt: 6,
      noopBuilt: 1,
      workerIds: ["a1", "a2", "a3", "s1", "s2"],
    });
  });

  it("a retry is the same task: a failed worker and its built retry make one task built at k=2", () => {
    const first = worker("f1", {
      target: "t1",
      state: "honest-failure",
      v: verdict({ verdict: "honest-failure", claim: "honest-failure" }),
      start: 1000,
      end: 2000,
    });
    const retry = { ...worker("f2", { target: "t1", v: verdict({}), start: 3000, end: 4000 }), retryOf: "f1" };
    expect(ledger([first, retry])[0]).toMatchObject({ tasks: 1, graded: 2, passAt1: 0.5, k: 2, passAtK: 1, built: 1 });
  });

  it("rounds to built reads the worker's rounds when it has them", () => {
    const w = worker("r1", { v: verdict({}) });
    w.rounds = [1, 2, 3].map((round) => ({ ...w.rounds[0]!, round, verdict: round === 3 ? "built" : "honest-failure" }));
    expect(ledger([w])[0]!.roundsToBuilt).toBe(3);
  });
});
