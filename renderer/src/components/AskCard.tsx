import { useEffect, useRef, useState } from "react";
import { askView, diffChangesNothing, FLAG_LABEL, QUESTIONS_SHOWN, questionsView, TOO_MANY_QUESTIONS, UNCHANGED_DIFF } from "../../../shared/ask-view";
import { grantPattern, type DecisionKind, type PermissionAsk } from "../../../shared/permission";
import { showUntrusted } from "../../../shared/untrusted";
import { api, errorText } from "../api";
import { ago, byText, counted, taskTitle, toolShown, useNow } from "../format";
import { href } from "../router";
import { pendingOf, pushNotice, useStore } from "../store";
import { Diff } from "./LazyDiff";
import { EngineText } from "./EngineText";

/** A question ask with more questions than any client shows (shared/ask-view.ts): it can only be dismissed. */
const tooManyQuestions = (ask: PermissionAsk) => ask.kind === "question" && (ask.questions?.length ?? 0) > QUESTIONS_SHOWN;

/**
 * Why a single-key decision (Approvals: a, A, r) is not made on this ask, or null: a question is answered on its card
 * (the key cannot know which options the person picked), and one of too many questions can only be dismissed.
 */
export function keyRefusal(ask: PermissionAsk, decision: DecisionKind): string | null {
  if (ask.kind !== "question" || decision === "reject") return null;
  return tooManyQuestions(ask)
    ? `The question from ${ask.workerId} asks more than ${QUESTIONS_SHOWN} questions: it can only be dismissed (r)`
    : `The ask from ${ask.workerId} is a question: pick its answers on the card, then press Answer (r dismisses it)`;
}

export async function decide(ask: PermissionAsk, decision: DecisionKind, extra: { message?: string; answers?: string[][] } = {}): Promise<void> {
  // Dismissing an ask of too many questions tells the worker why, as the MCP form and `ocw run` do.
  const message = extra.message ?? (decision === "reject" && tooManyQuestions(ask) ? TOO_MANY_QUESTIONS : undefined);
  await api.approvals.decide.mutate({
    askId: ask.id,
    decision,
    ...(message ? { message } : {}),
    ...(extra.answers ? { answers: extra.answers } : {}),
  });
}

/** What an "always" answer would grant (the engine's own rule, from shared/): the exact simple commands; "" when none. */
const askPattern = grantPattern;
/** Asks that a bulk decision treats as the same: the same exact grant, or (where none is offered) the same exact text. */
const sameKey = (a: PermissionAsk) => `${a.tool}\u0000${askPattern(a) || "\u0000" + a.what}`;

/** A flag that stops "approve all like this": only a symlink inside the workspace is not a reason to look twice. */
const isRisky = (a: PermissionAsk) => !!a.flags?.some((f) => f.kind !== "symlink");

/** What the engine found about the asked path before anyone decides: each flag with its detail (real paths). */
export function AskFlags({ ask }: { ask: PermissionAsk }) {
  if (!ask.flags?.length) return null;
  return (
    <ul className="ask-flags" aria-label={`flags of ${ask.id}`}>
      {ask.flags.map((f, i) => (
        <li key={i} className={`ask-flag flag-${f.kind}`}>
          <span className={`chip chip-${f.kind === "symlink" ? "warn" : "bad"}`}>{FLAG_LABEL[f.kind] ?? f.kind}</span>{" "}
          <span className="small">{showUntrusted(f.detail, { max: 500, lines: false })}</span>
        </li>
      ))}
    </ul>
  );
}

/** The other pending asks a decision can be applied to at once: same tool and pattern, from this worker or this batch. */
function similarAsks(
  ask: PermissionAsk,
  pending: PermissionAsk[],
  workers: Record<string, { batchId: string | null }>,
): { worker: PermissionAsk[]; batch: PermissionAsk[] } {
  if (ask.kind !== "permission") return { worker: [], batch: [] };
  const key = sameKey(ask);
  const same = pending.filter((a) => a.kind === "permission" && sameKey(a) === key);
  const batchId = workers[ask.workerId]?.batchId ?? null;
  return { worker: same.filter((a) => a.workerId === ask.workerId), batch: batchId ? same.filter((a) => workers[a.workerId]?.batchId === batchId) : [] };
}

const stillPending = (a: PermissionAsk) => useStore.getState().workers[a.workerId]?.asks.find((x) => x.id === a.id)?.status === "pending";

