import { describe, expect, it } from "vitest";
import { renderMarkdown, type Report } from "./report";
import { spread } from "./stats";
import { goalText, interleaving, loadNote, medianInterval, noise, overloaded, verdict } from "./trust";

describe("load per part", () => {
  it("marks a part whose 1-minute load was above the core count at its start or its end", () => {
    expect(overloaded({ before: [1.5, 1, 1], after: [1.9, 1, 1], seconds: 10 }, 2)).toBe(false);
    expect(overloaded({ before: [2.5, 1, 1], after: [1.2, 1, 1], seconds: 10 }, 2)).toBe(true);
    expect(overloaded({ before: [0.5, 1, 1], after: [7, 1, 1], seconds: 10, cores: 2 })).toBe(true);
    // The 5- and 15-minute figures are history, not this part's load.
    expect(overloaded({ before: [0.5, 9, 9], after: [0.5, 9, 9], seconds: 10, cores: 2 })).toBe(false);
    // No core count recorded (an older report): nothing is claimed.
    expect(overloaded({ before: [9, 9, 9], after: [9, 9, 9], seconds: 10 })).toBe(false);
    expect(loadNote({ before: [3.1, 0, 0], after: [5.2, 0, 0], seconds: 1, cores: 2 })).toBe("load 3.1 → 5.2 on 2 cores, **above the core count**");
    expect(loadNote({ before: [0.4, 0, 0], after: [1.2, 0, 0], seconds: 1, cores: 2 })).toBe("load 0.4 → 1.2 on 2 cores");
  });
});

describe("a figure against its goal", () => {
  it("is clear of the goal only when every repetition is on the same side", () => {
    expect(verdict(spread([1.01, 1.03, 1.02]), 1.05)).toBe("met");
    expect(verdict(spread([1.1, 1.2, 1.3]), 1.05)).toBe("not met");
    expect(verdict(spread([1.0, 1.04, 1.3]), 1.05)).toBe("met, within noise");
    expect(verdict(spread([0.98, 1.1, 1.2]), 1.05)).toBe("not met, within noise");
    // A goal to reach (≥): frames per second.
    expect(verdict(spread([58, 59, 61]), 60, false)).toBe("not met, within noise");
    expect(verdict(spread([60, 61]), 60, false)).toBe("met");
  });

  it("says when one run cannot show its noise", () => {
    expect(verdict(spread([1.2]), 1.05)).toBe("not met");
    expect(noise(spread([1.2]))).toBe(0);
    expect(goalText(spread([1.2]), 1.05)).toBe("1.2 — **not met** (one run, its noise unknown; goal ≤ 1.05)");
  });

  it("states the spread as ± half the range", () => {
    expect(noise(spread([1.0, 1.3, 1.1], 2))).toBeCloseTo(0.15);
    expect(goalText(spread([0.98, 1.1, 1.2], 2), 1.05)).toBe(
      "1.1 [0.98–1.2] — not met, within noise (± 0.11 over 3 runs, too few for an interval of the median; goal ≤ 1.05)",
    );
    expect(goalText(undefined, 1.05)).toBe("not measured");
  });
});

describe("the interval of a median", () => {
  const runs = (n: number) => Array.from({ length: n }, (_, i) => n - i); // n … 1: the order must not matter
  it("takes the order statistics whose binomial coverage reaches 95 %, and none below 6 runs", () => {
    expect(medianInterval(runs(5))).toBeNull();
    expect(medianInterval(runs(6))).toEqual({ lo: 1, hi: 6, coverage: 1 - 2 / 64 });
    // 12 runs: the 3rd and 10th (1 − 2·(1 + 12 + 66)/4096); the 4th and 9th would hold the median only 85 % of the time.
    expect(medianInterval(runs(12))).toEqual({ lo: 3, hi: 10, coverage: 1 - (2 * 79) / 4096 });
    // 24 runs: the 7th and 18th (P(B ≤ 6) = 190051 / 2^24).
    const i = medianInterval(runs(24))!;
    expect([i.lo, i.hi]).toEqual([7, 18]);
    expect(i.coverage).toBeCloseTo(1 - (2 * 190051) / 2 ** 24, 12);
    expect(medianInterval(runs(12), 0.99)).toEqual({ lo: 2, hi: 11, coverage: 1 - (2 * 13) / 4096 });
  });

  it("decides against a goal from 6 runs on: an outlying run no longer makes a clear median within noise", () => {
    // Twelve runs, one of them far out on each side: every run but two meets the goal, and so does the interval.
    const twelve = spread([0.8, 0.97, 0.98, 0.99, 1.0, 1.0, 1.01, 1.01, 1.02, 1.03, 1.04, 1.3], 2);
    expect(verdict(twelve, 1.05)).toBe("met");
    expect(goalText(twelve, 1.05)).toBe("1 [0.8–1.3] — **met** (96 % interval of the median 0.98–1.03 over 12 runs; goal ≤ 1.05)");
    // The same runs shifted by 0.03: the interval reaches past the goal, the median does not.
    const shift = (d: number) =>
      spread(
        twelve.runs.map((x) => x + d),
        2,
      );
    expect(verdict(shift(0.03), 1.05)).toBe("met, within noise");
    // Shifted by 0.1: the whole interval is past it.
    expect(verdict(shift(0.1), 1.05)).toBe("not met");
    // Five runs: the spread still decides.
    expect(verdict(spread([0.8, 1.0, 1.01, 1.02, 1.3], 2), 1.05)).toBe("met, within noise");
  });
});

