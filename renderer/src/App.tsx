import { useEffect } from "react";
import { CountBadge } from "./components/common";
import { href, useRoute, type Route } from "./router";
import { Approvals } from "./screens/Approvals";
import { Dashboard } from "./screens/Dashboard";
import { Grades } from "./screens/Grades";
import { NewTask } from "./screens/NewTask";
import { Settings } from "./screens/Settings";
import { Setup } from "./screens/Setup";
import { WorkerDetail } from "./screens/WorkerDetail";
import { dismissNotice, usePending, useStore } from "./store";

const NAV: { route: Route; label: string }[] = [
  { route: { name: "dashboard" }, label: "Dashboard" },
  { route: { name: "new" }, label: "New task" },
  { route: { name: "approvals" }, label: "Approvals" },
  { route: { name: "setup" }, label: "Setup" },
  { route: { name: "grades" }, label: "Grades" },
  { route: { name: "settings" }, label: "Settings" },
];

export function App() {
  const route = useRoute();
  const pending = usePending();
  const connection = useStore((s) => s.connection);
  const connectionError = useStore((s) => s.connectionError);
  const status = useStore((s) => s.status);
  const notices = useStore((s) => s.notices);

  useEffect(() => {
    document.title = pending.length ? `(${pending.length}) opencode-worker` : "opencode-worker";
  }, [pending.length]);

  const active = route.name === "worker" ? "dashboard" : route.name;
  return (
    <div className="shell">
      <nav className="side" aria-label="Main">
        <div className="brand">
          <span className="logo" aria-hidden="true">◆</span> opencode-worker
        </div>
        <ul>
          {NAV.map((n) => (
            <li key={n.label}>
              <a href={href(n.route)} aria-current={active === n.route.name ? "page" : undefined} className={active === n.route.name ? "active" : ""}>
                {n.label}
                {n.route.name === "approvals" && <CountBadge count={pending.length} label="pending approvals" />}
              </a>
            </li>
          ))}
        </ul>
        <div className="side-foot">
          <div className={`conn conn-${connection}`} role="status" aria-label={`engine connection: ${connection}`}>
            <span className="dot" aria-hidden="true" /> {connection === "live" ? "engine live" : connection}
          </div>
          {connectionError && connection !== "live" && <div className="conn-error">{connectionError}</div>}
          <div className="target-line" title="active target">
            {status?.activeTarget ? `${status.activeTarget.model} · ${status.activeTarget.serving.slots} slots` : "no active target"}
          </div>
        </div>
      </nav>
      <div className="main">
        <header className="top">
          <h1>{titleOf(route)}</h1>
          <div className="top-right">
            <a className={`pending-pill ${pending.length ? "has" : ""}`} href={href({ name: "approvals" })} aria-label={`${pending.length} pending approvals`}>
              {pending.length} pending
            </a>
          </div>
        </header>
        <main className="content">
          {route.name === "dashboard" && <Dashboard />}
          {route.name === "new" && <NewTask />}
          {route.name === "approvals" && <Approvals />}
          {route.name === "worker" && <WorkerDetail key={route.id} id={route.id} />}
          {route.name === "setup" && <Setup />}
          {route.name === "grades" && <Grades />}
          {route.name === "settings" && <Settings />}
        </main>
      </div>
      <div className="notices" aria-live="polite">
        {notices.map((n) => (
          <div key={n.id} className={`notice notice-${n.level}`}>
            <span>{n.message}</span>
            <button type="button" className="btn ghost small" aria-label="Dismiss" onClick={() => dismissNotice(n.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
    </div>
  );
}

function titleOf(r: Route): string {
  switch (r.name) {
    case "dashboard":
      return "Workers";
    case "new":
      return "New task";
    case "approvals":
      return "Approvals";
    case "worker":
      return `Worker ${r.id}`;
    case "setup":
      return "Model setup";
    case "grades":
      return "Grades";
    case "settings":
      return "Settings";
  }
}
