// The engine's catalog, each entry with the engine's fit for this machine (the "fits / how" badge) or why not.
import type { CatalogView } from "../../../../shared/fit";
import { ctxText, PLACEMENT, quantsText } from "./format";

export function CatalogTable({ entries, chosen, onPlan }: { entries: CatalogView[]; chosen: string | null; onPlan: (id: string) => void }) {
  return (
    <table className="table catalog" aria-label="Model catalog">
      <thead>
        <tr>
          <th>model</th>
          <th>parameters</th>
          <th>context</th>
          <th>quants</th>
          <th>on this machine</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {entries.map((e) => {
          const sizes = e.quants.map((q) => q.bytes);
          const badge = e.fit ? PLACEMENT[e.fit.placement] : null;
          return (
            <tr key={e.id} className={e.id === chosen ? "sel" : ""}>
              <td>
                <strong>{e.name}</strong>
                <div className="mono small muted">{e.repo}</div>
                <div className="small muted">
                  {e.released} · {e.license} · tool calling {e.toolCalling.status}
                  {e.toolCalling.template ? ` (${e.toolCalling.template})` : ""}
                </div>
              </td>
              <td>
                {e.totalParamsB}B{e.activeParamsB !== e.totalParamsB ? ` (${e.activeParamsB}B active)` : ""}
              </td>
              <td>{ctxText(e.contextLength)}</td>
              <td className="small quants">
                <span>{quantsText(sizes)}</span>
              </td>
              <td>
                {badge && e.fit ? (
                  <>
                    <span className={`chip chip-${badge.tone}`} aria-label={`${e.name}: ${badge.label}`}>
                      {badge.label}
                    </span>
                    <div className="small muted">
                      {e.fit.quant} · {e.fit.slots} × {ctxText(e.fit.ctxPerSlot)}
                    </div>
                  </>
                ) : (
                  <>
                    <span className="chip chip-bad" aria-label={`${e.name}: does not fit`}>
                      does not fit
                    </span>
                    {e.fitProblem && <div className="small muted">{e.fitProblem}</div>}
                  </>
                )}
              </td>
              <td>
                <button type="button" className="btn small" disabled={!e.fit} onClick={() => onPlan(e.id)}>
                  Plan {e.name}
                </button>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
