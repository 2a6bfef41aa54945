// Small statistics helpers shared by the bench's parts.
import { readFileSync } from "node:fs";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Nearest-rank percentile. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
}

/** A figure measured once per repetition: its median with the smallest and largest run. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function spread(runs: number[], d = 1): Spread {
  return { median: round(median(runs), d), min: round(Math.min(...runs), d), max: round(Math.max(...runs), d), runs: runs.map((x) => round(x, d)) };
}

/** "median [min–max]", or just the value for a single run. */
export function fmt(s: Spread | undefined, unit = ""): string {
  if (!s) return "–";
  return s.runs.length > 1 ? `${s.median}${unit} [${s.min}–${s.max}]` : `${s.median}${unit}`;
}

/** CPU seconds (user + system) and resident memory of a Linux process, from /proc. */
export function procStat(pid: number): { cpuSec: number; rssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const tick = 100; // CLK_TCK on Linux
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return { cpuSec: (Number(f[11]) + Number(f[12])) / tick, rssMb: rssKb / 1024 };
}

/**
 * CPU seconds of a process and of its children it has waited for (git, shells: what opencode serve spawns), from
 * /proc; null when it is gone. CPU time does not stretch with other work on the machine the way wall time does.
 */
export function cpuWithChildren(pid: number | null): { self: number; children: number } | null {
  if (pid === null) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { self: (Number(f[11]) + Number(f[12])) / 100, children: (Number(f[13]) + Number(f[14])) / 100 };
  } catch {
    return null;
  }
}

/**
 * Waits until the processes have used (nearly) no CPU for `quietMs` (at most `maxMs`): the engine disposes a batch's
 * opencode instances right after it settles, and the next side measured must not share the machine with that.
 */
export async function untilQuiet(pids: (number | null)[], quietMs = 300, maxMs = 15_000): Promise<void> {
  const total = () =>
    pids.reduce<number>((a, pid) => {
      const c = cpuWithChildren(pid);
      return a + (c ? c.self + c.children : 0);
    }, 0);
  const end = Date.now() + maxMs;
  let before = total();
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, quietMs));
    const now = total();
    // below a fifth of one core
    if (now - before <= (0.2 * quietMs) / 1000) return;
    before = now;
  }
}

/** Samples a process's RSS every `everyMs` and keeps the peak. */
export function rssPeak(pid: number, everyMs = 200) {
  let peak = procStat(pid).rssMb;
  const t = setInterval(() => {
    try {
      peak = Math.max(peak, procStat(pid).rssMb);
    } catch {
      /* exited */
    }
  }, everyMs);
  return { stop: () => (clearInterval(t), peak) };
}

export const log = (line: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
