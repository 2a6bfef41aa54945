import { useMemo } from "react";
import { isFinal, pendingAsks, type Worker } from "../../../shared/worker";
import { Empty, Sparkline, StateChip } from "../components/common";
import { duration, pct, taskTitle, useNow } from "../format";
import { href } from "../router";
import { sortedWorkers, useStore } from "../store";

export function Dashboard() {
  const workers = useStore((s) => s.workers);
  const status = useStore((s) => s.status);
  const serving = useStore((s) => s.serving);
  const list = useMemo(() => sortedWorkers(workers), [workers]);
  const groups = useMemo(() => {
    const m = new Map<string, Worker[]>();
    for (const w of list) {
      const k = w.batchId ?? "";
      if (!m.has(k)) m.set(k, []);
      m.get(k)!.push(w);
    }
    // Newest group first; single tasks last.
    return [...m.entries()].sort((a, b) => (a[0] === "" ? 1 : b[0] === "" ? -1 : b[1][0]!.createdAt - a[1][0]!.createdAt));
  }, [list]);
  const queued = list.filter((w) => w.state === "queued");

  return (
    <div className="dashboard">
      <section className="panel serving" aria-label="Serving">
        <h2>Serving</h2>
        {!status?.activeTarget && (
          <p className="muted">
            No active target. <a href={href({ name: "setup" })}>Set up a model</a> before starting workers.
          </p>
        )}
        <div className="slots-row">
          {(status?.slots ?? []).map((s) => {
            const srv = status?.serving.find((x) => x.targetId === s.targetId);
            const live = serving[s.targetId];
            const health = live?.status ?? (srv ? (srv.ready ? "ready" : "starting") : "idle");
            return (
              <div key={s.targetId} className="slot-card">
                <div className="slot-head">
                  <strong>{s.targetId}</strong>
                  <span className={`chip chip-${health === "ready" ? "ok" : health === "down" ? "bad" : health === "starting" ? "busy" : "idle"}`}>{health}</span>
                </div>
                <div className="slot-bar" role="meter" aria-label={`slots in use on ${s.targetId}`} aria-valuemin={0} aria-valuemax={s.slots} aria-valuenow={s.inUse}>
                  {Array.from({ length: s.slots }, (_, i) => (
                    <span key={i} className={i < s.inUse ? "on" : ""} />
                  ))}
                </div>
                <div className="muted small">
                  {s.inUse}/{s.slots} slots in use{s.queued ? ` · ${s.queued} queued` : ""}
                  {live?.message ? ` · ${live.message}` : ""}
                </div>
              </div>
            );
          })}
        </div>
      </section>

      {queued.length > 0 && (
        <section className="panel queue" aria-label="Queue">
          <h2>
            Queue <span className="muted">· waiting for a free slot</span>
          </h2>
          <ol className="queue-list">
            {queued.map((w) => (
              <li key={w.id}>
                <a href={href({ name: "worker", id: w.id })}>{w.id}</a> — {taskTitle(w.spec)}
              </li>
            ))}
          </ol>
        </section>
      )}

      {list.length === 0 && (
        <Empty title="No workers yet">
          <p>
            <a className="btn primary" href={href({ name: "new" })}>
              Start a task
            </a>
          </p>
        </Empty>
      )}

      {groups.map(([batchId, ws]) => (
        <BatchGroup key={batchId || "single"} batchId={batchId} workers={ws} />
      ))}
    </div>
  );
}

function BatchGroup({ batchId, workers }: { batchId: string; workers: Worker[] }) {
  const graded = workers.filter((w) => w.verdict);
  const built = graded.filter((w) => w.verdict!.verdict === "built").length;
  const honest = graded.filter((w) => w.verdict!.honest).length;
  const settled = workers.every((w) => isFinal(w.state));
  return (
    <section className="batch" aria-label={batchId ? `batch ${batchId}` : "single tasks"}>
      <header className="batch-head">
        <h2>{batchId ? `Batch ${batchId}` : "Single tasks"}</h2>
        <span className="muted small">
          {workers.length} worker{workers.length === 1 ? "" : "s"} · built {built}/{graded.length} ({pct(graded.length ? built / graded.length : null)}) · honest{" "}
          {pct(graded.length ? honest / graded.length : null)}
          {settled ? " · settled" : ""}
        </span>
      </header>
      <div className="cards">
        {workers.map((w) => (
          <WorkerCard key={w.id} w={w} />
        ))}
      </div>
    </section>
  );
}

function WorkerCard({ w }: { w: Worker }) {
  const now = useNow();
  const rate = useStore((s) => s.rates[w.id]);
  const pending = pendingAsks(w).length;
  const start = w.startedAt ?? w.createdAt;
  const elapsed = (w.endedAt ?? now) - start;
  return (
    <section className={`card worker-card tone-${w.state}`} aria-label={w.id}>
      <div className="card-top">
        <a className="card-title" href={href({ name: "worker", id: w.id })}>
          {taskTitle(w.spec)}
        </a>
        {pending > 0 && (
          <a className="badge warn" href={href({ name: "approvals" })} aria-label={`${pending} pending approval${pending === 1 ? "" : "s"}`}>
            {pending} ask{pending === 1 ? "" : "s"}
          </a>
        )}
      </div>
      <div className="card-meta">
        <StateChip state={w.state} />
        <span className="mono small muted">{w.id}</span>
        <span className="small" title={w.startedAt ? "elapsed" : "waiting for a slot"}>
          {w.startedAt ? "" : "waiting "}
          {duration(elapsed)}
        </span>
      </div>
      <div className="card-row">
        <span className="small">
          {w.currentTool ? (
            <>
              tool <code>{w.currentTool}</code>
            </>
          ) : (
            <span className="muted">{w.stalled ? "stalled" : (w.lastActivity?.summary ?? w.stateReason ?? "—")}</span>
          )}
        </span>
        <Sparkline values={rate ?? []} label={`tokens per second of ${w.id}`} />
      </div>
      {(w.verdict || w.toolFailures > 0 || w.stalled) && (
        <div className="card-foot small">
          {w.verdict && (
            <span className={`chip chip-${w.verdict.verdict === "built" ? "ok" : "bad"}`}>
              {w.verdict.verdict} · {w.verdict.checks.filter((c) => c.passed).length}/{w.verdict.checks.length} checks
            </span>
          )}
          {w.verdict && !w.verdict.honest && <span className="chip chip-bad">dishonest claim</span>}
          {w.toolFailures > 0 && <span className="chip chip-warn">{w.toolFailures} tool failures</span>}
          {w.stalled && <span className="chip chip-warn">stalled</span>}
        </div>
      )}
    </section>
  );
}
