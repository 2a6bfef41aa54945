// NOTE (engine-core engineer, h1): this file was overwritten by mistake at 18:55 UTC while the engine was being split
// (a file of the same name was being created in engine/workers/). It was rewritten from engine/api/router.ts,
// shared/api.ts and test/integration/housekeeping.test.ts; its author should check it against what they had.
import { codeOf, InputError, OcwError } from "../../shared/errors";
import type { MergeBatchResult, PruneResult, RetryResult, RevertResult } from "../../shared/api";
import { quoteUntrustedList } from "../../shared/untrusted";
import { attemptGroup, mergedSibling } from "../../shared/attempts";
import { isAtRest } from "../../shared/worker";
import { runnerConfigReason } from "../grading";
import { describeFlags, flaggedChanges, git, gitWithObjects, inspectRepo, landCommit, landObjects, mergeTrees, revertCommit } from "../workspace";
import type { Engine } from "./engine";

/**
 * Retry: a finished worker that was not built runs its task again as a new worker (fresh workspace, same target, in
 * the same batch as the old one). The old worker is left as it is (its workspace stays until a discard).
 */
export async function retryWorker(engine: Engine, workerId: string): Promise<RetryResult> {
  const w = engine.get(workerId);
  if (w.state === "built") throw new InputError(`worker ${workerId} is built: there is nothing to retry (merge it or discard it)`, "conflict");
  if (!["honest-failure", "stopped", "interrupted", "error"].includes(w.state)) {
    throw new InputError(`worker ${workerId} is ${w.state}: stop it first, then retry it`, "conflict");
  }
  // Attempts are alternatives at one task: once one of them is merged, the task is done; a retry would do it again
  // beside that merge (its work could not land: the merge of a second attempt is refused).
  refuseIfAttemptMerged(engine, w.id, "retried");
  const { workerId: id } = await engine.start(
    { ...w.spec, ...(w.targetId ? { targetId: w.targetId } : {}) },
    { retryOf: w.id, ...(w.batchId ? { batchId: w.batchId } : {}) },
  );
  return { workerId: id, retryOf: workerId };
}

/**
 * Attempts are alternatives at one task: once one of them is merged (and not reverted), the task is done, and neither a
 * retry nor a continue on the new base of another one runs it again beside that merge (its work could not land).
 */
function refuseIfAttemptMerged(engine: Engine, workerId: string, verb: "retried" | "continued on the new base"): void {
  const sib = mergedSibling(engine.get(workerId), engine.list());
  if (sib?.merged)
    throw new OcwError(
      "conflict",
      `worker ${workerId} is not ${verb}: another attempt at its task, ${sib.id}, was merged into ${sib.merged.into} (${sib.merged.commit.slice(0, 12)}), so the task is done. To do it again all the same, revert that merge first (\`ocw revert ${sib.id}\`), then ${verb === "retried" ? "retry" : "rebase"} ${workerId}`,
      { kind: "attempt-merged", data: { workerId, merged: sib.id, into: sib.merged.into, commit: sib.merged.commit } },
    );
}

const merging = new Set<string>();

/**
 * "Merge all built" of a batch: its built workers are merged one by one in submission order (each exactly its graded
 * commit, by the engine's conflict-safe merge); the first refused merge stops it, with the reason, and the built workers
 * after it are not tried. Workers that are not for merging are listed as skipped with why.
 */
export async function mergeBatch(engine: Engine, batchId: string, opts: { acceptFlagged?: boolean } = {}): Promise<MergeBatchResult> {
  const summary = engine.batch(batchId); // an unknown batch says so
  if (merging.has(batchId)) throw new InputError(`a merge of batch ${batchId} is already under way: wait for it, then look at the batch again`, "conflict");
  merging.add(batchId);
  try {
    if (summary.integration) return await landIntegration(engine, batchId, opts);
    const r: MergeBatchResult = { batchId, merged: [], stopped: null, notTried: [], skipped: [], integration: null };
    const all = engine.list();
    for (const w of all.filter((x) => x.batchId === batchId)) {
      // Of a task's attempts (alternatives), only the one the checks picked lands.
      const winner = w.attempt ? attemptGroup(w.attempt.groupId, all).winner : undefined;
      const why =
        w.state !== "built"
          ? `not built (${w.state})`
          : w.merged
            ? `already merged into ${w.merged.into}`
            : w.discarded
              ? "discarded"
              : winner !== undefined && winner !== w.id
                ? `an attempt the checks did not pick (its task's winner is ${winner ?? "none"}); merge it alone to take it instead`
                : null;
      if (why) {
        r.skipped.push({ workerId: w.id, reason: why });
        continue;
      }
      if (r.stopped) {
        r.notTried.push(w.id);
        continue;
      }
      try {
        const m = await engine.merge(w.id, opts);
        r.merged.push({ workerId: w.id, commit: m.commit, into: m.into });
      } catch (err) {
        const code = codeOf(err);
        // A merge git refused (conflicts, a moved base) is a conflict of this batch with the user's branch.
        r.stopped = { workerId: w.id, reason: (err as Error).message, code: code === "bad-input" ? "conflict" : code };
      }
    }
    return r;
  } finally {
    merging.delete(batchId);
  }
}

