import path from "node:path";
import type { Target } from "../../shared/target";
import { quoteUntrusted, quoteUntrustedList } from "../../shared/untrusted";
import { pendingAsks, type TranscriptPart, workerTitle } from "../../shared/worker";
import type { Baseline, Verdict } from "../../shared/verdict";
import { baselineChecks, baselineInFreshWorkspace, grade, ungradedVerdict } from "../grading";
import { type HarnessServer, okValue } from "../harness";
import { describeError } from "../serving";
import type { SandboxKind } from "../sandbox";
import type { Workspace } from "../workspace";
import type { TargetStore } from "../store";
import type { Replies, WorkerRegistry } from "../registry";

/**
 * From idle to verdict. A worker's session going idle settles it only when the newest prompt got a finished reply
 * (a late idle of an aborted turn does not) and nothing is stopping it; a failed reply (or a session error with no
 * reply) ends it in error. Settled, it is graded: `grading`, then `built` or `honest-failure` with the verdict. A
 * worker stopped while its checks ran keeps its stop and gets no verdict.
 */

const BASELINES_AT_ONCE = 2;

interface SettleOptions {
  stateDir: string;
  registry: WorkerRegistry;
  targets: TargetStore;
  sandbox: { kind: SandboxKind };
  /** The worker's transcript from its log (the final text of a recovered worker). */
  transcript: (workerId: string) => TranscriptPart[];
  /** The opencode server of a target, started when needed. */
  server: (target: Target) => Promise<HarnessServer>;
  /**
   * Called with an honest-failure verdict before it becomes the worker's state: true when the engine started a fix
   * round instead (the worker then goes back to the queue without ever resting in honest-failure).
   */
  fixRound?: (workerId: string, verdict: Verdict) => boolean;
  /**
   * For a worker started from other workers' graded commits: the person's commit its batch started from and the file
   * names the batch's scopes allow (grade's `checkConfigFrom`); null when unknown.
   */
  checkConfigFrom?: (workerId: string) => { base: string; scope: string[] } | null;
}

export class Settler {
  private readonly reg: WorkerRegistry;
  /** The checks' run on the base commit of each worker, while it runs. */
  private readonly baselines = new Map<string, Promise<Baseline | null>>();

  constructor(private readonly opts: SettleOptions) {
    this.reg = opts.registry;
  }

  async onIdle(workerId: string): Promise<void> {
    const reg = this.reg;
    const w = reg.get(workerId);
    const rt = reg.rt(workerId);
    if (rt.activity.kind === "stopping" || rt.activity.kind === "settling" || (w.state !== "running" && w.state !== "waiting-approval")) return;
    const c = reg.portOf(workerId);
    if (!c || !c.directory || !w.sessionId) return;
    // The idle of a turn the event stream saw whole needs no question to opencode (replies.ts says when that holds).
    let turn = rt.replies?.settled() ?? null;
    if (!turn) {
      // Both asked at once: when a batch ends together, opencode answers them slowly, and one after the other they held
      // every worker's grading back by two waits (bench: idle → grading 0.6 s at 32 workers).
      const [status, read] = await Promise.all([c.port.sessionStatus({ directory: c.directory }), this.latestTurn(workerId)]);
      // A steer sent just before idle starts another turn; only a truly idle session has settled.
      const st = okValue(status)?.[w.sessionId];
      if (st && st.type !== "idle") return;
      turn = read;
    }
    // An idle that arrives late from an earlier turn (an abort before a resume) must not settle the new prompt: only a
    // finished reply to the newest user message counts.
    const last = turn?.replies.at(-1);
    if (turn && !last && !rt.turn.error) return;
    if (last && !last.info.time?.completed && !last.info.error) return;
    const failure =
      last?.info.error && last.info.error.name !== "MessageAbortedError"
        ? describeError(last.info.error, reg.get(workerId)?.targetId)
        : (!last && rt.turn.error) || null;
    if (failure) {
      for (const ask of pendingAsks(reg.get(workerId)))
        reg.safeRecord(workerId, {
          type: "ask.resolved",
          askId: ask.id,
          status: "cancelled",
          by: { kind: "engine" },
          message: "the session ended with an error",
        });
      reg.fire(workerId, "fail-run", failure);
      return;
    }
    // The awaits above gave a stop, an interrupt or a shutdown time to land: only a worker still live settles.
    if (reg.is(workerId, "stopping") || reg.is(workerId, "settling")) return;
    reg.begin(workerId, "settling");
    rt.dropReplies();
    try {
      if (!reg.fire(workerId, "settle")) return;
      await this.gradeWorker(workerId, turn);
    } finally {
      reg.end(workerId, "settling");
    }
  }

