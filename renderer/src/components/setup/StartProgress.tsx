// A model start on the engine's machine (setup.start): the phases with their times, live progress bars for the
// downloads, the verify checklist as each check completes, where the weights landed, and a failure's root cause with
// what to do. The job arrives as `setup` events; setup.job is read on mount (a start begun before a reload) and polled
// as a fallback while it runs.
import { useCallback, useEffect, useRef, useState } from "react";
import { missingLlamaServer, noLlamaServerText, type SetupJob, type SetupPhase, type SetupStartInput } from "../../../../shared/setup";
import { api, errorText } from "../../api";
import { onEngineEvent, refreshTargets } from "../../store";
import { counted } from "../../format";
import { gib, newerJob, phaseChip } from "./format";
import { VerifyChecklist } from "./VerifyChecklist";
import { Clip } from "./Clip";
import { EngineText } from "../EngineText";

const LABEL: Record<SetupPhase["name"], string> = {
  plan: "Plan",
  runtime: "Runtime",
  download: "Download",
  load: "Load",
  warmup: "Warm-up",
  verify: "Verify",
  placement: "Weights placement",
  bench: "Speed (benchmark)",
};

/** Bytes in the unit that shows them: MiB below 1 GiB. */
function size(b: number | null): string {
  if (b === null) return "?";
  return b < 1024 ** 3 ? `${(b / 1024 ** 2).toFixed(1)} MiB` : gib(b);
}

