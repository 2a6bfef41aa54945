import { Fragment, useEffect, useMemo, useState } from "react";
import type { Grade } from "../../../shared/grade";
import { api } from "../api";
import { Empty } from "../components/common";
import { ledger } from "../../../shared/ledger";
import { counted, duration, pct, tokens } from "../format";
import { href } from "../router";
import { useStore } from "../store";

/** Per target: the ladder grade (from packs/<slug>/grade.json, once exposed) and this engine's own record. */
export function Grades() {
  const workers = useStore((s) => s.workers);
  const targets = useStore((s) => s.targets);
  const [grades, setGrades] = useState<Grade[] | null>(null);
  useEffect(() => {
    void api.grades.query().then(setGrades, () => setGrades([]));
  }, []);
  // The ledger from this engine's real runs (the same function the engine answers `ledger` with).
  const rows = useMemo(() => ledger(Object.values(workers)), [workers]);
  const [open, setOpen] = useState<string | null>(null);

  return (
    <div className="grades">
      <section className="panel" aria-label="Ladder grades">
        <h2>Ladder grades</h2>
        {grades === null ? (
          <p className="muted">Loading…</p>
        ) : grades.length === 0 ? (
          <Empty title="No ladder results yet">
            Run <code>ocw grade</code> against a target; its per-rung rates are written to <code>packs/&lt;target&gt;/grade.json</code> and shown here.
          </Empty>
        ) : (
          grades.map((g) => (
            <table className="table" key={g.target} aria-label={`Ladder grade of ${g.target}`}>
              <caption>
                {g.model} ({g.target}) — {counted(g.samples, "sample")} per rung, {new Date(g.date).toLocaleString()}; built {pct(g.builtRate)}, honest{" "}
                {pct(g.honestRate)}
              </caption>
              <thead>
                <tr>
                  <th>rung</th>
                  <th>samples</th>
                  <th>built rate</th>
                  <th>honest rate</th>
                </tr>
              </thead>
              <tbody>
                {g.rungs.map((r) => (
                  <tr key={r.rung}>
                    <td>
                      {r.rung}. {r.name}
                    </td>
                    <td>{r.samples}</td>
                    <td>
                      <div className="rate">
                        <span className="rate-bar">
                          <span style={{ width: `${r.builtRate * 100}%` }} />
                        </span>
                        {pct(r.builtRate)}
                      </div>
                    </td>
                    <td>{pct(r.honestRate)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ))
        )}
      </section>
      <section className="panel" aria-label="Ledger by target">
        <h2>Ledger by target (this engine's real runs)</h2>
        <p className="small muted">
          A task is one worker, or one task's attempts and retries on that target. pass@1: built attempts of those graded; pass@k: tasks with a built attempt (k
          = the most attempts one task had). A no-op "built" (nothing changed) never counts. Cost per built task sums every finished worker. Not a ladder grade:
          that is earned only by <code>ocw grade</code>.
        </p>
        {rows.length === 0 ? (
          <p className="muted">No graded workers yet.</p>
        ) : (
          <table className="table" aria-label="Ledger">
            <thead>
              <tr>
                <th>target</th>
                <th>model</th>
                <th>tasks</th>
                <th>graded</th>
                <th>pass@1</th>
                <th>pass@k</th>
                <th>rounds to built</th>
                <th>honest rate</th>
                <th>tokens / built task</th>
                <th>time / built task</th>
                <th>not counted</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <Fragment key={r.target}>
                  <tr
                    className="ledger-row"
                    tabIndex={0}
                    aria-expanded={open === r.target}
                    aria-label={`ledger of ${r.target}`}
                    title="Show the workers behind this row"
                    onClick={() => setOpen(open === r.target ? null : r.target)}
                    onKeyDown={(e) => (e.key === "Enter" || e.key === " ") && (e.preventDefault(), setOpen(open === r.target ? null : r.target))}
                  >
                    <td className="mono id-cell">{r.target}</td>
                    <td className="id-cell">{targets.find((t) => t.id === r.target)?.model ?? "—"}</td>
                    <td>{r.tasks}</td>
                    <td>{r.graded}</td>
                    <td>
                      <div className="rate">
                        <span className="rate-bar">
                          <span style={{ width: `${(r.passAt1 ?? 0) * 100}%` }} />
                        </span>
                        {pct(r.passAt1)}
                      </div>
                    </td>
                    <td>
                      {pct(r.passAtK)} <span className="muted small">k={r.k}</span>
                    </td>
                    <td>{r.roundsToBuilt === null ? "—" : r.roundsToBuilt.toFixed(1)}</td>
                    <td>{pct(r.honestRate)}</td>
                    <td>{r.tokensPerBuilt === null ? "—" : tokens(r.tokensPerBuilt)}</td>
                    <td>{r.secPerBuilt === null ? "—" : duration(r.secPerBuilt * 1000)}</td>
                    <td>
                      {r.noopBuilt ? (
                        <span className="chip chip-warn" title="Verdicts built that changed nothing">
                          {r.noopBuilt} no-op
                        </span>
                      ) : (
                        "—"
                      )}
                      {r.weakEvidence ? (
                        <span className="chip chip-warn" title="Built, but the checks also passed before any change">
                          {r.weakEvidence} weak
                        </span>
                      ) : null}
                    </td>
                  </tr>
                  {open === r.target && (
                    <tr>
                      <td colSpan={11}>
                        <div className="ledger-workers" aria-label={`workers behind ${r.target}`}>
                          {r.workerIds.map((id) => {
                            const w = workers[id];
                            return (
                              <a key={id} href={href({ name: "worker", id })} className="chip chip-idle mono">
                                {id}
                                {w ? ` · ${w.verdict ? (w.verdict.verdict === "built" ? "built" : "failed") : w.state}` : ""}
                              </a>
                            );
                          })}
                        </div>
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
