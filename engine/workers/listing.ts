import { realpathSync } from "node:fs";
import path from "node:path";
import type { WorkerState } from "../../shared/worker";
import type { Worker } from "../../shared/worker";

/** Workers filtered by batch, state and repository (its top level, or a folder inside it), oldest first. */
export function listWorkers(all: Worker[], f: { batchId?: string; states?: WorkerState[]; repo?: string }): Worker[] {
  let repo = f.repo ? path.resolve(f.repo) : null;
  // git names a repository by its real path (/tmp may be a symlink).
  if (repo) {
    try {
      repo = realpathSync(repo);
    } catch {
      /* a folder that is gone matches what was recorded for it */
    }
  }
  return all.filter(
    (w) =>
      (!f.batchId || w.batchId === f.batchId) &&
      (!f.states?.length || f.states.includes(w.state)) &&
      (!repo || w.repo === repo || repo.startsWith(w.repo + path.sep) || w.spec.directory === repo),
  );
}
