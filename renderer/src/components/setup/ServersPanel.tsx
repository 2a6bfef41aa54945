// The model servers the engine started (serving.json): whether each runs, and stop / restart / delete, and whether it
// stops with the engine (`ocw stop`, the default) or is kept running. Each action's progress and failure show on its row.
import { useCallback, useEffect, useState } from "react";
import type { ServerView } from "../../../../shared/servers";
import { api, errorText } from "../../api";
import { inOrder } from "../../reads";
import { onEngineEvent, useStore } from "../../store";
import { EngineText } from "../EngineText";

type Busy = { id: string; what: "stop" | "restart" | "delete" | "keep" } | null;

const DOING: Record<NonNullable<Busy>["what"], string> = {
  stop: "Stopping…",
  restart: "Restarting (loading the model again)…",
  delete: "Stopping and forgetting…",
  keep: "Saving…",
};

export function ServersPanel() {
  const [servers, setServers] = useState<ServerView[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [busy, setBusy] = useState<Busy>(null);
  const [rowError, setRowError] = useState<{ id: string; text: string } | null>(null);
  const [confirmDelete, setConfirmDelete] = useState<string | null>(null);
  /** The checkbox follows the click at once; the list read after the engine answered confirms it. */
  const [keepShown, setKeepShown] = useState<Record<string, boolean>>({});

  // Read again on each target change, start's end and action: the newest answer stands.
  const [read] = useState(inOrder);
  const load = useCallback(
    () =>
      read(
        api.servers.list.query(),
        (s) => (setServers(s), setLoadError(null)),
        (err) => setLoadError(errorText(err)),
      ),
    [read],
  );
  // a target saved or deleted (its server deleted with it) changes the list: read it again then
  const targets = useStore((s) => s.targets);
  useEffect(() => {
    void load();
  }, [targets, load]);
  useEffect(() => {
    // a model start that ends adds (or replaces) a server: read the list again then, not on a timer
    return onEngineEvent((e) => {
      if (e.type === "setup" && e.job.state !== "running") void load();
    });
  }, [load]);

  const act = (id: string, what: NonNullable<Busy>["what"], call: () => Promise<unknown>) => {
    setBusy({ id, what });
    setRowError(null);
    setConfirmDelete(null);
    void call()
      .catch((err) => setRowError({ id, text: errorText(err) }))
      .finally(() => {
        setBusy(null);
        // the shown checkbox state holds until the list read back replaces it
        void load().then(() => setKeepShown({}));
      });
  };

  // one row per target (a pool's replicas together)
  const groups = new Map<string, ServerView[]>();
  for (const s of servers ?? []) groups.set(s.replicaOf ?? s.targetId, [...(groups.get(s.replicaOf ?? s.targetId) ?? []), s]);

  return (
    <section className="panel" aria-label="Model servers">
      <h2>Model servers the engine started</h2>
      <p className="small muted">
        They stop with the engine (<code className="mono">ocw stop</code>) unless you keep them running. Servers you started yourself are not listed: stop those
        where you started them.
      </p>
      {loadError && (
        <div className="field-error" role="alert">
          Cannot list the servers: <EngineText text={loadError} />
        </div>
      )}
      {/* A line held while the list is read: the "None" line (or the list) takes its place without pushing what is below. */}
      {!servers && !loadError && <p className="muted small">Reading the list…</p>}
      {servers && groups.size === 0 && <p className="muted small">None: "Start … here" above runs one.</p>}
      {groups.size > 0 && (
        <ul aria-label="Servers" style={{ listStyle: "none", padding: 0, margin: 0 }}>
          {[...groups].map(([id, reps]) => {
            const running = reps.filter((r) => r.running).length;
            const keep = keepShown[id] ?? reps.every((r) => r.keep);
            const mine = busy?.id === id;
            return (
              <li
                key={id}
                aria-label={`Server ${id}`}
                style={{
                  display: "flex",
                  flexWrap: "wrap",
                  gap: "6px 16px",
                  alignItems: "center",
                  padding: "8px 0",
                  borderTop: "1px solid var(--border, #e5e7eb)",
                }}
              >
                <strong className="mono">{id}</strong>
                <span>
                  <span className={`chip chip-${running === reps.length ? "ok" : running ? "warn" : "idle"}`}>
                    {running === reps.length ? "running" : running ? `${running} of ${reps.length} running` : "stopped"}
                  </span>
                  {reps.some((r) => r.supervised) && <span className="small muted"> supervised</span>}
                </span>
                <span className="mono small">{reps.map((r) => `127.0.0.1:${r.port}${r.running ? ` pid ${r.pid}` : ""}`).join(", ")}</span>
                <label className="small" style={{ display: "inline-flex", gap: 4, alignItems: "center", whiteSpace: "nowrap" }}>
                  <input
                    type="checkbox"
                    checked={keep}
                    disabled={!!busy}
                    onChange={(e) => {
                      const on = e.target.checked;
                      setKeepShown({ ...keepShown, [id]: on });
                      act(id, "keep", () => api.servers.keep.mutate({ id, keep: on }));
                    }}
                  />
                  keep running after <code className="mono">ocw stop</code>
                </label>
                <span style={{ display: "inline-flex", flexWrap: "wrap", gap: 6, alignItems: "center" }}>
                  {running > 0 ? (
                    <button type="button" className="btn small" disabled={!!busy} onClick={() => act(id, "stop", () => api.servers.stop.mutate({ id }))}>
                      Stop
                    </button>
                  ) : null}{" "}
                  <button type="button" className="btn small" disabled={!!busy} onClick={() => act(id, "restart", () => api.servers.restart.mutate({ id }))}>
                    {running ? "Restart" : "Start again"}
                  </button>{" "}
                  {confirmDelete === id ? (
                    <span
                      className="confirm-inline"
                      role="group"
                      aria-label={`Confirm deleting server ${id}`}
                      style={{ display: "inline-flex", flexWrap: "wrap", gap: 6, alignItems: "center" }}
                    >
                      <span className="small">Stop it and forget it? Its target stays (unreachable).</span>
                      <button type="button" className="btn small bad" onClick={() => act(id, "delete", () => api.servers.delete.mutate({ id }))}>
                        Delete
                      </button>{" "}
                      <button type="button" className="btn small" autoFocus onClick={() => setConfirmDelete(null)}>
                        Cancel
                      </button>
                    </span>
                  ) : (
                    <button type="button" className="btn small ghost" disabled={!!busy} aria-label={`Delete server ${id}`} onClick={() => setConfirmDelete(id)}>
                      Delete…
                    </button>
                  )}
                </span>
                {mine && (
                  <div className="small" role="status" style={{ flexBasis: "100%" }}>
                    {DOING[busy!.what]}
                  </div>
                )}
                {rowError?.id === id && (
                  <div className="field-error" role="alert" style={{ flexBasis: "100%" }}>
                    <EngineText text={rowError.text} />
                  </div>
                )}
              </li>
            );
          })}
        </ul>
      )}
    </section>
  );
}
