import { z } from "zod";
import { CheckResult } from "./check";
import { counted } from "./words";

export const Outcome = z.enum(["built", "honest-failure"]);
export type Outcome = z.infer<typeof Outcome>;

export const ScopeResult = z.object({
  passed: z.boolean(),
  violations: z.array(z.string()),
  changedFiles: z.array(z.string()),
  /** Changed files that decide what a check runs (test runner configuration, scripts, tool shadowing): each also a violation. */
  checkConfig: z.array(z.string()).optional(),
  /** The worker's files were over the snapshot caps (new files, bytes, one file's size): nothing was graded. Also a violation. */
  snapshotCap: z.string().optional(),
});
export type ScopeResult = z.infer<typeof ScopeResult>;

/**
 * A change that does more than its diff shows, flagged on the verdict card and in every client's result, and merged only
 * after an explicit acceptance: git's own configuration in the tree (`.gitattributes` filters, `.lfsconfig` servers,
 * `.gitmodules`), symlinks, executables, submodules, and tool configuration that runs commands (`.npmrc`, package.json
 * `scripts`, hooks folders, CI workflows, editor tasks, test runner configuration such as a conftest.py), and names that differ from another of the tree only in case or
 * Unicode normalisation (one file on macOS or Windows).
 */
export const ChangeFlag = z.object({
  path: z.string(),
  kind: z.enum(["git-config", "symlink", "executable", "submodule", "tool-config", "name-collision"]),
  detail: z.string(),
});
export type ChangeFlag = z.infer<typeof ChangeFlag>;

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
  /** Changes that need an explicit acceptance before they are merged (see ChangeFlag). */
  flags: z.array(ChangeFlag).optional(),
  /**
   * Why the verdict is what it is, when the checks alone do not say it: a worker that changed nothing showed nothing
   * ("no change"), whatever its checks did on the untouched base. Null when the checks and scope say it all.
   */
  reason: z.string().nullable().default(null),
  /** A built change whose every check already passed on the base commit: built, but the checks prove nothing about it. */
  weakEvidence: z.boolean().default(false),
  /** The files changed since the previous round's graded commit (rounds after the first); null for round 1. */
  sincePrevious: z.array(z.string()).nullable().default(null),
  /** What the checks cannot rule out (e.g. code that behaves differently when graded): said with every verdict. */
  caveats: z.array(z.string()).optional(),
  /** What bound the check runs' processes and memory as a whole, e.g. "cgroup v1 (pids, memory+swap)" or "prlimit only (…)". */
  limits: z.string().optional(),
});
export type Verdict = z.infer<typeof Verdict>;

/** The held-back checks run once on the base commit, beside the worker's start: the ones that already pass prove nothing. */
export const Baseline = z.object({ passedOnBase: z.array(z.string()) });
export type Baseline = z.infer<typeof Baseline>;

/** The warning shown wherever a delegation is answered, once the base run found checks that already pass. */
export function baselineWarning(b: Baseline | null | undefined): string | null {
  if (!b?.passedOnBase.length) return null;
  return `these checks already pass before any change: they prove nothing (${b.passedOnBase.join(", ")}) — give checks that fail on the untouched workspace`;
}

/** Whether a verdict counts toward a built rate: built, and a change was made (a no-op is never "built"). */
export function countsAsBuilt(v: Pick<Verdict, "verdict" | "scope"> | null | undefined): boolean {
  return !!v && v.verdict === "built" && v.scope.changedFiles.length > 0;
}

/** One comment of a review: a file, optionally a line of it, and what the reviewer says. */
export const ReviewComment = z.object({
  file: z.string().trim().min(1, "a review comment needs `file`").max(1000),
  line: z.number().int().positive().optional(),
  body: z.string().trim().min(1, "a review comment's `body` is empty").max(10_000),
});
export type ReviewComment = z.infer<typeof ReviewComment>;

/** How a round began: the task itself, a follow-up, a review, or a fix round the engine sent after a failure. */
export const RoundKind = z.enum(["task", "continue", "review", "fix"]);
export type RoundKind = z.infer<typeof RoundKind>;

/** One round of a worker: what started it, and how it was graded (null fields until it is). */
export const Round = z.object({
  round: z.number().int().positive(),
  kind: RoundKind,
  /** The follow-up text (null for round 1: the task). */
  message: z.string().nullable(),
  comments: z.array(ReviewComment).default([]),
  startedAt: z.number(),
  /** The follow-up reached the session (the worker ran in this round). */
  ran: z.boolean().default(false),
  verdict: Outcome.nullable(),
  claim: Outcome.nullable(),
  honest: z.boolean().nullable(),
  commit: z.string().nullable(),
  reason: z.string().nullable().default(null),
  weakEvidence: z.boolean().default(false),
  /** Files changed since the previous round's commit. */
  changed: z.array(z.string()).nullable().default(null),
  gradedAt: z.number().nullable(),
});
export type Round = z.infer<typeof Round>;

/** The text a review becomes: one follow-up that quotes each `file:line` with its comment, in order. */
export function reviewText(comments: ReviewComment[], message?: string | null): string {
  const lines = [`Review of your change: ${counted(comments.length, "comment")}. Address each one.`];
  if (message?.trim()) lines.push("", message.trim());
  lines.push("");
  for (const c of comments) lines.push(`- ${c.file}${c.line ? `:${c.line}` : ""} — ${c.body.trim()}`);
  return lines.join("\n");
}

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
