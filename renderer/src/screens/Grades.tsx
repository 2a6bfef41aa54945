import { useMemo } from "react";
import { Empty, NotWired } from "../components/common";
import { pct } from "../format";
import { useStore } from "../store";

/** Per target: the ladder grade (from packs/<slug>/grade.json, once exposed) and this engine's own record. */
export function Grades() {
  const workers = useStore((s) => s.workers);
  const targets = useStore((s) => s.targets);
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
        <NotWired>
          Each target's ladder grade (per-rung built and honest rates) is written to <code>packs/&lt;target&gt;/grade.json</code>, but the control API does not serve it yet, so no
          chart can be drawn here.
        </NotWired>
        <Empty title="No ladder results to show">Run the ladder for a target; its grade will appear here once the engine exposes it.</Empty>
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
