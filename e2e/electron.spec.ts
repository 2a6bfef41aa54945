// The Electron shell through Playwright's `_electron`, where an Electron binary exists. Without one (CI machines here:
// npm's electron package carries no binary and its download host is unreachable) the test reports itself skipped, with why.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { _electron as electron, expect, test } from "@playwright/test";
import { cleanup, tempDir } from "./engine";

const ROOT = path.resolve(__dirname, "..");

function electronBinary(): { path: string | null; reason: string } {
  const exe = process.platform === "darwin" ? "Electron.app/Contents/MacOS/Electron" : process.platform === "win32" ? "electron.exe" : "electron";
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  const dist = override ?? path.join(ROOT, "node_modules", "electron", "dist");
  const file = path.join(dist, exe);
  if (existsSync(file)) return { path: file, reason: "" };
  const pathTxt = path.join(ROOT, "node_modules", "electron", "path.txt");
  return {
    path: null,
    reason:
      `no Electron binary: ${file} does not exist` +
      (override
        ? " (from ELECTRON_OVERRIDE_DIST_PATH)"
        : existsSync(pathTxt)
          ? ""
          : " and node_modules/electron/path.txt is missing (the npm package ships no binary; its download is blocked here)") +
      ". Set ELECTRON_OVERRIDE_DIST_PATH to a folder holding an Electron 45 binary to run this test.",
  };
}

test("Electron shell: one hardened window on the engine's UI, preload exposes only the engine URL, token and a directory picker", async () => {
  const bin = electronBinary();
  test.skip(!bin.path, bin.reason);
  test.info().annotations.push({ type: "electron", description: bin.path! });
  const state = tempDir("electron-state");
  const app = await electron.launch({
    executablePath: bin.path!,
    args: [path.join(ROOT, "out", "main", "main.js"), "--no-sandbox"],
    env: { ...process.env, OCW_STATE_DIR: state, OCW_ROOT: ROOT } as Record<string, string>,
    timeout: 60_000,
  });
  try {
    const win = await app.firstWindow();
    await expect(win.getByRole("heading", { name: "Workers" })).toBeVisible({ timeout: 60_000 });
    expect(new URL(win.url()).hostname).toBe("127.0.0.1");
    const bridge = await win.evaluate("({ keys: Object.keys(window.ocw ?? {}).sort(), hasRequire: typeof require, hasProcess: typeof process })");
    expect(bridge).toEqual({ keys: ["engineUrl", "notify", "openWorker", "pickDirectory", "token"], hasRequire: "undefined", hasProcess: "undefined" });
    // opening a workspace takes a worker id, never a path: a path is refused before the engine is asked, an unknown id by the engine
    expect(await win.evaluate("window.ocw.openWorker('/etc', 'folder')")).toEqual({ ok: false, detail: "not a worker id" });
    expect(await win.evaluate("window.ocw.openWorker('w_nope', 'terminal')")).toMatchObject({ ok: false, detail: expect.stringMatching(/w_nope/) });
    const prefs = await app.evaluate(({ BrowserWindow }) => {
      const w = BrowserWindow.getAllWindows()[0]!;
      // Not in the public typings, but present in Electron's main process.
      const p = ((w.webContents as unknown as { getLastWebPreferences?: () => Record<string, unknown> }).getLastWebPreferences?.() ?? {}) as Record<
        string,
        unknown
      >;
      return { contextIsolation: p.contextIsolation, sandbox: p.sandbox, nodeIntegration: p.nodeIntegration, count: BrowserWindow.getAllWindows().length };
    });
    expect(prefs).toEqual({ contextIsolation: true, sandbox: true, nodeIntegration: false, count: 1 });
    // New windows are refused.
    await win.evaluate("window.open('https://example.com')");
    await win.waitForTimeout(500);
    expect(app.windows()).toHaveLength(1);
    await win.screenshot({ path: path.join(ROOT, "test-results", "screenshots", "electron-window.png") });
  } finally {
    await app.close();
    // The engine the shell started keeps running for other clients: stop it through its lock.
    try {
      const lock = JSON.parse(readFileSync(path.join(state, "engine.json"), "utf8")) as { pid: number };
      process.kill(lock.pid, "SIGTERM");
    } catch {
      /* not started */
    }
    cleanup(state);
  }
});