function secs(ms: number | null): string {
  return ms === null ? "" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function eta(s: number | null): string {
  if (s === null) return "";
  if (s < 60) return `${Math.ceil(s)} s left`;
  return `${Math.floor(s / 60)} min ${Math.ceil(s % 60)} s left`;
}

/** Follows setup jobs: the latest one on mount, then every `setup` event; `start` begins one. */
export function useSetupJob(): { job: SetupJob | null; error: string | null; start: (input: SetupStartInput) => Promise<void>; cancel: () => void } {
  const [job, setJob] = useState<SetupJob | null>(null);
  const [error, setError] = useState<string | null>(null);
  const current = useRef<string | null>(null);
  const accept = useCallback((j: SetupJob | null) => {
    if (!j) return;
    if (current.current && j.jobId !== current.current) return;
    current.current = j.jobId;
    setJob((prev) => newerJob(prev, j));
    if (j.state === "done") void refreshTargets();
  }, []);
  useEffect(() => {
    void api.setup.job.query().then(
      (j) => accept(j),
      () => undefined,
    );
    return onEngineEvent((e) => {
      if (e.type === "setup") accept(e.job);
    });
  }, [accept]);
  // a fallback while a job runs: the event stream may reconnect and miss a change
  useEffect(() => {
    if (job?.state !== "running") return;
    const t = setInterval(
      () =>
        void api.setup.job.query({ jobId: job.jobId }).then(
          (j) => accept(j),
          () => undefined,
        ),
      2000,
    );
    return () => clearInterval(t);
  }, [job?.state, job?.jobId, accept]);
  const start = useCallback(async (input: SetupStartInput) => {
    setError(null);
    try {
      const j = await api.setup.start.mutate(input);
      current.current = j.jobId;
      // its end may have come first (a start refused at once)
      setJob((prev) => newerJob(prev, j));
    } catch (err) {
      // a llama-server path that names nothing: how to do without it is said of this screen's field
      const missing = missingLlamaServer(err);
      setError(missing !== null ? noLlamaServerText(missing, "leave the field empty") : errorText(err));
    }
  }, []);
  const cancel = useCallback(() => {
    if (job) void api.setup.cancel.mutate({ jobId: job.jobId }).catch((err) => setError(errorText(err)));
  }, [job]);
  return { job, error, start, cancel };
}

/** One line next to the Start button: the phase running (with its progress), or what failed and why, or the outcome. */
export function StartStatus({ job, error }: { job: SetupJob | null; error: string | null }) {
  if (error)
    return (
      <span className="bad-text small" role="alert" aria-label="Start status">
        The engine did not start it: <Clip text={error} max={200} engine />
      </span>
    );
  if (!job) return null;
  if (job.state === "running") {
    const p = job.phases.find((x) => x.status === "running");
    const pr = p?.progress;
    const pct = pr && pr.total ? ` ${Math.floor((pr.done / Math.max(1, pr.total)) * 100)} %` : "";
    return (
      <span className="small" role="status" aria-label="Start status">
        <span className="chip chip-busy">running</span> {p ? `${LABEL[p.name]}${pct}` : "starting"}
        {pr?.etaSec != null ? ` · ${eta(pr.etaSec)}` : ""} — details below
      </span>
    );
  }
  if (job.failure && job.state !== "done")
    return (
      <span className="bad-text small" role="status" aria-label="Start status">
        <span className="chip chip-bad">{job.state}</span> {LABEL[job.failure.phase]}: <Clip text={job.failure.cause} max={160} />
      </span>
    );
  const r = job.result;
  return (
    <span className="small" role="status" aria-label="Start status">
      <span className={`chip chip-${r?.outcome === "built" ? "ok" : r ? "warn" : "idle"}`}>{r?.outcome ?? job.state}</span>{" "}
      {r ? (r.saved ? `target ${r.target.id} saved${r.active ? " and active" : ""}` : "nothing saved") : ""}
    </span>
  );
}

function PhaseRow({ p, failureCause, outcome }: { p: SetupPhase; failureCause?: string; outcome?: NonNullable<SetupJob["result"]>["outcome"] }) {
  const chip = phaseChip(p, outcome);
  const pr = p.progress;
  return (
    <li className={`phase phase-${p.status}`} aria-label={`${LABEL[p.name]}: ${p.status}`}>
      <span className={`chip chip-${chip.tone}`}>{chip.text}</span> <strong>{LABEL[p.name]}</strong>{" "}
      {p.ms !== null && <span className="small muted">{secs(p.ms)}</span>}
      {/* a failed phase's detail is the failure's cause, said once below */}
      {p.detail && !(p.status === "failed" && p.detail === failureCause) && (
        <div className="small muted">
          <Clip text={p.detail} />
        </div>
      )}
      {pr && (p.status === "running" || p.name === "download") && (
        <div className="small">
          <progress aria-label={`${LABEL[p.name]} progress`} value={pr.done} max={pr.total ?? undefined} style={{ width: "100%" }} />
          <div>
            {size(pr.done)}
            {pr.total !== null ? ` of ${size(pr.total)} (${Math.floor((pr.done / Math.max(1, pr.total)) * 100)} %)` : ""}
            {pr.bytesPerSec ? ` · ${(pr.bytesPerSec / 1024 ** 2).toFixed(1)} MiB/s` : ""}
            {pr.etaSec !== null && p.status === "running" ? ` · ${eta(pr.etaSec)}` : ""}
            {pr.files && pr.files > 1 ? ` · file ${(pr.fileIndex ?? 0) + 1} of ${pr.files}` : ""}
            {pr.resumedBytes > 0 ? ` · resumed ${size(pr.resumedBytes)} already on disk` : ""}
          </div>
          {pr.file && <div className="mono small muted">{pr.file}</div>}
        </div>
      )}
      {!pr && p.status === "running" && <progress aria-label={`${LABEL[p.name]} progress`} style={{ width: "100%" }} />}
    </li>
  );
}

export function StartProgress({ job, onCancel }: { job: SetupJob; onCancel: () => void }) {
  const verify = job.phases.find((p) => p.name === "verify")!;
  const r = job.result;
  return (
    <section className="panel" aria-label="Model start" aria-busy={job.state === "running" || undefined}>
      <h3>
        Starting {job.model ?? "the planner's pick"}
        {job.quant ? ` ${job.quant}` : ""}{" "}
        <span className={`chip chip-${job.state === "done" ? (job.failure ? "warn" : "ok") : job.state === "running" ? "busy" : "bad"}`}>{job.state}</span>{" "}
        {job.ms !== null && <span className="small muted">{secs(job.ms)} in all</span>}
      </h3>
      {job.slots && job.ctxPerSlot && (
        <p className="small">
          {job.runtime} · {counted(job.slots, "slot")} × {job.ctxPerSlot.toLocaleString()} tokens
        </p>
      )}
      <ol className="phases" aria-label="Start phases">
        {job.phases.map((p) => (
          <PhaseRow key={p.name} p={p} failureCause={job.failure?.cause} outcome={r?.outcome} />
        ))}
      </ol>
      {job.state === "running" && (
        <button type="button" className="btn" onClick={onCancel}>
          Cancel the start
        </button>
      )}
      {(verify.status !== "pending" && verify.status !== "skipped") || job.checks.length ? (
        <VerifyChecklist checks={job.checks} running={verify.status === "running"} />
      ) : null}
      {job.placement && (
        <div role="group" aria-label="Where the weights are" className="small">
          <strong>Where the weights are:</strong> {job.placement.passed ? "as planned" : "not as planned"}
          <ul>
            {job.placement.devices.map((d) => (
              <li key={d.name}>
                {d.name}: planned {gib(d.plannedBytes)}, loaded {d.loadedBytes === null ? "?" : gib(d.loadedBytes)}
              </li>
            ))}
            {job.placement.evidence.map((e) => (
              <li key={e} className="muted">
                {e}
              </li>
            ))}
          </ul>
        </div>
      )}
      {job.failure && (
        <div className="field-error" role="alert">
          <strong>
            {LABEL[job.failure.phase]} failed ({job.failure.kind}):
          </strong>{" "}
          <Clip text={job.failure.cause} />
          {job.failure.logLine && !job.failure.cause.includes(job.failure.logLine) && (
            <div>
              Log line:{" "}
              <code className="mono">
                <Clip text={job.failure.logLine} max={200} />
              </code>
            </div>
          )}
          <div className="remedy">
            What to do: <EngineText text={job.failure.remedy} />
          </div>
          {job.failure.logFile && <div className="small muted">Log: {job.failure.logFile}</div>}
        </div>
      )}
      {r && (
        <p role="status">
          <span className={`chip chip-${r.outcome === "built" ? "ok" : r.outcome === "underpowered" ? "warn" : "bad"}`}>{r.outcome}</span>{" "}
          <Clip text={r.summary} />.{" "}
          {r.saved ? (
            <>
              Target <strong>{r.target.id}</strong> saved{r.active ? " and active" : " (not active)"}.
            </>
          ) : (
            "Nothing saved."
          )}
          {r.saved && !r.active && r.outcome === "underpowered" && (
            <>
              {" "}
              <button type="button" className="btn small" onClick={() => void api.targets.use.mutate({ id: r.target.id }).then(() => refreshTargets())}>
                Use it anyway
              </button>
            </>
          )}
        </p>
      )}
      {job.launchedCommand && (
        <details>
          <summary className="small">The command that runs (key elided)</summary>
          <code className="mono small">{job.launchedCommand}</code>
        </details>
      )}
    </section>
  );
}
