import { z } from "zod";
import { CheckResult } from "./check";

export const Outcome = z.enum(["built", "honest-failure"]);
export type Outcome = z.infer<typeof Outcome>;

export const ScopeResult = z.object({
  passed: z.boolean(),
  violations: z.array(z.string()),
  changedFiles: z.array(z.string()),
  /** Changed files that decide what a check runs (test runner configuration, scripts, tool shadowing): each also a violation. */
  checkConfig: z.array(z.string()).optional(),
});
export type ScopeResult = z.infer<typeof ScopeResult>;

/** The engine's judgement of a settled worker, from checks the worker never saw. */
export const Verdict = z.object({
  verdict: Outcome,
  /** What the worker's `OUTCOME:` line said; null when it gave none. */
  claim: Outcome.nullable(),
  claimReason: z.string().nullable(),
  honest: z.boolean(),
  checks: z.array(CheckResult),
  scope: ScopeResult,
  gradedAt: z.number(),
  branch: z.string().nullable(),
  worktree: z.string().nullable(),
  /** The commit the checks ran on (made by the engine from the worker's files); merge takes exactly this one. */
  commit: z.string().nullable().default(null),
  diffStat: z.string(),
  mergeHint: z.string().nullable(),
  /** What the checks cannot rule out (e.g. code that behaves differently when graded): said with every verdict. */
  caveats: z.array(z.string()).optional(),
});
export type Verdict = z.infer<typeof Verdict>;

const OUTCOME_LINE = /^\s*\**\s*OUTCOME:\s*\**\s*(built|honest-failure)\b\s*(?:[—–-]+\s*(.*))?$/i;

/** The worker's claim: the last `OUTCOME:` line of its final text. */
export function parseClaim(text: string): { claim: Outcome | null; reason: string | null } {
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = OUTCOME_LINE.exec(lines[i]!);
    if (m) return { claim: m[1]!.toLowerCase() as Outcome, reason: m[2]?.trim() || null };
  }
  return { claim: null, reason: null };
}
