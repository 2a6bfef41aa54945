// The layering rule, enforced in `npm test`: code lives where it may run, and each layer imports only the layers
// below it. The import graph comes from esbuild's own resolution (its metafile), so it is exactly what gets bundled;
// type-only imports are erased there, so a second pass reads every file's import statements itself (type imports and
// re-exports included): the same layer rule holds for types (an app may take only the router's type from the API),
// no file imports itself back through any chain (no file cycle of any kind), `commander` stays in the clients,
// opencode's SDK stays in engine/harness/ (behind its typed port),
// `OCW_*` variables are read only in engine/config.ts, and a folder with an `index.ts` (its surface) is imported from
// outside only through that file.
//
//   shared ← platform ← core ← api ← clients (cli, mcp)
//                                  ↖ apps (electron: shared, platform, api; renderer: shared + the pure API client)
import { build } from "esbuild";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";

// LAYERS_ROOT: another tree to check (the lint's own tests run it on a fixture tree).
const root = process.env.LAYERS_ROOT ? path.resolve(process.env.LAYERS_ROOT) : path.dirname(path.dirname(new URL(import.meta.url).pathname));

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
  ["engine/registry/", "core", 2],
  ["engine/budgets/", "core", 2],
  ["engine/recovery/", "core", 2],
  ["engine/api/", "api", 3],
  ["engine/mcp/", "clients", 4],
  ["engine/commands/", "clients", 4],
  ["engine/cli.ts", "clients", 4],
  ["electron/", "electron", 5],
  ["renderer/", "renderer", 5],
];
/** The live engine's core: a client (CLI command, MCP bridge) reaches it only through the engine's API. */
const ENGINE_ONLY = ["engine/workers/", "engine/harness/", "engine/approvals/", "engine/budgets/", "engine/recovery/"];
ENGINE_ONLY.push("engine/registry/");
/** What each app may import besides shared/ (apps sit beside the clients, not above them). */
const APP_ALLOW = {
  electron: ["engine/api/client.ts", "engine/api/launcher.ts", "engine/api/lock.ts", "engine/store/paths.ts", "engine/config.ts"],
  renderer: [],
};

/**
 * Pure modules: no I/O, no process, no environment, no clock-dependent state — a function of their arguments. A client
 * may import them (a CLI flag checked or a figure formatted as the engine does). Checked: a pure module imports no
 * Node module, never reads `process`, and its value imports are shared/ and other pure modules only (its type-only
 * imports follow the layer rule: a type cannot do I/O).
 */
const PURE = [
  "engine/hardware/parse.ts",
  "engine/models/errors.ts",
  "engine/models/ggml-types.ts",
  "engine/models/hparams.ts",
  "engine/models/compute-graph.ts",
  "engine/models/estimate.ts",
  "engine/models/mtp.ts",
  "engine/models/catalog.ts",
];
/** The clients: each `ocw` command, the CLI's entry and the MCP bridge. */
const isClient = (f) => f.startsWith("engine/commands/") || f.startsWith("engine/mcp/") || f === "engine/cli.ts";
/**
 * What a client may import besides shared/, PURE and the other clients: the API's client surface — the client, the
 * launcher that finds or starts the engine (and names the state dir its lock is in), the lock itself, the event
 * follower. Everything impure a client needs is a procedure of the engine's API.
 */
const CLIENT_ALLOW = ["engine/api/client.ts", "engine/api/launcher.ts", "engine/api/lock.ts", "engine/api/follow.ts"];
/** The one client that hosts the engine in its own process (`ocw serve`, and a model server's supervisor under it). */
const HOSTS = { "engine/commands/serve.ts": ["engine/api/host.ts", "engine/api/supervisor.ts"] };
const clientMayImport = (file, to) =>
  layerOf(to)?.[1] === "shared" || isClient(to) || PURE.includes(to) || CLIENT_ALLOW.includes(to) || (HOSTS[file] ?? []).includes(to);
