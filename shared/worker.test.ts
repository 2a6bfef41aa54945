import { describe, expect, it } from "vitest";
import { reduceWorker, summarizePart, WorkerSpec, workerTitle, type WorkerEvent } from "./worker";

const spec = WorkerSpec.parse({ task: "t", directory: "/repo" });
const ev = (seq: number, body: Record<string, unknown>) => ({ workerId: "w1", seq, ts: 1000 + seq, ...body }) as WorkerEvent;

describe("reduceWorker", () => {
  it("folds state, asks and verdicts in order", () => {
    let w = reduceWorker(null, ev(1, { type: "worker.created", spec, batchId: null, targetId: "t" }));
    expect(w.state).toBe("queued");
    w = reduceWorker(w, ev(2, { type: "worker.state", state: "starting" }));
    expect(w.startedAt).toBe(1002);
    const ask = {
      id: "per_1",
      workerId: "w1",
      sessionId: "s",
      kind: "permission",
      tool: "bash",
      what: "ls",
      patterns: [],
      always: [],
      createdAt: 1,
      status: "pending",
    };
    w = reduceWorker(w, ev(3, { type: "ask.opened", ask }));
    w = reduceWorker(w, ev(4, { type: "worker.state", state: "waiting-approval" }));
    expect(w.asks).toHaveLength(1);
    w = reduceWorker(w, ev(5, { type: "ask.resolved", askId: "per_1", status: "decided", decision: "once", by: { kind: "person" } }));
    expect(w.asks[0]).toMatchObject({ status: "decided", decision: "once", decidedAt: 1005 });
    w = reduceWorker(w, ev(6, { type: "part", part: { partId: "p", messageId: "m", kind: "tool", tool: "bash", status: "running" } }));
    expect(w.currentTool).toBe("bash");
    w = reduceWorker(w, ev(7, { type: "worker.state", state: "honest-failure", reason: "check failed" }));
    expect(w).toMatchObject({ state: "honest-failure", stateReason: "check failed", endedAt: 1007, currentTool: null, lastSeq: 7 });
  });
  it("keeps rounds: a verdict grades the latest round (a regrade replaces it), a follow-up starts the next and clears the worker's verdict", () => {
    const verdict = (v: "built" | "honest-failure", commit: string, extra: Record<string, unknown> = {}) => ({
      verdict: v,
      claim: "built",
      claimReason: null,
      honest: v === "built",
      checks: [],
      scope: { passed: true, violations: [], changedFiles: ["a"] },
      gradedAt: 5,
      branch: null,
      worktree: null,
      commit,
      diffStat: "",
      mergeHint: null,
      ...extra,
    });
    let w = reduceWorker(null, ev(1, { type: "worker.created", spec, batchId: null, targetId: "t" }));
    expect(w.rounds).toEqual([expect.objectContaining({ round: 1, kind: "task", verdict: null, ran: false })]);
    w = reduceWorker(w, ev(2, { type: "worker.state", state: "running" }));
    w = reduceWorker(w, ev(3, { type: "verdict", verdict: verdict("honest-failure", "c1") }));
    w = reduceWorker(w, ev(4, { type: "verdict", verdict: verdict("honest-failure", "c1b") })); // a regrade after a restart
    expect(w.rounds).toHaveLength(1);
    expect(w.rounds[0]).toMatchObject({ verdict: "honest-failure", commit: "c1b", ran: true, weakEvidence: false, reason: null });
    w = reduceWorker(w, ev(5, { type: "worker.baseline", baseline: { passedOnBase: ["x"] } }));
    expect(w.baseline).toEqual({ passedOnBase: ["x"] });
    const comments = [{ file: "a.ts", line: 3, body: "rename" }];
    w = reduceWorker(w, ev(6, { type: "round.started", round: 2, kind: "review", message: "- a.ts:3 — rename", comments, by: { kind: "person" } }));
    expect(w.verdict).toBeNull();
    expect(w.rounds[1]).toMatchObject({ round: 2, kind: "review", comments, verdict: null, ran: false });
    w = reduceWorker(w, ev(7, { type: "worker.state", state: "running" }));
    w = reduceWorker(w, ev(8, { type: "verdict", verdict: verdict("built", "c2", { weakEvidence: true, sincePrevious: ["a"] }) }));
    expect(w.rounds.map((r) => [r.round, r.verdict, r.commit, r.ran, r.weakEvidence, r.changed])).toEqual([
      [1, "honest-failure", "c1b", true, false, null],
      [2, "built", "c2", true, true, ["a"]],
    ]);
    expect(w.verdict?.commit).toBe("c2");
  });
  it("refuses events for a worker it never saw created", () => {
    expect(() => reduceWorker(null, ev(1, { type: "worker.state", state: "running" }))).toThrow(/unknown worker/);
  });
});

describe("WorkerSpec", () => {
  it("says what is wrong with bad input", () => {
    expect(WorkerSpec.safeParse({ task: " ", directory: "/r" }).error?.issues[0]?.message).toMatch(/task is empty/);
    expect(WorkerSpec.safeParse({ task: "x", directory: "rel" }).error?.issues[0]?.message).toMatch(/absolute/);
    expect(WorkerSpec.safeParse({ task: "x", directory: "/r", checks: [{ file: "/etc/passwd" }] }).success).toBe(false);
    expect(WorkerSpec.safeParse({ task: "x".repeat(100_001), directory: "/r" }).error?.issues[0]?.message).toMatch(/100,000/);
  });

  it("a directory pasted in quotes or typed with ~ is told what to write instead", () => {
    const why = (directory: string) => WorkerSpec.safeParse({ task: "x", directory }).error?.issues[0]?.message;
    expect(why("rel")).toBe("directory must be an absolute path to a git repository");
    expect(why('"/home/me/repo"')).toBe("directory must be an absolute path to a git repository: leave out the quotes around it (/home/me/repo)");
    expect(why("'/home/me/repo'")).toMatch(/leave out the quotes around it \(\/home\/me\/repo\)$/);
    expect(why("~/repo")).toMatch(/"~" is not expanded here/);
    expect(why("~")).toMatch(/"~" is not expanded here/);
    expect(why("~bob/repo")).toBe("directory must be an absolute path to a git repository");
  });
});

describe("workerTitle", () => {
  it("is the title, else the first non-blank line, cut with an ellipsis at max", () => {
    expect(workerTitle({ title: " Fix it ", task: "x" })).toBe("Fix it");
    expect(workerTitle({ task: "\n  \n  Add a flag\nmore" })).toBe("Add a flag");
    expect(workerTitle({ task: "   " })).toBe("(untitled task)");
    const long = workerTitle({ task: "a".repeat(200) }, 50);
    expect(long).toHaveLength(50);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("summarizePart (a card's last line)", () => {
  it("a first line over 160 characters is cut and says so with …; a short one is whole", () => {
    const long = `Ran it. ${Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ")}`;
    const cut = summarizePart({ partId: "p", messageId: "m", kind: "text", text: `${long}\nsecond line` });
    expect(cut).toHaveLength(160);
    expect(cut.endsWith("…")).toBe(true);
    expect(long.startsWith(cut.slice(0, -1))).toBe(true);
    expect(summarizePart({ partId: "p", messageId: "m", kind: "text", text: "\n  \nWrote it.\nmore" })).toBe("Wrote it.");
    expect(summarizePart({ partId: "p", messageId: "m", kind: "text", text: "x".repeat(160) })).toBe("x".repeat(160));
  });
});
