// Grants ("always" answers held by the engine) as every client shows them: in force only while their worker's run
// lasts (shared/worker.ts expires them when it settles, stops or fails), and never with another worker's private path.
import type { Grant } from "./permission";

/** What stands for a worker's private workspace path where a grant names it. */
const WORKSPACE_MARK = "⟨workspace⟩";

/** Whether the grant still answers asks (its worker's run has not ended). */
export const grantInForce = (g: Pick<Grant, "expiredAt">): boolean => g.expiredAt === undefined;

/**
 * A grant's pattern without the worker's absolute workspace path: a path inside it becomes repository-relative
 * (`src/a.ts`), any other mention of it the marker ⟨workspace⟩ (a command is never rewritten into a different one).
 * Plain string work: shared/ runs where there is no `path` module.
 */
export function grantShown(pattern: string, worktree: string | null | undefined): string {
  if (!worktree) return pattern;
  const root = worktree.replace(/\/+$/, "");
  if (!root) return pattern;
  if (pattern === root) return ".";
  if (pattern.startsWith(`${root}/`) && !pattern.includes(" ")) return pattern.slice(root.length + 1);
  return pattern.split(root).join(WORKSPACE_MARK);
}

/** The grants a list of every worker's grants shows: those in force, newest first, and how many expired ones it leaves out. */
export function grantsInView<G extends Pick<Grant, "expiredAt" | "createdAt">>(all: readonly G[]): { shown: G[]; expired: number } {
  const shown = all.filter(grantInForce).sort((a, b) => b.createdAt - a.createdAt);
  return { shown, expired: all.length - shown.length };
}
