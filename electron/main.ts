// The thin desktop shell: one window on the engine's own UI, a tray with the pending-approval count, notifications.
// No business logic: the engine (a separate Node process) owns everything; this is one more client of it.
import { existsSync } from "node:fs";
import path from "node:path";
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, session, shell, Tray, type MenuItemConstructorOptions } from "electron";
import type { EngineEvent } from "../shared/events";
import { stateDir } from "../engine/store/paths";
import { desktopClient, ensureEngine, followEvents, type EngineInfo } from "./engine-link";

/** The Content-Security-Policy the engine serves the UI with; enforced here too in case a response lacks it. */
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

// A 16×16 diamond, so the tray works without shipping image files.
const TRAY_ICON =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAPElEQVR42mNgGNRAP/rVfxCmSDNZhqBrJskQXJqJMoSQZryGEKsZpyEUG0CxF6gSiFSJRqokJKokZboBAISJzb1rX7Q/AAAAAElFTkSuQmCC";

/** The checkout / install root: holds dist/ocw.mjs (the engine), protocol/ and packs/. */
function findRoot(): string {
  if (process.env.OCW_ROOT) return process.env.OCW_ROOT;
  if (app.isPackaged) return path.join(process.resourcesPath, "app");
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    if (existsSync(path.join(dir, "package.json")) && existsSync(path.join(dir, "protocol"))) return dir;
    dir = path.dirname(dir);
  }
  return app.getAppPath();
}
const root = findRoot();
let win: BrowserWindow | null = null;
let tray: Tray | null = null;
let engine: EngineInfo | null = null;
const pending = new Map<string, { workerId: string; what: string }>();
const events = new AbortController();

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on("second-instance", () => {
    if (!win) return;
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  });
  app.whenReady().then(start, (err) => fail(err));
}

function fail(err: unknown): void {
  dialog.showErrorBox("opencode-worker", `Could not start or reach the engine.\n\n${(err as Error)?.message ?? err}`);
  app.quit();
}

async function start(): Promise<void> {
  hardenSessions();
  try {
    engine = await ensureEngine({ root, node: process.execPath, stateDir: stateDir(), env: { ELECTRON_RUN_AS_NODE: "1" } });
  } catch (err) {
    return fail(err);
  }
  ipcMain.on("ocw:engine", (e) => {
    if (!isOurs(e.senderFrame?.url)) return void (e.returnValue = null);
    e.returnValue = { engineUrl: engine!.url, token: engine!.token };
  });
  ipcMain.handle("ocw:pick-directory", async (e) => {
    if (!isOurs(e.senderFrame?.url) || !win) return null;
    const r = await dialog.showOpenDialog(win, { properties: ["openDirectory"], title: "Choose a git repository" });
    return r.canceled ? null : (r.filePaths[0] ?? null);
  });
  Menu.setApplicationMenu(Menu.buildFromTemplate(menuTemplate()));
  createWindow();
  createTray();
  void seedPending();
  void seedBatches();
  void followEvents(engine, onEngineEvent, events.signal);
  app.on("activate", () => (BrowserWindow.getAllWindows().length ? win?.show() : createWindow()));
}

function isOurs(url: string | undefined): boolean {
  if (!url || !engine) return false;
  try {
    return new URL(url).origin === new URL(engine.url).origin;
  } catch {
    return false;
  }
}

function hardenSessions(): void {
  const ses = session.defaultSession;
  ses.setPermissionRequestHandler((_wc, permission, cb) => cb(permission === "clipboard-sanitized-write"));
  ses.setPermissionCheckHandler((_wc, permission) => permission === "clipboard-sanitized-write");
  ses.webRequest.onHeadersReceived((details, cb) => {
    const headers = { ...details.responseHeaders };
    const has = Object.keys(headers).some((k) => k.toLowerCase() === "content-security-policy");
    if (!has && details.resourceType === "mainFrame") headers["Content-Security-Policy"] = [CSP];
    cb({ responseHeaders: headers });
  });
}

function createWindow(): void {
  win = new BrowserWindow({
    width: 1320,
    height: 860,
    minWidth: 860,
    minHeight: 560,
    title: "opencode-worker",
    show: false,
    backgroundColor: "#f5f6f8",
    webPreferences: {
      preload: path.join(__dirname, "../preload/preload.js"),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: true,
    },
  });
  const wc = win.webContents;
  // Navigation stays on the engine's origin; new windows never open (links to the web go to the browser).
  wc.on("will-navigate", (e, url) => {
    if (!isOurs(url)) e.preventDefault();
  });
  wc.on("will-redirect", (e, url) => {
    if (!isOurs(url)) e.preventDefault();
  });
  wc.setWindowOpenHandler(({ url }) => {
    if (/^https:\/\//.test(url)) void shell.openExternal(url);
    return { action: "deny" };
  });
  wc.on("will-attach-webview", (e) => e.preventDefault());
  win.once("ready-to-show", () => win?.show());
  win.on("closed", () => (win = null));
  // The page takes the token from the preload (never a cookie, never in the address bar).
  void win.loadURL(`${engine!.url}/`);
}

function show(hash: string): void {
  if (!win) createWindow();
  win!.show();
  win!.focus();
  void win!.webContents.executeJavaScript(`location.hash = ${JSON.stringify(hash)}`).catch(() => undefined);
}

function createTray(): void {
  tray = new Tray(nativeImage.createFromDataURL(TRAY_ICON));
  tray.on("click", () => show("#/"));
  updateTray();
}

function updateTray(): void {
  if (!tray) return;
  const n = pending.size;
  tray.setToolTip(n ? `opencode-worker — ${n} pending approval${n === 1 ? "" : "s"}` : "opencode-worker");
  if (process.platform === "darwin") tray.setTitle(n ? String(n) : "");
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: `${n} pending approval${n === 1 ? "" : "s"}`, click: () => show("#/approvals") },
      { type: "separator" },
      { label: "Dashboard", click: () => show("#/") },
      { label: "New task", click: () => show("#/new") },
      { type: "separator" },
      { label: "Quit", role: "quit" },
    ]),
  );
  if (process.platform !== "win32") app.setBadgeCount?.(n);
}

