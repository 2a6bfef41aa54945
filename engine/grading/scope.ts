import path from "node:path";
import picomatch from "picomatch";
import type { ScopeResult } from "../../shared/verdict";
import { foldPath } from "../workspace";

// A file name may hold any byte but NUL and "/": the globs' `.` must match line terminators too (\n, \r, U+2028, U+2029),
// or a file named with one under a protected folder matches no protect glob.
const GLOB = { dot: true, flags: "s" } as const;

/** Whether a path (relative, "/"-separated) matches any of the globs, as written; false for none. */
function globsMatcher(globs: string[]): (file: string) => boolean {
  return globs.length ? picomatch(globs, GLOB) : () => false;
}

/**
 * Whether a path matches any of the globs, as written or as a case-insensitive, normalising file system sees it
 * (workspace/fold.ts: NFC, full case folding, trailing dots and spaces dropped), both sides folded: with `tests/**`
 * protected, `Tests/test_x.py`, `TESTS/x` and `tests./x` are protected too — on macOS and Windows they are the same
 * folder, and the user's checkout may be there whatever the engine runs on. The flag patterns fold names the same way.
 */
function foldedMatcher(globs: string[]): (file: string) => boolean {
  if (!globs.length) return () => false;
  const literal = globsMatcher(globs);
  const folded = globsMatcher(globs.map(foldPath));
  return (file) => literal(file) || folded(foldPath(file));
}

/** Protected paths: matched as written and folded (foldedMatcher), on every platform. */
export const protectMatcher = foldedMatcher;

/**
 * The task's scope (all paths when empty): matched as written, and folded where this platform's file systems fold names
 * (macOS, Windows), where `SRC/x.ts` is a file of `src/`. On Linux `SRC/` is another folder, outside a scope of `src/**`.
 */
export function scopeMatcher(globs: string[], platform: NodeJS.Platform = process.platform): (file: string) => boolean {
  if (!globs.length) return () => true;
  return platform === "darwin" || platform === "win32" ? foldedMatcher(globs) : globsMatcher(globs);
}

/** Changed files must match `scope` (when given) and must not match `protect`. Paths are relative to the repo root. */
export function checkScope(changed: string[], scope: string[], protect: string[], platform: NodeJS.Platform = process.platform): ScopeResult {
  const inScope = scopeMatcher(scope, platform);
  const isProtected = protectMatcher(protect);
  const violations: string[] = [];
  for (const file of changed) {
    if (isProtected(file)) violations.push(`protected file changed: ${file}`);
    else if (!inScope(file)) violations.push(`outside scope: ${file}`);
  }
  return { passed: violations.length === 0, violations, changedFiles: changed };
}

/**
 * A path from the repository's root as the task's scope and protect globs see it: relative to the folder the task names
 * (`sub`, "/"-separated, "" for the root), as `cd` would reach it from there: `packages/b/x.ts` is `../b/x.ts` from
 * `packages/a`, `README.md` is `../../README.md`. The same as an ask's path is read at approval (approvals/inspect.ts).
 */
export function fromTaskFolder(sub: string, file: string): string {
  return sub ? path.posix.relative(sub, file) : file;
}

/**
 * Why a task's scope or protect glob can never match a file of the repository, or null. Globs are relative to the folder
 * the task names (fromTaskFolder), so a glob written as a path of the machine (`/home/me/repo/cli.js`) matches nothing,
 * nor does one above the repository (`../x` when the task names the root, `../../../x` from `packages/a`): a scope of it
 * failed the worker's every change as out of scope, a protect of it guarded nothing. Said before any worker starts, with
 * the relative glob to give when the path lies in the task's folder. So is a glob with a `..` segment after its leading
 * ones (`tests/../x`): paths are compared as fromTaskFolder writes them, without one, so it matches nothing.
 */
export function globProblem(scope: string[], protect: string[], repoRoot: string, subdir = ""): string | null {
  const folder = path.join(repoRoot, subdir);
  const depth = subdir.split(/[\\/]/).filter((p) => p && p !== ".").length;
  for (const [kind, globs] of [
    ["scope", scope],
    ["protect", protect],
  ] as const) {
    for (const glob of globs) {
      const g = glob.trim();
      // A Windows path is one with a drive (`C:\…`, `C:/…`) or a server (`\\srv\…`): a single leading backslash is a
      // glob's escape (`\[id\].tsx`, a Next.js route file; `\!notes.md`), not a path from a drive's root.
      if (path.posix.isAbsolute(g) || /^[A-Za-z]:[\\/]/.test(g) || g.startsWith("\\\\")) {
        const rel = path.relative(folder, g).split(path.sep).join("/");
        const inside = rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
        return `${kind} glob "${glob}" is an absolute path: globs are relative to the task's folder and this one matches no file of it; give ${inside ? `"${rel}"` : 'one such as "src/**"'}`;
      }
      // picomatch takes a leading `./` off (`./../x` is `../x`) and compares paths as written.
      const rest = g.replace(/^(?:\.\/+)+/, "");
      const up = /^(?:\.\.(?:\/+|$))*/.exec(rest)![0];
      const ups = up.split("/").filter((p) => p === "..").length;
      if (ups > depth)
        return `${kind} glob "${glob}" points above the repository: globs are relative to the task's folder (${depth ? subdir.split(path.sep).join("/") : "here the repository's root"}) and this one matches no file of it; give one such as "src/**"`;
      if (/(^|\/)\.\.(\/|$)/.test(rest.slice(up.length)))
        return `${kind} glob "${glob}" has a \`..\` segment: globs are matched against paths as written from the task's folder (a file outside it as \`cd\` reaches it from there: ../b/x.ts), and this one matches no file; give one such as "src/**"`;
    }
  }
  return null;
}
