// The machine as the engine's planner sees it: GPUs (or none), CPU and RAM, what the runtime can use.
import type { FitHardware } from "../../../../shared/fit";
import { gib, hardwareNote } from "./format";
import { EngineText } from "../EngineText";

/** `slotsShown`: the Slots field is on the screen below the list (a note that says where to set the slots points there). */
export function HardwareList({ hw, slotsShown }: { hw: FitHardware; slotsShown: boolean }) {
  return (
    <>
      <ul className="hw-list" aria-label="Detected hardware">
        {hw.gpus.map((g, i) => (
          <li key={i}>
            <strong>{g.name}</strong>{" "}
            <span className="muted small">
              {g.vendor.toUpperCase()} · {gib(g.totalBytes)}
              {g.freeBytes !== null ? ` · ${gib(g.freeBytes)} free` : " · free memory unknown"}
              {g.unified ? " · unified memory" : ""}
            </span>
          </li>
        ))}
        {hw.gpus.length === 0 && (
          <li>
            <strong>No GPU detected</strong> <span className="muted small">— models run on the CPU (slow), or use an API provider</span>
          </li>
        )}
        <li>
          <strong>CPU</strong> <span className="muted small">{hw.cpu}</span>
        </li>
        <li>
          <strong>RAM</strong>{" "}
          <span className="muted small">
            {gib(hw.ramTotalBytes)} · {gib(hw.ramFreeBytes)} free
          </span>
        </li>
      </ul>
      {hw.runtimeDevices !== null && (
        <p className="small muted">llama-server here sees: {hw.runtimeDevices.length ? hw.runtimeDevices.join(", ") : "no GPU (a CPU build)"}</p>
      )}
      {hw.notes.length > 0 && (
        <ul className="small muted" aria-label="Hardware notes">
          {hw.notes.map((n, i) => (
            <li key={i}>
              <EngineText text={hardwareNote(n, slotsShown)} />
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
