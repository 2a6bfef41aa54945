import { describe, expect, it } from "vitest";
import type { CheckSpec } from "../../shared/check";
import { Verdict } from "../../shared/verdict";
import { fixPrompt } from "./prompts";

const verdict = (checks: { name: string; passed: boolean; exitCode: number; output: string }[]) =>
  Verdict.parse({
    verdict: "honest-failure",
    claim: "built",
    claimReason: null,
    honest: false,
    checks,
    scope: { passed: true, violations: [], changedFiles: ["calc.py"] },
    gradedAt: 0,
    branch: null,
    worktree: null,
    diffStat: "",
    mergeHint: null,
  });

describe("a fix round's prompt", () => {
  const specs: CheckSpec[] = [
    { run: "python3 -m pytest tests", files: "/srv/held", name: "held-back tests" },
    { run: "npm test", name: "the repository's tests" },
    { file: "out.txt" },
  ];
  const v = verdict([
    { name: "held-back tests", passed: false, exitCode: 1, output: "=== check_calc.py\nassert add(2, 3) == 5  # HELD-BACK-SECRET\n" },
    { name: "the repository's tests", passed: false, exitCode: 2, output: "FAIL test/a.test.js: expected 4, got 0" },
    { name: "check 3", passed: false, exitCode: 1, output: "out.txt is missing" },
  ]);
  const text = fixPrompt(specs, v, 1, 2);

  it("names every failing check with its exit code", () => {
    expect(text).toMatch(/^Fix round 1 of 2\./);
    expect(text).toMatch(/- failed: held-back tests \(exit 1\)/);
    expect(text).toMatch(/- failed: the repository's tests \(exit 2\)/);
    expect(text).toMatch(/- failed: check 3 \(exit 1\)/);
  });

  it("shows no output of a check with held-back files (the worker's code ran beside them and could print them), and says so", () => {
    expect(text).not.toContain("HELD-BACK-SECRET");
    expect(text).not.toContain("check_calc.py");
    expect(text).toMatch(/held-back tests \(exit 1\) — its output is not shown: it ran beside held-back tests/);
  });

  it("shows the end of the other checks' output", () => {
    expect(text).toContain("FAIL test/a.test.js: expected 4, got 0");
    expect(text).toContain("out.txt is missing");
  });
});
