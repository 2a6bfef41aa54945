// Static checks of the Electron shell's security settings and of the UI's Content-Security-Policy, read from the
// sources and the built renderer (no browser needed; these run everywhere, binary or not); and, in Chromium against a
// real `ocw serve`, that the browser keeps no credential another local server would receive.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { cleanup, startEngine } from "./engine";

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
  return new Map(
    csp
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map((d) => [d[0]!, d.slice(1)]),
  );
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
  const guarded = [
    ...main.matchAll(/ipcMain\.(?:on|handle)\("([^"]+)",\s*(?:async\s*)?\(e(?:,[^)]*)?\)\s*=>\s*\{\s*if \(!isOurs\(e\.senderFrame\?\.url\)/g),
  ].map((m) => m[1]);
  expect(handlers.length).toBeGreaterThan(0);
  for (const h of handlers) expect(h).toMatch(/^ocw:/);
  expect(guarded).toEqual(handlers);
});

test("the preload exposes only the engine URL, the token, a directory picker, a desktop notification and opening a worker's workspace by id", () => {
  const preload = read("electron/preload.ts");
  expect(preload.match(/exposeInMainWorld\(/g)).toHaveLength(1);
  const body = /exposeInMainWorld\("ocw",\s*\{([\s\S]*?)\n\}\);/.exec(preload)?.[1] ?? "";
  const keys = [...body.matchAll(/^\s{2}(\w+):/gm)].map((m) => m[1]).sort();
  expect(keys).toEqual(["engineUrl", "notify", "openWorker", "pickDirectory", "token"]);
  // a worker id and how to open it cross the bridge, never a path (the main process asks the engine for the folder)
  expect(/openWorker:\s*\(workerId: string, how: "folder" \| "editor" \| "terminal"\)/.test(body)).toBe(true);
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

test("one API client: electron/ re-implements no lock reading, engine start, event-stream parser or hand-typed call; the client launches nothing", () => {
  const client = read("engine/api/client.ts");
  expect(client).not.toMatch(/node:child_process|node:fs|\bspawn\(|import\.meta/);
  // One factory behind every client, the page's included: shared/api-client.ts, no Node module, the caller's kind required.
  const factory = read("shared/api-client.ts");
  expect(factory).not.toMatch(/from\s+["'](node:|\.\.\/engine)/);
  expect(factory).toMatch(/export function createEngineClient<R extends AnyTRPCRouter>\(address: EngineAddress, client: ClientKind\)/);
  expect(client).toMatch(/createEngineClient<AppRouter>\(/);
  expect(read("renderer/src/api.ts")).toMatch(/createEngineClient<AppRouter>\(\{ origin: "", token: takeToken\(\) \}, "gui"\)/);
  expect(read("renderer/src/api.ts")).not.toMatch(/createTRPCClient|httpBatchLink/);
  for (const f of ["electron/main.ts", "electron/engine-link.ts"]) {
    const src = read(f);
    expect(src, f).not.toMatch(/\bspawn\(|child_process|engine\.json|readFileSync|process\.kill\(/); // lock reading, liveness, start
    expect(src, f).not.toMatch(/text\/event-stream|getReader\(|\bfetch\(|\/trpc/); // an SSE parser, raw tRPC calls
  }
  expect(read("electron/engine-link.ts")).toMatch(/from "\.\.\/engine\/api\/client"/);
  expect(read("electron/engine-link.ts")).toMatch(/from "\.\.\/engine\/api\/launcher"/);
  // The CLI, the MCP bridge, the e2e harness and the bench use the same client.
  for (const f of ["engine/mcp/link.ts", "engine/commands/target-flags.ts", "e2e/engine.ts", "bench/gate.ts", "test/helpers.ts"]) {
    expect(read(f), f).toMatch(/import \{[^}]*\bconnect\b[^}]*\} from "[./]+\/engine\/api\/client"|import \{[^}]*\bconnect\b[^}]*\} from "\.\.\/api\/client"/);
  }
});

test("the browser keeps no credential: no cookie, the token leaves the address bar, another 127.0.0.1 port receives nothing of it", async ({ browser }) => {
  const engine = await startEngine();
  // A local server a worker could have started, on another port of the same host.
  const seen: { url: string; headers: http.IncomingHttpHeaders }[] = [];
  const other = http.createServer((req, res) => {
    seen.push({ url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>dev server</title><img src=/pixel.png>");
  });
  await new Promise<void>((r) => other.listen(0, "127.0.0.1", () => r()));
  const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  const context = await browser.newContext();
  try {
    const token = new URL(engine.url).searchParams.get("token")!;
    const page = await context.newPage();
    await page.goto(engine.url);
    await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
    expect(new URL(page.url()).search).toBe("");
    expect(page.url()).not.toContain(token);
    expect(await context.cookies()).toEqual([]);
    // A reload in the same tab stays signed in (the page keeps the token for its own origin only).
    await page.reload();
    await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
    // Visit the other server, as a link in a worker's output would: it must receive nothing that carries the token.
    await page.goto(`${otherUrl}/from-ui`);
    await expect.poll(() => seen.length).toBeGreaterThan(0);
    await page.waitForLoadState("networkidle");
    for (const r of seen) {
      expect(JSON.stringify(r.headers), r.url).not.toContain(token);
      expect(r.headers.cookie, r.url).toBeUndefined();
      expect(r.url).not.toContain(token);
    }
    // And the other server's own page cannot read the token: storage is per origin, port included.
    expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(token);
    // A fresh tab opened without the token is refused by the API with a message that says what to do.
    const bare = await context.newPage();
    await bare.goto(engine.origin + "/");
    await expect(bare.getByText(/ocw serve/).first()).toBeVisible();
  } finally {
    await context.close();
    await new Promise<void>((r) => other.close(() => r()));
    await engine.kill();
    cleanup(engine.stateDir);
  }
});