/**
 * A batch with integration checks lands as its one integration commit, and only when the integration passed: fast-
 * forward when the branch is still at the batch's base, else one merge commit. Each worker it combines is recorded as
 * merged there.
 */
async function landIntegration(engine: Engine, batchId: string, opts: { acceptFlagged?: boolean }): Promise<MergeBatchResult> {
  const rec = engine.batches.get(batchId)!;
  const summary = engine.batch(batchId);
  const integ = summary.integration!;
  if (integ.state !== "done")
    throw new InputError(
      `batch ${batchId}'s integration is ${integ.state === "running" ? "running" : "waiting for its tasks to end"}: merge it once it passed`,
      "conflict",
    );
  const res = integ.result!;
  if (res.landed) throw new InputError(`batch ${batchId} was already merged into ${res.landed.into} (${res.landed.commit.slice(0, 12)})`, "conflict");
  if (!res.passed || !res.commit)
    throw new InputError(
      `batch ${batchId}'s integration did not pass (${res.reason ?? "failed"}): nothing was merged. Continue a worker of it with a review (ocw continue WORKER_ID --message TEXT): once its new round is graded the integration runs again by itself; or merge the workers one by one (ocw merge WORKER_ID)`,
      "conflict",
    );
  const stale = engine.batches.integrationStale(batchId);
  if (stale)
    throw new InputError(
      `batch ${batchId}'s integration is of its workers as they were: ${stale}. It runs again once every task is at rest; merge once it passed (nothing was changed)`,
      "conflict",
    );
  if (!rec.branch)
    throw new InputError(`batch ${batchId} started from a detached HEAD: merge its integration commit ${res.commit.slice(0, 12)} by hand`, "conflict");
  // The integration commit is in the engine's graded store until it lands (then exactly its missing objects are copied).
  const graded = await engine.batches.graded(rec.repo!);
  const head = await git(rec.repo!, ["rev-parse", "-q", "--verify", `refs/heads/${rec.branch}`], { allowFail: true });
  const from = head ? (await gitWithObjects(rec.repo!, graded, ["merge-base", head, res.commit])) || res.base : res.base;
  const flags = await flaggedChanges(rec.repo!, from, res.commit, graded, undefined, [], runnerConfigReason);
  if (flags.length && !opts.acceptFlagged)
    throw new InputError(
      `batch ${batchId}'s integration commit holds flagged files that do more than their diff shows: ${describeFlags(flags)}. Review them, then merge with --accept-flagged (nothing was changed)`,
      "conflict",
    );
  const landed = await landCommit({
    repo: rec.repo!,
    branch: rec.branch,
    commit: res.commit,
    fastForward: true,
    objects: graded,
    publish: (next) => landObjects(rec.repo!, graded, next),
    message: `Merge batch ${batchId}: integration of ${res.workers.join(", ")}`,
    // The files are named once, in the conflict itself: the way on does not list them again.
    onConflict: () =>
      `To go on: run the batch again from the current HEAD (its tasks see the commits it conflicts with), or merge its workers one by one (ocw merge WORKER_ID; ocw rebase WORKER_ID continues one that conflicts on the new base).`,
  });
  for (const id of res.workers) await engine.recordLanded(id, rec.branch, landed);
  engine.batches.landed(batchId, rec.branch, landed);
  const skipped = engine
    .list()
    .filter((w) => w.batchId === batchId && !res.workers.includes(w.id))
    .map((w) => ({ workerId: w.id, reason: w.state !== "built" ? `not built (${w.state})` : "not in the integration commit" }));
  return {
    batchId,
    merged: res.workers.map((id) => ({ workerId: id, commit: landed, into: rec.branch! })),
    stopped: null,
    notTried: [],
    skipped,
    integration: { commit: res.commit, into: rec.branch, merge: landed },
  };
}

/** Reverts what the engine landed: a worker's merge, or a batch's integration commit. */
export async function revertLanded(engine: Engine, ref: { workerId?: string; batchId?: string }): Promise<RevertResult> {
  if (ref.workerId) {
    const r = await engine.revert(ref.workerId);
    return { reverted: ref.workerId, ...r };
  }
  const batchId = ref.batchId!;
  engine.batch(batchId);
  const rec = engine.batches.get(batchId);
  const landed = rec?.integration?.result?.landed;
  if (!rec || !landed)
    throw new InputError(`batch ${batchId} has no landed integration commit: revert its workers one by one (ocw revert WORKER_ID)`, "conflict");
  const commit = await revertCommit(rec.repo!, landed.into, landed.commit, `Revert ${landed.commit.slice(0, 12)}: batch ${batchId}`);
  for (const id of rec.integration!.result!.workers) engine.recordReverted(id, landed.into, commit);
  return { reverted: batchId, into: landed.into, commit };
}

