// `npm test`: typecheck every environment, then unit + integration (vitest), the pure tier's guard, and e2e (Playwright), and print the totals
// of all runners as the last line: `N passed, N failed, N skipped`. Exit code 1 when anything failed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));
const reports = path.join(root, "test-results");
mkdirSync(reports, { recursive: true });
const totals = { passed: 0, failed: 0, skipped: 0 };
// What failed, by name: printed again just above the totals line, so the tail of a CI log says which test it was.
const failures = [];
const only = process.argv.slice(2);
const want = (name) => only.length === 0 || only.includes(name);

function count(code, label) {
  if (code === 0) totals.passed++;
  else {
    totals.failed++;
    failures.push(label);
  }
}

function run(label, cmd, args, env = {}) {
  console.log(`\n=== ${label}: ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", env: { ...process.env, ...env } });
  return r.status ?? 1;
}

// 1. Typecheck, one program per environment (a solution-style root config would check nothing).
if (want("typecheck")) {
  for (const p of ["tsconfig.node.json", "tsconfig.shared.json", "tsconfig.web.json", "tsconfig.electron.json"]) {
    if (!existsSync(path.join(root, p))) continue;
    const code = run(`typecheck ${p}`, "npx", ["tsc", "--noEmit", "-p", p]);
    count(code, `typecheck ${p}`);
  }
}

// 1b. The layering rule (scripts/layers.mjs): each layer imports only the ones below it.
if (want("typecheck") || want("layers")) {
  count(run("layering", process.execPath, [path.join(root, "scripts", "layers.mjs")]), "layering (scripts/layers.mjs)");
}

// 1b'. Dead exports (scripts/exports.mjs): an exported name nothing uses, not even a test.
if (want("typecheck") || want("layers")) {
  count(run("dead exports", process.execPath, [path.join(root, "scripts", "exports.mjs")]), "dead exports (scripts/exports.mjs)");
}

// 1c. Formatting and lint (Biome, biome.json): the formatter's output and the linter's rules, checked, never written.
if (want("typecheck") || want("lint")) {
  count(run("format + lint", "npx", ["biome", "check", "."]), "format + lint (biome check .)");
}

// 2. vitest (unit + integration) with a JSON report we can count.
/** A failure's first line, colours stripped and cut, so the CI tail says which assertion failed, not only which test. */
function firstLine(message) {
  const line = String(message ?? "")
    .replace(/\x1b\[[0-9;]*m/g, "")
    .split("\n")
    .find((l) => l.trim() !== "");
  return line ? `\n      ${line.trim().slice(0, 300)}` : "";
}
function vitestTotals(file) {
  if (!existsSync(file)) return null;
  const r = JSON.parse(readFileSync(file, "utf8"));
  for (const suite of r.testResults ?? []) {
    const file = path.relative(root, suite.name ?? "");
    const failed = (suite.assertionResults ?? []).filter((a) => a.status === "failed");
    for (const a of failed) failures.push(`${file} › ${a.fullName ?? a.title}${firstLine(a.failureMessages?.[0])}`);
    if (failed.length === 0 && suite.status === "failed") failures.push(`${file} (the file failed to run: ${(suite.message ?? "").split("\n")[0]})`);
  }
  return {
    passed: r.numPassedTests ?? 0,
    failed: (r.numFailedTests ?? 0) + (r.numRuntimeErrorTestSuites ?? 0),
    skipped: (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0),
  };
}
for (const project of ["unit", "integration"]) {
  if (!want(project)) continue;
  const out = path.join(reports, `vitest-${project}.json`);
  writeFileSync(out, "");
  const code = run(`vitest ${project}`, "npx", ["vitest", "run", "--project", project, "--reporter=default", "--reporter=json", `--outputFile.json=${out}`]);
  const t = readFileSync(out, "utf8") ? vitestTotals(out) : null;
  if (!t) {
    totals.failed++;
    failures.push(`vitest ${project}: no report (the runner exited ${code})`);
  } else {
    totals.passed += t.passed;
    totals.failed += t.failed;
    totals.skipped += t.skipped;
    if (code !== 0 && t.failed === 0) {
      // the runner failed outside any test (a crash, an unhandled error)
      totals.failed++;
      failures.push(`vitest ${project}: exited ${code} with every test passed (see "Unhandled Errors" above)`);
    }
  }
}

// 2b. The pure tier (`npm run test:pure`: the unit files that start no process), one step: its guard (test/pure-setup.ts)
// fails a file there that starts one, so the tier stays in seconds. Its tests are the unit tier's, counted there.
if (want("unit") || want("pure")) {
  count(
    run("pure tier", "npx", ["vitest", "run", "--project", "pure", "--reporter=dot"]),
    "pure tier (npm run test:pure: a file there started a process, or a test failed)",
  );
}

// 3. Playwright e2e (browser UI, Electron) when present.
if (want("e2e") && existsSync(path.join(root, "playwright.config.ts"))) {
  const out = path.join(reports, "playwright.json");
  writeFileSync(out, "");
  const code = run("playwright e2e", "npx", ["playwright", "test"], { PLAYWRIGHT_JSON_OUTPUT_NAME: out });
  const raw = readFileSync(out, "utf8");
  if (!raw) {
    totals.failed++;
    failures.push(`playwright: no report (it exited ${code})`);
  } else {
    const report = JSON.parse(raw);
    const s = report.stats ?? {};
    const walk = (suite) => {
      for (const spec of suite.specs ?? [])
        for (const t of spec.tests ?? [])
          if (t.status === "unexpected")
            failures.push(
              `${spec.file}:${spec.line} › ${spec.title}${t.projectName ? ` [${t.projectName}]` : ""}${firstLine(t.results?.at(-1)?.error?.message)}`,
            );
      for (const child of suite.suites ?? []) walk(child);
    };
    for (const suite of report.suites ?? []) walk(suite);
    totals.passed += (s.expected ?? 0) + (s.flaky ?? 0);
    totals.failed += s.unexpected ?? 0;
    totals.skipped += s.skipped ?? 0;
    if (code !== 0 && !s.unexpected) {
      totals.failed++;
      failures.push(`playwright: exited ${code} with no test failed`);
    }
  }
}

if (failures.length > 0) console.log(`\nWhat failed:\n${failures.map((f) => `  ✘ ${f}`).join("\n")}`);
const line = `${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`;
writeFileSync(path.join(reports, "totals.txt"), line + "\n");
console.log(`\n${line}`);
process.exit(totals.failed ? 1 : 0);
