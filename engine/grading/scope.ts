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
