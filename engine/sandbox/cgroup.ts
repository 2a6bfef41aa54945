import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { config } from "../config";

/**
 * Limits that bind every process of one command together, root included: a control group per worker command and per
 * check run, with `pids.max` (RLIMIT_NPROC does not bind root, and counts per user otherwise) and a memory limit (an
 * RLIMIT is per process: 100 processes of 8 GiB each were 800 GiB). The mechanism is the first that works here:
 *
 * - `cgroup2`: the unified hierarchy, where the engine's own cgroup has `pids` and `memory` delegated to children;
 * - `cgroup1`: the v1 `pids` and `memory` hierarchies, writable, under the engine's own cgroup path in each (a root
 *   container: CI, a GPU box);
 * - `systemd-run`: a transient `systemd-run --user --scope` per check (a desktop session with a user manager). Worker
 *   commands are started by opencode inside its sandbox, where the user's bus is not reachable: they keep the
 *   per-process limits only;
 * - `prlimit`: the per-process limits only (RLIMIT_NPROC, RLIMIT_DATA, RLIMIT_CPU, RLIMIT_FSIZE), always applied too.
 *
 * The engine makes one group of its own per hierarchy (`ocw-<pid>`); each command gets a child of it (made by the
 * worker shell, or by the engine for a check), joined before bubblewrap starts, emptied (every process left in it
 * killed) and removed when the command ends.
 */
export type LimitMechanism = "cgroup2" | "cgroup1" | "systemd-run" | "prlimit";

export interface LimitSetup {
  /** What binds a worker command's processes and memory as a whole. */
  commands: LimitMechanism;
  /** What binds a check run's. */
  checks: LimitMechanism;
  /** Said in the engine's status and with every verdict, e.g. "cgroup v1 (pids, memory)" or "prlimit only (…why)". */
  label: string;
  /** The engine's own groups (cgroup1: the pids and memory folders; cgroup2: one folder twice). */
  parents: { pids: string; memory: string } | null;
  /** cgroup1: whether memory+swap can be limited too (memory.memsw.*); cgroup2: whether memory.swap.max exists. */
  swap: boolean;
}

const MIB = 1024 * 1024;

interface Mount {
  point: string;
  fstype: string;
  options: string[];
  /** The mount's root inside its hierarchy (a container sees its own cgroup as "/"). */
  root: string;
}

function mounts(mountinfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const f = left.split(" ");
    const r = right.split(" ");
    const octal = (s: string) => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({ point: octal(f[4] ?? ""), root: octal(f[3] ?? "/"), fstype: r[0] ?? "", options: (r[2] ?? "").split(",") });
  }
  return out;
}

/** The process's path in each hierarchy (from /proc/self/cgroup): "" is the unified one, else the controller's name. */
function ownPaths(procCgroup: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of procCgroup.split("\n")) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[2] === "") out.set("", m[3]!);
    for (const c of m[2]!.split(",")) if (c) out.set(c, m[3]!);
  }
  return out;
}

/** The folder of the process's own group in a hierarchy mounted at `m` (its path, relative to the mount's root). */
function ownDir(m: Mount, own: string): string {
  const rel = m.root === "/" ? own : own.startsWith(m.root) ? own.slice(m.root.length) : own;
  return path.join(m.point, rel);
}

const read = (f: string): string => {
  try {
    return readFileSync(f, "utf8");
  } catch {
    return "";
  }
};

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Groups an earlier engine left behind (it died before removing them): empty ones whose engine is gone are removed. */
function removeStale(parentOfParents: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parentOfParents).filter((n) => /^ocw-\d+$/.test(n));
  } catch {
    return;
  }
  for (const n of names) {
    const pid = Number(n.slice(4));
    if (pid === process.pid || alive(pid)) continue;
    const dir = path.join(parentOfParents, n);
    removeTree(dir);
  }
}

