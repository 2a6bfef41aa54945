import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import { parseClaim, type Verdict } from "../../shared/verdict";
import type { CheckSpec } from "../../shared/check";
import { changedFiles, commitWork, diffStat, freshCheckout, mergeHint, publishBranch, type Workspace } from "../workspace/workspace";
import { runChecks, type CheckSandbox } from "./checks";
import { checkScope } from "./scope";

export interface GradeInput {
  workspace: Workspace;
  checks: CheckSpec[];
  scope: string[];
  protect: string[];
  finalText: string;
  title: string;
  /** A folder of the engine's for the fresh checkout the checks run in (emptied first, removed after). */
  checkoutDir: string;
  /** How checks are confined; absent: unconfined (the person opted out of the sandbox). */
  sandbox?: CheckSandbox;
}

/**
 * Grades a settled worker (every process of it already ended): the engine commits the workspace's files in its own
 * repository, runs the checks the worker never saw in a fresh checkout of that commit, checks scope, compares the
 * worker's claim. `built` only if every check and the scope pass. The verdict names the commit; only it is merged.
 */
export async function grade(input: GradeInput): Promise<Verdict> {
  const { workspace: ws } = input;
  const commit = await commitWork(ws, `ocw: ${input.title}`);
  const checkout = input.checkoutDir;
  // Independent reads of the commit, run side by side (each a git process).
  const stat = diffStat(ws, commit).catch(() => "");
  let checks;
  let scope;
  const sub = path.relative(ws.worktree, ws.cwd);
  try {
    const [changed] = await allSettledOrThrow([changedFiles(ws, commit), freshCheckout(ws, commit, checkout)] as const);
    // scope/protect globs are relative to the folder the user named; git paths are relative to the repo root.
    const rel = sub ? changed.map((f) => (f.startsWith(sub + "/") ? f.slice(sub.length + 1) : `../${f}`)) : changed;
    scope = checkScope(rel, input.scope, input.protect);
    const cwd = path.join(checkout, sub);
    mkdirSync(cwd, { recursive: true });
    checks = await runChecks(input.checks, cwd, input.sandbox ? { ...input.sandbox, root: checkout } : undefined);
  } finally {
    rmSync(checkout, { recursive: true, force: true });
  }
  const built = scope.passed && checks.every((c) => c.passed);
  const verdict = built ? "built" : "honest-failure";
  const { claim, reason } = parseClaim(input.finalText);
  if (built) await publishBranch(ws, commit);
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
    commit,
    diffStat: await stat,
    mergeHint: built ? mergeHint(ws) : null,
  };
}

/** Promise.all that lets every promise finish before it throws the first failure (nothing is still writing afterwards). */
async function allSettledOrThrow<T extends readonly unknown[]>(ps: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const rs = await Promise.allSettled(ps);
  const failed = rs.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return rs.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
