// A bounded wait done by the engine (`workers.wait`, `workers.waitStream`): the caller names its workers (or a batch)
// and what it has already been shown; the engine answers once there is news for it — a new ask, a worker finished
// since, every worker at rest — or at the timeout, with slim pictures of exactly the fields a waiting client reads.
// One request per wait, and no stream of every engine event across the socket (the MCP bridge's `wait`).
import { z } from "zod";
import { BatchSummary } from "./batch";
import type { EngineEvent } from "./events";
import { PermissionAsk } from "./permission";
import { quoteUntrusted, showUntrusted } from "./untrusted";
import { Outcome } from "./verdict";
import { Usage, workerTitle, WorkerState } from "./worker";

const ids = (what: string) => z.array(z.string().min(1, `${what}: an id is empty`).max(200)).max(10_000);

export const WaitInput = z
  .object({
    /** These workers (ids as given; each must exist)… */
    workerIds: z.array(z.string().min(1, "workerIds: an id is empty").max(200)).min(1, "workerIds is empty: give at least one id").max(10_000).optional(),
    /** …or a batch's (its workers as the batch goes on: tasks that come after others, the integration checks). */
    batchId: z.string().min(1, "batchId is empty").max(200).optional(),
    /** With workerIds: only those not at rest (all of them when every one is), e.g. a session's own workers. */
    unfinished: z.boolean().optional(),
    /** Asks the caller was shown already: not news. */
    shownAsks: ids("shownAsks").default([]),
    /** Workers the caller was shown finished already: not news. */
    shownFinished: ids("shownFinished").default([]),
    /** How long to wait for news (0: answer with the pictures as they are now). */
    timeoutMs: z.number().int().min(0).max(600_000),
    /** The wait also ends (as news) once this ask is no longer pending: a form shown for it is withdrawn then. */
    untilGone: z.string().min(1).max(200).optional(),
    /** Whether the pending asks carry their diffs (an edit's change; a form shows it): default true. */
    diffs: z.boolean().default(true),
    /** Pictures of these workers too, when the wait ends with every waited worker at rest (a session's totals). */
    also: ids("also").optional(),
    /**
     * Also answer (reason "blocked") when each followed worker not at rest waits only on asks in shownAsks: nothing
     * moves until the caller answers them. An ask whose answer is on its way does not count (its worker is about to
     * move), and a wait blocked from its start looks again GATHER_MS later (an approve sent beside it). Not set: such a
     * wait runs to its time (a form waits for its ask).
     */
    blocked: z.boolean().optional(),
  })
  .strict()
  .refine((x) => !x.workerIds !== !x.batchId, { message: "give workerIds or batchId (one of them)" });
export type WaitInput = z.input<typeof WaitInput>;

/** The fields of a worker a wait reads: state, its pending asks, verdict, totals, title, workspace (for relative paths). */
export const WaitWorker = z.object({
  id: z.string(),
  /** Its title (shared/worker.ts workerTitle), not the whole task. */
  title: z.string(),
  batchId: z.string().nullable(),
  state: WorkerState,
  /** Its workspace while an ask is pending (what an ask's paths are made relative to); null otherwise. */
  worktree: z.string().nullable(),
  /** Pending asks only. */
  asks: z.array(PermissionAsk),
  usage: Usage,
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
  stalled: z.boolean(),
  verdict: z.object({ verdict: Outcome, honest: z.boolean() }).nullable(),
});
export type WaitWorker = z.infer<typeof WaitWorker>;

/** A batch's summary as a wait reads it: its rates and state, without the per-task and per-worker lists. */
export const WaitBatch = BatchSummary.omit({ name: true, workerIds: true, states: true, tasks: true }).extend({
  /** Its tasks (its workers, for batches from before tasks were recorded). */
  total: z.number(),
});
export type WaitBatch = z.infer<typeof WaitBatch>;

