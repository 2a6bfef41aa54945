import { useState } from "react";
import type { DecisionKind, PermissionAsk } from "../../../shared/permission";
import { api, errorText } from "../api";
import { ago, taskTitle, useNow } from "../format";
import { href } from "../router";
import { useStore } from "../store";
import { Diff } from "./LazyDiff";

export async function decide(ask: PermissionAsk, decision: DecisionKind, extra: { message?: string; answers?: string[][] } = {}): Promise<void> {
  await api.approvals.decide.mutate({ askId: ask.id, decision, ...(extra.message ? { message: extra.message } : {}), ...(extra.answers ? { answers: extra.answers } : {}) });
}

/** One pending ask with its decision buttons. Used in the inbox and on a worker's page. */
export function AskCard({ ask, selected, showWorker = true, onSelect }: { ask: PermissionAsk; selected?: boolean; showWorker?: boolean; onSelect?: () => void }) {
  const now = useNow();
  const worker = useStore((s) => s.workers[ask.workerId]);
  const [busy, setBusy] = useState<DecisionKind | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [message, setMessage] = useState("");
  const [answers, setAnswers] = useState<string[][]>(() => (ask.questions ?? []).map((q) => (q.options[0] ? [q.options[0].label] : [])));

  // Paths inside the worker's own worktree read better relative to it.
  const rel = (text: string) => (worker?.worktree ? text.split(worker.worktree + "/").join("") : text);

  const act = async (d: DecisionKind) => {
    setBusy(d);
    setError(null);
    try {
      await decide(ask, d, { message: message.trim() || undefined, answers: ask.kind === "question" && d === "once" ? answers : undefined });
    } catch (err) {
      setError(errorText(err));
      setBusy(null);
    }
  };

  return (
    <div className={`ask ${selected ? "selected" : ""}`} onClick={onSelect} data-ask-id={ask.id}>
      <div className="ask-head">
        <span className={`chip chip-${ask.tool === "bash" ? "warn" : "busy"}`}>{ask.kind === "question" ? "question" : ask.tool}</span>
        {showWorker && (
          <a href={href({ name: "worker", id: ask.workerId })} className="mono small" onClick={(e) => e.stopPropagation()}>
            {ask.workerId}
          </a>
        )}
        {showWorker && worker && <span className="small muted ellipsis">{taskTitle(worker.spec)}</span>}
        <span className="grow" />
        <span className="small muted">{ago(ask.createdAt, now)}</span>
      </div>
      <div className="ask-what mono" title={ask.what}>
        {rel(ask.what)}
      </div>
      {ask.diff && <Diff text={ask.diff} root={worker?.worktree} compact label={`diff of ${ask.id}`} />}
      {ask.kind === "question" &&
        (ask.questions ?? []).map((q, qi) => (
          <fieldset key={qi} className="question">
            <legend>{q.header ?? q.question}</legend>
            {q.header && <p>{q.question}</p>}
            {q.options.map((o) => (
              <label key={o.label} className="opt">
                <input
                  type={q.multiple ? "checkbox" : "radio"}
                  name={`${ask.id}-${qi}`}
                  checked={answers[qi]?.includes(o.label) ?? false}
                  onChange={(e) =>
                    setAnswers((as) => as.map((a, j) => (j !== qi ? a : q.multiple ? (e.target.checked ? [...a, o.label] : a.filter((x) => x !== o.label)) : [o.label])))
                  }
                />
                {o.label}
                {o.description && <span className="muted small"> — {o.description}</span>}
              </label>
            ))}
          </fieldset>
        ))}
      {ask.always.length > 0 && ask.kind === "permission" && (
        <div className="small muted">
          “Always allow” allows <code>{ask.always.join(", ")}</code> for this worker's session.
        </div>
      )}
      <div className="ask-actions">
        <button type="button" className="btn ok" disabled={!!busy} onClick={(e) => (e.stopPropagation(), void act("once"))} title="a">
          Approve once
        </button>
        {ask.kind === "permission" && (
          <button type="button" className="btn" disabled={!!busy} onClick={(e) => (e.stopPropagation(), void act("always"))} title="A (shift+a)">
            Always allow
          </button>
        )}
        <button type="button" className="btn bad" disabled={!!busy} onClick={(e) => (e.stopPropagation(), void act("reject"))} title="r">
          Reject
        </button>
        <input
          className="grow"
          aria-label="Message to the worker (optional)"
          placeholder="message to the worker (optional, sent with the decision)"
          value={message}
          onClick={(e) => e.stopPropagation()}
          onChange={(e) => setMessage(e.target.value)}
        />
        {busy && <span className="small muted">sending {busy}…</span>}
      </div>
      {error && (
        <div className="field-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
