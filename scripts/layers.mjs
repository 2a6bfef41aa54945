// The layering rule, enforced in `npm test`: code lives where it may run, and each layer imports only the layers
// below it. The import graph comes from esbuild's own resolution (its metafile), so it is exactly what gets bundled;
// type-only imports are erased and do not count (the renderer may use the API's types).
//
//   shared ← platform ← core ← api ← clients (cli, mcp)
//                                  ↖ apps (electron: shared, platform, api; renderer: shared + the pure API client)
import { build } from "esbuild";
import { readdirSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";

const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));

/** Where each file belongs; the first matching prefix wins. */
const LAYERS = [
  ["shared/", "shared", 0],
  ["engine/paths.ts", "platform", 1],
  ["engine/events.ts", "platform", 1],
  ["engine/config.ts", "platform", 1],
  ["engine/store/", "platform", 1],
  ["engine/sandbox/", "platform", 1],
  ["engine/gateway/", "platform", 1],
  ["engine/net/", "platform", 1],
  ["engine/process/", "platform", 1],
  ["engine/hardware/", "platform", 1],
  ["engine/models/", "core", 2],
  ["engine/serving/", "core", 2],
  ["engine/harness/", "core", 2],
  ["engine/workspace/", "core", 2],
  ["engine/grading/", "core", 2],
  ["engine/approvals/", "core", 2],
  ["engine/admission/", "core", 2],
  ["engine/workers/", "core", 2],
  ["engine/budgets/", "core", 2],
  ["engine/recovery/", "core", 2],
  ["engine/api/", "api", 3],
  ["engine/mcp/", "clients", 4],
  ["engine/commands/", "clients", 4],
  ["engine/cli.ts", "clients", 4],
  ["electron/", "electron", 5],
  ["renderer/", "renderer", 5],
];
/** What each app may import besides shared/ (apps sit beside the clients, not above them). */
const APP_ALLOW = {
  electron: ["engine/api/client.ts", "engine/api/launcher.ts", "engine/api/lock.ts", "engine/store/paths.ts"],
  renderer: ["engine/api/client.ts"],
};

const layerOf = (f) => LAYERS.find(([p]) => f === p || f.startsWith(p)) ?? null;
const folderOf = (f) => (f.startsWith("engine/") && f.split("/").length > 2 ? f.split("/").slice(0, 2).join("/") : f);
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

function sources(dir) {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return f === "node_modules" ? [] : sources(p);
    return /\.(ts|tsx)$/.test(f) && !/\.(test|spec)\.tsx?$|\.d\.ts$/.test(f) ? [p] : [];
  });
}

export async function checkLayers() {
  const entries = ["shared", "engine", "renderer/src", "electron"].flatMap((d) => sources(path.join(root, d)));
  const r = await build({
    entryPoints: entries, bundle: true, write: false, metafile: true, packages: "external", platform: "node", format: "esm",
    outdir: path.join(root, "node_modules/.cache/ocw-layers"), logLevel: "silent", absWorkingDir: root,
    loader: { ".css": "empty", ".svg": "empty", ".png": "empty", ".woff2": "empty" },
  });
  const problems = [];
  const folderEdges = new Map();
  for (const [file, info] of Object.entries(r.metafile.inputs)) {
    const from = layerOf(file);
    // Every source file of ours has a layer: a new folder is placed deliberately, never skipped by the rule.
    if (!from && !file.startsWith("node_modules/") && /\.(ts|tsx)$/.test(file)) problems.push(`${file} has no layer: add its folder to LAYERS in scripts/layers.mjs`);
    if (!from) continue;
    for (const { path: to, external } of info.imports) {
      if (external) {
        if (to === "electron" && from[1] !== "electron") problems.push(`${file} imports electron: only electron/ may`);
        if (builtins.has(to) && (from[1] === "shared" || from[1] === "renderer")) problems.push(`${file} imports the Node module ${to}: ${from[1]}/ must run without Node`);
        continue;
      }
      const target = layerOf(to);
      if (!target) continue;
      if (from[1] === "electron" || from[1] === "renderer") {
        if (target[1] !== "shared" && target[1] !== from[1] && !APP_ALLOW[from[1]].includes(to)) problems.push(`${file} → ${to}: ${from[1]}/ may import only shared/ and ${APP_ALLOW[from[1]].join(", ")}`);
        continue;
      }
      if (target[1] === "electron" || target[1] === "renderer") problems.push(`${file} → ${to}: the engine never imports an app`);
      else if (target[2] > from[2]) problems.push(`${file} (${from[1]}) → ${to} (${target[1]}): a layer imports only the layers below it`);
      const a = folderOf(file);
      const b = folderOf(to);
      if (a !== b && from[1] === "core" && target[1] === "core") folderEdges.set(a, new Set([...(folderEdges.get(a) ?? []), b]));
    }
  }
  // Core concepts form no cycle (one depends on another, never both ways).
  const seen = new Set();
  const stack = [];
  const visit = (n) => {
    if (stack.includes(n)) return problems.push(`folder cycle: ${[...stack.slice(stack.indexOf(n)), n].join(" → ")}`);
    if (seen.has(n)) return;
    seen.add(n);
    stack.push(n);
    for (const m of folderEdges.get(n) ?? []) visit(m);
    stack.pop();
  };
  for (const n of folderEdges.keys()) visit(n);
  // No import cycle between the engine's files (issue 27): a cycle makes load order decide what is defined.
  const fileEdges = new Map();
  for (const [file, info] of Object.entries(r.metafile.inputs)) {
    if (file.startsWith("engine/")) fileEdges.set(file, info.imports.filter((i) => !i.external && i.path.startsWith("engine/")).map((i) => i.path));
  }
  const done = new Set();
  const path2 = [];
  const walk = (n) => {
    const at = path2.indexOf(n);
    if (at >= 0) return problems.push(`import cycle: ${[...path2.slice(at), n].join(" → ")}`);
    if (done.has(n)) return;
    path2.push(n);
    for (const m of fileEdges.get(n) ?? []) walk(m);
    path2.pop();
    done.add(n);
  };
  for (const n of fileEdges.keys()) walk(n);
  return { problems, files: entries.length };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { problems, files } = await checkLayers();
  for (const p of problems) console.error(`layers: ${p}`);
  console.log(`layers: ${files} files, ${problems.length} violation(s)`);
  process.exit(problems.length ? 1 : 0);
}
