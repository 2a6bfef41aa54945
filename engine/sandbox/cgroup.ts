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
type LimitMechanism = "cgroup2" | "cgroup1" | "systemd-run" | "prlimit";

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

/**
 * The cgroup file system as the engine uses it: the host's by default; a stand-in in tests (test/fixtures/cgroup2-standin.ts), since
 * a machine whose unified hierarchy delegates pids and memory cannot be had everywhere. Errors are thrown as node:fs
 * throws them (an Error with `code`: EBUSY, ENOENT, EACCES…), as the kernel answers a write or a mkdir.
 */
export interface CgroupFs {
  /** A file's text; "" when it cannot be read. */
  read(file: string): string;
  write(file: string, value: string): void;
  mkdir(dir: string): void;
  rmdir(dir: string): void;
  exists(p: string): boolean;
  /** The names of a folder's sub-folders (child groups); [] when it cannot be read. */
  dirs(dir: string): string[];
  /** When a folder was made (ms). */
  ctimeMs(dir: string): number;
  /** SIGKILL to a process; no error when it is gone. */
  kill(pid: number): void;
}

const hostCgroupFs: CgroupFs = {
  read: (f) => {
    try {
      return readFileSync(f, "utf8");
    } catch {
      return "";
    }
  },
  write: (f, v) => writeFileSync(f, v),
  mkdir: (d) => mkdirSync(d),
  rmdir: (d) => rmdirSync(d),
  exists: (p) => existsSync(p),
  dirs: (d) => {
    try {
      return readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return [];
    }
  },
  ctimeMs: (d) => statSync(d).ctimeMs,
  kill: (pid) => {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* gone */
    }
  },
};

const read = (f: string): string => hostCgroupFs.read(f);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The leaf the engine's own process moves into where its group must hold no process (cgroup v2, see v2()). */
export const ENGINE_LEAF = "engine";

/** Groups an earlier engine left behind (it died before removing them): empty ones whose engine is gone are removed. */
function removeStale(parentOfParents: string, fs: CgroupFs, isAlive: (pid: number) => boolean, self: number): void {
  const names = fs.dirs(parentOfParents).filter((n) => /^ocw-\d+$/.test(n));
  for (const n of names) {
    const pid = Number(n.slice(4));
    if (pid === self || isAlive(pid)) continue;
    removeTree(path.join(parentOfParents, n), fs);
  }
}

