import type { CheckSpec } from "../../shared/check";
import type { Verdict } from "../../shared/verdict";
import type { WorkerSpec } from "../../shared/worker";

/** The first message a worker gets. The checks are held back: the worker never sees them. */
export function taskPrompt(spec: WorkerSpec): string {
  const lines = [spec.task.trim(), ""];
  if (spec.scope.length) lines.push(`Files you may change (globs, relative to the working directory): ${spec.scope.join(", ")}`);
  if (spec.protect.length) lines.push(`Files you must not change: ${spec.protect.join(", ")}`);
  if (spec.budget.wallSec) lines.push(`Time budget: about ${Math.round(spec.budget.wallSec)} seconds.`);
  lines.push("When you are done, end with exactly one line: `OUTCOME: built` or `OUTCOME: honest-failure — <reason>`.");
  return lines.join("\n").trim();
}

export function steerPrompt(text: string): string {
  return `[Steer from your supervisor — an authoritative correction. Follow it; it overrides earlier instructions where they conflict.]\n${text}`;
}

export function resumePrompt(message?: string): string {
  const base =
    "[Resume] Your previous run was interrupted or stopped. Check the current state of the files, then continue the same task from where it stopped. End with your OUTCOME line.";
  return message?.trim() ? `${base}\n${message.trim()}` : base;
}

const OUTCOME_LINE = "When you are done, end with exactly one line: `OUTCOME: built` or `OUTCOME: honest-failure — <reason>`.";

/** A follow-up to a graded worker: a new round in the same session, on the files as it left them. */
export function followUpPrompt(message: string, kind?: string): string {
  const head =
    kind === "review"
      ? "[Review from your supervisor] Your change was reviewed. Your files are as you left them; address every comment below."
      : kind === "fix"
        ? "[Fix round] Your change was graded and did not pass. Your files are as you left them; fix what failed."
        : "[Follow-up from your supervisor] Your previous round was graded. Your files are as you left them; do what is asked below.";
  return `${head}\n\n${message.trim()}\n\n${OUTCOME_LINE}`;
}

const FIX_OUTPUT_CHARS = 1500;
const FIX_TOTAL_CHARS = 6000;

/**
 * What a fix round tells the worker: the failing checks by name (their `name`, else "check N" — a check's command is
 * its source and stays held back) with the end of their output, the scope violations, or that nothing changed. A check
 * with held-back files shows no output: it ran the worker's code beside those files, and what that code printed can be
 * the files themselves (trimming cannot hold: the code can encode what it prints). Its name and exit code still go.
 */
export function fixPrompt(checks: CheckSpec[], v: Verdict, n: number, of: number): string {
  const lines = [`Fix round ${n} of ${of}. The held-back checks of your task were run on your change:`];
  if (v.reason) lines.push(`- ${v.reason}`);
  let budget = FIX_TOTAL_CHARS;
  v.checks.forEach((c, i) => {
    if (c.passed) return;
    const spec = checks[i];
    const name = spec?.name ?? `check ${i + 1}`;
    const heldBack = !!spec && "run" in spec && !!spec.files;
    const out = heldBack ? "" : c.output.trim();
    const tail = out.length > FIX_OUTPUT_CHARS ? `… ${out.slice(-FIX_OUTPUT_CHARS)}` : out;
    const shown = budget > 0 ? tail.slice(-budget) : "";
    budget -= shown.length;
    lines.push(
      `- failed: ${name}${c.timedOut ? " (timed out)" : c.exitCode !== undefined && c.exitCode !== null ? ` (exit ${c.exitCode})` : ""}${
        heldBack ? " — its output is not shown: it ran beside held-back tests, which it could print" : ""
      }${
        shown
          ? `\n  output:\n${shown
              .split("\n")
              .map((l) => `    ${l}`)
              .join("\n")}`
          : ""
      }`,
    );
  });
  for (const x of v.scope.violations) lines.push(`- scope: ${x}`);
  return lines.join("\n");
}
