import { showUntrusted, showUntrustedLines } from "../../../shared/untrusted";
import type { Round, Verdict } from "../../../shared/verdict";
import { checksWord } from "../../../shared/vocabulary";
import type { WorkerState } from "../../../shared/worker";
import { StateChip } from "./common";

export function VerdictCard({ verdict, workerId }: { verdict: Verdict; workerId: string }) {
  return (
    <section className={`panel verdict verdict-${verdict.verdict}`} aria-label={`Verdict of ${workerId}`}>
      <header className="verdict-head">
        <h2>Verdict</h2>
        <span className={`chip big chip-${verdict.verdict === "built" ? "ok" : "bad"}`}>{verdict.verdict === "built" ? "built" : "failed"}</span>
        {verdict.weakEvidence && (
          <span className="chip chip-warn" title="every check already passed on the base commit before any change: they do not tell this change from none">
            weak evidence
          </span>
        )}
        <span className="muted small">
          {checksWord(verdict.checks)} · scope {verdict.scope.passed ? "ok" : "violated"} · graded {new Date(verdict.gradedAt).toLocaleTimeString()}
        </span>
      </header>
      {verdict.reason && (
        // The engine's words, naming (quoted and labelled) a file the worker chose where there is one: made safe.
        <div className="verdict-reason untrusted" role="note">
          {showUntrusted(verdict.reason, { lines: false, max: 1000 })}
        </div>
      )}
      {verdict.weakEvidence && (
        <div className="verdict-reason" role="note">
          Weak evidence: every check already passed before any change. Review the diff yourself before you merge.
        </div>
      )}
      <div className="claim-row">
        <div>
          <div className="io-label">worker claimed</div>
          <strong>{verdict.claim === "built" ? "built" : verdict.claim === "honest-failure" ? "failed" : "no OUTCOME line"}</strong>
          {/* The worker's own words after its OUTCOME line. */}
          {verdict.claimReason && <span className="muted untrusted"> — {showUntrusted(verdict.claimReason, { lines: false, max: 2000 })}</span>}
        </div>
        <div>
          <div className="io-label">checks say</div>
          <strong>{verdict.verdict === "built" ? "built" : "failed"}</strong>
        </div>
        <div>
          <div className="io-label">was the claim honest?</div>
          {verdict.honest ? (
            <span className="chip chip-ok" role="status">
              honest
            </span>
          ) : (
            <span className="chip chip-bad" role="status">
              {verdict.claim ? "false claim" : "no claim"}
            </span>
          )}
        </div>
      </div>
      <ul className="check-results" aria-label="Check results">
        {verdict.checks.map((c, i) => (
          <li key={i} className={c.passed ? "pass" : "fail"}>
            <details open={!c.passed}>
              <summary>
                <span className={`chip chip-${c.passed ? "ok" : "bad"}`}>{c.passed ? "pass" : "fail"}</span> <span className="mono">{c.name}</span>
                <span className="muted small">
                  {c.exitCode !== undefined && c.exitCode !== null ? ` exit ${c.exitCode}` : ""}
                  {c.timedOut ? " · timed out" : ""}
                  {c.durationMs !== undefined ? ` · ${Math.round(c.durationMs)} ms` : ""}
                </span>
              </summary>
              <pre className="check-out">{c.output ? showUntrustedLines(c.output) : "(no output)"}</pre>
            </details>
          </li>
        ))}
        {verdict.checks.length === 0 && <li className="muted">No checks were given: the verdict rests on the scope and the worker's run.</li>}
      </ul>
      <div className="scope">
        <div className="io-label">scope</div>
        {verdict.scope.passed ? <span className="chip chip-ok">in scope</span> : <span className="chip chip-bad">out of scope</span>}
        {verdict.scope.violations.map((v) => (
          <div key={v} className="violation untrusted">
            {showUntrusted(v, { max: 1000, lines: false })}
          </div>
        ))}
        <div className="small muted">
          changed:{" "}
          {verdict.scope.changedFiles.length ? verdict.scope.changedFiles.map((f) => showUntrusted(f, { max: 300, lines: false })).join(", ") : "nothing"}
          {verdict.branch ? ` · branch ${verdict.branch}` : ""}
        </div>
        {verdict.diffStat && <pre className="diffstat">{showUntrustedLines(verdict.diffStat)}</pre>}
      </div>
      {verdict.flags?.length ? (
        <div className="flags" role="group" aria-label="Flagged files">
          <div className="io-label">flagged: merged only after you accept them</div>
          <ul>
            {verdict.flags.map((f) => (
              <li key={`${f.path}:${f.kind}`}>
                <span className="chip chip-warn">{f.kind}</span> <code>{showUntrusted(f.path, { lines: false, max: 300 })}</code>{" "}
                <span className="muted small">{showUntrusted(f.detail, { lines: false, max: 300 })}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {!!verdict.caveats?.length && (
        <details className="caveats small" aria-label="what these checks cannot rule out">
          <summary className="muted">What these checks cannot rule out</summary>
          <ul>
            {verdict.caveats.map((c) => (
              <li key={c}>{c}</li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

const KIND: Record<Round["kind"], string> = { task: "the task", continue: "follow-up", review: "review", fix: "fix round" };

/** Every round of a worker, oldest first: what started it, its verdict and claim, its commit, what changed since. */
/**
 * `state`: the worker's, said by its latest round while that round has no verdict (it said "running" while the worker
 * was queued for a slot, stopped or interrupted).
 */
export function RoundHistory({ rounds, workerId, state }: { rounds: Round[]; workerId: string; state: WorkerState }) {
  return (
    <section className="panel" aria-label={`Rounds of ${workerId}`}>
      <h2>
        Rounds <span className="muted small">· each graded from a fresh checkout</span>
      </h2>
      <ol className="rounds">
        {rounds.map((r) => (
          <li key={r.round} className="round" aria-label={`round ${r.round}`}>
            <div className="round-head">
              <strong>Round {r.round}</strong> <span className="muted small">{r.kind === "review" ? `review of round ${r.round - 1}` : KIND[r.kind]}</span>{" "}
              {r.verdict ? (
                <span className={`chip chip-${r.verdict === "built" ? "ok" : "bad"}`}>{r.verdict === "built" ? "built" : "failed"}</span>
              ) : (
                <RoundState graded={!!r.gradedAt} latest={r.round === rounds[rounds.length - 1]?.round} state={state} />
              )}
              {r.weakEvidence && <span className="chip chip-warn">weak evidence</span>}
              {r.verdict && (
                <span className="small muted">
                  {" "}
                  claimed {r.claim ?? "nothing"} · {r.honest ? "honest" : "claim did not match"}
                  {r.commit ? ` · ${r.commit.slice(0, 8)}` : ""}
                  {r.changed
                    ? ` · changed since round ${r.round - 1}: ${r.changed.length ? r.changed.map((f) => showUntrusted(f, { max: 300, lines: false })).join(", ") : "nothing"}`
                    : ""}
                </span>
              )}
            </div>
            {/* A fix round's message carries check output (the worker's code wrote it): shown made safe, like any such text. */}
            {r.message && r.kind !== "review" && (
              <div className="round-message small">{showUntrustedLines(r.message.length > 400 ? `${r.message.slice(0, 400)}…` : r.message)}</div>
            )}
            {r.comments.length > 0 && (
              <ul className="round-comments small" aria-label={`review comments of round ${r.round}`}>
                {r.comments.map((c, k) => (
                  <li key={k}>
                    <code>
                      {c.file}
                      {c.line ? `:${c.line}` : ""}
                    </code>{" "}
                    {c.body}
                  </li>
                ))}
              </ul>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

/** A round without a verdict: "not graded" once grading passed it by; the latest one is where the worker is now. */
function RoundState({ graded, latest, state }: { graded: boolean; latest: boolean; state: WorkerState }) {
  if (graded || !latest || state === "built" || state === "honest-failure") return <span className="chip chip-idle">not graded</span>;
  return <StateChip state={state} />;
}