/** Kills every process left in a group (SIGKILL; cgroup.kill where the kernel has it), then removes the group. */
export function emptyAndRemove(dir: string): boolean {
  for (let i = 0; i < 100; i++) {
    if (!existsSync(dir)) return true;
    if (existsSync(path.join(dir, "cgroup.kill"))) {
      try {
        writeFileSync(path.join(dir, "cgroup.kill"), "1");
      } catch {
        /* no permission: kill one by one */
      }
    }
    for (const p of read(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean)) {
      try {
        process.kill(Number(p), "SIGKILL");
      } catch {
        /* gone */
      }
    }
    try {
      rmdirSync(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
      // EBUSY: processes still dying (a killed process leaves its group when it is reaped).
      execFileSync("sleep", ["0.05"]);
    }
  }
  return false;
}

/** A group and every group under it (deepest first), each emptied and removed. */
export function removeTree(dir: string): boolean {
  try {
    for (const c of readdirSync(dir, { withFileTypes: true })) if (c.isDirectory()) removeTree(path.join(dir, c.name));
  } catch {
    /* gone */
  }
  return emptyAndRemove(dir);
}

/**
 * Command groups left behind (a worker shell killed before it removed its group): empty ones older than a minute are
 * removed (a younger one may be a command's that is still being set up).
 */
export function sweep(now = Date.now()): void {
  for (const parent of made) {
    let names: string[] = [];
    try {
      names = readdirSync(parent).filter((n) => /^(c|check)-/.test(n));
    } catch {
      continue;
    }
    for (const n of names) {
      const dir = path.join(parent, n);
      try {
        if (now - statSync(dir).ctimeMs < 60_000 || read(path.join(dir, "cgroup.procs")).trim()) continue;
        rmdirSync(dir);
      } catch {
        /* in use, or gone */
      }
    }
  }
}

let made: string[] = [];
function forgetOnExit(dirs: string[]): void {
  if (!made.length) process.once("exit", () => made.forEach((d) => removeTree(d)));
  made = [...made, ...dirs];
}

/** A group of the engine's: made (or found) and checked writable. */
function engineGroup(own: string): string | null {
  const dir = path.join(own, `ocw-${process.pid}`);
  try {
    removeStale(own);
    mkdirSync(dir, { recursive: true });
    statSync(path.join(dir, "cgroup.procs"));
    return dir;
  } catch {
    return null;
  }
}

function v2(ms: Mount[], own: Map<string, string>): { dir: string; swap: boolean } | string {
  const m = ms.find((x) => x.fstype === "cgroup2");
  if (!m) return "no cgroup2 hierarchy";
  const base = ownDir(m, own.get("") ?? "/");
  const controllers = read(path.join(base, "cgroup.controllers")).trim().split(/\s+/);
  if (!controllers.includes("pids") || !controllers.includes("memory")) return `cgroup2 at ${m.point} has no pids and memory controllers for this process`;
  const dir = engineGroup(base);
  if (!dir) return `cgroup2: ${base} is not writable`;
  try {
    // The engine's group holds no process: its children may have the controllers (its parent must delegate them).
    const sub = read(path.join(base, "cgroup.subtree_control"));
    if (!/\bpids\b/.test(sub) || !/\bmemory\b/.test(sub)) writeFileSync(path.join(base, "cgroup.subtree_control"), "+pids +memory");
    writeFileSync(path.join(dir, "cgroup.subtree_control"), "+pids +memory");
  } catch (err) {
    emptyAndRemove(dir);
    return `cgroup2: pids and memory are not delegated to ${base} (${(err as NodeJS.ErrnoException).code ?? "refused"})`;
  }
  forgetOnExit([dir]);
  return { dir, swap: existsSync(path.join(dir, "memory.swap.max")) };
}

function v1(ms: Mount[], own: Map<string, string>): { pids: string; memory: string; swap: boolean } | string {
  const pm = ms.find((x) => x.fstype === "cgroup" && x.options.includes("pids"));
  const mm = ms.find((x) => x.fstype === "cgroup" && x.options.includes("memory"));
  if (!pm || !mm) return "no cgroup v1 pids and memory hierarchies";
  const pids = engineGroup(ownDir(pm, own.get("pids") ?? "/"));
  const memory = pids && engineGroup(ownDir(mm, own.get("memory") ?? "/"));
  if (!pids || !memory) {
    if (pids) emptyAndRemove(pids);
    return "cgroup v1 is not writable here";
  }
  forgetOnExit([pids, memory]);
  return { pids, memory, swap: existsSync(path.join(memory, "memory.memsw.limit_in_bytes")) };
}

function userSystemd(): boolean {
  if (!findOnPath("systemd-run") || !findOnPath("systemctl")) return false;
  try {
    const s = execFileSync("systemctl", ["--user", "is-system-running"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 3000 });
    return /running|degraded/.test(s);
  } catch (err) {
    return /running|degraded/.test(String((err as { stdout?: string }).stdout ?? ""));
  }
}

function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

let cached: LimitSetup | null = null;

/**
 * How commands and checks are limited here (decided once per engine process; its groups are removed when it exits).
 * `OCW_LIMITS=prlimit` keeps the per-process limits only.
 */
export function limitSetup(): LimitSetup {
  if (cached) return cached;
  const none = (why: string): LimitSetup => {
    const sd = process.platform === "linux" && userSystemd();
    return {
      commands: "prlimit",
      checks: sd ? "systemd-run" : "prlimit",
      label: sd
        ? `checks: systemd-run scope (tasks, memory); worker commands: prlimit only (${why})`
        : `prlimit only (${why}): per-process limits, no bound on a command's processes or memory as a whole`,
      parents: null,
      swap: false,
    };
  };
  if (process.platform !== "linux") return (cached = none(`no cgroups on ${process.platform}`));
  if (config().OCW_LIMITS === "prlimit") return (cached = none("OCW_LIMITS=prlimit"));
  const ms = mounts(read("/proc/self/mountinfo"));
  const own = ownPaths(read("/proc/self/cgroup"));
  const two = v2(ms, own);
  if (typeof two !== "string") {
    return (cached = {
      commands: "cgroup2",
      checks: "cgroup2",
      label: "cgroup v2 (pids, memory)",
      parents: { pids: two.dir, memory: two.dir },
      swap: two.swap,
    });
  }
  const one = v1(ms, own);
  if (typeof one !== "string") {
    return (cached = {
      commands: "cgroup1",
      checks: "cgroup1",
      label: `cgroup v1 (pids, memory${one.swap ? "+swap" : ""})`,
      parents: { pids: one.pids, memory: one.memory },
      swap: one.swap,
    });
  }
  return (cached = none(`${two}; ${one}`));
}

/** The files and values that limit one group (both hierarchies for cgroup1, one folder for cgroup2). */
export function limitFiles(s: LimitSetup, procs: number, memMb: number): { file: "pids" | "memory"; name: string; value: string; optional?: boolean }[] {
  const bytes = String(memMb * MIB);
  if (s.commands === "cgroup2") {
    return [
      { file: "pids", name: "pids.max", value: String(procs) },
      { file: "memory", name: "memory.max", value: bytes },
      // Swap would let a command hold far more than its memory: none.
      { file: "memory", name: "memory.swap.max", value: "0", optional: true },
      { file: "memory", name: "memory.oom.group", value: "1", optional: true },
    ];
  }
  return [
    { file: "pids", name: "pids.max", value: String(procs) },
    { file: "memory", name: "memory.limit_in_bytes", value: bytes },
    { file: "memory", name: "memory.memsw.limit_in_bytes", value: bytes, optional: true },
  ];
}

export interface CommandGroup {
  /** The group folders to join (the pids one, then the memory one: the same folder twice for cgroup2). */
  dirs: [string, string];
  /** What hit a limit while it ran ("memory", "processes"), read before the group is removed. */
  hits(): string[];
  /** Kills whatever is left in the group and removes it; true when it is gone. */
  remove(): boolean;
}

let seq = 0;

/** A group for one check run, with its limits set (null where checks have no cgroup here). */
export function checkGroup(procs: number, memMb: number): CommandGroup | null {
  const s = limitSetup();
  if (!s.parents) return null;
  sweep();
  const name = `check-${++seq}`;
  const dirs: [string, string] = [path.join(s.parents.pids, name), path.join(s.parents.memory, name)];
  try {
    for (const d of new Set(dirs)) mkdirSync(d);
    for (const f of limitFiles(s, procs, memMb)) {
      const file = path.join(f.file === "pids" ? dirs[0] : dirs[1], f.name);
      if (f.optional && !existsSync(file)) continue;
      writeFileSync(file, f.value);
    }
  } catch (err) {
    for (const d of new Set(dirs)) emptyAndRemove(d);
    throw new Error(`the check's limits could not be set (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${s.label}`);
  }
  return {
    dirs,
    hits: () => hitsIn(s, dirs),
    remove: () => [...new Set(dirs)].map(emptyAndRemove).every(Boolean),
  };
}

/** Which limit a group reached: an OOM kill (memory), a refused fork (processes). */
function hitsIn(s: LimitSetup, [pids, memory]: [string, string]): string[] {
  const out: string[] = [];
  if (s.commands === "cgroup2") {
    if (/^oom_kill [1-9]/m.test(read(path.join(memory, "memory.events")))) out.push("memory");
    if (/^max [1-9]/m.test(read(path.join(pids, "pids.events")))) out.push("processes");
  } else {
    if (/^oom_kill [1-9]/m.test(read(path.join(memory, "memory.oom_control")))) out.push("memory");
    if (/^max [1-9]/m.test(read(path.join(pids, "pids.events")))) out.push("processes");
  }
  return out;
}

/** A command prefix that joins the groups, then runs the rest (`sh -c … <pids dir> <memory dir> argv…`). */
export const JOIN_SCRIPT = 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"';

export function joinPrefix(g: { dirs: [string, string] }): string[] {
  return ["/bin/sh", "-c", JOIN_SCRIPT, "ocw-limits", g.dirs[0], g.dirs[1]];
}

/** The note a command's output ends with when it reached a limit of its group. */
export function hitNote(hits: string[], procs: number, memMb: number): string {
  const parts = hits.map((h) =>
    h === "memory" ? `its memory limit of ${memMb} MiB (a process was killed)` : `its process limit of ${procs} (a fork was refused)`,
  );
  return parts.length ? `[opencode-worker: the command reached ${parts.join(" and ")}]` : "";
}

/** A check's prefix where only a user systemd can bind it: a transient scope with the same limits (swap off). */
export function systemdPrefix(procs: number, memMb: number): string[] {
  return ["systemd-run", "--user", "--scope", "--quiet", "--collect", "-p", `TasksMax=${procs}`, "-p", `MemoryMax=${memMb}M`, "-p", "MemorySwapMax=0", "--"];
}
