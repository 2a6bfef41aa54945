import { existsSync } from "node:fs";
import path from "node:path";
import { mergedSibling } from "../../shared/attempts";
import { InputError, OcwError } from "../../shared/errors";
import type { DecidedBy } from "../../shared/permission";
import { isAtRest, type Worker, workerTitle } from "../../shared/worker";
import { runnerConfigReason } from "../grading";
import {
  describeFlags,
  flaggedChanges,
  fullDiff,
  git,
  gitWithObjects,
  dropGradedStore,
  gradedStoreOf,
  isAncestor,
  landCommit,
  landObjects,
  publishBranch,
  type PublishedBranch,
  removeWorkspace,
  revertCommit,
  type Workspace,
} from "../workspace";
import type { WorkerRegistry } from "../registry";

/**
 * A merge's outcome: the branch's new tip; `alreadyIn` when the graded commit was there already (it came in with a
 * worker that started from it: nothing was changed); `alsoLanded`, the workers whose graded commits this one started
 * from and brought in with it (recorded as merged).
 */
export interface MergeOutcome {
  commit: string;
  into: string;
  alreadyIn: boolean;
  alsoLanded: string[];
}

/**
 * Why a worker that is not built is not landed (merged, published, pushed), and what to do next: nothing but a built
 * round's graded commit ever lands, so the way on is another round (or the task again), never an override.
 */
export function notBuilt(w: Worker, verb: string): InputError {
  const state = w.state === "honest-failure" ? "failed (its held-back checks did not pass)" : w.state;
  const next =
    w.state === "honest-failure"
      ? "continue it with a review (a new round, graded again) or retry its task, then land the round that is built"
      : w.state === "stopped" || w.state === "interrupted" || w.state === "error"
        ? "resume it (or retry its task), then land it once it is built"
        : w.state === "waiting-approval"
          ? "answer its ask (it waits on you), then land it once its verdict is built"
          : "wait for its verdict, then land it if it is built";
  return new InputError(`worker ${w.id} is ${state}: only a built worker's graded commit is ${verb}; ${next} (nothing was changed)`, "conflict");
}

/**
 * A finished worker's workspace lifecycle: merge (exactly the graded commit), diff, discard, and garbage collection.
 * What a worker leaves is its workspace (private repository), the engine's repository of it, its private tmp and its
 * `ocw/<id>` branch. Merged or discarded workers lose them; finished ones older than the retention
 * (OCW_RETENTION_DAYS) too, except built work nobody merged yet: that waits for a merge or an explicit discard.
 */
export class WorkspaceLifecycle {
  constructor(
    private readonly reg: WorkerRegistry,
    private readonly retentionDays: () => number,
  ) {}

