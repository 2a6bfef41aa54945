// Per-device memory of a plan, from the engine's estimate: weights, KV cache, compute buffers, the 1 GiB margin, free.
import type { PlannedDevice } from "../../../../shared/fit";
import { gib } from "./format";

const SEGS = [
  ["weights", "weights"],
  ["kv", "KV cache"],
  ["compute", "compute"],
  ["margin", "margin"],
  ["free", "free"],
] as const;

export function MemoryChart({ devices }: { devices: PlannedDevice[] }) {
  return (
    <div className="budget" role="group" aria-label="Memory per device">
      {devices.map((d) => {
        const b = d.breakdown;
        const parts = {
          weights: b?.weightsBytes ?? d.plannedBytes,
          kv: b?.kvBytes ?? 0,
          compute: (b?.computeBytes ?? 0) + (b?.overheadBytes ?? 0),
          margin: b?.marginBytes ?? 0,
          free: 0,
        };
        const used = parts.weights + parts.kv + parts.compute + parts.margin;
        parts.free = Math.max(0, d.budgetBytes - used);
        const scale = Math.max(d.budgetBytes, used) || 1;
        const over = used > d.budgetBytes;
        const label = `${d.name}: ${SEGS.map(([k, n]) => `${n} ${gib(parts[k])}`).join(", ")} of ${gib(d.budgetBytes)}`;
        return (
          <div key={d.name} className="budget-row">
            <div className="budget-label">
              <strong>{d.name === "cpu" ? "CPU (RAM)" : d.name}</strong>
              <span className="muted small">
                {gib(d.plannedBytes)} of {gib(d.budgetBytes)}
              </span>
              {over && <span className="chip chip-bad">over budget</span>}
            </div>
            <div className="budget-bar" role="img" aria-label={label} title={label}>
              {SEGS.map(([k, n]) =>
                parts[k] > 0 ? (
                  <span key={k} className={`mem-seg mem-${k}`} style={{ width: `${(parts[k] / scale) * 100}%` }} title={`${n} ${gib(parts[k])}`} />
                ) : null,
              )}
            </div>
          </div>
        );
      })}
      <div className="legend small">
        {SEGS.map(([k, n]) => (
          <span key={k}>
            <i className={`swatch mem-${k}`} /> {n}
          </span>
        ))}
      </div>
    </div>
  );
}
