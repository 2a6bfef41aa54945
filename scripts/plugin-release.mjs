// `npm run plugin:release [-- "what changed"]`: cut a release of the Claude Code plugin (plugin/). The npm script runs
// scripts/build.mjs first, so the release carries a fresh bundle and browser UI (plugin/dist/ocw.mjs, plugin/dist/ui).
//
// Claude Code delivers a plugin update only when the plugin's `version` changes (a new commit with the same version is
// "already at the latest version"). So every change to what ships in plugin/ needs a new version. This script:
//   1. hashes what ships (every file under plugin/ except node_modules, lock dirs, release.json and CHANGELOG.md);
//   2. when that differs from plugin/release.json (the last release), bumps the patch version in BOTH manifests
//      (plugin/.claude-plugin/plugin.json and .claude-plugin/marketplace.json);
//   3. writes plugin/release.json {version, contentHash, files} and a line in plugin/CHANGELOG.md.
// test/integration/plugin-release.test.ts fails when plugin/ differs from the last release and the version did not
// change. `npm run plugin:release` rebuilds plugin/ first (as `npm run build:cli` does); commit what it wrote.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
/** Files in plugin/ that describe releases rather than ship as content. */
const NOT_CONTENT = new Set(["release.json", "CHANGELOG.md"]);

function walk(dir, rel = "") {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const r = rel ? `${rel}/${d.name}` : d.name;
    // What plugin/.gitignore keeps out of a commit never ships: installed modules and first-run lock dirs.
    if (d.name === "node_modules" || /^\..*\.lock$/.test(d.name)) return [];
    if (d.isDirectory()) return walk(path.join(dir, d.name), r);
    return d.isFile() ? [r] : [];
  });
}

/** The shipped files of a plugin folder, path → sha256, sorted by path. */
export function pluginFiles(pluginDir) {
  const files = {};
  for (const rel of walk(pluginDir)
    .filter((f) => !NOT_CONTENT.has(f))
    .sort()) {
    files[rel] = createHash("sha256")
      .update(readFileSync(path.join(pluginDir, rel)))
      .digest("hex");
  }
  return files;
}

/** One hash over every shipped file's path and content. */
export function contentHash(pluginDir) {
  const h = createHash("sha256");
  for (const [rel, sum] of Object.entries(pluginFiles(pluginDir))) h.update(`${rel}\0${sum}\n`);
  return `sha256:${h.digest("hex")}`;
}

export function readRelease(root = ROOT) {
  const file = path.join(root, "plugin", "release.json");
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
}

const manifestPath = (root) => path.join(root, "plugin", ".claude-plugin", "plugin.json");
const marketPath = (root) => path.join(root, ".claude-plugin", "marketplace.json");

/** The versions the two manifests declare: {plugin, marketplace}. */
export function manifestVersions(root = ROOT) {
  const manifest = JSON.parse(readFileSync(manifestPath(root), "utf8"));
  const market = JSON.parse(readFileSync(marketPath(root), "utf8"));
  const entry = (market.plugins ?? []).find((p) => p.name === manifest.name);
  return { plugin: manifest.version, marketplace: entry?.version ?? null };
}

export function bumpPatch(version) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(version ?? "");
  if (!m) throw new Error(`plugin version "${version}" is not MAJOR.MINOR.PATCH: fix plugin/.claude-plugin/plugin.json by hand`);
  return `${m[1]}.${m[2]}.${Number(m[3]) + 1}`;
}

/** Replaces only the version value in a JSON file's text, so that the rest of the hand-written file stays as written. */
function setVersion(file, version, after = 0) {
  const text = readFileSync(file, "utf8");
  // The first "version" key at or after `after` (plugin.json declares its own before any nested object).
  const re = /"version"\s*:\s*"[^"]*"/g;
  re.lastIndex = after;
  const m = re.exec(text);
  if (!m) throw new Error(`${file} has no "version" to bump`);
  writeFileSync(file, text.slice(0, m.index) + `"version": "${version}"` + text.slice(m.index + m[0].length));
}

/**
 * Cuts a release when plugin/ changed since the last one. Returns {released, version, changed}; `note` is the
 * changelog text (default: the list of changed files).
 */
export function release(root = ROOT, { note, today = new Date().toISOString().slice(0, 10) } = {}) {
  const pluginDir = path.join(root, "plugin");
  const last = readRelease(root);
  const versions = manifestVersions(root);
  const files = pluginFiles(pluginDir);
  const hash = contentHash(pluginDir);
  if (last && last.contentHash === hash && last.version === versions.plugin && versions.marketplace === versions.plugin) {
    return { released: false, version: last.version, changed: [] };
  }
  const before = last?.files ?? {};
  const changed = [...new Set([...Object.keys(before), ...Object.keys(files)])]
    .filter((f) => f !== ".claude-plugin/plugin.json" && before[f] !== files[f])
    .sort();
  // A version already moved past the last release's by hand counts as this release's; otherwise bump the patch.
  const base = last?.version ?? versions.plugin;
  const version = versions.plugin !== base && versions.plugin === versions.marketplace ? versions.plugin : bumpPatch(base);
  setVersion(manifestPath(root), version);
  const market = JSON.parse(readFileSync(marketPath(root), "utf8"));
  const name = JSON.parse(readFileSync(manifestPath(root), "utf8")).name;
  const entry = (market.plugins ?? []).find((p) => p.name === name);
  if (!entry) throw new Error(`.claude-plugin/marketplace.json lists no plugin named ${name}`);
  const text = readFileSync(marketPath(root), "utf8");
  // The entry's version: the first "version" after the entry's name inside "plugins".
  const plugins = text.indexOf('"plugins"');
  const at = text.indexOf(`"${name}"`, plugins < 0 ? 0 : plugins);
  setVersion(marketPath(root), version, at < 0 ? 0 : at);
  if (manifestVersions(root).marketplace !== version)
    throw new Error(`could not set the version of ${name} in .claude-plugin/marketplace.json: set it to ${version} by hand`);
  const after = pluginFiles(pluginDir);
  const record = { version, contentHash: contentHash(pluginDir), files: after };
  writeFileSync(path.join(pluginDir, "release.json"), JSON.stringify(record, null, 2) + "\n");
  const log = path.join(pluginDir, "CHANGELOG.md");
  const head =
    "# Changelog of the opencode-worker Claude Code plugin\n\nOne line per release (written by `npm run plugin:release`); Claude Code updates an installed plugin when its version changes.\n\n";
  const old = existsSync(log) ? readFileSync(log, "utf8").replace(/^# [^\n]*\n\n(?:[^\n#-][^\n]*\n)*\n?/, "") : "";
  const what =
    note?.trim() ||
    (changed.length ? `changed: ${changed.slice(0, 12).join(", ")}${changed.length > 12 ? `, and ${changed.length - 12} more` : ""}` : "first release");
  writeFileSync(log, `${head}- ${version} (${today}): ${what.replace(/\s+/g, " ")}\n${old}`);
  return { released: true, version, changed };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf("--root");
  const root = rootAt >= 0 ? path.resolve(args[rootAt + 1]) : ROOT;
  const note = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--root").join(" ");
  const r = release(root, { note });
  console.log(
    r.released
      ? `plugin: released ${r.version} (${r.changed.length} file(s) changed): commit plugin/ and .claude-plugin/marketplace.json`
      : `plugin: nothing changed since ${r.version}; no release`,
  );
}