  /**
   * Lands exactly the graded commit on the worker's base branch (engine/workspace/land.ts: computed from objects, the
   * checkout updated with every filter off and verified, the branch moved last). Flagged changes (symlinks, executables,
   * git and tool configuration) need `acceptFlagged`.
   */
  async merge(workerId: string, opts: { acceptFlagged?: boolean } = {}): Promise<MergeOutcome> {
    const w = this.reg.get(workerId);
    if (w.state !== "built") throw notBuilt(w, "merged");
    if (w.merged) throw new InputError(`worker ${workerId} was already merged into ${w.merged.into} (${w.merged.commit})`, "conflict");
    // Attempts are alternatives at one task: one of them lands, never two on top of each other.
    const sibling = mergedSibling(w, this.reg.list());
    if (sibling?.merged)
      throw new OcwError(
        "conflict",
        `worker ${workerId} is another attempt at the task of ${sibling.id}, which was merged into ${sibling.merged.into} (${sibling.merged.commit.slice(0, 12)}): landing both would do the task twice. To take this attempt instead, revert that merge first (ocw revert ${sibling.id}), then merge ${workerId}; or discard ${workerId} (nothing was changed)`,
        { kind: "attempt-merged", data: { workerId, merged: sibling.id, into: sibling.merged.into, commit: sibling.merged.commit } },
      );
    const ws = this.reg.workspaceOf(w);
    if (!ws) throw new InputError(`worker ${workerId} has no workspace`);
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to merge`, "conflict");
    if (!ws.baseBranch)
      throw new InputError(
        `the worker started from a detached HEAD, so there is no branch to merge it into: \`ocw publish ${workerId}\` brings its graded commit in as branch ${ws.branch}; then check out the branch you want it on and run \`git merge --no-ff ${ws.branch}\``,
        "conflict",
      );
    const commit = w.verdict?.commit;
    if (!commit) throw new InputError(`worker ${workerId} has no graded commit to merge`, "conflict");
    const tip = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
    // A branch published at an earlier round's commit is the engine's own, not a move of the person's.
    if (tip && tip !== commit && !this.earlierCommits(workerId, commit).includes(tip))
      throw new InputError(
        `${ws.branch} was moved to ${tip.slice(0, 12)} after grading; only the graded commit ${commit.slice(0, 12)} is merged — reset the branch or merge it by hand`,
        "conflict",
      );
    // The graded commit is in the engine's store until it lands: the merge is computed there, and exactly the objects
    // of the result the person's repository lacks are copied into it once the merge applies.
    const graded = await gradedStoreOf(ws);
    const head = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.baseBranch}`], { allowFail: true });
    // Already there: it came in with another worker's merge (one that started from it, in a batch). Recorded, and no
    // empty merge commit made.
    if (head && (await isAncestor(ws.repo, commit, head, graded))) {
      this.reg.record(workerId, { type: "merged", into: ws.baseBranch, commit: head });
      await this.tidy(workerId, "merged");
      return { commit: head, into: ws.baseBranch, alreadyIn: true, alsoLanded: [] };
    }
    const from = head ? (await gitWithObjects(ws.repo, graded, ["merge-base", head, commit])) || ws.baseCommit : ws.baseCommit;
    const flags = await flaggedChanges(ws.repo, from, commit, graded, undefined, head ? [head] : [], runnerConfigReason);
    if (flags.length && !opts.acceptFlagged) {
      throw new InputError(
        `worker ${workerId}'s change holds flagged files that do more than their diff shows: ${describeFlags(flags)}. Review them, then merge with --accept-flagged (nothing was changed)`,
        "conflict",
      );
    }
    const title = workerTitle(w.spec, 60);
    const merged = await landCommit({
      repo: ws.repo,
      branch: ws.baseBranch,
      commit,
      message: `Merge ${ws.branch}: ${title}`,
      objects: graded,
      publish: (next) => landObjects(ws.repo, graded, next),
      elsewhere: `bring the work in as branch ${ws.branch} (ocw publish ${workerId}) and merge it where you are (git merge ${ws.branch})`,
      // The files are named once, in the conflict itself: the way on does not list them again.
      onConflict: () =>
        `To go on: continue the worker on the new base (ocw rebase ${workerId}: its task again from the current HEAD, told which files changed), then discard ${workerId}; or merge it by hand (ocw publish ${workerId}, then git merge ${ws.branch}).`,
    });
    this.reg.record(workerId, { type: "merged", into: ws.baseBranch, commit: merged });
    // A worker that started from other workers' graded commits (a batch task after others) brings them in too: each is
    // recorded as landed by this merge, and said so.
    const alsoLanded: string[] = [];
    if (w.startFrom && w.batchId)
      for (const o of this.reg.list()) {
        if (o.id === workerId || o.batchId !== w.batchId || o.state !== "built" || o.merged || o.discarded || !o.verdict?.commit) continue;
        if (!(await isAncestor(ws.repo, o.verdict.commit, commit, graded))) continue;
        alsoLanded.push(o.id);
        await this.recordLanded(o.id, ws.baseBranch, merged);
      }
    // Merged, the work lives in the user's branch: the workspace, the engine's repository and ocw/<id> go.
    await this.tidy(workerId, "merged");
    return { commit: merged, into: ws.baseBranch, alreadyIn: false, alsoLanded };
  }

  /**
   * "Publish the branch": exactly the graded commit's objects the person's repository lacks are copied into it and
   * `ocw/<id>` is set to that commit, for a person who reviews or merges with their own git tools. Grading publishes
   * nothing; merge, push and pull request bring the commit themselves.
   */
  async publish(workerId: string): Promise<PublishedBranch> {
    const { ws, commit } = this.landable(workerId, "published");
    return publishBranch(ws, commit, this.earlierCommits(workerId, commit));
  }

  /** The worker's earlier rounds' graded commits (a branch published at one of them follows the latest verdict). */
  private earlierCommits(workerId: string, commit: string): string[] {
    return (this.reg.get(workerId).rounds ?? []).flatMap((r) => (r.commit && r.commit !== commit ? [r.commit] : []));
  }

  /** A built, unmerged, undiscarded worker's workspace and graded commit, or why it has none to land. */
  landable(workerId: string, verb: string): { ws: Workspace; commit: string } {
    const w = this.reg.get(workerId);
    if (w.state !== "built") throw notBuilt(w, verb);
    if (w.merged) throw new InputError(`worker ${workerId} was already merged into ${w.merged.into} (${w.merged.commit})`, "conflict");
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to publish`, "conflict");
    const ws = this.reg.workspaceOf(w);
    const commit = w.verdict?.commit;
    if (!ws || !commit) throw new InputError(`worker ${workerId} has no graded commit to publish`, "conflict");
    return { ws, commit };
  }

  /** A batch's integration commit landed: each worker it combines counts as merged there. */
  async recordLanded(workerId: string, into: string, commit: string): Promise<void> {
    const w = this.reg.get(workerId);
    if (w.merged) return;
    this.reg.record(workerId, { type: "merged", into, commit });
    await this.tidy(workerId, "merged");
  }

  /** Undoes a merge the engine made, as a new commit on the branch it landed on; refuses cleanly on conflict. */
  async revert(workerId: string): Promise<{ commit: string; into: string }> {
    const w = this.reg.get(workerId);
    if (!w.merged) throw new InputError(`worker ${workerId} was not merged by the engine: nothing to revert`, "conflict");
    if (w.reverted) throw new InputError(`worker ${workerId}'s merge was already reverted (${w.reverted.commit.slice(0, 12)})`, "conflict");
    const commit = await revertCommit(w.repo, w.merged.into, w.merged.commit, `Revert ${w.merged.commit.slice(0, 12)}: ocw/${workerId}`);
    this.reg.record(workerId, { type: "reverted", into: w.merged.into, commit });
    return { commit, into: w.merged.into };
  }

  /** Records a revert made for several workers at once (a batch's integration commit). */
  recordReverted(workerId: string, into: string, commit: string): void {
    if (!this.reg.get(workerId).reverted) this.reg.record(workerId, { type: "reverted", into, commit });
  }

  async diff(workerId: string): Promise<string> {
    const w = this.reg.get(workerId);
    const ws = this.reg.workspaceOf(w);
    if (!ws || w.discarded || (!existsSync(ws.worktree) && !existsSync(ws.gitDir))) return "";
    return fullDiff(ws, w.verdict?.commit ?? undefined);
  }

  /**
   * Removes a finished worker's workspace, its engine repository and its branch, unmerged work included: the person
   * asked for it. An active worker must be stopped first.
   */
  discard(workerId: string, by: DecidedBy = { kind: "person" }): Promise<Worker> {
    // A second discard while one is under way waits on it (its workspace is already going).
    const under = this.discards.get(workerId);
    if (under) return under;
    let w: Worker;
    try {
      w = this.reg.get(workerId);
    } catch (err) {
      return Promise.reject(err);
    }
    if (!isAtRest(w.state)) return Promise.reject(new InputError(`worker ${workerId} is ${w.state}: stop it first, then discard it`, "conflict"));
    if (w.discarded) return Promise.resolve(w);
    const p = this.discardNow(workerId, by).finally(() => this.discards.delete(workerId));
    this.discards.set(workerId, p);
    return p;
  }

  /**
   * Whether a discard of the worker is under way: its workspace is being removed and its session goes next, so nothing
   * may start it again meanwhile (a resume or a follow-up that passed its checks before would run in a removed folder, on
   * a deleted session, and be marked discarded while it runs).
   */
  discarding(workerId: string): boolean {
    return this.discards.has(workerId);
  }

  private readonly discards = new Map<string, Promise<Worker>>();

  private async discardNow(workerId: string, by: DecidedBy): Promise<Worker> {
    const ws = this.reg.workspaceOf(this.reg.get(workerId));
    if (ws) await removeWorkspace(ws, { force: true, tmpDir: path.join(this.reg.workerTmpRoot, workerId) });
    this.reg.rt(workerId).forgetWorkspace();
    this.reg.record(workerId, { type: "discarded", by });
    if (ws) this.dropGradedStore(ws.repo);
    // Its session in opencode goes too (the transcript is in the worker's log); the discard does not wait on opencode.
    void this.reg.deleteSession(workerId).catch(() => undefined);
    return this.reg.get(workerId);
  }

  /**
   * Housekeeping of one finished worker: removes its workspace, engine repository, private tmp and (merged) branch.
   * Never unmerged built work. A failure is a notice, never an error of the call that asked (the merge happened).
   */
  private async tidy(workerId: string, why: string): Promise<void> {
    const w = this.reg.workers.get(workerId);
    const ws = w && this.reg.workspaceOf(w);
    if (!w || !ws || !isAtRest(w.state) || (w.state === "built" && !w.merged)) return;
    try {
      await removeWorkspace(ws, { force: !!w.merged || w.state !== "built", tmpDir: path.join(this.reg.workerTmpRoot, workerId) });
      this.reg.rt(workerId).forgetWorkspace();
      this.dropGradedStore(ws.repo);
      // A merged worker never runs again (no resume, no follow-up): its opencode session goes too. Others tidied for
      // their age may still be resumed in theirs.
      if (w.merged) void this.reg.deleteSession(workerId).catch(() => undefined);
    } catch (err) {
      this.reg.notice("warn", `could not tidy worker ${workerId} (${why}): ${(err as Error).message}`);
    }
  }

  /**
   * The engine's graded store of a repository (engine/workspace/workspace.ts) goes once nothing can need it: no worker
   * anywhere is active (a queued task may start from a graded commit), and every worker of that repository was merged,
   * discarded or tidied (its engine folder gone). What was landed is in the person's repository by then.
   */
  private dropGradedStore(repo: string): void {
    const workers = this.reg.list();
    if (workers.some((w) => !isAtRest(w.state))) return;
    if (workers.some((w) => w.repo === repo && !w.merged && !w.discarded && existsSync(this.reg.engineGitDir(w.id)))) return;
    try {
      dropGradedStore(path.dirname(this.reg.engineGitDir("w")), repo);
    } catch (err) {
      this.reg.notice("warn", `could not remove the engine's graded objects of ${repo}: ${(err as Error).message}`);
    }
  }

  /**
   * Removes the workspaces of finished workers older than the retention: merged, failed, stopped, interrupted or
   * errored ones. Built but unmerged work is kept until it is merged or discarded. Then every graded store nothing
   * needs any more (see dropGradedStore) goes.
   */
  async collectGarbage(now = Date.now()): Promise<string[]> {
    const days = this.retentionDays();
    const done: string[] = [];
    for (const w of days > 0 ? this.reg.list() : []) {
      if (!isAtRest(w.state) || w.discarded || (w.state === "built" && !w.merged)) continue;
      if (now - (w.endedAt ?? w.updatedAt) < days * 86_400_000) continue;
      const ws = this.reg.workspaceOf(w);
      if (!ws || (!existsSync(ws.worktree) && !existsSync(ws.gitDir))) continue;
      await this.tidy(w.id, `older than ${days} days`);
      done.push(w.id);
    }
    // A graded store whose removal was put off when its repository's last worker went (a worker elsewhere was at work
    // then) is removed now, where nothing needs it any more: else it stayed until the engine's next discard there.
    for (const repo of new Set(this.reg.list().map((w) => w.repo))) if (repo) this.dropGradedStore(repo);
    return done;
  }
}
