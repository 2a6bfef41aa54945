// Static checks of the Electron shell's security settings and of the UI's Content-Security-Policy, read from the
// sources and the built renderer (no browser needed; these run everywhere, binary or not).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";

const ROOT = path.resolve(__dirname, "..");
const read = (p: string) => readFileSync(path.join(ROOT, p), "utf8");

function files(dir: string, ext = /\.(ts|tsx|mts|cts)$/): string[] {
  const abs = path.join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs).flatMap((name) => {
    const p = path.join(abs, name);
    if (statSync(p).isDirectory()) return files(path.join(dir, name), ext);
    return ext.test(name) ? [path.join(dir, name)] : [];
  });
}

function cspOf(source: string): string {
  const m = /CSP\s*=\s*\n?\s*"([^"]+)"/.exec(source);
  if (!m) throw new Error("no CSP constant found");
  return m[1]!;
}

function directives(csp: string): Map<string, string[]> {
  return new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map((d) => [d[0]!, d.slice(1)]));
}

test("BrowserWindow: contextIsolation, sandbox, no Node integration, web security on, no webview", () => {
  const main = read("electron/main.ts");
  const prefs = /webPreferences:\s*\{([\s\S]*?)\n\s{4}\}/.exec(main)?.[1] ?? "";
  expect(prefs).toMatch(/contextIsolation:\s*true/);
  expect(prefs).toMatch(/sandbox:\s*true/);
  expect(prefs).toMatch(/nodeIntegration:\s*false/);
  expect(prefs).toMatch(/nodeIntegrationInSubFrames:\s*false/);
  expect(prefs).toMatch(/webviewTag:\s*false/);
  expect(prefs).not.toMatch(/webSecurity:\s*false/);
  expect(prefs).not.toMatch(/allowRunningInsecureContent:\s*true/);
  expect(prefs).not.toMatch(/enableRemoteModule|experimentalFeatures:\s*true/);
  expect(main.match(/new BrowserWindow\(/g)).toHaveLength(1);
});

test("navigation and new windows are blocked; IPC answers only the engine's own origin; single instance", () => {
  const main = read("electron/main.ts");
  expect(main).toMatch(/on\("will-navigate",[\s\S]{0,120}preventDefault\(\)/);
  expect(main).toMatch(/on\("will-redirect",[\s\S]{0,120}preventDefault\(\)/);
  expect(main).toMatch(/setWindowOpenHandler\([\s\S]{0,200}action:\s*"deny"/);
  expect(main).toMatch(/will-attach-webview[\s\S]{0,40}preventDefault/);
  expect(main).toMatch(/requestSingleInstanceLock\(\)/);
  expect(main).toMatch(/setPermissionRequestHandler/);
  const handlers = [...main.matchAll(/ipcMain\.(?:on|handle)\("([^"]+)"/g)].map((m) => m[1]);
  const guarded = [...main.matchAll(/ipcMain\.(?:on|handle)\("([^"]+)",\s*(?:async\s*)?\(e\)\s*=>\s*\{\s*if \(!isOurs\(e\.senderFrame\?\.url\)/g)].map((m) => m[1]);
  expect(handlers.length).toBeGreaterThan(0);
  for (const h of handlers) expect(h).toMatch(/^ocw:/);
  expect(guarded).toEqual(handlers);
});

test("the preload exposes only the engine URL, the token and a directory picker", () => {
  const preload = read("electron/preload.ts");
  expect(preload.match(/exposeInMainWorld\(/g)).toHaveLength(1);
  const body = /exposeInMainWorld\("ocw",\s*\{([\s\S]*?)\n\}\);/.exec(preload)?.[1] ?? "";
  const keys = [...body.matchAll(/^\s{2}(\w+):/gm)].map((m) => m[1]).sort();
  expect(keys).toEqual(["engineUrl", "pickDirectory", "token"]);
  for (const m of preload.matchAll(/ipcRenderer\.(\w+)\(("[^"]*")?/g)) {
    expect(m[1]).toMatch(/^(invoke|sendSync)$/);
    expect(m[2]).toMatch(/^"ocw:/);
  }
});

test("only electron/ imports electron; the renderer takes nothing from engine/ at run time", () => {
  for (const f of [...files("renderer"), ...files("engine"), ...files("shared")]) {
    expect(read(f), f).not.toMatch(/from\s+["']electron["']|require\(["']electron["']\)/);
  }
  for (const f of files("renderer")) {
    for (const m of read(f).matchAll(/^import\s+(type\s+)?[^;]*?from\s+["']([^"']+)["']/gm)) {
      if (m[2]!.includes("/engine/")) expect(m[1], `${f} imports ${m[2]} at run time`).toBe("type ");
    }
  }
});

test("CSP: the same strict policy in the engine, the shell and the page; no inline scripts in the built UI", () => {
  const server = cspOf(read("engine/api/server.ts"));
  const shell = cspOf(read("electron/main.ts"));
  expect(shell).toBe(server);
  const d = directives(server);
  expect(d.get("default-src")).toEqual(["'self'"]);
  expect(d.get("script-src")).toEqual(["'self'"]);
  expect(d.get("connect-src")).toEqual(["'self'"]);
  expect(d.get("object-src")).toEqual(["'none'"]);
  expect(d.get("frame-ancestors")).toEqual(["'none'"]);
  for (const [name, values] of d) expect(values, name).not.toContain("*");

  const meta = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(read("renderer/index.html"))?.[1] ?? "";
  expect(directives(meta).get("script-src")).toEqual(["'self'"]);
  const built = path.join(ROOT, "out", "renderer", "index.html");
  expect(existsSync(built), "run the build (global setup does)").toBe(true);
  const html = readFileSync(built, "utf8");
  for (const tag of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
    expect(tag[1]).toMatch(/\bsrc="\.?\/assets\//);
    expect(tag[2]!.trim()).toBe("");
  }
  expect(html).not.toMatch(/\son[a-z]+="/i); // no inline event handlers
});

test("electron-builder config covers Linux, macOS and Windows", () => {
  const yml = read("electron-builder.yml");
  for (const os of ["linux:", "mac:", "win:"]) expect(yml).toContain(os);
  expect(yml).toMatch(/out\/\*\*/);
  expect(yml).toMatch(/dist\/\*\*/);
});
