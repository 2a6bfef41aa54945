// The Claude Code plugin's dashboard: a plugin user has no checkout (no out/renderer), so the plugin carries the
// browser UI itself (plugin/dist/ui: the renderer's production build, no source maps, from scripts/ui.mjs), the
// release path produces it, and an engine started from the plugin's bundle serves it at the URL `ocw gui --url` gives.
// No Electron binary is involved: the UI is built by vite and read by a plain HTTP client.
import { cpSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { generatedFiles, syncPlugin } from "../../scripts/plugin.mjs";
// @ts-expect-error: a plain .mjs script without types
import { readRelease, release } from "../../scripts/plugin-release.mjs";
import { cleanup, ROOT, startEngine, tempDir, type TestEngine } from "../helpers";

const dirs: string[] = [];
const engines: TestEngine[] = [];
afterAll(async () => {
  for (const e of engines) await e.kill();
  cleanup(...dirs);
});

/** What index.html loads: its scripts, module preloads and style sheets (relative: the page works under any base). */
const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="\.\/(assets\/[^"]+)"/g)].map((m) => m[1]!);

/** A copy of what a release touches (the marketplace manifest and plugin/, without installed modules), synced from this build. */
function releasedCopy(): string {
  const root = tempDir("plugin-ui");
  dirs.push(root);
  cpSync(path.join(ROOT, ".claude-plugin"), path.join(root, ".claude-plugin"), { recursive: true });
  cpSync(path.join(ROOT, "plugin"), path.join(root, "plugin"), { recursive: true, filter: (src) => !/node_modules|\.lock$/.test(path.relative(ROOT, src)) });
  // The generated files as `npm run plugin:release` writes them before recording the release (scripts/build.mjs → syncPlugin).
  syncPlugin(ROOT, path.join(root, "plugin"));
  return root;
}

describe("the plugin carries the browser UI", () => {
  it("the plugin's build holds dist/ui: index.html and every asset it loads, minified, no source maps, a few MB", () => {
    const files = generatedFiles(ROOT) as Map<string, string>;
    const ui = [...files.keys()].filter((f) => f.startsWith("dist/ui/"));
    expect(ui).toContain("dist/ui/index.html");
    const html = files.get("dist/ui/index.html")!;
    const assets = assetsOf(html);
    expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
    for (const a of assets) expect(ui, a).toContain(`dist/ui/${a}`);
    expect(ui.filter((f) => f.endsWith(".map"))).toEqual([]);
    for (const f of ui) expect(files.get(f), f).not.toContain("sourceMappingURL");
    // A production build: React's dev JSX runtime is not in it.
    expect(ui.filter((f) => files.get(f)!.includes("jsxDEV("))).toEqual([]);
    const bytes = ui.reduce((n, f) => n + Buffer.byteLength(files.get(f)!), 0);
    expect(bytes, `the UI is ${(bytes / 1e6).toFixed(1)} MB`).toBeGreaterThan(100_000);
    expect(bytes, `the UI is ${(bytes / 1e6).toFixed(1)} MB`).toBeLessThan(4_000_000);
  });

  it("`npm run plugin:release` rebuilds it first, and a release records its files", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    expect(pkg.scripts["plugin:release"]).toMatch(/^node scripts\/build\.mjs && node scripts\/plugin-release\.mjs$/);
    const root = releasedCopy();
    release(root, { today: "2026-12-05" });
    const recorded = Object.keys(readRelease(root).files);
    expect(recorded).toContain("dist/ui/index.html");
    for (const a of assetsOf(readFileSync(path.join(root, "plugin", "dist", "ui", "index.html"), "utf8"))) expect(recorded).toContain(`dist/ui/${a}`);
  });

  it("an engine started from the plugin's bundle serves the UI at its URL; without it, the page tells a plugin user what to do", async () => {
    const root = releasedCopy();
    const plugin = path.join(root, "plugin");
    const stateDir = tempDir("plugin-ui-state");
    dirs.push(stateDir);
    // No checkout anywhere above the copy; OCW_ROOT unset so the bundle finds its own root (plugin/).
    const engine = await startEngine(stateDir, { OCW_ROOT: undefined }, path.join(plugin, "dist", "ocw.mjs"));
    engines.push(engine);
    const page = await fetch(engine.url);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toBe(readFileSync(path.join(plugin, "dist", "ui", "index.html"), "utf8"));
    expect(html).toContain('<div id="root">');
    const base = new URL(engine.url).origin;
    for (const a of assetsOf(html)) {
      const r = await fetch(`${base}/${a}`);
      expect(r.status, a).toBe(200);
      expect(r.headers.get("content-type"), a).toMatch(a.endsWith(".css") ? /^text\/css/ : /^text\/javascript/);
      expect(await r.text(), a).toBe(readFileSync(path.join(plugin, "dist", "ui", a), "utf8"));
    }
    // The token in the URL is this engine's: the page's API calls go through with it.
    const token = new URL(engine.url).searchParams.get("token");
    expect((await fetch(`${base}/health`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);

    // A plugin copy without its UI (looked up on each page request): what to do, not "build the checkout".
    rmSync(path.join(plugin, "dist", "ui"), { recursive: true });
    const missing = await (await fetch(engine.url)).text();
    expect(missing).toContain("claude plugin update opencode-worker@opencode-worker");
    expect(missing).not.toMatch(/npm run build|checkout/);
  });
});
