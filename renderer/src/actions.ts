// Housekeeping through the engine's own calls: retry, discard, merge all built of a batch (no client-side loops).
import type { MergeBatchResult } from "../../shared/api";
import { isAtRest, type Worker } from "../../shared/worker";
import { api } from "./api";

/**
 * Can this worker be tried again from scratch: it ended without a built verdict (failed, error, stopped, interrupted),
 * and it is no losing attempt (stopped because another attempt of its task was built: the task is done there).
 */
export const retryable = (w: Worker) => isAtRest(w.state) && w.state !== "built" && !w.lostTo;

/** Finished and still holding a workspace (merged ones are tidied by the engine itself). */
export const discardable = (w: Worker) => isAtRest(w.state) && !w.discarded && !w.merged;

/** Built, graded, not merged or discarded yet: what "merge all built" merges. */
export const mergeable = (w: Worker) => w.state === "built" && w.verdict?.verdict === "built" && !w.merged && !w.discarded;

/** The same task again, as a new worker in a fresh workspace on the same target (the engine's `workers.retry`). */
export async function retryWorker(w: Worker): Promise<string> {
  const { workerId } = await api.workers.retry.mutate({ workerId: w.id });
  return workerId;
}

export type MergeAllResult = MergeBatchResult;

/**
 * "Merge all built" of a batch, done by the engine (`workers.mergeBatch`): one by one in submission order, stopping at
 * the first refusal with its reason; the result names what merged, where it stopped, what was not tried and skipped.
 */
export async function mergeAll(batchId: string): Promise<MergeAllResult> {
  return api.workers.mergeBatch.mutate({ batchId });
}