  /** The newest user message of the worker's session and the assistant messages that answer it; null when unreadable. */
  private async latestTurn(workerId: string): Promise<Replies | null> {
    const w = this.reg.get(workerId);
    const c = this.reg.portOf(workerId);
    if (!c || !w.sessionId) return null;
    const msgs = okValue(await c.port.messages({ sessionID: w.sessionId, directory: c.directory }));
    if (!msgs) return null;
    const lastUser = msgs.map((m) => m.info.role).lastIndexOf("user");
    return { replies: msgs.slice(lastUser + 1).filter((m) => m.info.role === "assistant") };
  }

  private async finalText(workerId: string, turn?: Replies | null): Promise<string> {
    const t = turn ?? (await this.latestTurn(workerId));
    const text = (t?.replies ?? []).flatMap((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text ?? "")).join("\n");
    if (text.trim()) return text;
    // Recovery path: the transcript in the log.
    return this.opts
      .transcript(workerId)
      .filter((p) => p.kind === "text")
      .map((p) => p.text ?? "")
      .join("\n");
  }

  /**
   * Runs the held-back checks on the worker's base commit, beside its start (never awaited by it), and records which
   * already pass. Once per worker; a worker recovered without a recorded baseline gets it at grading.
   */
  baseline(workerId: string, workspace?: Workspace): Promise<Baseline | null> {
    const w = this.reg.get(workerId);
    if (w.baseline) return Promise.resolve(w.baseline);
    let p = this.baselines.get(workerId);
    if (p) return p;
    const ws = workspace ?? this.reg.workspaceOf(w);
    if (!ws) return Promise.resolve(null);
    const { stateDir, sandbox } = this.opts;
    p = this.limit(() =>
      baselineChecks({
        workspace: ws,
        checks: w.spec.checks,
        checkoutDir: path.join(stateDir, "grading", `${workerId}.base`),
        sandbox: sandbox.kind === "none" ? undefined : { kind: sandbox.kind, stateDir, tmpDir: path.join(stateDir, "grading", `${workerId}.base.tmp`) },
      }),
    )
      .then((baseline) => {
        this.reg.safeRecord(workerId, { type: "worker.baseline", baseline });
        return baseline;
      })
      .catch((err) => {
        this.reg.notice(
          "warn",
          `worker ${workerId}: its checks could not run on the base commit (${(err as Error).message}): its verdict cannot say whether they already passed before any change`,
        );
        return null;
      });
    this.baselines.set(workerId, p);
    void p.finally(() => this.baselines.delete(workerId));
    return p;
  }

  /**
   * A worker's workspace just made, before its session exists: where every check is a file check, the base's files are
   * right there, untouched, and the baseline is read from them now (no checkout, no process); else it runs beside the
   * worker's start, as `baseline` does.
   */
  async baselineAtCreation(workerId: string, ws: Workspace): Promise<void> {
    const w = this.reg.get(workerId);
    if (w.baseline || this.baselines.has(workerId)) return;
    const now = await baselineInFreshWorkspace(ws, w.spec.checks).catch(() => null);
    if (now) return void this.reg.safeRecord(workerId, { type: "worker.baseline", baseline: now });
    void this.baseline(workerId, ws);
  }

