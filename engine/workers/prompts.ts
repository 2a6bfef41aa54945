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
  const base = "[Resume] Your previous run was interrupted or stopped. Check the current state of the files, then continue the same task from where it stopped. End with your OUTCOME line.";
  return message?.trim() ? `${base}\n${message.trim()}` : base;
}
