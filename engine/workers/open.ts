// The one path a client may open on the person's desktop for a worker (its folder, an editor, a terminal): the
// worker's own workspace, as the engine made it. A client names a worker, never a path; the engine answers with the
// workspace's real path only when it still exists and lies, symlinks resolved, exactly at <workspaces>/<repo>/<id>.
import { realpathSync, statSync } from "node:fs";
import path from "node:path";
import { InputError } from "../../shared/errors";
import type { Worker } from "../../shared/worker";

export function workspaceToOpen(w: Pick<Worker, "id" | "worktree" | "discarded">, workspacesRoot: string): { workerId: string; path: string } {
  if (w.discarded) throw new InputError(`worker ${w.id} was discarded: its workspace is gone`, "conflict");
  if (!w.worktree) throw new InputError(`worker ${w.id} has no workspace yet: wait until it starts`, "conflict");
  let real: string;
  let root: string;
  try {
    real = realpathSync(w.worktree);
    root = realpathSync(workspacesRoot);
  } catch {
    throw new InputError(`worker ${w.id}'s workspace is gone from disk (pruned or removed)`, "conflict");
  }
  const rel = path.relative(root, real);
  const parts = rel.split(path.sep);
  // Exactly <root>/<repository folder>/<worker id>: nothing above, beside or below it.
  if (path.isAbsolute(rel) || parts.length !== 2 || parts[0] === ".." || parts[0] === "" || parts[1] !== w.id)
    throw new InputError(`worker ${w.id}'s workspace is not where the engine keeps workspaces: refused`, "conflict");
  if (!statSync(real).isDirectory()) throw new InputError(`worker ${w.id}'s workspace is not a folder: refused`, "conflict");
  return { workerId: w.id, path: real };
}
