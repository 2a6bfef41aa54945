import path from "node:path";
import { parseClaim, type Verdict } from "../../shared/verdict";
import type { CheckSpec } from "../../shared/check";
import { changedFiles, commitWork, diffStat, mergeHint, type Workspace } from "../workers/workspace";
import { runChecks } from "./checks";
import { checkScope } from "./scope";

export interface GradeInput {
  workspace: Workspace;
  checks: CheckSpec[];
  scope: string[];
  protect: string[];
  finalText: string;
  title: string;
}

/**
 * Grades a settled worker: commit its work onto its branch, run the checks it never saw, check scope, compare its claim.
 * `built` only if every check and the scope pass.
 */
export async function grade(input: GradeInput): Promise<Verdict> {
  const { workspace: ws } = input;
  await commitWork(ws.worktree, `ocw: ${input.title}`);
  const changed = await changedFiles(ws.worktree, ws.baseCommit);
  // scope/protect globs are relative to the folder the user named; git paths are relative to the repo root.
  const sub = path.relative(ws.worktree, ws.cwd);
  const rel = sub ? changed.map((f) => (f.startsWith(sub + "/") ? f.slice(sub.length + 1) : `../${f}`)) : changed;
  const scope = checkScope(rel, input.scope, input.protect);
  const checks = await runChecks(input.checks, ws.cwd);
  const built = scope.passed && checks.every((c) => c.passed);
  const verdict = built ? "built" : "honest-failure";
  const { claim, reason } = parseClaim(input.finalText);
  return {
    verdict,
    claim,
    claimReason: reason,
    honest: claim === verdict,
    checks,
    scope,
    gradedAt: Date.now(),
    branch: ws.branch,
    worktree: ws.worktree,
    diffStat: await diffStat(ws.worktree, ws.baseCommit),
    mergeHint: built ? mergeHint(ws) : null,
  };
}
