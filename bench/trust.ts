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

/** The confidence of the interval of a median the report states. */
export const CONFIDENCE = 0.95;

/** Below this many runs no pair of order statistics holds the median with 95 % confidence (5 runs: 94 %). */
export const INTERVAL_RUNS = 6;

/**
 * A distribution-free interval of the median of independent repetitions: [x(k), x(n−k+1)] of the sorted runs, with the
 * largest k whose coverage, 1 − 2·P(Binomial(n, ½) ≤ k − 1), is at least `confidence` (12 runs: the 3rd and the 10th,
 * 96 %; 24 runs: the 7th and the 18th). Nothing is assumed of the runs' distribution (a ratio's tail is long on a loaded
 * machine), only that the repetitions are independent. Null where no k reaches it (fewer than 6 runs at 95 %).
 */
export function medianInterval(runs: number[], confidence = CONFIDENCE): { lo: number; hi: number; coverage: number } | null {
  const n = runs.length;
  const s = [...runs].sort((a, b) => a - b);
  let p = 0.5 ** n; // P(B = 0)
  let cdf = 0; // P(B ≤ j − 1)
  let k = 0;
  let coverage = 0;
  for (let j = 1; 2 * j <= n + 1; j++) {
    cdf += p;
    p = (p * (n - j + 1)) / j;
    const c = 1 - 2 * cdf;
    if (c < confidence) break;
    k = j;
    coverage = c;
  }
  return k ? { lo: s[k - 1]!, hi: s[n - k]!, coverage } : null;
}

/**
 * Where a repeated figure stands against its goal (`atMost`: the figure must be ≤ goal; else ≥ goal). From 6 runs on,
 * the noise is the 95 % interval of the median (medianInterval): clear of the goal when the whole interval is on one
 * side of it; a goal inside it is within noise — this many runs cannot tell the median's side of the goal from chance.
 * Below 6 runs, the spread of the runs stands in: clear only when every run is on the same side.
 */
export function verdict(s: Spread, goal: number, atMost = true): Verdict {
  const ok = (x: number) => (atMost ? x <= goal : x >= goal);
  if (s.runs.length < 2) return ok(s.median) ? "met" : "not met";
  const i = medianInterval(s.runs);
  const ends = i ? [i.lo, i.hi] : s.runs;
  if (ends.every(ok)) return "met";
  if (!ends.some(ok)) return "not met";
  return ok(s.median) ? "met, within noise" : "not met, within noise";
}

/** Half the range of the repetitions: the ± a reader should put on the median where too few ran for an interval (0 for one run). */
export function noise(s: Spread): number {
  return s.runs.length < 2 ? 0 : (Math.max(...s.runs) - Math.min(...s.runs)) / 2;
}

/**
 * "1.03 [0.83–1.23] — met, within noise (95 % interval of the median 0.98–1.10 over 12 runs; goal ≤ 1.05)", or, below
 * 6 runs, "1.12 [1.01–1.30] — not met, within noise (± 0.15 over 3 runs, too few for an interval; goal ≤ 1.05)".
 */
export function goalText(s: Spread | undefined, goal: number, atMost = true, digits = 2): string {
  if (!s) return "not measured";
  const v = verdict(s, goal, atMost);
  const f = (x: number) => Number(x.toFixed(digits));
  const n = s.runs.length;
  const spread = n > 1 ? ` [${f(s.min)}–${f(s.max)}]` : "";
  const i = medianInterval(s.runs);
  const pm =
    n < 2
      ? "one run, its noise unknown; "
      : i
        ? `${Math.floor(i.coverage * 100)} % interval of the median ${f(i.lo)}–${f(i.hi)} over ${n} runs; `
        : `± ${f(noise(s))} over ${n} runs, too few for an interval of the median; `;
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