/**
 * Deletes the person's merged ocw/ branches: those contained in another local branch, and those of workers the
 * engine merged or discarded. Built work nobody merged yet, and running workers' branches, are kept with the reason.
 */
export async function pruneBranches(engine: Engine, directory: string): Promise<PruneResult> {
  const repo = await inspectRepo(directory);
  const refs = (await git(repo.root, ["for-each-ref", "--format=%(refname)%00%(objectname)%00%(worktreepath)", "refs/heads/"]))
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\0") as [string, string, string]);
  const ours = refs.filter(([r]) => r.startsWith("refs/heads/ocw/"));
  const others = refs.filter(([r]) => !r.startsWith("refs/heads/ocw/"));
  const merged = new Set<string>();
  for (const [other] of others) {
    for (const r of (await git(repo.root, ["for-each-ref", "--format=%(refname)", `--merged=${other}`, "refs/heads/ocw/"], { allowFail: true })).split("\n"))
      if (r) merged.add(r);
  }
  const workers = new Map(engine.list().map((w) => [w.id, w]));
  const out: PruneResult = { deleted: [], kept: [] };
  for (const [ref, oid, checkedOut] of ours) {
    const branch = ref.slice("refs/heads/".length);
    const w = workers.get(branch.slice("ocw/".length));
    let keep: string | null = null;
    // Deleting a checked-out branch would leave that checkout on no commit (git branch -d refuses too).
    if (checkedOut) keep = `checked out in ${checkedOut}: switch that checkout to another branch first`;
    else if (w && !isAtRest(w.state)) keep = `its worker is ${w.state}`;
    else if (merged.has(ref) || w?.merged || w?.discarded) keep = null;
    else if (w?.state === "built") keep = "built and not merged yet: merge it or discard the worker";
    else keep = "not merged into any branch: delete it by hand if you do not want it (git branch -D " + branch + ")";
    if (keep) {
      out.kept.push({ branch, reason: keep });
      continue;
    }
    // --no-deref: an ocw/ symbolic ref is deleted itself, never the person's branch it names.
    await git(repo.root, ["update-ref", "--no-deref", "-d", ref, oid]);
    out.deleted.push({ branch, commit: oid });
  }
  return out;
}

/**
 * "Continue the worker on the new base": a built worker whose merge conflicts with its base branch as it is now runs its
 * task again as a new worker from the current HEAD, told which files conflicted and where its earlier change is (the
 * graded commit, which `ocw publish <id>` puts on branch ocw/<id>). The old worker stays until it is discarded.
 */
export async function continueOnNewBase(engine: Engine, workerId: string): Promise<RetryResult & { files: string[] }> {
  const w = engine.get(workerId);
  if (w.state !== "built" || !w.verdict?.commit)
    throw new InputError(`worker ${workerId} is ${w.state}: only a built worker is continued on a new base (retry the others)`, "conflict");
  if (w.merged) throw new InputError(`worker ${workerId} was already merged into ${w.merged.into}`, "conflict");
  if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to continue`, "conflict");
  refuseIfAttemptMerged(engine, workerId, "continued on the new base");
  const head = w.baseBranch ? await git(w.repo, ["rev-parse", "-q", "--verify", `refs/heads/${w.baseBranch}`], { allowFail: true }) : "";
  if (!head) throw new InputError(`worker ${workerId}'s base branch ${w.baseBranch ?? "(detached)"} is gone: delegate the task again by hand`, "conflict");
  // From the engine's graded store (the graded commit is not in the person's repository): nothing is written to theirs.
  const m = await mergeTrees(w.repo, head, w.verdict.commit, undefined, await engine.batches.graded(w.repo));
  const files = "conflict" in m ? m.conflict : [];
  // Its change merges as the base is now: running the task again would only redo it (the merge lands it as it is).
  if ("tree" in m)
    throw new OcwError(
      "conflict",
      `worker ${workerId} merges cleanly into ${w.baseBranch} as it is now: merge it (ocw merge ${workerId}); its task need not run again`,
      {
        kind: "merges-cleanly",
        data: { workerId, into: w.baseBranch ?? null },
      },
    );
  const note = `\n\nNote from the engine: an earlier attempt at this task (commit ${w.verdict.commit.slice(0, 12)}) no longer merges into ${w.baseBranch}: it conflicts in ${quoteUntrustedList(files, "file names from its change")}, which changed since. Do the task on the code as it is now.`;
  const { workerId: id } = await engine.start({ ...w.spec, task: w.spec.task + note, ...(w.targetId ? { targetId: w.targetId } : {}) });
  return { workerId: id, retryOf: workerId, files };
}
