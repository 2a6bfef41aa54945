// Limits that bind as root, for real: each worker command and each check run gets its own cgroup (pids.max, a memory
// limit) under the engine's, joined before bubblewrap starts and removed after. RLIMIT_NPROC does not bind root and
// RLIMIT_DATA is per process, so before this a fork bomb or N processes of memMb each ran unbounded as root (CI, a GPU
// box). Where no cgroup is writable the cases are skipped with the reason in their names.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runChecks } from "../grading/checks";
import { limitSetup } from "./cgroup";
import { sandboxStatus, writeWorkerShell } from "./sandbox";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-cgroup-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const setup = limitSetup();
const bound = setup.commands === "cgroup1" || setup.commands === "cgroup2";
const why = sandboxStatus().kind !== "bwrap" ? `no bubblewrap: ${sandboxStatus().reason}` : !bound ? `no writable cgroup here: ${setup.label}` : "";
const limits = { wallSec: 20, procs: 64, memMb: 96, cpuSec: 60, fileMb: 64, outputBytes: 256 * 1024, tmpfsMb: 64 };
/** The groups of the engine's left in its folders (each command's must be gone once it ended). */
const groupsLeft = () =>
  [...new Set([setup.parents!.pids, setup.parents!.memory])].flatMap((d) => readdirSync(d).filter((n) => n.startsWith("c-") || n.startsWith("check-")));

// Fork: many processes that each stay alive, then report how many started (the shell's own fork fails past the limit).
const FORK = "sh -c 'i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); echo $i > n; done' 2>/dev/null; read n < n; echo \"started $n\"";
// Memory: 4 processes of 40 MiB each, each under the per-process RLIMIT_DATA (96 MiB), together over the 96 MiB group.
const MEM =
  "for i in 1 2 3 4; do /usr/bin/python3 -c 'import time; a = bytearray(40 * 2**20); a[::4096] = b\"x\" * len(a[::4096]); time.sleep(3)' & done; wait; echo done";

describe("limits that bind as root: a cgroup per command", () => {
  it(`the engine's status names what binds here: ${setup.label}`, () => {
    expect(setup.label).toMatch(/^(cgroup v[12]|prlimit only|checks: systemd-run)/);
    if (bound) expect(setup.parents).not.toBeNull();
  });

  const shellFor = (name: string) => {
    const root = path.join(tmp, name, "workspaces");
    const ws = path.join(root, "repo-1", "w-1");
    mkdirSync(ws, { recursive: true });
    const shell = writeWorkerShell(path.join(tmp, name, "sandbox", "worker-shell"), {
      workspacesRoot: root,
      tmpRoot: path.join(tmp, name, "tmp"),
      kind: "bwrap",
      stateDir: path.join(tmp, name),
      limits,
    });
    const sh = (cmd: string) => spawnSync(shell, ["-c", cmd], { cwd: ws, encoding: "utf8", env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws } });
    return { ws, sh };
  };

  it.skipIf(!!why)(
    `a fork bomb in a worker command is stopped at its process limit, as root too, and nothing of it is left${why ? ` (skipped: ${why})` : ""}`,
    () => {
      const { sh } = shellFor("fork");
      const r = sh(`${FORK}; sh -c 'bomb() { bomb | bomb & }; bomb' 2>/dev/null; sleep 2; exit 0`);
      const started = Number(/started (\d+)/.exec(r.stdout)?.[1]);
      expect(started).toBeGreaterThan(10);
      expect(started).toBeLessThan(limits.procs);
      expect(r.stdout).toContain(`its process limit of ${limits.procs}`);
      // Its group is gone, so every process of it is (a group with a process in it cannot be removed).
      expect(groupsLeft()).toEqual([]);
    },
    60_000,
  );

  it.skipIf(!!why)(
    `a worker command whose processes together allocate past its memory limit is killed${why ? ` (skipped: ${why})` : ""}`,
    () => {
      const { sh } = shellFor("mem");
      const r = sh(MEM);
      expect(r.stdout).toContain(`its memory limit of ${limits.memMb} MiB`);
      expect(groupsLeft()).toEqual([]);
      // Under the limit the same command runs through (the limit is the group's, not a per-process one).
      expect(sh(MEM.replace("1 2 3 4", "1")).stdout).toContain("done");
    },
    60_000,
  );

  it.skipIf(!!why)(
    `a worker command stopped from outside (its process group signalled, as opencode ends one) still leaves no group behind${why ? ` (skipped: ${why})` : ""}`,
    async () => {
      const root = path.join(tmp, "term", "workspaces");
      const ws = path.join(root, "repo-1", "w-1");
      mkdirSync(ws, { recursive: true });
      const shell = writeWorkerShell(path.join(tmp, "term", "sandbox", "worker-shell"), {
        workspacesRoot: root,
        tmpRoot: path.join(tmp, "term", "tmp"),
        kind: "bwrap",
        limits,
      });
      const child = spawn(shell, ["-c", "sleep 5 & sleep 60"], {
        cwd: ws,
        detached: true,
        stdio: "ignore",
        env: { PATH: process.env.PATH!, OCW_WORKSPACE: ws },
      });
      const exited = new Promise((res) => child.once("exit", res));
      // Until the command is in its group (its processes counted there), then the group is signalled.
      const procsOf = () =>
        groupsLeft().flatMap((n) =>
          readFileSync(path.join(setup.parents!.pids, n, "cgroup.procs"), "utf8")
            .split("\n")
            .filter(Boolean),
        );
      for (let i = 0; i < 400 && procsOf().length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      expect(procsOf().length).toBeGreaterThanOrEqual(3);
      process.kill(-child.pid!, "SIGTERM");
      await exited;
      expect(groupsLeft()).toEqual([]);
    },
    60_000,
  );

  it.skipIf(!!why)(
    `a check run is bound the same way (processes and memory), and its group is removed${why ? ` (skipped: ${why})` : ""}`,
    async () => {
      const root = path.join(tmp, "check-root");
      const state = path.join(tmp, "check-state");
      mkdirSync(root, { recursive: true });
      const env = { OCW_COMMAND_MAX_PROCS: String(limits.procs), OCW_COMMAND_MAX_MEM_MB: String(limits.memMb) };
      const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
      Object.assign(process.env, env);
      try {
        const [fork, mem, fine] = await runChecks(
          [
            { run: `${FORK}; test "$n" -ge 300`, timeoutSec: 30 },
            { run: MEM, timeoutSec: 30 },
            { run: "echo fine", timeoutSec: 30 },
          ],
          root,
          { kind: "bwrap", stateDir: state, tmpDir: path.join(state, "tmp"), root },
        );
        expect(fork!.passed).toBe(false);
        expect(Number(/started (\d+)/.exec(fork!.output)?.[1])).toBeLessThan(limits.procs);
        expect(fork!.output).toContain(`its process limit of ${limits.procs}`);
        expect(mem!.output).toContain(`its memory limit of ${limits.memMb} MiB`);
        expect(fine!.passed).toBe(true);
        expect(groupsLeft()).toEqual([]);
      } finally {
        for (const [k, v] of Object.entries(before))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      }
    },
    90_000,
  );
});
