import { showUntrusted, showUntrustedLines } from "../../../shared/untrusted";
import type { Verdict } from "../../../shared/verdict";

export function VerdictCard({ verdict, workerId }: { verdict: Verdict; workerId: string }) {
  const passed = verdict.checks.filter((c) => c.passed).length;
  return (
    <section className={`panel verdict verdict-${verdict.verdict}`} aria-label={`Verdict of ${workerId}`}>
      <header className="verdict-head">
        <h2>Verdict</h2>
        <span className={`chip big chip-${verdict.verdict === "built" ? "ok" : "bad"}`}>{verdict.verdict === "built" ? "built" : "failed"}</span>
        <span className="muted small">
          {passed}/{verdict.checks.length} checks · scope {verdict.scope.passed ? "ok" : "violated"} · graded {new Date(verdict.gradedAt).toLocaleTimeString()}
        </span>
      </header>
      <div className="claim-row">
        <div>
          <div className="io-label">worker claimed</div>
          <strong>{verdict.claim === "built" ? "built" : verdict.claim === "honest-failure" ? "failed" : "no OUTCOME line"}</strong>
          {verdict.claimReason && <span className="muted"> — {verdict.claimReason}</span>}
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
          changed: {verdict.scope.changedFiles.length ? verdict.scope.changedFiles.map((f) => showUntrusted(f, { max: 300, lines: false })).join(", ") : "nothing"}
          {verdict.branch ? ` · branch ${verdict.branch}` : ""}
        </div>
        {verdict.diffStat && <pre className="diffstat">{showUntrustedLines(verdict.diffStat)}</pre>}
      </div>
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
