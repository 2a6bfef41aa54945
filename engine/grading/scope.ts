import picomatch from "picomatch";
import type { ScopeResult } from "../../shared/verdict";

// A file name may hold any byte but NUL and "/": the globs' `.` must match line terminators too (\n, \r, U+2028, U+2029),
// or a file named with one under a protected folder matches no protect glob.
const GLOB = { dot: true, flags: "s" } as const;

/** Whether a path (relative, "/"-separated) matches any of the globs; false for none. */
export function globsMatcher(globs: string[]): (file: string) => boolean {
  return globs.length ? picomatch(globs, GLOB) : () => false;
}

/** Changed files must match `scope` (when given) and must not match `protect`. Paths are relative to the repo root. */
export function checkScope(changed: string[], scope: string[], protect: string[]): ScopeResult {
  const inScope = scope.length ? globsMatcher(scope) : () => true;
  const isProtected = globsMatcher(protect);
  const violations: string[] = [];
  for (const file of changed) {
    if (isProtected(file)) violations.push(`protected file changed: ${file}`);
    else if (!inScope(file)) violations.push(`outside scope: ${file}`);
  }
  return { passed: violations.length === 0, violations, changedFiles: changed };
}
