// Which build an `ocw` bundle is: its release version and a short hash of the bundle file. The engine says its own in
// /health (host.ts); a client reads the one it would start (launcher.ts) and compares (shared/engine-build.ts).
//
// The version is the release's, read next to the bundle when it runs, not built in: `npm run plugin:release` bumps the
// plugin's version after it builds the bundle, so a built-in one would lag a release behind. Where it is read from:
//   <root>/.claude-plugin/plugin.json         a plugin install (root = plugin/: dist/ocw.mjs, bin/ocw)
//   <root>/plugin/.claude-plugin/plugin.json  a checkout (dist/ocw.mjs, bin/ocw.mjs), whose plugin/ is what it releases,
//                                             and a packaged desktop app (electron-builder.yml packs that one file)
// where <root> is the folder above the bundle's (dist/) or launcher's (bin/). None there: null, and such a build replaces
// no engine and is replaced by none.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { EngineBuild } from "../../shared/api";

/** The bundle a file runs: itself, or for a launcher (bin/ocw, bin/ocw.mjs) the dist/ocw.mjs beside its folder. */
export function bundleOf(file: string): string {
  if (path.basename(file) === "ocw.mjs" && path.basename(path.dirname(file)) === "dist") return file;
  const beside = path.join(path.dirname(path.dirname(file)), "dist", "ocw.mjs");
  return existsSync(beside) ? beside : file;
}

/** The release version of the install a bundle belongs to (see above), or null. */
export function versionNear(bundle: string): string | null {
  const root = path.dirname(path.dirname(bundle));
  for (const manifest of [path.join(root, ".claude-plugin", "plugin.json"), path.join(root, "plugin", ".claude-plugin", "plugin.json")]) {
    try {
      const v = (JSON.parse(readFileSync(manifest, "utf8")) as { version?: unknown }).version;
      if (typeof v === "string" && v.trim()) return v.trim().slice(0, 100);
    } catch {
      /* not this one */
    }
  }
  return null;
}

/** The release of the `ocw` that `file` runs (the bundle, or its launcher), without hashing the bundle: `ocw --version`. */
export const releaseOf = (file: string): string | null => versionNear(bundleOf(path.resolve(file)));

const builds = new Map<string, EngineBuild>();

/** The build of the `ocw` that `file` runs (the bundle, or its launcher): read once per process and file. */
export function buildOf(file: string): EngineBuild {
  const bundle = bundleOf(path.resolve(file));
  let b = builds.get(bundle);
  if (!b) {
    let id = "unknown";
    try {
      id = createHash("sha256").update(readFileSync(bundle)).digest("hex").slice(0, 12);
    } catch {
      /* unreadable: the version alone tells builds apart */
    }
    b = { version: versionNear(bundle), id };
    builds.set(bundle, b);
  }
  return b;
}
