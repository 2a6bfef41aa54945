// Processes the engine owns: who a process is (pid + the kernel's start time, so a reused pid never passes for ours),
// whether it is alive, its children, stopping it or its whole process group, a pid file that records identity, and
// the restart backoff of the one supervisor (supervisor.ts: opencode serve, the engine's own, the model servers).
// Platform layer: Node only, no business logic.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

/** A process as recorded: its pid and the kernel's start time of it (null where the OS gives none). */
export interface ProcessIdentity {
  pid: number;
  startTime: string | null;
}

/** A pid we may signal: a positive integer other than 1. Signalling 0 or a negative pid would hit a whole process group (ours). */
export function signalablePid(pid: unknown): pid is number {
  return typeof pid === "number" && Number.isInteger(pid) && pid > 1;
}

/** When the process started, as the kernel records it; null when it does not exist or the OS gives no start time. */
export function processStartTime(pid: number): string | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (process.platform === "linux") {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // Field 2 (comm) may hold spaces and parentheses: count fields after its closing parenthesis.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return rest[19] ?? null; // field 22 = index 19 after fields 1–2
    } catch {
      return null;
    }
  }
  if (process.platform === "darwin") {
    try {
      return execFileSync("ps", ["-o", "lstart=", "-p", String(pid)], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 2000 }).trim() || null;
    } catch {
      return null;
    }
  }
  return null;
}

/** A process as another one will recognise it later. */
export function identityOf(pid: number): ProcessIdentity {
  return { pid, startTime: processStartTime(pid) };
}

/** This process, as another one will recognise it. */
export function selfIdentity(): ProcessIdentity {
  return identityOf(process.pid);
}

/** Whether a pid exists (ours to signal or not). */
export function pidAlive(pid: number): boolean {
  if (!signalablePid(pid)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * True when the recorded process still runs: the pid exists and, where the OS tells start times, it started when
 * the record says (a pid the kernel gave to another process since is not alive for us). A bare pid checks existence.
 */
export function alive(who: number | ProcessIdentity): boolean {
  const { pid, startTime } = typeof who === "number" ? { pid: who, startTime: null } : who;
  if (!pidAlive(pid)) return false;
  if (startTime === null) return true;
  const now = processStartTime(pid);
  return now === null ? true : now === startTime;
}

/** Direct children of a process (Linux /proc; elsewhere none are found). */
export function childPids(pid: number | undefined): number[] {
  if (!pid || process.platform !== "linux") return [];
  const out: number[] = [];
  try {
    for (const d of readdirSync("/proc")) {
      if (!/^\d+$/.test(d)) continue;
      try {
        const stat = readFileSync(`/proc/${d}/stat`, "utf8");
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (ppid === pid) out.push(Number(d));
      } catch {
        /* process ended while we looked */
      }
    }
  } catch {
    /* no /proc */
  }
  return out;
}

/** Signals a process group (a child spawned `detached` leads its own); the process alone when it leads none. */
export function killGroup(pid: number, signal: NodeJS.Signals = "SIGKILL"): void {
  if (!signalablePid(pid)) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

/**
 * SIGTERM, then SIGKILL after `graceMs`. Resolves true when the process is gone. Given an identity, each signal follows
 * the check that the pid is still that process: a process that holds the pid since is never signalled.
 */
export async function stopPid(who: number | ProcessIdentity, graceMs = 5000): Promise<boolean> {
  const pid = typeof who === "number" ? who : who.pid;
  if (!signalablePid(pid) || !alive(who)) return true;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return !alive(who);
  }
  const t0 = Date.now();
  while (Date.now() - t0 < graceMs) {
    if (!alive(who)) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  if (!alive(who)) return true;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    /* gone */
  }
  await new Promise((r) => setTimeout(r, 50));
  return !alive(who);
}

/** Records a child's identity in a pid file (`{"pid":…,"startTime":…}`), so a later engine can tell it is still that one. */
export function writePidFile(file: string, pid: number | undefined): void {
  writeFileSync(file, pid ? JSON.stringify(identityOf(pid)) : "", { mode: 0o600 });
}

/** The identity in a pid file; a file of an older engine holds a bare pid (identity unknown: startTime null). */
export function readPidFile(file: string): ProcessIdentity | null {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch {
    return null;
  }
  if (/^\d+$/.test(text)) return { pid: Number(text), startTime: null };
  try {
    const v = JSON.parse(text) as Partial<ProcessIdentity>;
    return signalablePid(v.pid) ? { pid: v.pid, startTime: typeof v.startTime === "string" ? v.startTime : null } : null;
  } catch {
    return null;
  }
}

/**
 * Restart backoff for a supervisor: each crash is recorded; the delay before the next start doubles from `baseMs` up to
 * `capMs`; with `windowMs` and `max`, more than `max` crashes within the window means give up (null). With
 * `firstImmediate`, the first crash of a window restarts at once and the doubling starts at the second.
 */
export class Backoff {
  private crashes: number[] = [];

  constructor(private readonly o: { baseMs: number; capMs?: number; windowMs?: number; max?: number; firstImmediate?: boolean }) {}

  /** Records a crash at `now`; the delay before the next start, or null to give up. */
  crashed(now = Date.now()): number | null {
    const w = this.o.windowMs;
    this.crashes = [...(w === undefined ? this.crashes : this.crashes.filter((t) => now - t < w)), now];
    const n = this.crashes.length;
    if (this.o.max !== undefined && n > this.o.max) return null;
    const exp = this.o.firstImmediate ? n - 2 : n - 1;
    return exp < 0 ? 0 : Math.min(this.o.capMs ?? 30_000, this.o.baseMs * 2 ** exp);
  }

  /** Crashes counted now (within the window). */
  get count(): number {
    return this.crashes.length;
  }

  /** A start that held: the next crash counts from the beginning again. */
  reset(): void {
    this.crashes = [];
  }
}