/** Decides several asks one by one; asks with a risky flag are left out of an approval (they need a look of their own). */
async function decideMany(asks: PermissionAsk[], decision: "once" | "reject"): Promise<{ done: number; skipped: number; failed: string[] }> {
  const todo = decision === "reject" ? asks : asks.filter((a) => !isRisky(a));
  const failed: string[] = [];
  for (const a of todo) {
    // A decision can settle its siblings (opencode cancels the other asks of a rejected message): skip what is no longer pending.
    if (!stillPending(a)) continue;
    try {
      await decide(a, decision);
    } catch (err) {
      // The ask may have been settled meanwhile (cancelled by opencode, answered elsewhere): not a failure then.
      await new Promise((r) => setTimeout(r, 1000));
      if (stillPending(a)) failed.push(`the ${toolShown(a.tool)} ask from ${a.workerId}: ${errorText(err)}`);
    }
  }
  return { done: todo.length - failed.length, skipped: asks.length - todo.length, failed };
}

function BulkBar({ ask }: { ask: PermissionAsk }) {
  const workers = useStore((s) => s.workers);
  const [busy, setBusy] = useState(false);
  const { worker, batch } = similarAsks(ask, pendingOf(workers), workers);
  const groups = [
    { scope: "worker", asks: worker, label: "of this worker" },
    { scope: "batch", asks: batch, label: `in batch ${workers[ask.workerId]?.batchId ?? ""}` },
  ].filter((g) => g.asks.length > 1 && !(g.scope === "batch" && g.asks.length === worker.length));
  if (!groups.length) return null;
  const run = async (asks: PermissionAsk[], d: "once" | "reject") => {
    setBusy(true);
    const r = await decideMany(asks, d);
    setBusy(false);
    const verb = d === "once" ? "approved" : "rejected";
    pushNotice(
      r.failed.length ? "error" : "info",
      `${verb} ${counted(r.done, "ask")}${r.skipped ? `; ${r.skipped} flagged left for you to look at` : ""}${r.failed.length ? `; failed: ${r.failed.join("; ")}` : ""}`,
    );
  };
  return (
    <div className="bulk" role="group" aria-label={`bulk decisions like ${ask.id}`} onClick={(e) => e.stopPropagation()}>
      <span className="small muted">
        Same <code>{toolShown(ask.tool)}</code> <code className="untrusted">{showUntrusted(askPattern(ask) || ask.what, { max: 300, lines: false })}</code>:
      </span>
      {groups.map((g) => {
        const risky = g.asks.filter(isRisky).length;
        return (
          <span key={g.scope} className="bulk-group">
            <button
              type="button"
              className="btn small ok"
              disabled={busy || risky === g.asks.length}
              onClick={() => void run(g.asks, "once")}
              title={risky ? `${counted(risky, "flagged ask is", "flagged asks are")} left out` : undefined}
            >
              Approve all {g.asks.length - risky} {g.label}
            </button>
            <button type="button" className="btn small bad" disabled={busy} onClick={() => void run(g.asks, "reject")}>
              Reject all {g.asks.length} {g.label}
            </button>
          </span>
        );
      })}
    </div>
  );
}

/**
 * What to tell a person whose card closed because its ask was settled by someone else (another client, a policy, the
 * worker's message ending) while it held what they had typed or picked; null when nothing of theirs was lost.
 */
export function settledElsewhereNote(askNow: PermissionAsk | undefined, draft: boolean): string | null {
  if (!draft || !askNow || askNow.status === "pending") return null;
  const what = askNow.kind === "question" ? "question" : "ask";
  const how =
    askNow.status === "cancelled"
      ? "was cancelled (the worker's turn ended)"
      : `was ${askNow.decision === "reject" ? (askNow.kind === "question" ? "dismissed" : "rejected") : askNow.kind === "question" ? "answered" : "approved"} by ${byText(askNow.by)}`;
  // Named by its worker, as its card was: the ask's own id (opencode's) is shown nowhere else.
  return `The ${what} from ${askNow.workerId} ${how} while you were deciding it here: what you typed or picked on its card was not sent.`;
}

