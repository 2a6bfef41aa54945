import { windowTitle } from "../../shared/desktop";
import { lazy, Suspense, useEffect, useRef, useState } from "react";
import { CountBadge } from "./components/common";
import { Shortcuts } from "./components/Shortcuts";
import { href, useRoute, type Route } from "./router";
import { Dashboard } from "./screens/Dashboard";
import { desktop } from "./desktop";
import { ago, counted, lostDetail, taskTitle, useNow } from "./format";
import { dismissNotice, usePending, useStore } from "./store";
import { applyTheme, readThemePref, THEME_PREFS, type ThemePref } from "./theme";
import { EngineText } from "./components/EngineText";

// The dashboard is in the app's first chunk; every other screen is a chunk of its own, so the first paint of the
// dashboard does not wait for the wizard, the transcript or the forms. They are fetched once the app is idle, so
// opening one later does not wait either.
const screens = {
  approvals: () => import("./screens/Approvals").then((m) => ({ default: m.Approvals })),
  grades: () => import("./screens/Grades").then((m) => ({ default: m.Grades })),
  new: () => import("./screens/NewTask").then((m) => ({ default: m.NewTask })),
  settings: () => import("./screens/Settings").then((m) => ({ default: m.Settings })),
  setup: () => import("./screens/Setup").then((m) => ({ default: m.Setup })),
  worker: () => import("./screens/WorkerDetail").then((m) => ({ default: m.WorkerDetail })),
  attempts: () => import("./screens/Attempts").then((m) => ({ default: m.Attempts })),
};
const Approvals = lazy(screens.approvals);
const Grades = lazy(screens.grades);
const NewTask = lazy(screens.new);
const Settings = lazy(screens.settings);
const Setup = lazy(screens.setup);
const WorkerDetail = lazy(screens.worker);
const Attempts = lazy(screens.attempts);

