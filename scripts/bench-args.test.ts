import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module of the scripts, without types
import { runsDashboardBench } from "./bench-args.mjs";

describe("npm run bench: whether the dashboard bench runs after the engine's parts", () => {
  it("runs for a whole run, and for an --only list that names ui", () => {
    expect(runsDashboardBench([])).toBe(true);
    expect(runsDashboardBench(["--reps", "3"])).toBe(true);
    expect(runsDashboardBench(["--only", "cost,ui"])).toBe(true);
  });

  it("does not run with --no-ui, --help, or an --only list without ui", () => {
    expect(runsDashboardBench(["--no-ui"])).toBe(false);
    expect(runsDashboardBench(["--help"])).toBe(false);
    expect(runsDashboardBench(["--only", "cost"])).toBe(false);
  });

  it("never runs for a merge, which measures nothing", () => {
    expect(runsDashboardBench(["--merge-part", "cost", "--from", "x.json", "--into-report"])).toBe(false);
    expect(runsDashboardBench(["--merge-many", "x.json"])).toBe(false);
    expect(runsDashboardBench(["--merge-grading", "x.jsonl"])).toBe(false);
  });
});
