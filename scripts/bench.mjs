// `npm run bench [-- --help] [-- --quick] [-- --reps N] [-- --workers N] [-- --only parts] [-- --no-ui]`: bundle bench/run.ts and run it (the engine,
// MCP, fit and start-up figures), then the Playwright dashboard bench (e2e/bench/), and merge both into
// bench/report.md and bench/report.json. OCW_BENCH_SEC sets how long the dashboard streams (default 600, --quick 20).
import { build } from "esbuild";
import { runsDashboardBench } from "./bench-args.mjs";
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const repsAt = args.indexOf("--reps");
const reps = repsAt >= 0 ? args[repsAt + 1] : quick ? "1" : "3";

if (!args.includes("--help")) spawnSync(process.execPath, [path.join(root, "scripts/build.mjs")], { stdio: "inherit" });
const out = path.join(root, "bench/tmp/bench.mjs");
await build({
  entryPoints: [path.join(root, "bench/run.ts")],
  outfile: out,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["opencode-ai"],
  banner: {
    js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url); const __dirname = new URL('.', import.meta.url).pathname;",
  },
  logLevel: "warning",
});
const node = spawnSync(process.execPath, [out, ...args.filter((a) => a !== "--no-ui")], { stdio: "inherit", cwd: root });
if (node.status !== 0) process.exit(node.status ?? 1);
// The dashboard bench is the part "ui" (bench-args.mjs says when it runs).
if (!runsDashboardBench(args)) process.exit(0);

const uiOut = path.join(root, "bench/tmp/ui.json");
rmSync(uiOut, { force: true });
const t0 = Date.now();
const ui = spawnSync("npx", ["playwright", "test", "-c", "playwright.bench.config.ts"], {
  stdio: "inherit",
  cwd: root,
  env: {
    ...process.env,
    OCW_BENCH_SEC: process.env.OCW_BENCH_SEC ?? (quick ? "20" : "600"),
    OCW_BENCH_REPS: reps,
    OCW_BENCH_UI_OUT: uiOut,
    // Its own scratch dir: the e2e global setup clears the run dir's leftovers, which must not hit a concurrent `npm test`.
    OCW_E2E_RUN_DIR: process.env.OCW_E2E_RUN_DIR ?? path.join(os.tmpdir(), `ocw-bench-${process.getuid?.() ?? "run"}`),
  },
});
const merged = spawnSync(process.execPath, [out, ...args.filter((a) => a !== "--no-ui"), "--merge-ui", uiOut], {
  stdio: "inherit",
  cwd: root,
  env: {
    ...process.env,
    OCW_BENCH_UI_SECONDS: String((Date.now() - t0) / 1000),
    OCW_BENCH_UI_ERROR: ui.status === 0 ? "" : `the Playwright bench exited ${ui.status ?? ui.signal}`,
  },
});
process.exit(ui.status !== 0 ? (ui.status ?? 1) : (merged.status ?? 1));
