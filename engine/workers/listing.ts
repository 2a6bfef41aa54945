import path from "node:path";
import type { WorkerState } from "../../shared/worker";
import type { Worker } from "../../shared/worker";

/** Workers filtered by batch, state and repository (its top level, or a folder inside it), oldest first. */
export function listWorkers(all: Worker[], f: { batchId?: string; states?: WorkerState[]; repo?: string }): Worker[] {
  const repo = f.repo ? path.resolve(f.repo) : null;
  return all.filter(
    (w) =>
      (!f.batchId || w.batchId === f.batchId) &&
      (!f.states?.length || f.states.includes(w.state)) &&
      (!repo || w.repo === repo || repo.startsWith(w.repo + path.sep) || w.spec.directory === repo),
  );
}