export function slimBatch(b: BatchSummary): WaitBatch {
  const { name: _name, workerIds, states: _states, tasks, ...rest } = b;
  return { ...rest, total: tasks.length || workerIds.length };
}

export const WaitResult = z.object({
  /** The workers waited on (a batch's as they were when the wait began to follow them). */
  workerIds: z.array(z.string()),
  /**
   * settled: every one at rest; news: a new ask or a worker finished since; blocked (asked for): each one not at rest
   * waits on an ask the caller was shown; timeout; aborted: the request was cancelled.
   */
  reason: z.enum(["settled", "news", "blocked", "timeout", "aborted"]),
  workers: z.array(WaitWorker),
  batch: WaitBatch.nullable(),
  also: z.array(WaitWorker),
});
export type WaitResult = z.infer<typeof WaitResult>;

/**
 * A progress line of a wait in its two parts: the engine's own words (ids, states, verdicts), and apart from them the
 * text a worker or model wrote (an ask's command or path, a state's reason, a tool's odd name), raw: a client shows it
 * as untrusted data (noteLine), never as the engine's words.
 */
export interface WaitNote {
  said: string;
  untrusted?: string;
}

/**
 * What `workers.waitStream` sends: the workers it follows, progress lines while it waits, then the result once. A
 * line's `note` is ready to show (noteLine: worker text escaped, quoted and labelled, at most NOTE_MAX characters), for
 * clients that read only it; `line` holds its parts (engines before it sent `note` alone, raw: all of it untrusted).
 */
export type WaitStreamItem = { following: string[] } | { note: string; line?: WaitNote } | { result: WaitResult };

/** The longest progress line (an MCP progress message). */
export const NOTE_MAX = 200;

/** What stands between the engine's words and a worker's text in a progress line. */
const LABEL = "untrusted: ";

/** The worker's text as it is shown inside a line: made visible on one line (shared/untrusted.ts), then quoted. */
const quoted = (raw: string, max?: number) => JSON.stringify(showUntrusted(raw, { max, lines: false }));

/**
 * A progress line as a person or Claude reads it, at most `max` characters: the engine's words plain, then the worker's
 * text escaped (line breaks as ⏎, bidi / zero-width / control characters as ⟪U+XXXX⟫), in JSON quotes (a quote it
 * writes cannot end them) after the label `untrusted:`. A long text keeps its head and tail with the cut length
 * between; an escape is never cut in half.
 */
