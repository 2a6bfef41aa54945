import { isAtRest } from "../../shared/worker";
import type { HarnessServer } from "../harness";
import type { WorkerRegistry } from "../registry";

/**
 * Finished workers' instances kept at most, per server, while it has workers at work: a whole 32-task batch's, so that
 * no disposal takes opencode's thread from a batch's last workers (16 did: 0.4 s of its CPU in the batch's last half
 * second). A finished instance kept holds 2–6 MB of opencode's memory (bench/serve-ab.ts, batches of 32 never disposed:
 * 963 → 1160 → 1219 MB), so the 64 kept cost ~0.4 GB at most.
 */
export const RELEASE_BATCH = 64;
/** How long a finished worker's instance is kept at most while its server has workers at work. */
export const RELEASE_DELAY_MS = 10_000;

/**
 * opencode keeps an instance (project state, LSP, tools) per directory it has seen, and every workspace is a new
 * directory: without disposal, `opencode serve` grew by ~90 MB per finished worker (bench: 32 workers, 0.5 → 3.7 GB,
 * in an earlier opencode; 2–6 MB an instance now, see RELEASE_BATCH).
 * Disposing costs opencode's one JS thread ~25 ms a worker (measured: 16 disposals, 0.41 s of its CPU), and that
 * thread is what a batch of workers waits on. So a finished worker's instance is disposed when its server has no
 * worker at work (starting, running, waiting for an approval, or being graded: disposals while a batch's last workers
 * are graded took one of the machine's two cores from their git), or at the latest when RELEASE_BATCH of them wait and
 * none of the server's workers is being graded (a batch's verdicts come together: disposing the first half's instances
 * then slowed the other half's gradings), 2 × RELEASE_BATCH wait, or RELEASE_DELAY_MS has passed. A resume boots the instance again from the session stored on disk; a worker resumed
 * before its disposal keeps the instance it has.
 */
export class InstanceReleaser {
  private readonly waiting = new Map<HarnessServer, { ids: Set<string>; timer: ReturnType<typeof setTimeout> | null }>();

  constructor(private readonly reg: WorkerRegistry) {}

  /** A worker became final: its instance goes with the next release of its server. */
  finished(workerId: string): void {
    const server = this.reg.rt(workerId).server;
    if (!server) return;
    let w = this.waiting.get(server);
    if (!w) this.waiting.set(server, (w = { ids: new Set(), timer: null }));
    w.ids.add(workerId);
    w.timer ??= setTimeout(() => this.release(server), RELEASE_DELAY_MS).unref();
    this.releaseIfDue(server);
  }

  /** Any worker's state changed: a server whose last worker at work just stopped working releases what waits. */
  moved(workerId: string): void {
    const server = this.reg.rt(workerId).server;
    if (server && this.waiting.has(server)) this.releaseIfDue(server);
  }

  /** A worker that runs again (a resume) keeps its instance, unless its disposal has begun (then it is awaited). */
  cancel(workerId: string): void {
    for (const w of this.waiting.values()) w.ids.delete(workerId);
  }

  private releaseIfDue(server: HarnessServer): void {
    const w = this.waiting.get(server);
    if (!w) return;
    let atWork = false;
    let grading = false;
    for (const x of this.reg.list()) {
      if (isAtRest(x.state) || x.state === "queued" || this.reg.rt(x.id).server !== server) continue;
      atWork = true;
      if (x.state === "settled" || x.state === "grading") grading = true;
    }
    if (!atWork || (w.ids.size >= RELEASE_BATCH && !grading) || w.ids.size >= 2 * RELEASE_BATCH) this.release(server);
  }

  private release(server: HarnessServer): void {
    const w = this.waiting.get(server);
    if (!w) return;
    this.waiting.delete(server);
    if (w.timer) clearTimeout(w.timer);
    for (const id of w.ids) this.reg.rt(id).releasingBy(this.dispose(id));
  }

  private async dispose(workerId: string): Promise<void> {
    const c = this.reg.portOf(workerId);
    if (!c?.directory || !this.reg.workspaceOf(this.reg.get(workerId))) return;
    const dispose = c.port.dispose({ directory: c.directory });
    // A hung opencode must not hold up a resume (that finds the server's state on its own).
    await Promise.race([dispose, new Promise((r) => setTimeout(r, 10_000).unref())]);
  }
}
