import type { HarnessServer } from "../harness";
import type { RepoInfo, Workspace } from "../workspace";
import { ReplyTrack } from "./replies";

/**
 * What the engine is doing to a live worker beside its state, one thing at a time. These were four loose flags
 * (stopping, settling, probing and the turn's error) that could combine in ways nobody wrote down.
 * - `stopping`: a stop, interrupt or move to another endpoint is under way; an idle that arrives now never settles it.
 * - `probing`: the model endpoint is being checked after a failed model call.
 * - `settling`: an idle is being turned into settle → grade.
 */
export type Activity = { kind: "none" } | { kind: "stopping" } | { kind: "probing" } | { kind: "settling" };

/** The turn a worker is on: what its next prompt carries and what its session reported. A resume starts a new one. */
interface Turn {
  /** The person's message for a resumed worker's first prompt. */
  resumeMessage?: string;
  /** The follow-up that starts a new round (continue, review, fix round) of a graded worker. */
  followUp?: string;
  followUpKind?: "task" | "continue" | "review" | "fix";
  /** The session's error (not an abort) seen on the event stream during this turn. */
  error?: string;
}

export interface Usage {
  input: number;
  output: number;
  reasoning: number;
  cost: number;
}

/**
 * One worker's live run in this engine: what is not in its log (live handles, timers, the activity under way, the turn
 * being prompted). Every field is read-only from outside; each change is a method named for the transition it makes, so
 * who changes what is found by name. The registry owns one per worker (WorkerRegistry.rt).
 */
export class WorkerRun {
  private _activity: Activity = { kind: "none" };
  private _turn: Turn = {};
  private _workspace?: Workspace;
  private _server?: HarnessServer;
  private budgetTimer?: NodeJS.Timeout;
  private _lastEventAt = Date.now();
  /** Usage by opencode message id, and what was recorded before this engine run saw the session (resumed, recovered). */
  private readonly usage: { byMessage: Map<string, Usage>; base?: Usage } = { byMessage: new Map() };
  private _releasing?: Promise<void>;
  private _repo?: RepoInfo;
  private _replies?: ReplyTrack;
  private _run?: { token: object; done: Promise<void> };

  get activity(): Activity {
    return this._activity;
  }
  get turn(): Readonly<Turn> {
    return this._turn;
  }
  /** The worker's workspace as last resolved (absent until resolved, and after it was removed). */
  get workspace(): Workspace | undefined {
    return this._workspace;
  }
  /** The opencode server the worker's session lives on. */
  get server(): HarnessServer | undefined {
    return this._server;
  }
  /** When the worker's log or its session last said anything (the watchdog's stall clock). */
  get lastEventAt(): number {
    return this._lastEventAt;
  }
  /** The disposal of the worker's opencode instance after it finished; a resume waits for it. */
  get releasing(): Promise<void> | undefined {
    return this._releasing;
  }
  /** The repository as validated when the worker was created (absent for workers recovered from their log). */
  get repo(): RepoInfo | undefined {
    return this._repo;
  }
  /** What the event stream said of the turn of the engine's latest prompt (absent when it may have missed events). */
  get replies(): ReplyTrack | undefined {
    return this._replies;
  }
  /** The worker's latest run (admission → prompt sent); a newer one supersedes it and begins when it has ended. */
  get run(): { token: object; done: Promise<void> } | undefined {
    return this._run;
  }

  /** Sets the activity under way. */
  begin(kind: Activity["kind"]): void {
    this._activity = { kind } as Activity;
  }
  /** Clears the activity, only when it is still the one that was started. */
  end(kind: Activity["kind"]): void {
    if (this._activity.kind === kind) this._activity = { kind: "none" };
  }
  /** An admitted run begins: nothing else is under way. */
  admitted(): void {
    this._activity = { kind: "none" };
  }
  /** Puts back an activity a failed step had replaced. */
  restore(activity: Activity): void {
    this._activity = activity;
  }

  /** A new turn (a resume with a message, a new round's follow-up): nothing under way, its prompt to send. */
  newTurn(turn: Turn): void {
    this._activity = { kind: "none" };
    this._turn = { ...turn };
  }
  /** The next prompt's follow-up when none is pending (a round that never reached the session). */
  setFollowUp(followUp: string, followUpKind: Turn["followUpKind"]): void {
    this._turn = { followUp, followUpKind };
  }
  /** The prompt's message was sent: it is not sent again. */
  promptTaken(): void {
    this._turn.resumeMessage = undefined;
    this._turn.followUp = undefined;
  }
  /** The session reported an error (not an abort) during this turn. */
  sessionError(message: string): void {
    this._turn.error = message;
  }

  /** The log or the session said something now. */
  heard(at = Date.now()): void {
    this._lastEventAt = at;
  }

  /** The engine prompts the session: the stream's account of this turn starts empty. */
  trackReplies(): ReplyTrack {
    this._replies = new ReplyTrack();
    return this._replies;
  }
  /** The stream's account of the turn is no longer whole (a reconnect) or no longer needed (settled). */
  dropReplies(): void {
    this._replies = undefined;
  }

  /** The worker's run moves to this opencode server (none: its server is gone). */
  attach(server: HarnessServer | undefined): void {
    this._server = server;
  }
  setWorkspace(ws: Workspace): void {
    this._workspace = ws;
  }
  /** Its workspace was removed (discard, a failed creation): resolved again from the log when needed. */
  forgetWorkspace(): void {
    this._workspace = undefined;
  }
  setRepo(repo: RepoInfo): void {
    this._repo = repo;
  }
  /** The disposal of its opencode instance began. */
  releasingBy(p: Promise<void>): void {
    this._releasing = p;
  }
  /** A new run (admission → prompt) of the worker, superseding the one before it. */
  supersede(run: { token: object; done: Promise<void> }): void {
    this._run = run;
  }

  /** The wall-clock budget's timer (one at a time: the one before is cleared). */
  armBudget(timer: NodeJS.Timeout | undefined): void {
    clearTimeout(this.budgetTimer);
    this.budgetTimer = timer;
    timer?.unref?.();
  }
  clearBudget(): void {
    clearTimeout(this.budgetTimer);
  }

  /**
   * An assistant message's usage as opencode reports it (again and again while it streams): the worker's new total
   * (`recorded` is what its log held before this engine run saw the session), or null when the message's usage is
   * unchanged.
   */
  countUsage(messageId: string, next: Usage, recorded: Usage): Usage | null {
    const prev = this.usage.byMessage.get(messageId);
    if (prev && prev.input === next.input && prev.output === next.output && prev.cost === next.cost) return null;
    this.usage.byMessage.set(messageId, next);
    this.usage.base ??= recorded;
    return [...this.usage.byMessage.values()].reduce(
      (a, u) => ({ input: a.input + u.input, output: a.output + u.output, reasoning: a.reasoning + u.reasoning, cost: a.cost + u.cost }),
      { ...this.usage.base },
    );
  }
}