export function noteLine(note: WaitNote, max = NOTE_MAX): string {
  const room = Math.max(40, max);
  const raw = note.untrusted;
  if (raw === undefined) return clipPlain(note.said, room);
  const said = note.said ? `${clipPlain(note.said, room - 40)}, ${LABEL}` : LABEL;
  const budget = room - said.length;
  const whole = quoted(raw);
  if (whole.length <= budget) return said + whole;
  // The most of the text (head and tail) whose shown form fits: a shown form only grows with what is kept, but a long
  // run of spaces shows shorter than it is, so the search looks past the budget (a fit that keeps less is still a fit).
  let lo = 0;
  let hi = Math.min(raw.length - 1, budget * 4);
  let best = quoted(raw, 0);
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const q = quoted(raw, mid);
    if (q.length <= budget) {
      best = q;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best.length <= budget ? said + best : `${said}(${raw.length} characters, not shown)`.slice(0, room);
}

/** A stream's progress line as a client shows it: from its parts; from an engine before `line`, all of it untrusted. */
export function streamedLine(item: { note: string; line?: WaitNote }): string {
  return noteLine(item.line ?? { said: "", untrusted: item.note });
}

/** The engine's own words, cut with an ellipsis (no escape in them to cut in half). */
function clipPlain(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, Math.max(0, n - 1))}…`;
}

export function slimWorker(
  w: {
    id: string;
    spec: { task: string; title?: string };
    batchId: string | null;
    state: WorkerState;
    worktree: string | null;
    asks: PermissionAsk[];
    usage: Usage;
    startedAt: number | null;
    endedAt: number | null;
    stalled: boolean;
    verdict: { verdict: Outcome; honest: boolean } | null;
  },
  opts: { diffs?: boolean } = {},
): WaitWorker {
  const pending = w.asks
    .filter((a) => a.status === "pending")
    .map((a) => {
      // The tool call's id links an ask to its transcript row (the GUI's): nothing a waiting client acts on.
      const { callId: _call, ...ask } = a;
      if (opts.diffs !== false || ask.diff === undefined) return ask;
      const { diff: _diff, ...rest } = ask;
      return rest;
    });
  return {
    id: w.id,
    title: workerTitle(w.spec),
    batchId: w.batchId,
    state: w.state,
    worktree: pending.length ? w.worktree : null,
    asks: pending,
    usage: w.usage,
    startedAt: w.startedAt,
    endedAt: w.endedAt,
    stalled: w.stalled,
    verdict: w.verdict ? { verdict: w.verdict.verdict, honest: w.verdict.honest } : null,
  };
}

const byText = (by: { kind: string; name?: string } | undefined) => (by ? `${by.kind}${by.name ? ":" + by.name : ""}` : null);

/** A tool or permission name the engine can say as its own: a plain identifier; anything else is the worker's text. */
const PLAIN_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
export const plainName = (name: string) => PLAIN_NAME.test(name);

/**
 * A tool or permission name inside a line of the engine's (a terminal's): a plain name as it is; anything else (a name a
 * model or a plugin chose: an escape sequence, a line break, a fake prompt) quoted and labelled as untrusted.
 */
export const toolWord = (name: string): string => (plainName(name) ? name : quoteUntrusted(name, "a tool name the model chose", 80));

/**
 * A progress line for an event of a followed worker, in its parts (WaitNote), or null when it is not worth showing. A
 * state's reason and an ask's text are a worker's or model's (a command, a path, check output, an error it caused).
 */
export function describeNote(e: EngineEvent, followed: { has(id: string): boolean }): WaitNote | null {
  if (!("workerId" in e) || !followed.has(e.workerId)) return null;
  switch (e.type) {
    case "worker.state":
      return e.reason ? { said: `${e.workerId} ${e.state}`, untrusted: e.reason } : { said: `${e.workerId} ${e.state}` };
    case "ask.opened":
      return askNote(e.workerId, e.ask);
    case "ask.resolved":
      return { said: `${e.workerId} ask ${e.status}${e.decision ? ` (${e.decision})` : ""}${e.by ? ` by ${byText(e.by)}` : ""}` };
    case "part": {
      const p = e.part;
      if (p.kind !== "tool" || p.status === "running" || p.status === "pending") return null;
      const tool = p.tool ?? "";
      if (PLAIN_NAME.test(tool)) return { said: `${e.workerId} ${tool} ${p.status}` };
      return tool ? { said: `${e.workerId} a tool ${p.status}`, untrusted: tool } : { said: `${e.workerId} a tool ${p.status}` };
    }
    case "verdict":
      return { said: `${e.workerId} verdict ${e.verdict.verdict}${e.verdict.honest ? "" : " (claim did not match)"}` };
    case "stalled":
      return { said: `${e.workerId} idle for ${e.idleSec}s` };
    default:
      return null;
  }
}

/** The progress note of a worker's ask: its tool named where the name is plain, its request always the worker's words. */
export function askNote(workerId: string, ask: Pick<PermissionAsk, "tool" | "what">): WaitNote {
  if (PLAIN_NAME.test(ask.tool)) return { said: `${workerId} asks ${ask.tool}`, untrusted: ask.what };
  return { said: `${workerId} asks (tool and request)`, untrusted: `${ask.tool}: ${ask.what}` };
}

/** A one-line progress note for an event of a followed worker (noteLine of describeNote), or null when none. */
export function describeEvent(e: EngineEvent, followed: { has(id: string): boolean }): string | null {
  const n = describeNote(e, followed);
  return n && noteLine(n);
}