/** One pending ask with its decision buttons. Used in the inbox and on a worker's page. */
export function AskCard({
  ask,
  selected,
  showWorker = true,
  onSelect,
}: {
  ask: PermissionAsk;
  selected?: boolean;
  showWorker?: boolean;
  onSelect?: () => void;
}) {
  const now = useNow();
  const worker = useStore((s) => s.workers[ask.workerId]);
  const [busy, setBusy] = useState<DecisionKind | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [message, setMessage] = useState("");
  // A question ask as every client shows it: at most QUESTIONS_SHOWN questions of OPTIONS_SHOWN options, each text cut.
  const qv = ask.kind === "question" ? questionsView(ask) : null;
  const dismissOnly = !!qv?.questionsCut;
  const [answers, setAnswers] = useState<string[][]>(() =>
    (ask.questions ?? []).slice(0, qv?.questions.length ?? 0).map((q) => (q.options[0] ? [q.options[0].label] : [])),
  );
  // An answer typed for a question whose options were not all shown (any option's text, or the person's own words).
  const [typed, setTyped] = useState<string[]>([]);
  // Whether the person has typed or picked something on this card, and whether this card sent the decision: a card
  // that closes because the ask was settled elsewhere says so when something of theirs was not sent.
  const draft = useRef(false);
  const sentHere = useRef(false);
  useEffect(
    () => () => {
      const now = useStore.getState().workers[ask.workerId]?.asks.find((x) => x.id === ask.id);
      const note = settledElsewhereNote(now, draft.current && !sentHere.current);
      if (note) pushNotice("warn", note);
    },
    [ask.id, ask.workerId],
  );
  const answersSent = () => answers.map((a, i) => (typed[i]?.trim() ? [typed[i]!.trim()] : a));

  // Paths inside the worker's own worktree read better relative to it (shown only: the grant is the exact text).
  const rel = (text: string) => (worker?.worktree ? text.split(worker.worktree + "/").join("") : text);
  // A command is shown exactly as it runs; a path may be shown relative to the worktree.
  const view = askView(ask.tool === "bash" ? ask : { ...ask, what: rel(ask.what) });
  const offered = askView(ask).always !== null;

  const descId = `ask-about-${ask.id}`;
  // A single-choice question with nothing picked or typed (one of no options) is not answered yet.
  const unanswered = qv && !dismissOnly ? answersSent().filter((a, i) => a.length === 0 && !qv.questions[i]!.multiple).length : 0;
  const act = async (d: DecisionKind) => {
    sentHere.current = true;
    setBusy(d);
    setError(null);
    try {
      await decide(ask, d, { message: message.trim() || undefined, answers: ask.kind === "question" && d === "once" ? answersSent() : undefined });
    } catch (err) {
      sentHere.current = false;
      setError(errorText(err));
      setBusy(null);
    }
  };

  return (
    <div className={`ask ${selected ? "selected" : ""}`} onClick={onSelect} data-ask-id={ask.id}>
      <div className="ask-head">
        <span className={`chip chip-${ask.tool === "bash" ? "warn" : "busy"}`}>{ask.kind === "question" ? "question" : toolShown(ask.tool)}</span>
        {showWorker && (
          <a href={href({ name: "worker", id: ask.workerId })} className="mono small" onClick={(e) => e.stopPropagation()}>
            {ask.workerId}
          </a>
        )}
        {showWorker && worker && <span className="small muted ellipsis">{taskTitle(worker.spec)}</span>}
        <span className="grow" />
        <span className="small muted">{ago(ask.createdAt, now)}</span>
        {/* What the decision buttons are about, for a screen reader (a list of cards has many "Approve once" buttons). */}
        <span id={descId} hidden>
          {ask.kind === "question" ? "question" : toolShown(ask.tool)} from {ask.workerId}:{" "}
          {/* a question ask's shown questions only (its `what` joins all of them) */}
          {showUntrusted(qv?.questions.length ? qv.questions.map((q) => q.question).join(" / ") : ask.what, { max: 200, lines: false })}
        </span>
      </div>
      {/* Worker-written: line breaks as ⏎ and a new line, bidi / zero-width / control characters as ⟪U+XXXX⟫, long text head and tail (shared/untrusted.ts). */}
      {/* A question ask's `what` is its questions joined: they are shown below, one by one, bounded. */}
      {!qv?.questions.length && (
        <div className="ask-what mono untrusted" aria-label={`what ${ask.id} asks`}>
          {view.what}
        </div>
      )}
      {view.workdir && (
        <div className="ask-workdir mono untrusted small" aria-label={`folder of ${ask.id}`}>
          in folder: {view.workdir}
        </div>
      )}
      {ask.kind === "permission" && view.cut > 0 && (
        <div className="small muted">{view.cut} characters cut from the middle: “Always allow” is not offered.</div>
      )}
      <AskFlags ask={ask} />
      {ask.diff &&
        (diffChangesNothing(ask.diff) ? (
          <div className="small muted" aria-label={`diff of ${ask.id}`}>
            {UNCHANGED_DIFF}
          </div>
        ) : (
          <Diff text={ask.diff} root={worker?.worktree} compact label={`diff of ${ask.id}`} />
        ))}
      {qv?.cutNote && (
        <div className="field-error small" role="note" aria-label={`what of ${ask.id} is not shown`}>
          Not all of it is shown: {qv.cutNote}.
        </div>
      )}
      {qv &&
        dismissOnly &&
        // Questions nobody here can read cannot be answered here: the first ones are listed, the ask is for dismissing.
        qv.questions.length > 0 && (
          <ol className="question-list untrusted small" aria-label={`the first ${qv.questions.length} questions of ${ask.id}`}>
            {qv.questions.map((q, qi) => (
              <li key={qi}>{q.question}</li>
            ))}
          </ol>
        )}
      {qv &&
        !dismissOnly &&
        qv.questions.map((q, qi) => {
          const full = ask.questions![qi]!;
          return (
            <fieldset key={qi} className="question">
              <legend className="untrusted">{q.header ?? q.question}</legend>
              {q.header && <p className="untrusted">{q.question}</p>}
              {q.options.map((label, oi) => {
                const o = full.options[oi]!;
                return (
                  <label key={oi} className="opt untrusted">
                    <input
                      type={q.multiple ? "checkbox" : "radio"}
                      name={`${ask.id}-${qi}`}
                      checked={answers[qi]?.includes(o.label) ?? false}
                      onChange={(e) => {
                        draft.current = true;
                        setAnswers((as) =>
                          as.map((a, j) => (j !== qi ? a : q.multiple ? (e.target.checked ? [...a, o.label] : a.filter((x) => x !== o.label)) : [o.label])),
                        );
                      }}
                    />
                    {/* one run of text: the label, then its description, wrapping as one paragraph in a narrow card */}
                    <span className="opt-text">
                      {label}
                      {o.description && <span className="muted small"> — {showUntrusted(o.description, { max: 500, lines: false })}</span>}
                    </span>
                  </label>
                );
              })}
              {/* opencode takes an answer in the person's own words for any question (as `ocw run` and the MCP form do). */}
              <label className="opt opt-typed small">
                <span className="muted">
                  {q.optionsCut > 0
                    ? `${counted(q.optionsCut, "more option", "more options")} not shown; or type one's text (it replaces the choice above):`
                    : q.options.length
                      ? "or your own answer (it replaces the choice above):"
                      : "your answer:"}
                </span>
                <input
                  aria-label={`typed answer to question ${qi + 1} of ${ask.id}`}
                  value={typed[qi] ?? ""}
                  onClick={(e) => e.stopPropagation()}
                  onChange={(e) => {
                    draft.current = true;
                    setTyped((t) => Object.assign([...t], { [qi]: e.target.value }));
                  }}
                />
              </label>
            </fieldset>
          );
        })}
      {ask.kind === "permission" &&
        (view.always ? (
          <div className="small muted ask-grant">
            “Always allow” grants this worker exactly{" "}
            {view.always
              .map((p, i) => (
                <code key={i} className="untrusted">
                  {p}
                </code>
              ))
              .reduce<React.ReactNode[]>((acc, el, i) => (i ? [...acc, " and ", el] : [el]), [])}
            {view.always.length > 1 ? ", each on its own" : ""}: the engine answers its later {toolShown(ask.tool)} asks made only of these (never a flagged
            one, never one joined to anything else), until you revoke the grant.
          </div>
        ) : (
          <div className="small muted ask-grant">“Always allow” is not offered: {view.alwaysWhy}.</div>
        ))}
      {ask.status === "pending" && <BulkBar ask={ask} />}
      <div className="ask-actions">
        {!dismissOnly && (
          <button
            type="button"
            className="btn ok"
            disabled={!!busy || unanswered > 0}
            onClick={(e) => (e.stopPropagation(), void act("once"))}
            title={unanswered ? `${counted(unanswered, "question")} not answered yet: pick an option or type an answer` : "a"}
            aria-describedby={descId}
          >
            {ask.kind === "question" ? "Answer" : "Approve once"}
          </button>
        )}
        {ask.kind === "permission" && (
          <button
            type="button"
            className="btn"
            disabled={!!busy || !offered}
            onClick={(e) => (e.stopPropagation(), void act("always"))}
            title={offered ? "A (shift+a)" : `not offered: ${view.alwaysWhy}`}
          >
            Always allow
          </button>
        )}
        <button
          type="button"
          className="btn bad"
          disabled={!!busy}
          onClick={(e) => (e.stopPropagation(), void act("reject"))}
          title="r"
          aria-describedby={descId}
        >
          {ask.kind === "question" ? "Dismiss" : "Reject"}
        </button>
        <input
          className="grow"
          aria-label="Message to the worker (optional)"
          aria-describedby={descId}
          placeholder={
            dismissOnly ? `message to the worker (optional; without one: “${TOO_MANY_QUESTIONS}”)` : "message to the worker (optional, sent with the decision)"
          }
          value={message}
          onClick={(e) => e.stopPropagation()}
          onChange={(e) => {
            if (e.target.value.trim()) draft.current = true;
            setMessage(e.target.value);
          }}
        />
        {busy && <span className="small muted">sending {busy}…</span>}
      </div>
      {error && (
        <div className="field-error" role="alert">
          <EngineText text={error} />
        </div>
      )}
    </div>
  );
}