async function seedPending(): Promise<void> {
  try {
    for (const a of await desktopClient(engine!).approvals.list.query()) pending.set(a.id, { workerId: a.workerId, what: a.what });
    updateTray();
  } catch {
    /* the event stream will catch up */
  }
}

function notify(title: string, body: string, hash: string): void {
  if (!Notification.isSupported()) return;
  const n = new Notification({ title, body, silent: false });
  n.on("click", () => show(hash));
  n.show();
}

const FINAL = new Set(["built", "honest-failure", "stopped", "interrupted", "error"]);
/** batchId → workerId → state, to tell when a whole batch has finished. */
const batches = new Map<string, Map<string, string>>();
const batchOf = new Map<string, string>();

async function seedBatches(): Promise<void> {
  try {
    for (const w of await desktopClient(engine!).workers.list.query()) if (w.batchId) track(w.batchId, w.id, w.state);
  } catch {
    /* notifications then cover single workers only */
  }
}

function track(batchId: string, workerId: string, state: string): void {
  if (!batches.has(batchId)) batches.set(batchId, new Map());
  batches.get(batchId)!.set(workerId, state);
  batchOf.set(workerId, batchId);
}

function onEngineEvent(event: EngineEvent): void {
  const e = event as Record<string, unknown>;
  const type = e.type;
  const workerId = String(e.workerId ?? "");
  if (type === "reset") {
    pending.clear();
    void seedPending();
    return;
  }
  if (type === "ask.opened") {
    const ask = e.ask as { id: string; workerId: string; what: string; tool: string };
    pending.set(ask.id, { workerId: ask.workerId, what: ask.what });
    updateTray();
    if (!win?.isFocused()) notify(`Approval waiting — ${ask.workerId}`, `${ask.tool}: ${ask.what}`.slice(0, 200), `#/approvals`);
    return;
  }
  if (type === "ask.resolved") {
    pending.delete(String(e.askId));
    updateTray();
    return;
  }
  if (type === "worker.created" && typeof e.batchId === "string") track(e.batchId, workerId, "queued");
  if (type === "worker.state") {
    const batchId = batchOf.get(workerId);
    if (batchId) track(batchId, workerId, String(e.state));
    if (!FINAL.has(String(e.state))) return;
    for (const [id, a] of pending) if (a.workerId === workerId) pending.delete(id);
    updateTray();
    if (win?.isFocused()) return;
    const states = batchId ? [...batches.get(batchId)!.values()] : [];
    if (batchId && states.every((s) => FINAL.has(s))) {
      const built = states.filter((s) => s === "built").length;
      notify(`Batch ${batchId} finished`, `${built}/${states.length} built`, "#/");
    } else notify(`Worker ${workerId}: ${e.state}`, String(e.reason ?? ""), `#/workers/${encodeURIComponent(workerId)}`);
  }
}

function menuTemplate(): MenuItemConstructorOptions[] {
  const mac = process.platform === "darwin";
  const go = (label: string, accelerator: string, hash: string): MenuItemConstructorOptions => ({ label, accelerator, click: () => show(hash) });
  return [
    ...(mac ? [{ role: "appMenu" as const }] : []),
    {
      label: "File",
      submenu: [go("New Task", "CmdOrCtrl+N", "#/new"), { type: "separator" }, mac ? { role: "close" } : { role: "quit" }],
    },
    { role: "editMenu" },
    {
      label: "Go",
      submenu: [
        go("Dashboard", "CmdOrCtrl+1", "#/"),
        go("Approvals", "CmdOrCtrl+2", "#/approvals"),
        go("New Task", "CmdOrCtrl+3", "#/new"),
        go("Setup", "CmdOrCtrl+4", "#/setup"),
        go("Grades", "CmdOrCtrl+5", "#/grades"),
        go("Settings", "CmdOrCtrl+,", "#/settings"),
      ],
    },
    { role: "viewMenu" },
    { role: "windowMenu" },
    {
      role: "help",
      submenu: [{ label: "Project README", click: () => void shell.openPath(path.join(root, "README.md")) }],
    },
  ];
}

app.on("window-all-closed", () => {
  // The engine keeps running (other clients, Claude Code, may use it); on macOS the app stays in the dock.
  if (process.platform !== "darwin") {
    events.abort();
    app.quit();
  }
});
