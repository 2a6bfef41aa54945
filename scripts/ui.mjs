// The browser UI that ships next to the `ocw` bundle: dist/ui/ (index.html + assets). It is the renderer of
// electron.vite.config.ts (the same page the desktop app loads and `ocw serve` serves), built for production without
// source maps, so that an install with no checkout (the Claude Code plugin: plugin/dist/ui, copied by scripts/plugin.mjs)
// has a dashboard at the engine's URL. The engine finds it next to its own file when there is no checkout's
// out/renderer (engine/paths.ts browserUi).
//
// scripts/build.mjs calls buildUi after bundling. The build is skipped when its inputs (the renderer's sources, shared/,
// the vite config, the lockfile, this script) hash to what the last build recorded in dist/ui.inputs, so a rebuild of
// the bundle alone (the integration tests' setup) does not pay for it.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
/** What the page is built from (the page bundles nothing of engine/: e2e/security.spec.ts). */
const INPUTS = ["renderer", "shared", "electron.vite.config.ts", "package-lock.json", "scripts/ui.mjs"];

/** The files under `p` (or `p` itself), as [path relative to the root, absolute path]. */
function files(p, rel) {
  if (!existsSync(p)) return [];
  if (!statSync(p).isDirectory()) return [[rel, p]];
  return readdirSync(p, { withFileTypes: true }).flatMap((d) => (d.name === "node_modules" ? [] : files(path.join(p, d.name), `${rel}/${d.name}`)));
}

/** One hash over the UI build's inputs: their paths and contents. */
export function uiInputsHash(root = ROOT) {
  const h = createHash("sha256");
  const all = INPUTS.flatMap((i) => files(path.join(root, i), i)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [rel, p] of all) h.update(`${rel}\0`).update(readFileSync(p)).update("\0");
  return `sha256:${h.digest("hex")}`;
}

/**
 * Builds the browser UI into `outDir` (default dist/ui) unless the inputs are unchanged since the last build there.
 * Returns {built, outDir}.
 */
export async function buildUi(root = ROOT, { outDir = path.join(root, "dist", "ui"), force = false } = {}) {
  const stamp = `${outDir}.inputs`;
  const inputs = uiInputsHash(root);
  if (!force && existsSync(path.join(outDir, "index.html")) && existsSync(stamp) && readFileSync(stamp, "utf8").trim() === inputs)
    return { built: false, outDir };
  rmSync(stamp, { force: true });
  // electron-vite resolves the renderer's config exactly as `electron-vite build` does (base "./", its presets);
  // only where it goes and the source maps differ. Vite builds it; Electron's binary is not needed.
  process.env.NODE_ENV_ELECTRON_VITE = "production";
  const { resolveConfig } = await import("electron-vite");
  const { build } = await import("vite");
  const resolved = await resolveConfig({ configFile: path.join(root, "electron.vite.config.ts"), root, logLevel: "warn" }, "build", "production");
  const renderer = resolved.config?.renderer;
  if (!renderer) throw new Error("electron.vite.config.ts has no renderer config: the browser UI cannot be built");
  // The diff viewer's chunk (~1 MB, loaded only when a diff shows) is over vite's 500 kB warning: known, not news.
  renderer.build = { ...renderer.build, outDir, emptyOutDir: true, sourcemap: false, reportCompressedSize: false, chunkSizeWarningLimit: 1500 };
  await build(renderer);
  if (!existsSync(path.join(outDir, "index.html"))) throw new Error(`the UI build wrote no ${path.join(outDir, "index.html")}`);
  writeFileSync(stamp, `${inputs}\n`);
  return { built: true, outDir };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await buildUi(ROOT, { force: process.argv.includes("--force") });
  console.error(r.built ? `ui: built ${path.relative(ROOT, r.outDir)}` : `ui: ${path.relative(ROOT, r.outDir)} is up to date`);
}
