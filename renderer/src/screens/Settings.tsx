import { useEffect, useState } from "react";
import { api } from "../api";
import { PolicyBuilder } from "../components/PolicyBuilder";
import { CopyField } from "../components/common";
import { ago } from "../format";
import { permission, playTone, requestPermission, setNotifySettings, useNotifySettings, type NotifySettings, type Permission } from "../notify";

export function Settings() {
  const [health, setHealth] = useState<Record<string, unknown> | null>(null);
  const [root, setRoot] = useState<string>(() => localStorage.getItem("ocw.root") ?? "");
  useEffect(() => {
    void api.health.query().then((h) => {
      const r = h as Record<string, unknown>;
      setHealth(r);
      if (typeof r.root === "string" && !localStorage.getItem("ocw.root")) setRoot(r.root);
    });
  }, []);
  const [clients, setClients] = useState<{ kind: string; name: string; lastSeen: number; requests: number }[]>([]);
  useEffect(() => {
    void api.clients.query().then(setClients);
  }, []);
  const abs = root.trim() || "/path/to/opencode-worker";
  const cmd = `claude mcp add opencode-worker -- node ${abs.replace(/\/+$/, "")}/dist/ocw.mjs mcp`;

  return (
    <div className="settings">
      <section className="panel" aria-label="Connect Claude Code">
        <h2>Connect Claude Code</h2>
        <p className="small">Claude Code delegates tasks to these workers through the MCP bridge. Run this once in a terminal:</p>
        <CopyField value={cmd} label="claude mcp add command" />
        <label className="field">
          <span>opencode-worker checkout (absolute path)</span>
          <input
            value={root}
            placeholder="/home/you/opencode-worker"
            spellCheck={false}
            onChange={(e) => {
              setRoot(e.target.value);
              localStorage.setItem("ocw.root", e.target.value);
            }}
          />
        </label>
        {typeof health?.root !== "string" && <p className="muted small">The engine does not report its install path yet: fill it in above.</p>}
        <h3>Clients of this engine</h3>
        <ul aria-label="Connected clients" className="small">
          {clients.length === 0 && <li className="muted">none yet</li>}
          {clients.map((c) => (
            <li key={`${c.kind}:${c.name}`}>
              <strong>{c.kind}</strong> {clientSeen(c)}
            </li>
          ))}
        </ul>
      </section>
      <Notifications />
      <section className="panel" aria-label="Approval policies">
        <h2>Approval policies</h2>
        <p className="small">
          Off by default: every permission ask waits for a person (or Claude). A rule answers asks of one tool (or <code>*</code>, any) whose command, path or
          URL matches its pattern; a rejecting rule wins over approving ones, otherwise the first matching rule answers, and its text is recorded as who
          decided. Kept in <code>policies.json</code> in the engine's state directory.
        </p>
        <PolicyBuilder />
      </section>
      <section className="panel" aria-label="Engine">
        <h2>Engine</h2>
        <dl className="kv">
          <dt>version</dt>
          <dd>{String(health?.version ?? "…")}</dd>
          <dt>pid</dt>
          <dd>{String(health?.pid ?? "…")}</dd>
          <dt>event cursor</dt>
          <dd className="mono">{String(health?.cursor ?? "…")}</dd>
        </dl>
      </section>
    </div>
  );
}

/** A client's name and when it was last heard from, written as times are elsewhere ("5s ago", "1 request"). */
export function clientSeen(c: { name: string; lastSeen: number; requests: number }, now = Date.now()): string {
  return `${c.name} — last request ${ago(c.lastSeen, now)} (${c.requests} request${c.requests === 1 ? "" : "s"})`;
}

const PERMISSION_TEXT: Record<Permission, string> = {
  granted: "allowed by this browser",
  denied: "blocked by this browser: allow notifications for this site in the browser's site settings, then reload",
  default: "not asked yet",
  unsupported: "this browser has no Notification API",
  desktop: "shown by the desktop app",
};

/** Desktop notifications for a new ask, a verdict and a stalled worker; a sound; the browser's permission prompt. */
function Notifications() {
  const s = useNotifySettings();
  const [perm, setPerm] = useState<Permission>(() => permission());
  const box = (key: keyof NotifySettings, label: string, disabled = false) => (
    <label className="opt">
      <input type="checkbox" checked={s[key]} disabled={disabled} onChange={(e) => setNotifySettings({ [key]: e.target.checked })} /> {label}
    </label>
  );
  return (
    <section className="panel" aria-label="Notifications">
      <h2>Notifications</h2>
      <p className="small">
        Permission:{" "}
        <strong role="status" aria-label="notification permission">
          {PERMISSION_TEXT[perm]}
        </strong>{" "}
        {perm === "default" && (
          <button
            type="button"
            className="btn small"
            onClick={() =>
              void requestPermission().then((p) => {
                setPerm(p);
                if (p === "granted") setNotifySettings({ enabled: true });
              })
            }
          >
            Allow notifications…
          </button>
        )}
      </p>
      <div className="field">
        {box("enabled", "Notify me", perm === "unsupported" || perm === "denied")}
        {box("asks", "when a worker asks for approval or asks a question", !s.enabled)}
        {box("verdicts", "when a worker is graded (built / failed)", !s.enabled)}
        {box("stalls", "when a running worker stalls", !s.enabled)}
        {box("whenFocused", "also while this window is in front", !s.enabled)}
        {box("sound", "play a sound", !s.enabled)}
        {s.sound && (
          <button type="button" className="btn small test-sound" onClick={() => playTone()}>
            Test sound
          </button>
        )}
      </div>
      <p className="muted small">The tab title shows the number of pending approvals. These settings are kept in this browser.</p>
    </section>
  );
}
