// The thin desktop shell: one window on the engine's own UI, a tray with the pending-approval count, native
// notifications (the page decides what to notify, with the person's settings, and asks through the preload; this
// process notifies by itself only while no window is open), one instance, deep links to an ask (`ocw://ask/ID`,
// `--ask ID`). No business logic: the engine (a separate Node process) owns everything; this is one more client of it.
// What can be pure (counts, texts, links) lives in shared/desktop.ts and is unit-tested there.
import { existsSync } from "node:fs";
import path from "node:path";
import { app, BrowserWindow, dialog, ipcMain, Menu, nativeImage, Notification, session, shell, Tray, type MenuItemConstructorOptions } from "electron";
import { DEEP_LINK_SCHEME, deepLinkFromArgv, deepLinkHash, noteFor, PendingAsks, trayText, type DesktopNote } from "../shared/desktop";
import type { EngineEvent } from "../shared/events";
import { stateDir } from "../engine/api/launcher";
import { config } from "../engine/config";
import { desktopClient, ensureEngine, followEvents, type EngineInfo } from "./engine-link";
import { openWorker } from "./open-worker";

/** The Content-Security-Policy the engine serves the UI with; enforced here too in case a response lacks it. */
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

// A 16×16 diamond, so the tray works without shipping image files.
const TRAY_ICON =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAPElEQVR42mNgGNRAP/rVfxCmSDNZhqBrJskQXJqJMoSQZryGEKsZpyEUG0CxF6gSiFSJRqokJKokZboBAISJzb1rX7Q/AAAAAElFTkSuQmCC";

/** The checkout / install root: holds dist/ocw.mjs (the engine), protocol/ and packs/. */
function findRoot(): string {
  const configured = config().OCW_ROOT;
  if (configured) return configured;
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
const pending = new PendingAsks();
const stalled = new Set<string>();
const events = new AbortController();
/** A deep link that arrived before the window could take it (the first command line, macOS open-url at launch). */
let firstHash: string | null = deepLinkFromArgv(process.argv);

if (!app.requestSingleInstanceLock()) {
  // One instance: the running one gets this command line (and its deep link) through "second-instance".
  app.quit();
} else {
  app.on("second-instance", (_e, argv) => {
    const hash = deepLinkFromArgv(argv);
    if (!engine) {
      firstHash = hash ?? firstHash;
      return;
    }
    show(hash);
  });
  // macOS hands deep links as an event, also the one the app was launched with (before "ready").
  app.on("open-url", (e, url) => {
    e.preventDefault();
    const hash = deepLinkHash(url);
    if (!hash) return;
    if (!engine) firstHash = hash;
    else show(hash);
  });
  // ocw:// links open this app. Installers register the scheme too (electron-builder.yml `protocols`); a checkout run
  // (`electron .`) does not claim it, so a developer's machine keeps its own handler: pass `--ask ID` instead.
  if (app.isPackaged) app.setAsDefaultProtocolClient(DEEP_LINK_SCHEME);
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
  ipcMain.handle("ocw:notify", (e, n: unknown) => {
    if (!isOurs(e.senderFrame?.url)) return;
    const note = asNote(n);
    if (note) notify(note);
  });
  ipcMain.handle("ocw:pick-directory", async (e) => {
    if (!isOurs(e.senderFrame?.url) || !win) return null;
    const r = await dialog.showOpenDialog(win, { properties: ["openDirectory"], title: "Choose a git repository" });
    return r.canceled ? null : (r.filePaths[0] ?? null);
  });
  // A worker's workspace in the file manager, an editor or a terminal: the page names the worker, the engine gives the
  // folder (only ever one of its workspaces), this process opens it (electron/open-worker.ts).
  ipcMain.handle("ocw:open-worker", async (e, workerId: unknown, how: unknown) => {
    if (!isOurs(e.senderFrame?.url)) return { ok: false, detail: "refused" };
    return openWorker(desktopClient(engine!), workerId, how, (p) => shell.openPath(p), process.env, process.platform, path.join(stateDir(), "workspaces"));
  });
  Menu.setApplicationMenu(Menu.buildFromTemplate(menuTemplate()));
  createWindow();
  createTray();
  void seedPending();
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
  const hash = firstHash ?? "";
  firstHash = null;
  void win.loadURL(`${engine!.url}/${hash}`);
}

/** Brings the window forward (made again if it was closed), at `hash` when given (a hash route of the page). */
function show(hash: string | null): void {
  if (!win) {
    firstHash = hash;
    createWindow();
  }
  if (win!.isMinimized()) win!.restore();
  win!.show();
  win!.focus();
  if (hash && /^#\/[\w%./-]*$/.test(hash)) void win!.webContents.executeJavaScript(`location.hash = ${JSON.stringify(hash)}`).catch(() => undefined);
}

function createTray(): void {
  tray = new Tray(nativeImage.createFromDataURL(TRAY_ICON));
  tray.on("click", () => show("#/"));
  updateTray();
}

function updateTray(): void {
  if (!tray) return;
  const n = pending.count;
  const text = trayText(n);
  tray.setToolTip(text.tooltip);
  if (process.platform === "darwin") tray.setTitle(text.badge);
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: text.menuLabel, enabled: n > 0, click: () => show("#/approvals") },
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
    pending.seed(await desktopClient(engine!).approvals.list.query());
    updateTray();
  } catch {
    /* the event stream will catch up */
  }
}

/** What the page may ask to show: short plain strings, and a hash route of the page as the click's target. */
function asNote(n: unknown): DesktopNote | null {
  const o = n as Partial<DesktopNote> | null;
  if (!o || typeof o.title !== "string" || typeof o.body !== "string" || typeof o.hash !== "string") return null;
  if (!/^#\/[\w%./-]*$/.test(o.hash)) return null;
  const kind = o.kind === "verdict" || o.kind === "stalled" ? o.kind : "ask";
  return { kind, title: o.title.slice(0, 200), body: o.body.slice(0, 500), hash: o.hash };
}

function notify(n: DesktopNote): void {
  if (!Notification.isSupported()) return;
  const note = new Notification({ title: n.title, body: n.body, silent: false });
  note.on("click", () => show(n.hash));
  note.show();
}

function onEngineEvent(event: EngineEvent): void {
  if (pending.apply(event)) updateTray();
  if (event.type === "reset") {
    void seedPending();
    return;
  }
  if (!("workerId" in event)) return;
  // With a window open the page notifies (with the person's settings); without one, this process does.
  const was = stalled.has(event.workerId);
  if (event.type === "stalled") stalled.add(event.workerId);
  // As the worker picture does (shared/worker.ts): any output, or running again, ends a stall.
  if (event.type === "part" || (event.type === "worker.state" && event.state === "running")) stalled.delete(event.workerId);
  if (win) return;
  const note = noteFor(event, { title: event.workerId, wasStalled: was });
  if (note) notify(note);
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
