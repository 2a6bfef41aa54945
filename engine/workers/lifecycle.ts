import { existsSync } from "node:fs";
import path from "node:path";
import { InputError } from "../../shared/errors";
import type { DecidedBy } from "../../shared/permission";
import { isFinal, type Worker, workerTitle } from "../../shared/worker";
import { fullDiff, mergeBranch, removeWorkspace } from "../workspace/workspace";
import type { WorkerRegistry } from "./registry";

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

  async merge(workerId: string): Promise<{ commit: string; into: string }> {
    const w = this.reg.get(workerId);
    if (w.state !== "built") throw new InputError(`worker ${workerId} is ${w.state}: only built workers are merged`, "conflict");
    if (w.merged) throw new InputError(`worker ${workerId} was already merged into ${w.merged.into} (${w.merged.commit})`);
    const ws = this.reg.workspaceOf(w);
    if (!ws) throw new InputError(`worker ${workerId} has no workspace`);
    if (w.discarded) throw new InputError(`worker ${workerId} was discarded: nothing is left to merge`);
    const commit = await mergeBranch(ws, `Merge ${ws.branch}: ${workerTitle(w.spec)}`, w.verdict?.commit ?? undefined);
    this.reg.record(workerId, { type: "merged", into: ws.baseBranch!, commit });
    // Merged, the work lives in the user's branch: the workspace, the engine's repository and ocw/<id> go.
    await this.tidy(workerId, "merged");
    return { commit, into: ws.baseBranch! };
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
  async discard(workerId: string, by: DecidedBy = { kind: "person" }): Promise<Worker> {
    const w = this.reg.get(workerId);
    if (!isFinal(w.state)) throw new InputError(`worker ${workerId} is ${w.state}: stop it first, then discard it`, "conflict");
    if (w.discarded) return w;
    const ws = this.reg.workspaceOf(w);
    if (ws) await removeWorkspace(ws, { force: true, tmpDir: path.join(this.reg.workerTmpRoot, workerId) });
    this.reg.rt(workerId).workspace = undefined;
    this.reg.record(workerId, { type: "discarded", by });
    return this.reg.get(workerId);
  }

  /**
   * Housekeeping of one finished worker: removes its workspace, engine repository, private tmp and (merged) branch.
   * Never unmerged built work. A failure is a notice, never an error of the call that asked (the merge happened).
   */
  private async tidy(workerId: string, why: string): Promise<void> {
    const w = this.reg.workers.get(workerId);
    const ws = w && this.reg.workspaceOf(w);
    if (!w || !ws || !isFinal(w.state) || (w.state === "built" && !w.merged)) return;
    try {
      await removeWorkspace(ws, { force: !!w.merged || w.state !== "built", tmpDir: path.join(this.reg.workerTmpRoot, workerId) });
      this.reg.rt(workerId).workspace = undefined;
    } catch (err) {
      this.reg.notice("warn", `could not tidy worker ${workerId} (${why}): ${(err as Error).message}`);
    }
  }

  /**
   * Removes the workspaces of finished workers older than the retention: merged, failed, stopped, interrupted or
   * errored ones. Built but unmerged work is kept until it is merged or discarded.
   */
  async collectGarbage(now = Date.now()): Promise<string[]> {
    const days = this.retentionDays();
    if (!(days > 0)) return [];
    const done: string[] = [];
    for (const w of this.reg.list()) {
      if (!isFinal(w.state) || w.discarded || (w.state === "built" && !w.merged)) continue;
      if (now - (w.endedAt ?? w.updatedAt) < days * 86_400_000) continue;
      const ws = this.reg.workspaceOf(w);
      if (!ws || (!existsSync(ws.worktree) && !existsSync(ws.gitDir))) continue;
      await this.tidy(w.id, `older than ${days} days`);
      done.push(w.id);
    }
    return done;
  }
}