function prefetchScreens() {
  const idle = window.requestIdleCallback ?? ((f: () => void) => setTimeout(f, 200));
  setTimeout(() => idle(() => Object.values(screens).forEach((load) => void load().catch(() => undefined))), 1000);
}

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
  const unreachable = connection !== "live" && connection !== "connecting";
  const status = useStore((s) => s.status);
  const notices = useStore((s) => s.notices);
  // The page (and Electron window) title names the task being looked at.
  const subject = useStore((s) => {
    const w = route.name === "worker" ? s.workers[route.id] : undefined;
    return w ? taskTitle(w.spec) : null;
  });
  const [navOpen, setNavOpen] = useState(false);
  // A narrow window shows the navigation as a drawer: close it once a screen is picked.
  useEffect(() => setNavOpen(false), [route.name]);
  // Opened (by keyboard too), the drawer takes the focus, on its first link; Escape closes it and gives the focus back to
  // the Menu button. Without this the focus stayed behind the scrim and Tab walked the page under it.
  const menuRef = useRef<HTMLButtonElement>(null);
  // The notices stack over the bottom-right corner of the page (a worker page's "Send steer", a card's Retry): the page
  // gets that much more room at its end, and keyboard focus scrolls what it reaches above them, so nothing stays under.
  const noticesRef = useRef<HTMLDivElement>(null);
  const contentRef = useRef<HTMLElement>(null);
  useEffect(() => {
    const stack = noticesRef.current;
    const content = contentRef.current;
    if (!stack || !content || typeof ResizeObserver === "undefined") return;
    const fit = () => content.style.setProperty("--notice-room", `${stack.offsetHeight ? stack.offsetHeight + 14 : 0}px`);
    const seen = new ResizeObserver(fit);
    seen.observe(stack);
    fit();
    return () => seen.disconnect();
  }, []);
  const navRef = useRef<HTMLElement>(null);
  useEffect(() => {
    if (!navOpen) return;
    navRef.current?.querySelector<HTMLElement>("a[href]")?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      setNavOpen(false);
      menuRef.current?.focus();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [navOpen]);
  useEffect(prefetchScreens, []);

  useEffect(() => {
    // Electron's window title follows the page's.
    document.title = windowTitle(pending.length, subject);
  }, [pending.length, subject]);

  const active = route.name === "worker" || route.name === "attempts" ? "dashboard" : route.name;
  return (
    <div className={`shell ${navOpen ? "nav-open" : ""}`}>
      {navOpen && <div className="nav-scrim" onClick={() => setNavOpen(false)} aria-hidden="true" />}
      <nav className="side" id="main-nav" aria-label="Main" ref={navRef}>
        <div className="brand">
          <span className="logo" aria-hidden="true">
            ◆
          </span>{" "}
          opencode-worker
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
            {status?.activeTarget ? `${status.activeTarget.model} · ${counted(status.activeTarget.serving.slots, "slot")}` : "no active target"}
          </div>
        </div>
      </nav>
      <div className="main">
        <header className="top">
          <button
            ref={menuRef}
            type="button"
            className="btn ghost nav-toggle"
            aria-label="Menu"
            aria-expanded={navOpen}
            aria-controls="main-nav"
            onClick={() => setNavOpen(!navOpen)}
          >
            ☰
          </button>
          <h1>{titleOf(route)}</h1>
          <div className="top-right">
            <ThemeToggle />
            <button
              type="button"
              className="btn ghost small"
              aria-label="Keyboard shortcuts"
              title="Keyboard shortcuts (?)"
              onClick={() => window.dispatchEvent(new KeyboardEvent("keydown", { key: "?" }))}
            >
              ?
            </button>
            <a className={`pending-pill ${pending.length ? "has" : ""}`} href={href({ name: "approvals" })} aria-label={`${pending.length} pending approvals`}>
              {pending.length} pending
            </a>
          </div>
        </header>
        {unreachable && <EngineLost />}
        {status?.sandbox?.kind === "none" && <Unsandboxed sandbox={status.sandbox} />}
        <main className="content" ref={contentRef}>
          {/* While the engine is unreachable every control below is disabled (a disabled fieldset: buttons, inputs and
              the forms they submit), so no click is lost to a "Failed to fetch"; links still navigate. */}
          <fieldset className="freeze" disabled={unreachable} aria-disabled={unreachable || undefined}>
            <Suspense fallback={<div className="muted pad">Loading…</div>}>
              {route.name === "dashboard" && <Dashboard />}
              {route.name === "new" && <NewTask />}
              {route.name === "approvals" && <Approvals focus={route.ask} />}
              {route.name === "worker" && <WorkerDetail key={route.id} id={route.id} />}
              {route.name === "attempts" && <Attempts key={route.id} groupId={route.id} />}
              {route.name === "setup" && <Setup />}
              {route.name === "grades" && <Grades />}
              {route.name === "settings" && <Settings />}
            </Suspense>
          </fieldset>
        </main>
      </div>
      <Shortcuts />
      <div className="notices" aria-live="polite" ref={noticesRef}>
        {notices.map((n) => (
          <div key={n.id} className={`notice notice-${n.level}`}>
            {/* made safe by pushNotice (showUntrusted); the engine's code spans shown as code only where it said the words are its own */}
            <span>{n.engineWords ? <EngineText text={n.message} /> : n.message}</span>
            <button type="button" className="btn ghost small" aria-label="Dismiss notice" onClick={() => dismissNotice(n.id)}>
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
    case "attempts":
      return `Attempts ${r.id}`;
    case "setup":
      return "Model setup";
    case "grades":
      return "Grades";
    case "settings":
      return "Settings";
  }
}

/** The engine stopped answering: say so above every screen, with what to do; what is shown is the last known state. */
function EngineLost() {
  const now = useNow(true);
  const since = useStore((s) => s.offlineSince);
  const loss = useStore((s) => s.engineLoss);
  const error = useStore((s) => s.connectionError);
  return (
    <div className="engine-lost" role="alert" aria-label="Engine not reachable">
      <strong>{loss === "refused" ? "This tab's login no longer works." : "The engine is not reachable."}</strong> {since ? `Lost ${ago(since, now)}. ` : ""}
      Everything below is the last known state, not live: actions are disabled and timers paused until it answers.
      <div className="small">
        {loss === "refused"
          ? "A different engine now answers at this address (it was restarted with a new token). Open the URL that `ocw serve` printed."
          : desktop
            ? "Retrying every 3 s. A crashed engine is restarted by its supervisor; if it was stopped (`ocw stop`), start it again (`npm start` or `ocw serve`): it comes back on the same port and token and the app reconnects."
            : "Retrying every 3 s. A crashed engine is restarted by its supervisor; if it was stopped (`ocw stop`), start it again (`npm start` or `ocw serve`): it comes back on the same port and token and this tab reconnects (if that port was taken meanwhile, open the new URL it prints)."}
        {lostDetail(error) ? <span className="muted"> ({lostDetail(error)})</span> : null}
      </div>
    </div>
  );
}

/** The engine runs workers without the OS sandbox: say so on every screen, with what it means and how to change it. */
function Unsandboxed({ sandbox }: { sandbox: { kind: string; reason: string | null; optedOut: boolean } }) {
  return (
    <div className="unsandboxed" role="alert" aria-label="Workers are not sandboxed">
      <strong>Workers run unsandboxed.</strong>{" "}
      {sandbox.optedOut
        ? "The engine was started with --no-sandbox (or OCW_NO_SANDBOX=1): a worker, and every command you approve, can read your files and secrets and use the network."
        : "No OS sandbox was found, so the engine refuses to start workers."}
      {sandbox.reason ? <span className="muted"> ({sandbox.reason})</span> : null}
      <div className="small">
        {sandbox.optedOut
          ? "To contain them, install bubblewrap (Linux: apt install bubblewrap) and restart the engine without --no-sandbox."
          : "Install bubblewrap (Linux: apt install bubblewrap) and restart the engine, or restart it with --no-sandbox to run workers uncontained."}
      </div>
    </div>
  );
}

/** Light, dark or the system's theme; remembered in this browser (renderer/src/theme.ts). */
function ThemeToggle() {
  const [pref, setPref] = useState<ThemePref>(readThemePref);
  const names: Record<ThemePref, string> = { system: "System theme", light: "Light", dark: "Dark" };
  return (
    <select
      className="theme-select small"
      aria-label="Theme"
      title="Colour theme: the system's, light or dark"
      value={pref}
      onChange={(e) => {
        const p = e.target.value as ThemePref;
        applyTheme(p, true);
        setPref(p);
      }}
    >
      {THEME_PREFS.map((p) => (
        <option key={p} value={p}>
          {names[p]}
        </option>
      ))}
    </select>
  );
}
