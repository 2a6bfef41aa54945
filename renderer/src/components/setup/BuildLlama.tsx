// "Build one": the engine builds llama-server on its machine (scripts/build-llama-server.sh) as a job; its progress
// and its error show here, beside the path field, and a finished build fills the path in.
import { useCallback, useEffect, useRef, useState } from "react";
import type { LlamaBuildJob } from "../../../../shared/llama-build";
import { api, errorText } from "../../api";
import { onEngineEvent } from "../../store";
import { Clip } from "./Clip";
import { newerJob } from "./format";
import { EngineText } from "../EngineText";

const secs = (ms: number) => `${Math.round(ms / 1000)} s`;

export function BuildLlama({ onBuilt }: { onBuilt: (path: string) => void }) {
  const [job, setJob] = useState<LlamaBuildJob | null>(null);
  const [error, setError] = useState<string | null>(null);
  const mine = useRef<string | null>(null);
  const filled = useRef<string | null>(null);
  const accept = useCallback(
    (j: LlamaBuildJob | null) => {
      if (!j || (mine.current && j.jobId !== mine.current)) return;
      setJob((prev) => newerJob(prev, j));
      if (j.state === "done" && j.path && filled.current !== j.jobId && mine.current === j.jobId) {
        filled.current = j.jobId;
        onBuilt(j.path);
      }
    },
    [onBuilt],
  );
  useEffect(() => {
    // A build already running (another tab, before a reload) shows here too. This read can be answered after a click
    // here started a build and its end was shown (a CI run under load): it then says nothing new, and is not taken.
    void api.setup.buildJob.query().then(
      (j) => {
        if (j?.state === "running" && !mine.current) {
          mine.current = j.jobId;
          accept(j);
        }
      },
      () => undefined,
    );
    return onEngineEvent((e) => {
      if (e.type === "llama-build") accept(e.job);
    });
  }, [accept]);
  const start = async () => {
    setError(null);
    try {
      const j = await api.setup.buildLlama.mutate();
      mine.current = j.jobId;
      accept(j);
      // it may have ended before this answer came back: read it once more
      accept(await api.setup.buildJob.query({ jobId: j.jobId }));
    } catch (err) {
      setError(errorText(err));
    }
  };
  const running = job?.state === "running";
  const pct = job?.progress ? Math.floor((job.progress.done / Math.max(1, job.progress.total)) * 100) : null;
  return (
    <div className="build-llama" role="group" aria-label="Build llama-server">
      <div className="build-llama-bar">
        <button type="button" className="btn small" disabled={running} onClick={() => void start()}>
          {running ? "Building…" : "Build one"}
        </button>
        {running && (
          <button
            type="button"
            className="btn small"
            onClick={() => void api.setup.buildCancel.mutate({ jobId: job.jobId }).then(accept, (e) => setError(errorText(e)))}
          >
            Cancel the build
          </button>
        )}
        <span className="small muted">
          on the engine's machine from llama.cpp's source ({job?.variant === "cuda" ? "CUDA" : "CPU, or CUDA where nvcc is"}); minutes to an hour
        </span>
      </div>
      {error && (
        <p className="field-error" role="alert" aria-label="Build status">
          The engine did not start the build: <Clip text={error} max={300} engine />
        </p>
      )}
      {job && (
        <div className="build-llama-job">
          {running && (
            <p className="small" role="status" aria-label="Build status">
              <span className="chip chip-busy">building</span> {pct !== null ? `${pct} % (${job.progress!.done} of ${job.progress!.total} steps)` : "preparing"}{" "}
              · {secs(Date.now() - job.startedAt)}
            </p>
          )}
          {running && <progress aria-label="Build progress" value={job.progress?.done} max={job.progress?.total} style={{ width: "100%" }} />}
          {job.state === "done" && (
            <p className="small" role="status" aria-label="Build status">
              <span className="chip chip-ok">built</span> <code className="mono">{job.path}</code> in {secs(job.ms ?? 0)}: filled in above.
            </p>
          )}
          {job.state === "cancelled" && (
            <p className="small" role="status" aria-label="Build status">
              <span className="chip chip-idle">cancelled</span> the build was stopped.
            </p>
          )}
          {job.state === "failed" && job.failure && (
            <div className="field-error" role="alert" aria-label="Build status">
              <strong>The build failed:</strong> <Clip text={job.failure.cause} max={400} />
              <div className="remedy">
                What to do: <EngineText text={job.failure.remedy} />
              </div>
            </div>
          )}
          {job.lines.length > 0 && (
            <details open={job.state === "failed"}>
              <summary className="small">The build's last lines</summary>
              <pre className="mono small build-log" aria-label="Build log">
                {job.lines.slice(-40).join("\n")}
              </pre>
            </details>
          )}
        </div>
      )}
    </div>
  );
}
