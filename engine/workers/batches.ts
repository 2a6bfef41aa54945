import { existsSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import type { BatchSummary, BatchTaskStatus, IntegrationResult, IntegrationSpec, SkippedTask } from "../../shared/batch";
import { checkName, type CheckSpec } from "../../shared/check";
import { InputError } from "../../shared/errors";
import { quoteUntrustedList } from "../../shared/untrusted";
import { isAtRest, type Worker, type WorkerSpec, workerTitle } from "../../shared/worker";
import { combinedCheckConfig, discard, folderIn, runChecks } from "../grading";
import type { SandboxKind } from "../sandbox";
import { readJson, writeJsonAtomic } from "../store";
import { combineCommits, gitScript, gradedStore, type RepoInfo, userGitEnv } from "../workspace";
import { counted } from "../../shared/words";

/**
 * A batch's plan beside its workers: the tasks with their names and the tasks each comes `after`, the workers started
 * for them, the tasks skipped (one they come after was not built), and the integration: once every task has ended, the
 * built workers' graded commits combined in task order on the base and checked together. Kept in
 * `<state>/batches/<id>.json`, so an engine restart carries on where it was.
 */
interface TaskRecord {
  id: string;
  after: string[];
  spec: WorkerSpec;
  workerId: string | null;
  skipped: string | null;
  /** Skipped because a task it comes after was not built (or never started): looked at again when that changes. */
  waitsOnDependency?: boolean;
}

export interface BatchRecord {
  id: string;
  createdAt: number;
  /** The repository every task works on (dependencies and integration need one), its HEAD and branch at the start. */
  repo: string | null;
  base: string | null;
  branch: string | null;
  subdir: string;
  tasks: TaskRecord[];
  integration: { checks: CheckSpec[]; state: "waiting" | "running" | "done"; result: IntegrationResult | null } | null;
}

interface BatchesOptions {
  stateDir: string;
  sandbox: { kind: SandboxKind };
  get: (workerId: string) => Worker | undefined;
  /** Creates and queues a worker for a task (from `repo.head`); throws when its target is gone. */
  create: (spec: WorkerSpec, repo: RepoInfo, batchId: string, taskId: string) => string;
  changed: (batchId: string) => void;
  log: (line: string) => void;
}

export class Batches {
  private readonly records = new Map<string, BatchRecord>();
  private readonly chains = new Map<string, Promise<void>>();
  private readonly dir: string;

  constructor(private readonly opts: BatchesOptions) {
    this.dir = path.join(opts.stateDir, "batches");
    if (existsSync(this.dir)) {
      for (const f of readdirSync(this.dir)) {
        if (!f.endsWith(".json")) continue;
        try {
          const r = readJson<BatchRecord | null>(path.join(this.dir, f), null);
          if (r?.id) this.records.set(r.id, r.integration?.state === "running" ? { ...r, integration: { ...r.integration, state: "waiting" } } : r);
        } catch (err) {
          opts.log(`[warn] batch record ${f}: ${(err as Error).message}`);
        }
      }
    }
  }

  get(batchId: string): BatchRecord | undefined {
    return this.records.get(batchId);
  }

  /** Every batch not done yet is moved on (after a restart, once the workers are recovered). */
  resumeAll(): void {
    for (const id of this.records.keys()) this.advance(id);
  }

  /**
   * Checks a batch's tasks: unique names, `after` naming tasks of the batch, no cycle, one repository when tasks depend
   * on others or the batch has integration checks. Returns the names (default: the position, "1", "2", …).
   */
  static validate(tasks: { id?: string; after?: string[]; directory: string }[], repos: RepoInfo[], integration: IntegrationSpec | undefined): string[] {
    const ids = tasks.map((t, i) => t.id ?? String(i + 1));
    const seen = new Set<string>();
    for (const [i, id] of ids.entries()) {
      if (seen.has(id)) throw new InputError(`task ${i + 1}: the id "${id}" is used twice: give each task its own id`);
      seen.add(id);
    }
    for (const [i, t] of tasks.entries()) {
      for (const a of t.after ?? []) {
        if (!seen.has(a)) throw new InputError(`task ${i + 1} (${ids[i]}): after "${a}", which is no task of this batch (ids: ${ids.join(", ")})`);
        if (a === ids[i]) throw new InputError(`task ${i + 1} (${ids[i]}) cannot come after itself`);
      }
    }
    // A cycle: no order starts every task after the ones it names.
    const done = new Set<string>();
    while (done.size < ids.length) {
      const ready = ids.filter((id, i) => !done.has(id) && (tasks[i]!.after ?? []).every((a) => done.has(a)));
      if (!ready.length)
        throw new InputError(`the tasks ${ids.filter((id) => !done.has(id)).join(", ")} come after each other in a cycle: none of them could ever start`);
      for (const id of ready) done.add(id);
    }
    const needsOne = integration || tasks.some((t) => t.after?.length);
    if (needsOne && new Set(repos.map((r) => r.root)).size > 1) {
      throw new InputError(
        `tasks that come after others, and integration checks, need every task of the batch in one repository (got ${[...new Set(repos.map((r) => r.root))].join(", ")})`,
      );
    }
    return ids;
  }

  /** Records a new batch; the tasks without `after` are started by the caller (their workers named in `started`). */
  add(record: BatchRecord): void {
    this.records.set(record.id, record);
    this.save(record);
  }

  private save(r: BatchRecord): void {
    writeJsonAtomic(path.join(this.dir, `${r.id}.json`), r);
  }

  /** A worker came to rest: its batch may start the tasks that come after it, skip some, or run its integration. */
  onAtRest(workerId: string): void {
    const w = this.opts.get(workerId);
    if (w?.batchId && this.records.has(w.batchId)) this.advance(w.batchId);
  }

  /** One step of a batch at a time (combining and checks are async). */
  private advance(batchId: string): void {
    const prev = this.chains.get(batchId) ?? Promise.resolve();
    const next = prev.then(() => this.step(batchId)).catch((err) => this.opts.log(`[warn] batch ${batchId}: ${(err as Error).stack ?? err}`));
    this.chains.set(batchId, next);
    void next.then(() => this.chains.get(batchId) === next && this.chains.delete(batchId));
  }

  /** Waits for what the batch is doing now (tests, merge). */
  settled(batchId: string): Promise<void> {
    return this.chains.get(batchId) ?? Promise.resolve();
  }

  private async step(batchId: string): Promise<void> {
    const r = this.records.get(batchId);
    if (!r) return;
    let moved = false;
    for (let progress = true; progress; ) {
      progress = false;
      for (const t of r.tasks) {
        if (t.workerId) continue;
        const deps = t.after.map((a) => r.tasks.find((x) => x.id === a)!);
        const workers = deps.map((d) => (d.workerId ? this.opts.get(d.workerId) : undefined));
        if (t.skipped) {
          // A task skipped for a dependency starts after all once every dependency is built (one was resumed).
          if (!t.waitsOnDependency || !workers.every((w) => w?.state === "built" && w.verdict?.commit && !w.discarded)) continue;
          t.skipped = null;
          t.waitsOnDependency = false;
          if (r.integration?.state === "done" && !r.integration.result?.landed) r.integration = { ...r.integration, state: "waiting", result: null };
        }
        const skippedDep = deps.find((d) => d.skipped);
        if (skippedDep) {
          t.skipped = `it comes after ${skippedDep.id}, which never started`;
          t.waitsOnDependency = true;
          progress = moved = true;
          continue;
        }
        if (workers.some((w) => !w || !isAtRest(w.state))) continue; // still running
        // A dependency the person discarded is not built work any more: nothing of it is started from.
        const failed = deps.find((_d, i) => workers[i]!.state !== "built" || !workers[i]!.verdict?.commit || workers[i]!.discarded);
        if (failed) {
          const w = this.opts.get(failed.workerId!)!;
          t.skipped = `it comes after ${failed.id}, which was not built (${w.discarded ? "discarded" : w.state === "honest-failure" ? "failed" : w.state})`;
          t.waitsOnDependency = true;
          progress = moved = true;
          continue;
        }
        // Every task it comes after is built: it starts from the base plus their graded commits.
        let from: string;
        if (deps.length === 1) from = workers[0]!.verdict!.commit!;
        else {
          const c = await combineCommits(
            r.repo!,
            r.base!,
            deps.map((d, i) => ({ id: d.id, commit: workers[i]!.verdict!.commit! })),
            `ocw: base of ${t.id} (after ${t.after.join(", ")})`,
            await this.graded(r.repo!),
          );
          if ("conflict" in c) {
            t.skipped = `the tasks it comes after do not combine: ${c.conflict.id} conflicts in ${c.conflict.files.length ? quoteUntrustedList(c.conflict.files, "file names from the workers' changes") : "(git named none)"}`;
            progress = moved = true;
            continue;
          }
          from = c.commit;
        }
        try {
          t.workerId = this.opts.create(t.spec, { root: r.repo!, subdir: subdirOf(r.repo!, t.spec.directory), head: from, branch: r.branch }, batchId, t.id);
        } catch (err) {
          t.skipped = `it could not start: ${(err as Error).message}`;
        }
        progress = moved = true;
      }
    }
    // A worker continued (a new round) or discarded since the integration ran: that result is not of the workers as they
    // are; it runs again once every task is at rest.
    if (r.integration?.state === "done" && this.staleness(r)) {
      r.integration = { ...r.integration, state: "waiting", result: null };
      moved = true;
    }
    if (moved) {
      this.save(r);
      this.opts.changed(batchId);
    }
    const ended = r.tasks.every((t) => t.skipped || (t.workerId && isAtRest(this.opts.get(t.workerId)?.state ?? "error")));
    if (ended && r.integration?.state === "waiting") await this.integrate(r);
  }

  /**
   * The engine's graded store of a repository (`<state>/repos`, beside the workers' folders): graded commits are there (not in the person's
   * repository before they are landed), and what combining them writes goes there too.
   */
  graded(repo: string): Promise<string> {
    return gradedStore(path.join(this.opts.stateDir, "repos"), repo);
  }

  /** The batch's built workers and their latest graded commits, in task order. */
  private builtOf(r: BatchRecord): { id: string; commit: string }[] {
    return r.tasks.flatMap((t) => {
      const w = t.workerId ? this.opts.get(t.workerId) : undefined;
      return w && w.state === "built" && w.verdict?.commit && !w.discarded ? [{ id: w.id, commit: w.verdict.commit }] : [];
    });
  }

  /**
   * Why the batch's integration result is not of its workers as they are now (one continued since, for a new round, or
   * discarded, or built since), or null. A landed one is history: never stale.
   */
  private staleness(r: BatchRecord): string | null {
    const res = r.integration?.result;
    if (!res || res.landed) return null;
    const now = this.builtOf(r);
    for (const [i, id] of res.workers.entries()) {
      const n = now.find((x) => x.id === id);
      const then = res.commits?.[i];
      if (!n) return `${id} is not at the graded commit it combined any more (continued or discarded since)`;
      if (then && n.commit !== then) return `${id} was continued since: its latest round is not in it`;
    }
    const added = now.find((n) => !res.workers.includes(n.id));
    return added ? `${added.id} was built since` : null;
  }

  /**
   * Why the batch's integration result must not land (its workers changed since it ran), or null. When it is stale, the
   * batch is stepped: the integration runs again once every task is at rest.
   */
  integrationStale(batchId: string): string | null {
    const r = this.records.get(batchId);
    const why = r ? this.staleness(r) : null;
    if (why) this.advance(batchId);
    return why;
  }

  /** The built workers' graded commits combined in task order on the base, checked together in a fresh checkout. */
  private async integrate(r: BatchRecord): Promise<void> {
    const spec = r.integration!;
    spec.state = "running";
    this.save(r);
    this.opts.changed(r.id);
    const built = this.builtOf(r);
    const result: IntegrationResult = {
      passed: false,
      commit: null,
      base: r.base ?? "",
      workers: built.map((b) => b.id),
      commits: built.map((b) => b.commit),
      checks: [],
      conflict: null,
      reason: null,
      at: Date.now(),
      landed: null,
    };
    try {
      if (!built.length) result.reason = "no task was built: nothing to integrate";
      else {
        const c = await combineCommits(
          r.repo!,
          r.base!,
          built,
          `ocw: integration of batch ${r.id} (${counted(built.length, "worker")})\n\n${built.map((b) => `- ${b.id}`).join("\n")}`,
          await this.graded(r.repo!),
        );
        if ("conflict" in c) {
          result.conflict = { workerId: c.conflict.id, files: c.conflict.files };
          result.reason = `${c.conflict.id} does not combine with the workers before it: conflicts in ${c.conflict.files.length ? quoteUntrustedList(c.conflict.files, "file names from the workers' changes") : "(git named none)"}`;
        } else {
          result.commit = c.commit;
          result.checks = await this.runIntegrationChecks(r, c.commit, spec.checks);
          const failed = result.checks.filter((x) => !x.passed);
          result.passed = !failed.length;
          if (failed.length) result.reason = `integration check failed: ${failed.map((x) => x.name).join(", ")}`;
        }
      }
    } catch (err) {
      result.reason = `integration could not run: ${(err as Error).message}`;
    }
    result.at = Date.now();
    spec.result = result;
    spec.state = "done";
    this.save(r);
    this.opts.changed(r.id);
  }

  /** A fresh checkout of the combined commit (no filter, no hook, no config of anyone's), the checks run in the sandbox. */
  private async runIntegrationChecks(r: BatchRecord, commit: string, checks: CheckSpec[]) {
    const root = path.join(this.opts.stateDir, "grading", `${r.id}.integration`);
    const tmpDir = `${root}.tmp`;
    discard(root);
    discard(tmpDir);
    mkdirSync(root, { recursive: true });
    mkdirSync(tmpDir, { recursive: true });
    try {
      // The combined commit is in the engine's graded store (whose alternates reach the person's objects), not in theirs.
      const objects = await this.graded(r.repo!);
      const gitDir = path.join(this.opts.stateDir, "batches", `${r.id}.git`);
      await gitScript(CHECK_OUT, {
        cwd: this.opts.stateDir,
        env: {
          PATH: userGitEnv().PATH,
          HOME: tmpDir,
          LC_ALL: "C",
          GIT_CONFIG_NOSYSTEM: "1",
          GIT_CONFIG_GLOBAL: "/dev/null",
          GIT_TERMINAL_PROMPT: "0",
          OCW_GIT_DIR: gitDir,
          OCW_OBJECT_FORMAT: commit.length === 64 ? "sha256" : "sha1",
          OCW_OBJECTS: objects,
          OCW_COMMIT: commit,
          OCW_CHECKOUT: root,
          OCW_INDEX: `${root}.index`,
        },
      });
      // The folder the batch names, inside the checkout: a part of its path turned into a symlink by the combined commit
      // would send the checks (and the held-back files copied in) outside it; the checks fail with the reason instead.
      const cwd = await folderIn(root, r.subdir);
      if (typeof cwd !== "string") return checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: cwd.problem }));
      // What decides what a check runs (a conftest.py, a shadowing module…), changed by a task whose own checks did not
      // run a command (so its grading did not look): the checks are not run. Files a task's scope names exactly count as
      // allowed, as at grading.
      const config = await combinedCheckConfig({
        repo: r.repo!,
        base: r.base!,
        commit,
        objects,
        checks,
        sub: r.subdir,
        scope: r.tasks.flatMap((t) => t.spec.scope ?? []),
        checkout: root,
      });
      if (config.length) {
        const why = `not run: the combined commit changes check configuration that no task's scope names ${quoteUntrustedList(config, "what the workers' changes hold")}`;
        return checks.map((c, i) => ({ name: checkName(c, i), passed: false, output: why }));
      }
      const sandbox = this.opts.sandbox.kind === "none" ? undefined : { kind: this.opts.sandbox.kind, stateDir: this.opts.stateDir, tmpDir, root };
      return await runChecks(checks, cwd, sandbox, [], { root });
    } finally {
      discard(root);
      discard(tmpDir);
    }
  }

  /** What a batch summary adds from the plan. */
  extend(batchId: string, base: BatchSummary): BatchSummary {
    const r = this.records.get(batchId);
    if (!r) return { ...base, done: base.settled };
    const tasks: BatchTaskStatus[] = r.tasks.map((t) => ({
      id: t.id,
      after: t.after,
      title: workerTitle(t.spec, 80),
      workerId: t.workerId,
      skipped: t.skipped,
    }));
    const skipped: SkippedTask[] = r.tasks.filter((t) => t.skipped).map((t) => ({ id: t.id, reason: t.skipped! }));
    const pending = r.tasks.some((t) => !t.workerId && !t.skipped);
    const settled = base.settled && !pending;
    const integration = r.integration ? { state: r.integration.state, checks: r.integration.checks.length, result: r.integration.result } : null;
    const n = r.tasks.length;
    return {
      ...base,
      tasks,
      skipped,
      settled,
      builtRate: settled ? base.built / n : null,
      verdict: settled ? (base.built === n ? "built" : "honest-failure") : null,
      integration,
      done: settled && (!integration || integration.state === "done"),
    };
  }

  landed(batchId: string, into: string, commit: string): void {
    const r = this.records.get(batchId);
    if (!r?.integration?.result) return;
    r.integration.result.landed = { into, commit };
    this.save(r);
    this.opts.changed(batchId);
  }
}

function subdirOf(root: string, dir: string): string {
  const rel = path.relative(root, dir);
  return rel.startsWith("..") ? "" : rel;
}

/** A checkout of the integration commit into a folder of the engine's: its own bare git dir borrowing the person's objects. */
const CHECK_OUT = `set -eu
if [ ! -f "$OCW_GIT_DIR/HEAD" ]; then git init -q --bare --template= --object-format="$OCW_OBJECT_FORMAT" "$OCW_GIT_DIR"; fi
mkdir -p "$OCW_GIT_DIR/objects/info"
printf '%s\\n' "$OCW_OBJECTS" > "$OCW_GIT_DIR/objects/info/alternates"
GIT_DIR="$OCW_GIT_DIR" GIT_INDEX_FILE="$OCW_INDEX" git -c core.hooksPath=/dev/null -c core.symlinks=true --work-tree "$OCW_CHECKOUT" checkout -q -f "$OCW_COMMIT" -- .
rm -f "$OCW_INDEX"
`;
