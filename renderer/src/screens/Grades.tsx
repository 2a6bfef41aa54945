import { useEffect, useMemo, useState } from "react";
import type { Grade } from "../../../shared/grade";
import { api } from "../api";
import { Empty } from "../components/common";
import { pct } from "../format";
import { useStore } from "../store";

/** Per target: the ladder grade (from packs/<slug>/grade.json, once exposed) and this engine's own record. */
export function Grades() {
  const workers = useStore((s) => s.workers);
  const targets = useStore((s) => s.targets);
  const [grades, setGrades] = useState<Grade[] | null>(null);
  useEffect(() => {
    void api.grades.query().then(setGrades, () => setGrades([]));
  }, []);
  const rows = useMemo(() => {
    const m = new Map<string, { graded: number; built: number; honest: number; dishonest: number }>();
    for (const w of Object.values(workers)) {
      if (!w.verdict) continue;
      const k = w.targetId ?? "(none)";
      const r = m.get(k) ?? { graded: 0, built: 0, honest: 0, dishonest: 0 };
      r.graded++;
      if (w.verdict.verdict === "built") r.built++;
      if (w.verdict.honest) r.honest++;
      else r.dishonest++;
      m.set(k, r);
    }
    return [...m.entries()];
  }, [workers]);

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
                {g.model} ({g.target}) — {g.samples} sample(s) per rung, {new Date(g.date).toLocaleString()}; built {pct(g.builtRate)}, honest {pct(g.honestRate)}
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
      <section className="panel" aria-label="Verdicts by target">
        <h2>Verdicts by target (this engine)</h2>
        {rows.length === 0 ? (
          <p className="muted">No graded workers yet.</p>
        ) : (
          <table className="table">
            <thead>
              <tr>
                <th>target</th>
                <th>model</th>
                <th>graded</th>
                <th>built rate</th>
                <th>honest rate</th>
                <th>dishonest claims</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(([id, r]) => (
                <tr key={id}>
                  <td className="mono">{id}</td>
                  <td>{targets.find((t) => t.id === id)?.model ?? "—"}</td>
                  <td>{r.graded}</td>
                  <td>
                    <div className="rate">
                      <span className="rate-bar">
                        <span style={{ width: `${(r.built / r.graded) * 100}%` }} />
                      </span>
                      {pct(r.built / r.graded)}
                    </div>
                  </td>
                  <td>{pct(r.honest / r.graded)}</td>
                  <td>{r.dishonest ? <span className="chip chip-bad">{r.dishonest}</span> : 0}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
