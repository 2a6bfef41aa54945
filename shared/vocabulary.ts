import type { Outcome, Verdict } from "./verdict";

/**
 * One vocabulary for verdicts and claims in every client (GUI, CLI, MCP text): the verdict is "built" or "failed" (from
 * the held-back checks), and the worker's claim is a separate statement: "claim honest", "claim false: said …" or
 * "no claim". Never one word that mixes both.
 */
export const outcomeWord = (o: Outcome): "built" | "failed" => (o === "built" ? "built" : "failed");

export function claimWords(v: Pick<Verdict, "claim" | "honest">): string {
  if (!v.claim) return "no claim";
  return v.honest ? "claim honest" : `claim false: said ${outcomeWord(v.claim)}`;
}

/** "2/3 checks" passed; "no checks" where the task gave none (it read "0/0 checks"). */
export function checksWord(checks: readonly { passed: boolean }[]): string {
  return checks.length ? `${checks.filter((c) => c.passed).length}/${checks.length} checks` : "no checks";
}

/** "built · 2/2 checks · claim honest" */
export function verdictLine(v: Pick<Verdict, "verdict" | "claim" | "honest" | "checks">): string {
  return `${outcomeWord(v.verdict)} · ${checksWord(v.checks)} · ${claimWords(v)}`;
}
