// What `npm run bench`'s arguments ask of scripts/bench.mjs beyond bench/run.ts: whether the Playwright dashboard bench
// (the part "ui") runs after it.

/**
 * Whether the dashboard bench runs: not with --no-ui or --help, not for an --only list that does not name "ui" (a
 * cost-only run must not stream a dashboard for 10 minutes after its figures are written), and never for a merge
 * (--merge-part, --merge-many, --merge-grading, --merge-ui), which measures nothing (a merge of the cost part once streamed
 * a dashboard for 10 minutes).
 * @param {string[]} args
 */
export function runsDashboardBench(args) {
  if (args.includes("--no-ui") || args.includes("--help") || args.some((a) => a.startsWith("--merge-"))) return false;
  const onlyAt = args.indexOf("--only");
  if (onlyAt < 0) return true;
  return (args[onlyAt + 1] ?? "")
    .split(",")
    .map((p) => p.trim())
    .includes("ui");
}