const allowText = (app) => (APP_ALLOW[app].length ? `shared/ and ${APP_ALLOW[app].join(", ")}` : "shared/");
/** Folders that must have an `index.ts` surface (then imported from outside only through it): a surface deleted fails. */
const SURFACED = ["harness", "approvals", "budgets", "recovery", "grading", "gateway"];
SURFACED.push("registry", "workers", "admission", "workspace", "process", "sandbox", "net", "store", "hardware", "serving", "models");

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
    entryPoints: entries,
    bundle: true,
    write: false,
    metafile: true,
    packages: "external",
    platform: "node",
    format: "esm",
    outdir: path.join(root, "node_modules/.cache/ocw-layers"),
    logLevel: "silent",
    absWorkingDir: root,
    loader: { ".css": "empty", ".svg": "empty", ".png": "empty", ".woff2": "empty" },
  });
  const problems = [];
  for (const f of SURFACED) if (!existsSync(path.join(root, "engine", f, "index.ts"))) problems.push(`engine/${f}/ has no index.ts: its surface is required`);
  const folderEdges = new Map();
  for (const [file, info] of Object.entries(r.metafile.inputs)) {
    const from = layerOf(file);
    // Every source file of ours has a layer: a new folder is placed deliberately, never skipped by the rule.
    if (!from && !file.startsWith("node_modules/") && /\.(ts|tsx)$/.test(file))
      problems.push(`${file} has no layer: add its folder to LAYERS in scripts/layers.mjs`);
    if (!from) continue;
    if (PURE.includes(file)) {
      if (/\bprocess\s*[.[]/.test(readFileSync(path.join(root, file), "utf8"))) problems.push(`${file} reads process: a pure module has no environment`);
      for (const { path: to, external } of info.imports)
        if (external ? builtins.has(to) : layerOf(to)?.[1] !== "shared" && !PURE.includes(to))
          problems.push(`${file} (pure) → ${to}: a pure module imports only shared/, other pure modules and packages, no Node module`);
    }
    for (const { path: to, external } of info.imports) {
      if (external) {
        if (to === "electron" && from[1] !== "electron") problems.push(`${file} imports electron: only electron/ may`);
        if (builtins.has(to) && (from[1] === "shared" || from[1] === "renderer"))
          problems.push(`${file} imports the Node module ${to}: ${from[1]}/ must run without Node`);
        continue;
      }
      const target = layerOf(to);
      if (!target) continue;
      if (from[1] === "electron" || from[1] === "renderer") {
        if (target[1] !== "shared" && target[1] !== from[1] && !APP_ALLOW[from[1]].includes(to))
          problems.push(`${file} → ${to}: ${from[1]}/ may import only ${allowText(from[1])}`);
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
  // Type imports, file cycles of any kind (the whole tree, types included), commander and OCW_* reads: statementProblems.
  problems.push(...statementProblems(entries));
  return { problems, files: entries.length };
}

const IMPORT_RE = /(?:^|[\n;}])\s*(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;
/** Where this file's imports go, type-only ones included: `[{to, type, external}]` (`to` relative to the root). */
function importsOf(abs) {
  const src = readFileSync(abs, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "");
  const out = [];
  for (const m of src.matchAll(IMPORT_RE)) {
    const spec = m[2] ?? m[3];
    if (!spec.startsWith(".")) {
      out.push({ to: spec, type: Boolean(m[1]), external: true });
      continue;
    }
    const base = path.resolve(path.dirname(abs), spec);
    const hit = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts"), path.join(base, "index.tsx")].find(
      (c) => existsSync(c) && statSync(c).isFile(),
    );
    if (hit && /\.(ts|tsx)$/.test(hit)) out.push({ to: path.relative(root, hit), type: Boolean(m[1]), external: false });
  }
  return out;
}

function statementProblems(entries) {
  const problems = [];
  const graph = new Map();
  for (const abs of entries) {
    const file = path.relative(root, abs);
    const from = layerOf(file);
    const edges = importsOf(abs);
    graph.set(
      file,
      edges.filter((e) => !e.external).map((e) => e.to),
    );
    if (!from) continue;
    for (const { to, type, external } of edges) {
      if (external) {
        if (to === "commander" && from[2] < 4) problems.push(`${file} imports commander: only the clients parse arguments`);
        // opencode's SDK (its calls and its types) stays behind the harness's typed port: the rest reads the port's shapes.
        if (to.startsWith("@opencode-ai/sdk") && !file.startsWith("engine/harness/"))
          problems.push(`${file}${type ? " (type)" : ""} imports ${to}: only engine/harness/ (the opencode port) uses opencode's SDK`);
        continue;
      }
      if (isClient(file) && !clientMayImport(file, to))
        problems.push(
          `${file} → ${to}${type ? " (type)" : ""}: a client imports only the API's client surface (${CLIENT_ALLOW.join(", ")}), shared/, pure modules and other clients; add an API procedure`,
        );
      if (from[1] === "clients" && ENGINE_ONLY.some((p) => to.startsWith(p)))
        problems.push(`${file} → ${to}${type ? " (type)" : ""}: a client reaches the live engine only through its API (engine/api/client.ts)`);
      const surface = `${folderOf(to)}/index.ts`;
      // An app (electron/, renderer/) takes only its allow-listed files (APP_ALLOW), each one by name.
      const appAllowed = from && APP_ALLOW[from[1]]?.includes(to);
      // A client takes a pure module by name: the folder's surface re-exports impure ones beside it.
      const pureAllowed = isClient(file) && PURE.includes(to);
      if (folderOf(to) !== folderOf(file) && to !== surface && existsSync(path.join(root, surface)) && !appAllowed && !pureAllowed)
        problems.push(`${file} → ${to}: import ${folderOf(to)}/ through its surface, ${surface}`);
      const target = layerOf(to);
      if (!target || !type) continue; // value imports: checked on esbuild's graph above
      if (from[1] === "electron" || from[1] === "renderer") {
        if (target[1] !== "shared" && target[1] !== from[1] && to !== "engine/api/router.ts" && !APP_ALLOW[from[1]].includes(to))
          problems.push(
            `${file} → ${to} (type): ${from[1]}/ may import only shared/, the router's type${APP_ALLOW[from[1]].length ? ` and ${APP_ALLOW[from[1]].join(", ")}` : ""}`,
          );
      } else if (target[1] === "electron" || target[1] === "renderer") problems.push(`${file} → ${to} (type): the engine never imports an app`);
      else if (target[2] > from[2])
        problems.push(`${file} (${from[1]}) → ${to} (${target[1]}) (type): a layer imports only the layers below it, types included`);
    }
    // Every file, the clients and apps included: an app reads its OCW_* through engine/config.ts as the engine does.
    if (file !== "engine/config.ts") {
      const src = readFileSync(abs, "utf8");
      for (const m of src.matchAll(/\benv(?:\.|\[["'])(OCW_[A-Z0-9_]+)\b(?!\s*=[^=])/g))
        problems.push(`${file} reads ${m[1]}: every OCW_* variable is read in engine/config.ts`);
    }
  }
  // File cycles (Tarjan's strongly connected components): any component of two or more files is a cycle.
  let next = 0;
  const index = new Map(),
    low = new Map(),
    stack = [],
    on = new Set();
  const connect = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) problems.push(`file cycle: ${component.sort().join(" ↔ ")}`);
  };
  for (const v of graph.keys()) if (!index.has(v)) connect(v);
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { problems, files } = await checkLayers();
  for (const p of problems) console.error(`layers: ${p}`);
  console.log(`layers: ${files} files, ${problems.length} violation(s)`);
  process.exit(problems.length ? 1 : 0);
}
