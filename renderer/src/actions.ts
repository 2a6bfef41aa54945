// Housekeeping the GUI does with the engine's own calls: retry, discard, merge all built of a batch.
import { isFinal, type Worker } from "../../shared/worker";
import { api, errorText } from "./api";

/** Can this worker be tried again from scratch: it ended without a built verdict (failed, error, stopped, interrupted). */
export const retryable = (w: Worker) => isFinal(w.state) && w.state !== "built";

/** Finished and still holding a workspace (merged ones are tidied by the engine itself). */
export const discardable = (w: Worker) => isFinal(w.state) && !w.discarded && !w.merged;

/** Built, graded, not merged or discarded yet: what "merge all built" merges. */
export const mergeable = (w: Worker) => w.state === "built" && w.verdict?.verdict === "built" && !w.merged && !w.discarded;

/**
 * The same task again, as a new worker in a fresh workspace on the same target (the engine has no retry call: this is
 * `workers.start` with the old spec; the new worker is not part of the old batch).
 */
export async function retryWorker(w: Worker): Promise<string> {
  const { workerId } = await api.workers.start.mutate({ ...w.spec, ...(w.targetId ? { targetId: w.targetId } : {}) });
  return workerId;
}

export interface MergeAllResult {
  merged: { workerId: string; commit: string; into: string }[];
  /** The worker whose merge was refused (a conflict, a moved base, …) with the engine's reason; the rest were not tried. */
  stopped: { workerId: string; reason: string } | null;
  notTried: string[];
}

/** Merges built workers one by one in the given order, stopping at the first refusal with its reason. */
export async function mergeAll(workers: Worker[], onStep?: (r: MergeAllResult) => void): Promise<MergeAllResult> {
  const r: MergeAllResult = { merged: [], stopped: null, notTried: workers.map((w) => w.id) };
  for (const w of workers) {
    r.notTried = r.notTried.filter((id) => id !== w.id);
    try {
      const m = await api.workers.merge.mutate({ workerId: w.id });
      r.merged.push({ workerId: w.id, commit: m.commit, into: m.into });
      onStep?.({ ...r });
    } catch (err) {
      r.stopped = { workerId: w.id, reason: errorText(err) };
      break;
    }
  }
  return r;
}