  /** Base-commit check runs at once: a batch of 32 must not start 32 check runs beside 32 workers' starts. */
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private async limit<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= BASELINES_AT_ONCE) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async gradeWorker(workerId: string, turn?: Replies | null): Promise<void> {
    const reg = this.reg;
    const w = reg.get(workerId);
    const ws = reg.workspaceOf(w);
    if (!ws) return void reg.fire(workerId, "fail-run", "no workspace to grade");
    if (!reg.fire(workerId, "grade") && reg.get(workerId).state !== "grading") return;
    const { stateDir, sandbox } = this.opts;
    let finalText = "";
    try {
      finalText = await this.finalText(workerId, turn);
      const baseline = await this.baseline(workerId);
      const rounds = w.rounds ?? [];
      const previousCommit = rounds.length > 1 ? (rounds.slice(0, -1).findLast((r) => r.commit)?.commit ?? null) : null;
      const verdict = await grade({
        workspace: ws,
        checks: w.spec.checks,
        scope: w.spec.scope,
        protect: w.spec.protect,
        finalText,
        baseline,
        previousCommit,
        checkConfigFrom: w.startFrom ? (this.opts.checkConfigFrom?.(workerId) ?? null) : null,
        title: workerTitle(w.spec),
        checkoutDir: path.join(stateDir, "grading", workerId),
        // Checks run at the paths the worker saw (its workspace, its tmp): grading has no path of its own to detect.
        sandbox:
          sandbox.kind === "none"
            ? undefined
            : {
                kind: sandbox.kind,
                stateDir,
                tmpDir: path.join(stateDir, "grading", `${workerId}.tmp`),
                mountAs: { root: ws.worktree, tmp: path.join(reg.workerTmpRoot, workerId) },
              },
      });
      // Stopped while its checks ran: the stop stands, and no verdict is recorded for a worker nobody may merge.
      if (reg.get(workerId).state !== "grading") return;
      reg.record(workerId, { type: "verdict", verdict });
      if (verdict.verdict !== "built" && this.opts.fixRound?.(workerId, verdict)) return;
      reg.fire(workerId, verdict.verdict === "built" ? "pass" : "fail", verdict.verdict === "built" ? undefined : summarizeFailure(verdict));
    } catch (err) {
      if (reg.get(workerId).state !== "grading") return;
      // The claim is kept whatever went wrong: a verdict that says grading failed, and the worker's own words.
      // Its message may quote git's complaint about a file the worker named (a nested repository with no commit): the
      // worker's words, so quoted and labelled inside the engine's (a verdict's reason is read as the engine's own).
      const why = `grading failed ${quoteUntrusted((err as Error).message, "its error, which may name the worker's files", 800)}`;
      const verdict = ungradedVerdict(finalText, ws, { checks: [], scope: { passed: false, violations: [], changedFiles: [] }, reason: why });
      try {
        reg.record(workerId, { type: "verdict", verdict });
      } catch {
        // the log cannot take it: the state below says why
      }
      reg.fire(workerId, "fail-run", why);
    }
  }

  /** A worker found settled or grading at start-up is graded again (its final text read from its session if it can be). */
  async regrade(workerId: string): Promise<void> {
    const w = this.reg.get(workerId);
    const target = w.targetId ? this.opts.targets.get(w.targetId) : undefined;
    if (target && w.sessionId) {
      const s = await this.opts.server(target).catch(() => undefined);
      this.reg.rt(workerId).attach(s);
      await s?.start().catch(() => undefined);
    }
    await this.gradeWorker(workerId);
  }
}

function summarizeFailure(v: { checks: { name: string; passed: boolean }[]; scope: { violations: string[] }; reason?: string | null }): string {
  if (v.reason) return v.reason;
  const failed = v.checks.filter((c) => !c.passed).map((c) => `check failed: ${c.name}`);
  // A violation names a file the worker chose: quoted and labelled in the reason a person or Claude reads.
  const violations = v.scope.violations.length
    ? [`scope ${quoteUntrustedList(v.scope.violations, "violations naming the worker's files", { shown: Math.max(1, 5 - failed.length) })}`]
    : [];
  return [...failed.slice(0, 5), ...violations].slice(0, 5).join("; ");
}