/** Kills every process left in a group (SIGKILL; cgroup.kill where the kernel has it), then removes the group. */
function emptyAndRemove(dir: string, fs: CgroupFs = hostCgroupFs): boolean {
  for (let i = 0; i < 100; i++) {
    if (!fs.exists(dir)) return true;
    if (fs.exists(path.join(dir, "cgroup.kill"))) {
      try {
        fs.write(path.join(dir, "cgroup.kill"), "1");
      } catch {
        /* no permission: kill one by one */
      }
    }
    for (const p of fs.read(path.join(dir, "cgroup.procs")).split("\n").filter(Boolean)) fs.kill(Number(p));
    try {
      fs.rmdir(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
      // EBUSY: processes still dying (a killed process leaves its group when it is reaped).
      execFileSync("sleep", ["0.05"]);
    }
  }
  return false;
}

/** A group and every group under it (deepest first), each emptied and removed; `keep`: a sub-folder left alone. */
export function removeTree(dir: string, fs: CgroupFs = hostCgroupFs, keep?: string): boolean {
  for (const c of fs.dirs(dir)) if (c !== keep) removeTree(path.join(dir, c), fs);
  return keep && fs.exists(path.join(dir, keep)) ? true : emptyAndRemove(dir, fs);
}

/**
 * Command groups left behind (a worker shell killed before it removed its group): empty ones older than a minute are
 * removed (a younger one may be a command's that is still being set up).
 */
function sweep(now = Date.now()): void {
  for (const { dir: parent, fs } of made) {
    for (const n of fs.dirs(parent).filter((x) => /^(c|check)-/.test(x))) {
      const dir = path.join(parent, n);
      try {
        if (now - fs.ctimeMs(dir) < 60_000 || fs.read(path.join(dir, "cgroup.procs")).trim()) continue;
        fs.rmdir(dir);
      } catch {
        /* in use, or gone */
      }
    }
  }
}

let made: { dir: string; fs: CgroupFs }[] = [];
/**
 * The engine's groups, removed when it exits: every command's group in them, and they themselves — except a group that
 * holds the engine's own leaf (cgroup v2): the engine is still in it while it exits, and a process cannot leave for a
 * group with controllers enabled; the next engine removes it (removeStale).
 */
function forgetOnExit(dirs: string[], fs: CgroupFs): void {
  if (!made.length) process.once("exit", () => made.forEach((m) => removeTree(m.dir, m.fs, ENGINE_LEAF)));
  made = [...made, ...dirs.map((dir) => ({ dir, fs }))];
}

/** A group of the engine's: made (or found) and checked to be a cgroup (it has cgroup.procs). */
function engineGroup(own: string, h: CgroupHost): string | null {
  const dir = path.join(own, `ocw-${h.pid}`);
  try {
    removeStale(own, h.fs, h.alive ?? alive, h.pid);
    if (!h.fs.exists(dir)) h.fs.mkdir(dir);
    if (!h.fs.exists(path.join(dir, "cgroup.procs"))) throw new Error("not a cgroup");
    return dir;
  } catch {
    return null;
  }
}

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code ?? "refused";
const hasBoth = (list: string) => /(^|\s)pids(\s|$)/.test(list) && /(^|\s)memory(\s|$)/.test(list);

/**
 * cgroup v2 (Documentation/admin-guide/cgroup-v2.rst). The rules that shape this:
 * - top-down: a group can enable in its cgroup.subtree_control only controllers in its own cgroup.controllers (what
 *   its parent enabled for it); the files of a controller (pids.max, memory.max…) exist in a group only then;
 * - no internal processes: a group other than the root that holds processes cannot enable controllers for its
 *   children (EBUSY), and a process cannot be moved into a group that has (EBUSY).
 * So the engine's own group (`base`, where the engine was started) can hand pids and memory on only once no process is
 * left in it: where the first write is refused, the engine moves itself into a leaf of its own group
 * (`ocw-<pid>/engine`) and tries again; where other processes still hold `base` (a terminal's shell), it moves back and
 * v2 is not used. Then `ocw-<pid>` (which holds no process, only the leaf) enables pids and memory for the command
 * groups made under it, each of which holds processes and enables nothing.
 */
function v2(ms: Mount[], own: Map<string, string>, h: CgroupHost): { dir: string; swap: boolean } | string {
  const fs = h.fs;
  const m = ms.find((x) => x.fstype === "cgroup2");
  if (!m) return "no cgroup2 hierarchy";
  const base = ownDir(m, own.get("") ?? "/");
  if (!hasBoth(fs.read(path.join(base, "cgroup.controllers")))) return `cgroup2 at ${m.point} has no pids and memory controllers for this process`;
  const enable = (dir: string) => {
    if (!hasBoth(fs.read(path.join(dir, "cgroup.subtree_control")))) fs.write(path.join(dir, "cgroup.subtree_control"), "+pids +memory");
  };
  let dir: string | null = null;
  let leaf: string | null = null;
  let enabledBase = false;
  const undo = (why: string) => {
    // Back where it was started, then nothing of ours: `base` first enables nothing again (a group that enables
    // controllers takes no process), then the engine moves back.
    if (leaf && dir) {
      try {
        if (enabledBase) fs.write(path.join(base, "cgroup.subtree_control"), "-pids -memory");
        fs.write(path.join(base, "cgroup.procs"), String(h.pid));
      } catch {
        /* stays in the leaf, which is then kept */
      }
    }
    if (dir) removeTree(dir, fs, leaf && fs.read(path.join(leaf, "cgroup.procs")).trim() ? ENGINE_LEAF : undefined);
    return why;
  };
  try {
    enable(base);
  } catch (err) {
    if (errCode(err) !== "EBUSY") return `cgroup2: pids and memory are not delegated to ${base} (${errCode(err)})`;
    // The engine itself is in `base`: into a leaf of its own group first.
    dir = engineGroup(base, h);
    if (!dir) return `cgroup2: ${base} is not writable`;
    leaf = path.join(dir, ENGINE_LEAF);
    try {
      if (!fs.exists(leaf)) fs.mkdir(leaf);
      fs.write(path.join(leaf, "cgroup.procs"), String(h.pid));
    } catch (e) {
      return undo(`cgroup2: the engine could not move into a leaf group of its own (${errCode(e)})`);
    }
    try {
      enable(base);
      enabledBase = true;
    } catch (e) {
      return undo(
        `cgroup2: ${base} holds other processes than the engine, so it cannot hand pids and memory on (${errCode(e)}); start the engine in a group of its own (systemd-run --user --scope -p Delegate=yes)`,
      );
    }
  }
  dir ??= engineGroup(base, h);
  if (!dir) return `cgroup2: ${base} is not writable`;
  try {
    enable(dir);
  } catch (err) {
    return undo(`cgroup2: pids and memory are not delegated to ${base} (${errCode(err)})`);
  }
  if (h.fs === hostCgroupFs) forgetOnExit([dir], fs);
  return { dir, swap: fs.exists(path.join(dir, "memory.swap.max")) || fs.exists(path.join(dir, ENGINE_LEAF, "memory.swap.max")) };
}

function v1(ms: Mount[], own: Map<string, string>, h: CgroupHost): { pids: string; memory: string; swap: boolean } | string {
  const pm = ms.find((x) => x.fstype === "cgroup" && x.options.includes("pids"));
  const mm = ms.find((x) => x.fstype === "cgroup" && x.options.includes("memory"));
  if (!pm || !mm) return "no cgroup v1 pids and memory hierarchies";
  const pids = engineGroup(ownDir(pm, own.get("pids") ?? "/"), h);
  const memory = pids && engineGroup(ownDir(mm, own.get("memory") ?? "/"), h);
  if (!pids || !memory) {
    if (pids) emptyAndRemove(pids, h.fs);
    return "cgroup v1 is not writable here";
  }
  if (h.fs === hostCgroupFs) forgetOnExit([pids, memory], h.fs);
  return { pids, memory, swap: h.fs.exists(path.join(memory, "memory.memsw.limit_in_bytes")) };
}

/** Where cgroups are looked for: this process by default; a stand-in hierarchy in tests. */
interface CgroupHost {
  /** /proc/self/mountinfo's text. */
  mountinfo: string;
  /** /proc/self/cgroup's text. */
  procCgroup: string;
  /** The engine's pid (its groups are named `ocw-<pid>`; it is the process moved into the v2 leaf). */
  pid: number;
  fs: CgroupFs;
  /** Whether a process lives (an earlier engine's groups are removed when it does not). */
  alive?: (pid: number) => boolean;
}

/** The cgroup mechanism a host offers (cgroup v2, else v1), or why neither: what limitSetup() decides from. */
export function cgroupLimits(h: CgroupHost): LimitSetup | string {
  const ms = mounts(h.mountinfo);
  const own = ownPaths(h.procCgroup);
  const two = v2(ms, own, h);
  if (typeof two !== "string") {
    return { commands: "cgroup2", checks: "cgroup2", label: "cgroup v2 (pids, memory)", parents: { pids: two.dir, memory: two.dir }, swap: two.swap };
  }
  const one = v1(ms, own, h);
  if (typeof one !== "string") {
    return {
      commands: "cgroup1",
      checks: "cgroup1",
      label: `cgroup v1 (pids, memory${one.swap ? "+swap" : ""})`,
      parents: { pids: one.pids, memory: one.memory },
      swap: one.swap,
    };
  }
  return `${two}; ${one}`;
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
  const found = cgroupLimits({ mountinfo: read("/proc/self/mountinfo"), procCgroup: read("/proc/self/cgroup"), pid: process.pid, fs: hostCgroupFs });
  return (cached = typeof found === "string" ? none(found) : found);
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
export function checkGroup(procs: number, memMb: number, s: LimitSetup = limitSetup(), fs: CgroupFs = hostCgroupFs): CommandGroup | null {
  if (!s.parents) return null;
  if (fs === hostCgroupFs) sweep();
  const name = `check-${++seq}`;
  const dirs: [string, string] = [path.join(s.parents.pids, name), path.join(s.parents.memory, name)];
  try {
    for (const d of new Set(dirs)) fs.mkdir(d);
    for (const f of limitFiles(s, procs, memMb)) {
      const file = path.join(f.file === "pids" ? dirs[0] : dirs[1], f.name);
      if (f.optional && !fs.exists(file)) continue;
      fs.write(file, f.value);
    }
  } catch (err) {
    for (const d of new Set(dirs)) emptyAndRemove(d, fs);
    throw new Error(`the check's limits could not be set (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${s.label}`);
  }
  return {
    dirs,
    hits: () => hitsIn(s, dirs, fs),
    remove: () => [...new Set(dirs)].map((d) => emptyAndRemove(d, fs)).every(Boolean),
  };
}

/** Which limit a group reached: an OOM kill (memory), a refused fork (processes). */
function hitsIn(s: LimitSetup, [pids, memory]: [string, string], fs: CgroupFs): string[] {
  const read = fs.read;
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
