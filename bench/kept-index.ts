// Grading's git way on a large repository with one file changed: from the checkout's kept index (only files whose stat
// data changed are read again) against the base's index (every tracked file read and hashed again, as before), taking
// turns on the same workspace. Wall time of commitAndCheckOut, the CPU of the git it started (children of this
// process) and of the engine's own thread, medians. Run under the lock: flock /work/bench.lock npx jiti bench/kept-index.ts [FILES...] [--reps N]
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { commitAndCheckOut, createWorkspace, inspectRepo, keptIndexUseOf } from "../engine/workspace/workspace";

const args = process.argv.slice(2);
const repsAt = args.indexOf("--reps");
const reps = repsAt >= 0 ? Number(args[repsAt + 1]) : 5;
const sizes = args.filter((a, i) => /^\d+$/.test(a) && i !== repsAt + 1).map(Number);
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-kept-index-"));
const tick = 100; // USER_HZ
/** CPU seconds of this process's waited-for children (git), from /proc/self/stat (cutime + cstime). */
const childCpu = () => {
  const f = readFileSync("/proc/self/stat", "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[13]) + Number(rest[14])) / tick;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const load = () => os.loadavg()[0]!.toFixed(2);

try {
  for (const files of sizes.length ? sizes : [3000, 20000]) {
    const repo = path.join(tmp, `repo-${files}`);
    mkdirSync(repo);
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
    // Files of ~1.5 KB in folders of 50, as a source tree.
    for (let i = 0; i < files; i++) {
      const dir = path.join(repo, `pkg${i % 40}`, `mod${Math.floor(i / 40) % 25}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, `f${i}.ts`), `export const value${i} = ${i};\n`.repeat(50));
    }
    execFileSync("git", ["-C", repo, "add", "-A"]);
    execFileSync("git", ["-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "base"]);
    const ws = await createWorkspace(path.join(tmp, "ws"), await inspectRepo(repo), `w${files}`, path.join(tmp, "repos", `w${files}.git`));
    // A worker's turn: its files are older than the second grading trusts.
    await new Promise((r) => setTimeout(r, 2500));
    writeFileSync(path.join(ws.worktree, "pkg1/mod0/f1.ts"), "export const changed = true;\n");
    const meta = path.join(ws.gitDir, "checkout-index.json");
    const use = await keptIndexUseOf(ws);
    console.log(`${files} files, 1 changed (${reps} reps; the kept index leaves ${use?.kept} entries to git's stat check, smudges ${use?.reread}):`);
    // A file check's grading (only the checked file checked out) and a full checkout's.
    for (const only of [["pkg1/mod0/f1.ts"], undefined]) {
      const res = {
        kept: { ms: [] as number[], git: [] as number[], self: [] as number[] },
        before: { ms: [] as number[], git: [] as number[], self: [] as number[] },
      };
      const loadBefore = load();
      for (let i = 0; i < reps; i++) {
        for (const side of i % 2 ? (["before", "kept"] as const) : (["kept", "before"] as const)) {
          if (side === "before") renameSync(meta, `${meta}.aside`);
          const c0 = childCpu();
          const s0 = process.cpuUsage();
          const t0 = performance.now();
          const g = await commitAndCheckOut(ws, "ocw: bench", path.join(tmp, `checkout-${files}`), undefined, only, "git");
          res[side].ms.push(performance.now() - t0);
          res[side].git.push(childCpu() - c0);
          const s1 = process.cpuUsage(s0);
          res[side].self.push((s1.user + s1.system) / 1e6);
          if (side === "before") renameSync(`${meta}.aside`, meta);
          if (g.changed.join() !== "pkg1/mod0/f1.ts") throw new Error(`unexpected change: ${g.changed.join()}`);
        }
      }
      const f = (s: "kept" | "before") =>
        `${median(res[s].ms).toFixed(0)} ms wall, git CPU ${median(res[s].git).toFixed(2)} s, engine CPU ${median(res[s].self).toFixed(3)} s`;
      console.log(`  ${only ? "checkout of the checked file only" : "full checkout"} (load ${loadBefore} → ${load()}):`);
      console.log(`    base index (before): ${f("before")}`);
      console.log(`    kept index (now):    ${f("kept")}`);
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
