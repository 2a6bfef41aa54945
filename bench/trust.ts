// How far a bench figure can be trusted on a shared, noisy machine: the load each part ran under, whether the two sides
// of a ratio took turns, and whether a figure is clear of its goal or within the noise of its repetitions. Pure: the
// report's logic, tested in trust.test.ts.
import type { Spread } from "./stats";

/** Load average (1, 5, 15 min) when a part started and ended, the machine's cores, and how long the part took. */
export interface PartLoad {
  before: number[];
  after: number[];
  seconds: number;
  /** Cores of the machine (os.availableParallelism); absent in reports written before it was recorded. */
  cores?: number;
}

/**
 * A part measured with more runnable work than cores: its 1-minute load average at the start or at the end was above
 * the core count, so its processes waited for a core and its wall times are stretched by other work.
 */
export function overloaded(l: PartLoad, cores = l.cores): boolean {
  if (!cores) return false;
  return Math.max(l.before[0] ?? 0, l.after[0] ?? 0) > cores;
}

/** "load 3.1 → 5.2 on 2 cores, above the core count" (the 1-minute figures). */
export function loadNote(l: PartLoad, cores = l.cores): string {
  const b = l.before[0] ?? NaN;
  const a = l.after[0] ?? NaN;
  return `load ${b} → ${a}${cores ? ` on ${cores} cores${overloaded(l, cores) ? ", **above the core count**" : ""}` : ""}`;
}

export type Verdict = "met" | "met, within noise" | "not met, within noise" | "not met";

/**
 * Where a repeated figure stands against its goal (`atMost`: the figure must be ≤ goal; else ≥ goal). The noise is the
 * spread of the repetitions: a goal inside [min, max] is within noise — some runs met it, some did not, so the median's
 * side of the goal is not a finding. Clear of the goal only when every run is on the same side.
 */
export function verdict(s: Spread, goal: number, atMost = true): Verdict {
  const ok = (x: number) => (atMost ? x <= goal : x >= goal);
  if (s.runs.length < 2) return ok(s.median) ? "met" : "not met";
  const all = s.runs.every(ok);
  const none = !s.runs.some(ok);
  if (all) return "met";
  if (none) return "not met";
  return ok(s.median) ? "met, within noise" : "not met, within noise";
}

/** Half the range of the repetitions: the ± a reader should put on the median (0 for one run). */
export function noise(s: Spread): number {
  return s.runs.length < 2 ? 0 : (Math.max(...s.runs) - Math.min(...s.runs)) / 2;
}

/** "1.12 [1.01–1.30] — not met, within noise (± 0.15; goal ≤ 1.05)". */
export function goalText(s: Spread | undefined, goal: number, atMost = true, digits = 2): string {
  if (!s) return "not measured";
  const v = verdict(s, goal, atMost);
  const n = noise(s);
  const f = (x: number) => Number(x.toFixed(digits));
  const spread = s.runs.length > 1 ? ` [${f(s.min)}–${f(s.max)}]` : "";
  const pm = s.runs.length > 1 ? `± ${f(n)}; ` : "one run, its noise unknown; ";
  return `${f(s.median)}${spread} — ${v === "met" || v === "not met" ? `**${v}**` : v} (${pm}goal ${atMost ? "≤" : "≥"} ${goal})`;
}

/** One timed run of one side of a comparison, in the order the part ran them. */
export interface SideRun {
  side: string;
  rep: number;
}

/**
 * Whether the two sides of a ratio took turns within a part: one run of each per repetition, and which went first
 * alternated from one repetition to the next (A,B then B,A …), so a drift in the machine's load over the part weighs on
 * both sides alike. Returns why not, or null when they did. `gap` is the most runs of other sides between a pair.
 */
export function interleaving(sequence: SideRun[], a: string, b: string): { why: string | null; gap: number } {
  const reps = [...new Set(sequence.map((r) => r.rep))].sort((x, y) => x - y);
  let first: string | null = null;
  let gap = 0;
  for (const rep of reps) {
    const idx = sequence.flatMap((r, i) => (r.rep === rep && (r.side === a || r.side === b) ? [i] : []));
    const sides = idx.map((i) => sequence[i]!.side);
    if (sides.length !== 2 || sides[0] === sides[1])
      return { why: `repetition ${rep + 1} ran ${sides.join(", ") || "neither side"}, not one ${a} and one ${b}`, gap };
    gap = Math.max(gap, idx[1]! - idx[0]! - 1);
    if (first !== null && sides[0] === first) return { why: `${first} went first in repetitions ${rep} and ${rep + 1}: the sides did not take turns`, gap };
    first = sides[0]!;
  }
  return { why: null, gap };
}
