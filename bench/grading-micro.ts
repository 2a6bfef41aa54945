// Grading alone, this checkout's engine against another source tree's (an earlier commit's, unpacked with
// `git archive <commit> engine shared test/fixtures | tar -x -C DIR`), taking turns worker by worker: wall time and
// CPU per grading (a worker that wrote one file, graded with a file check, no sandbox) and the git processes it
// started, counted by a `git` first on PATH that logs each start. FILES=200,1500 runs it on repositories of those
// many files (default 200). Run: [FILES=…] npx jiti bench/grading-micro.ts DIR [N] [LABEL]
import { appendFileSync, chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";

const other = path.resolve(process.argv[2] ?? "bench/tmp/before-src");
const n = Number(process.argv[3] ?? 16);
/** What the other tree is, for the record (e.g. "afb41fc"). */
const label = process.argv[4];
const here = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-grade-micro-"));
const shim = path.join(tmp, "bin");
const log = path.join(tmp, "git.log");
mkdirSync(shim);
const realGit = execFileSync("sh", ["-c", "command -v git"], { encoding: "utf8" }).trim();
writeFileSync(path.join(shim, "git"), `#!/bin/sh\necho x >> ${JSON.stringify(log)}\nexec ${JSON.stringify(realGit)} "$@"\n`);
chmodSync(path.join(shim, "git"), 0o755);
process.env.PATH = `${shim}:${process.env.PATH}`;
const count = () => {
  try {
    return readFileSync(log, "utf8").split("\n").length - 1;
  } catch {
    return 0;
  }
};

const loadAtStart = Math.round(os.loadavg()[0]! * 100) / 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const sides = [
  { name: "this checkout", root: here },
  { name: path.relative(here, other), root: other },
];
const mods = await Promise.all(
  sides.map(async (s) => ({
    ...s,
    grade: (await import(path.join(s.root, "engine/grading/grade.ts"))).grade as typeof import("../engine/grading/grade").grade,
    baseline: (await import(path.join(s.root, "engine/grading/grade.ts"))).baselineChecks as typeof import("../engine/grading/grade").baselineChecks,
    ws: await import(path.join(s.root, "engine/workspace/workspace.ts")),
    repo: (await import(path.join(s.root, "test/fixtures/git-repo.ts"))).committedRepo,
  })),
);
/** CPU seconds of this process's reaped children (git), in ms: /proc/self/stat's cutime and cstime. */
const childrenCpuMs = () => {
  const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(f[13]) + Number(f[14])) * (1000 / 100);
};
const sizes = (process.env.FILES ?? "200").split(",").map(Number);
const bySize: { repoFiles: number; out: Record<string, unknown>[] }[] = [];
for (const size of sizes) {
  const files: Record<string, string> = { "README.md": "# r\n" };
  for (let i = 0; i < size - 1; i++) files[`src/d${i % 20}/m${i}.ts`] = `export const x${i} = ${i};\n`;
  const results = mods.map(() => ({
    ms: [] as number[],
    cpu: [] as number[],
    gitCpu: [] as number[],
    gits: [] as number[],
    baseMs: [] as number[],
    baseGits: [] as number[],
    built: 0,
  }));
  for (let i = 0; i < n; i++) {
    for (const [k, m] of i % 2 ? [...mods.entries()].reverse() : [...mods.entries()]) {
      const repo = m.repo(path.join(tmp, `repo-${size}-${k}-${i}`), files);
      const ws = await m.ws.createWorkspace(
        path.join(tmp, `ws-${k}`),
        await m.ws.inspectRepo(repo),
        `w-${size}-${i}`,
        path.join(tmp, "objects", `w-${size}-${k}-${i}.git`),
      );
      // The checks on the base commit, as the engine runs them beside a worker's start.
      const b0 = count();
      const tb = performance.now();
      await m.baseline({ workspace: ws, checks: [{ file: "f.txt" }], checkoutDir: path.join(tmp, `grading-${k}`, `w-${size}-${i}.base`) });
      results[k]!.baseMs.push(performance.now() - tb);
      results[k]!.baseGits.push(count() - b0);
      writeFileSync(path.join(ws.worktree, "f.txt"), "x\n");
      // A worker runs for seconds: its checkout is of an earlier second than its grading (as in the engine).
      await new Promise((r) => setTimeout(r, 1100));
      const before = count();
      const cpu0 = process.cpuUsage();
      const git0 = childrenCpuMs();
      const t0 = performance.now();
      const v = await m.grade({
        workspace: ws,
        checks: [{ file: "f.txt" }],
        scope: [],
        protect: [],
        finalText: "OUTCOME: built",
        title: "t",
        checkoutDir: path.join(tmp, `grading-${k}`, `w-${size}-${i}`),
      });
      results[k]!.ms.push(performance.now() - t0);
      const cpu = process.cpuUsage(cpu0);
      results[k]!.cpu.push((cpu.user + cpu.system) / 1000);
      results[k]!.gitCpu.push(childrenCpuMs() - git0);
      results[k]!.gits.push(count() - before);
      if (v.verdict === "built") results[k]!.built++;
    }
  }
  bySize.push({
    repoFiles: size,
    out: mods.map((m, k) => ({
      side: m.name,
      gradings: n,
      built: results[k]!.built,
      medianMs: Math.round(median(results[k]!.ms)),
      minMs: Math.round(Math.min(...results[k]!.ms)),
      maxMs: Math.round(Math.max(...results[k]!.ms)),
      engineCpuMs: Math.round(median(results[k]!.cpu) * 10) / 10,
      gitCpuMs: Math.round((results[k]!.gitCpu.reduce((a, b) => a + b, 0) / n) * 10) / 10,
      gitProcessesPerGrading: median(results[k]!.gits),
      baseChecksMedianMs: Math.round(median(results[k]!.baseMs)),
      gitProcessesPerBaseCheck: median(results[k]!.baseGits),
    })),
  });
}
const first = bySize[0]!;
const record = {
  at: new Date().toISOString(),
  load: [loadAtStart, Math.round(os.loadavg()[0]! * 100) / 100],
  cores: os.availableParallelism(),
  repoFiles: first.repoFiles,
  other: label ? `${label} (${path.relative(here, other)})` : path.relative(here, other),
  out: first.out,
  bySize,
};
console.log(JSON.stringify(record, null, 2));
appendFileSync(path.join(here, "bench", "tmp", "grading-micro.jsonl"), `${JSON.stringify(record)}\n`);
rmSync(tmp, { recursive: true, force: true });
