import { describe, expect, it } from "vitest";
import type { Worker } from "../../shared/worker";
import { verdictCard } from "./push";

const worker = (spec: { task: string; title?: string }) =>
  ({
    id: "w1",
    spec,
    verdict: {
      verdict: "built",
      claim: "built",
      claimReason: null,
      honest: true,
      checks: [{ name: "npm test", passed: true, exitCode: 0, output: "" }],
      scope: { passed: true, violations: [], changedFiles: [] },
      gradedAt: 1,
      branch: null,
      worktree: null,
      commit: "abc",
      diffStat: "",
      mergeHint: null,
    },
  }) as unknown as Worker;

describe("verdictCard: the pull request body's title is workerTitle()", () => {
  it("takes the task's first non-blank line, not an empty first line", () => {
    expect(verdictCard(worker({ task: "\n  \nAdd a flag\nmore" })).split("\n")[0]).toBe("**Add a flag**");
  });

  it("cuts a long title at 100 characters with an ellipsis", () => {
    const first = verdictCard(worker({ task: "a".repeat(300) })).split("\n")[0]!;
    expect(first).toBe(`**${"a".repeat(99)}…**`);
  });
});
