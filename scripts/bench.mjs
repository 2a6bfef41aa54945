// `npm run bench`: bundle bench/run.ts and run it (results in bench/report.md and bench/report.json).
import { build } from "esbuild";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
spawnSync(process.execPath, [path.join(root, "scripts/build.mjs")], { stdio: "inherit" });
const out = path.join(root, "bench/tmp/bench.mjs");
await build({
  entryPoints: [path.join(root, "bench/run.ts")],
  outfile: out,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["opencode-ai"],
  banner: { js: "import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url); const __dirname = new URL('.', import.meta.url).pathname;" },
  logLevel: "warning",
});
const r = spawnSync(process.execPath, [out, ...process.argv.slice(2)], { stdio: "inherit", cwd: root });
process.exit(r.status ?? 1);