describe("the two sides of a ratio take turns", () => {
  const seq = (...xs: [string, number][]) => xs.map(([side, rep]) => ({ side, rep }));
  it("accepts A,B then B,A, and counts the other runs between a pair", () => {
    expect(interleaving(seq(["bare", 0], ["engine", 0], ["clone", 0], ["clone", 1], ["engine", 1], ["bare", 1]), "engine", "clone")).toEqual({
      why: null,
      gap: 0,
    });
    expect(interleaving(seq(["engine", 0], ["x", 0], ["clone", 0], ["clone", 1], ["engine", 1]), "engine", "clone")).toEqual({ why: null, gap: 1 });
  });
  it("refuses the same side first twice in a row, and a repetition without both sides", () => {
    expect(interleaving(seq(["engine", 0], ["clone", 0], ["engine", 1], ["clone", 1]), "engine", "clone").why).toMatch(
      /engine went first in repetitions 1 and 2/,
    );
    expect(interleaving(seq(["engine", 0], ["clone", 0], ["engine", 1]), "engine", "clone").why).toMatch(
      /repetition 2 ran engine, not one engine and one clone/,
    );
  });
});

describe("the report", () => {
  it("marks the parts measured above the core count and states each ratio against its goal with its noise", () => {
    const r = {
      machine: { cpus: 2, memGb: 8, node: "v20", platform: "linux", opencode: "1" },
      date: "2026-01-01T00:00:00Z",
      quick: false,
      reps: 3,
      reproduce: "npm run bench",
      gateLatencyMs: {},
      pollBaselineMs: { p50: 0, p99: 0 },
      pollMs: {},
      batchRatio: { w16: 1.1 },
      batchRatioSameWorkspaces: { w16: 1.1 },
      batchMs: { engineW16: 1, bareW16: 1, bareCloneW16: 1, builtW16: 16, bareBuiltW16: 16, bareCloneBuiltW16: 16 },
      partLoad: {
        batch: { before: [3.5, 2, 2], after: [4, 2, 2], seconds: 100, cores: 2 },
        gate: { before: [0.5, 2, 2], after: [1, 2, 2], seconds: 10, cores: 2 },
      },
      batchSequence: [
        { side: "engine", rep: 0, size: 16 },
        { side: "bareClone", rep: 0, size: 16 },
        { side: "bareClone", rep: 1, size: 16 },
        { side: "engine", rep: 1, size: 16 },
      ],
      engine: {},
      manyWorkers: {
        workers: 0,
        finished: 0,
        wallMs: 0,
        rssMbBefore: 0,
        rssMbAfter: 0,
        rssMbPeak: 0,
        logBytes: 0,
        logBytesOfRun: 0,
        finalStates: {},
        samples: [],
      },
      ui: null,
      fit: { maxErrPct: 0, meanErrPct: 0, totalMaxErrPct: 0, totalMeanErrPct: 0, source: "x", n: 0, byBuffer: {}, recorded: {}, live: null },
      hardware: { detectMs: 0, gpus: 0, probes: "" },
      startupMs: {},
      range: {
        "batchRatio.w16": spread([1.0, 1.1, 1.2], 2),
        "batchRatioSameWorkspaces.w16": spread([1.08, 1.1, 1.3], 2),
      },
      totalSeconds: 1,
    } as unknown as Report;
    const md = renderMarkdown(r);
    expect(md).toMatch(/\| batch \| 3.5, 2, 2 \| 4, 2, 2 \| 100 \| \*\*above the 2 cores\*\* \|/);
    expect(md).toMatch(/\| gate \| 0.5, 2, 2 \| 1, 2, 2 \| 10 \| \|/);
    expect(md).toContain("1.1 [1.08–1.3] — **not met** (± 0.11 over 3 runs, too few for an interval of the median; goal ≤ 1.05)");
    expect(md).toContain("1.1 [1–1.2] — not met, within noise (± 0.1 over 3 runs, too few for an interval of the median; goal ≤ 1.05)");
    expect(md).toContain("Parts measured with the machine's load above its 2 cores: batch;");
    expect(md).toContain(
      "| engine ÷ bare SDK on private clones, 16 tasks | 1.1 [1.08–1.3] — **not met** (± 0.11 over 3 runs, too few for an interval of the median; goal ≤ 1.05) | 3.5 → 4 (**above its 2 cores**) | yes, back to back |",
    );
    // The worktree baseline's side ("bare") never ran in this sequence: the report says so rather than claiming turns.
    expect(md).toContain(
      "| engine ÷ bare SDK on worktrees, 16 tasks | 1.1 [1–1.2] — not met, within noise (± 0.1 over 3 runs, too few for an interval of the median; goal ≤ 1.05) | 3.5 → 4 (**above its 2 cores**) | **no**: repetition 1 ran engine, not one engine and one bare |",
    );
  });
});
