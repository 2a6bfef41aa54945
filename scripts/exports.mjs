// Dead exports, checked in `npm test`: an exported name of the sources (shared/, engine/, renderer/src/, electron/)
// that nothing uses — not its own file beyond the declaration, and no other file of the repository (no import, no
// test, no script) — and a name a folder's surface (index.ts) re-exports that no other file names. Either is code kept
// for nobody: delete it (or, for a surface's name, the re-export).
// Text, not types: a name counts as used wherever it appears as a word in another file (a false "used" is possible,
// a false "dead" is not), so the check is quick and never wrong when it complains.
// `node scripts/exports.mjs --own-file` also lists, as a report that never fails, each export only its own file uses
// (an `export` keyword likely superfluous; a folder's deliberate surface may keep one).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const SOURCE_DIRS = ["shared", "engine", "renderer/src", "electron"];
/** Where a use may be: the sources, their tests and fixtures, the bench, the scripts, e2e and the plugin's sources. */
const USE_DIRS = [...SOURCE_DIRS, "test", "bench", "scripts", "e2e", "bin", "plugin/src"];
const SKIP = new Set(["node_modules", "dist", "out", "tmp"]);
const DECLARED =
  /export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/g;
const REEXPORTED = /export\s*(?:type\s*)?\{([^}]*)\}\s*from/g;

function walk(dir) {
  let names;
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((f) => {
    const p = path.join(dir, f);
    if (SKIP.has(f)) return [];
    if (statSync(p).isDirectory()) return walk(p);
    return /\.(ts|tsx|mts|mjs|js|cjs)$/.test(f) && !f.endsWith(".d.ts") ? [p] : [];
  });
}

const quoteName = (s) => s.replace(/\$/g, "\\$");
const uncommented = (s) => s.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

function sources(root) {
  const files = [
    ...USE_DIRS.flatMap((d) => walk(path.join(root, d))),
    ...readdirSync(root)
      .filter((f) => /\.(ts|mts|mjs)$/.test(f))
      .map((f) => path.join(root, f)),
  ];
  const text = new Map(files.map((f) => [path.relative(root, f), readFileSync(f, "utf8")]));
  const isSource = (f) => SOURCE_DIRS.some((d) => f.startsWith(`${d}/`)) && /\.tsx?$/.test(f) && !/\.(test|spec)\.tsx?$/.test(f);
  const namedElsewhere = (name, ...not) => {
    const word = new RegExp(`\\b${quoteName(name)}\\b`);
    for (const [g, s] of text) if (!not.includes(g) && word.test(s)) return true;
    return false;
  };
  return { text, isSource, namedElsewhere };
}

/** `[{file, name, how}]`: each export nothing else names (`how`: "declared" or "re-exported"), files relative to root. */
export function deadExports(root) {
  const { text, isSource, namedElsewhere } = sources(root);
  const dead = [];
  for (const [file, raw] of text) {
    if (!isSource(file)) continue;
    const src = uncommented(raw);
    for (const m of src.matchAll(DECLARED)) {
      // Used in its own file beside its declaration: the export may be superfluous, but the code is alive.
      if ((src.match(new RegExp(`\\b${quoteName(m[1])}\\b`, "g")) ?? []).length > 1) continue;
      if (!namedElsewhere(m[1], file)) dead.push({ file, name: m[1], how: "declared" });
    }
    if (path.basename(file) !== "index.ts") continue;
    for (const m of src.matchAll(REEXPORTED))
      for (const part of m[1].split(",")) {
        const name = part
          .trim()
          .replace(/^type\s+/, "")
          .split(/\s+as\s+/)
          .pop();
        if (!name) continue;
        // The file that declares it is not a use of the surface's name.
        const declarer = [...text].find(
          ([g, s]) =>
            g !== file &&
            new RegExp(
              `export\\s+(?:declare\\s+)?(?:async\\s+)?(?:abstract\\s+)?(?:function\\*?|const|let|class|interface|type|enum)\\s+${quoteName(name)}\\b`,
            ).test(s),
        )?.[0];
        if (!namedElsewhere(name, file, declarer)) dead.push({ file, name, how: "re-exported" });
      }
  }
  return dead;
}

/** `Map<file, Set<name>>`: the names each file's exports are imported or re-exported by (`*`: all, a namespace or dynamic import). */
function importedNames(text) {
  const taken = new Map();
  const take = (file, name) => taken.set(file, (taken.get(file) ?? new Set()).add(name));
  const resolve = (from, spec) => {
    if (!spec.startsWith(".")) return null;
    const base = path.join(path.dirname(from), spec);
    const tries = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`];
    return tries.find((t) => text.has(t)) ?? null;
  };
  for (const [file, raw] of text) {
    const src = uncommented(raw);
    for (const m of src.matchAll(/\b(?:import|export)\s+(?:type\s+)?([^;'"]*?)\s*from\s*["']([^"']+)["']/g)) {
      const target = resolve(file, m[2]);
      if (!target) continue;
      if (m[1].includes("*")) take(target, "*");
      for (const part of /\{([^}]*)\}/.exec(m[1])?.[1].split(",") ?? []) {
        const name = part
          .trim()
          .replace(/^type\s+/, "")
          .split(/\s+as\s+/)[0];
        if (name) take(target, name);
      }
    }
    for (const m of src.matchAll(/\b(?:import|require)\s*\(\s*["']([^"']+)["']/g)) {
      const target = resolve(file, m[1]);
      if (target) take(target, "*");
    }
  }
  return taken;
}

/**
 * `[{file, name}]`: each export its own file uses and no other file imports (by name, re-export, namespace or dynamic
 * import): the `export` keyword is likely superfluous. A report only (`--own-file`), never a failure: a folder's
 * public surface or the contract may export a name on purpose before anything takes it. Imports, not words: a name
 * another file merely spells (its own local of that name, a comment) does not hide the export.
 */
export function ownFileExports(root) {
  const { text, isSource } = sources(root);
  const taken = importedNames(text);
  const own = [];
  for (const [file, raw] of text) {
    if (!isSource(file)) continue;
    const names = taken.get(file) ?? new Set();
    if (names.has("*")) continue;
    const src = uncommented(raw);
    for (const m of new Set([...src.matchAll(DECLARED)].map((d) => d[1]))) {
      if ((src.match(new RegExp(`\\b${quoteName(m)}\\b`, "g")) ?? []).length < 2) continue;
      if (!names.has(m)) own.push({ file, name: m });
    }
  }
  return own;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.dirname(path.dirname(new URL(import.meta.url).pathname));
  if (process.argv.includes("--own-file")) {
    const own = ownFileExports(root);
    for (const o of own) console.log(`exports: ${o.file} exports ${o.name}, which only its own file uses`);
    console.log(`exports: ${own.length} export(s) only their own file uses (a report, not a failure)`);
  }
  const dead = deadExports(root);
  for (const d of dead) console.error(`exports: ${d.file} ${d.how === "declared" ? "exports" : "re-exports"} ${d.name}, which nothing uses: delete it`);
  console.log(`exports: ${dead.length} dead export(s)`);
  process.exit(dead.length ? 1 : 0);
}
