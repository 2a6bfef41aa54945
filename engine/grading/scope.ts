import picomatch from "picomatch";
import type { ScopeResult } from "../../shared/verdict";

/** Changed files must match `scope` (when given) and must not match `protect`. Paths are relative to the repo root. */
export function checkScope(changed: string[], scope: string[], protect: string[]): ScopeResult {
  const inScope = scope.length ? picomatch(scope, { dot: true }) : () => true;
  const isProtected = protect.length ? picomatch(protect, { dot: true }) : () => false;
  const violations: string[] = [];
  for (const file of changed) {
    if (isProtected(file)) violations.push(`protected file changed: ${file}`);
    else if (!inScope(file)) violations.push(`outside scope: ${file}`);
  }
  return { passed: violations.length === 0, violations, changedFiles: changed };
}
