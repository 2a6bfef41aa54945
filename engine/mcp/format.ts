// Pure shaping of engine objects into what the model reads: short, bounded, with the contract's field names.
import type { CheckResult } from "../../shared/check";
import type { PermissionAsk } from "../../shared/permission";
import { isFinal, pendingAsks, type Worker } from "../../shared/worker";
import type { PendingItem, Slots, WorkerSummary } from "./schemas";

export const clip = (s: string, n: number) => (s.length <= n ? s : s.slice(0, Math.max(0, n - 1)) + "…");
const secs = (ms: number) => Math.max(0, Math.round(ms / 100) / 10);

export function titleOf(w: Pick<Worker, "spec">): string {
  return w.spec.title ?? clip(w.spec.task.split("\n").find((l) => l.trim())?.trim() ?? "", 100);
}

export function pendingItem(a: PermissionAsk): PendingItem {
  return { askId: a.id, workerId: a.workerId, tool: a.tool, what: clip(a.what, 500), ...(a.workdir ? { workdir: clip(a.workdir, 500) } : {}) };
}

export function elapsedSec(w: Worker, now = Date.now()): number {
  if (w.startedAt === null) return 0;
  return secs((w.endedAt ?? now) - w.startedAt);
}

export function summarize(w: Worker, now = Date.now()): WorkerSummary {
  return {
    workerId: w.id,
    title: titleOf(w),
    state: w.state,
    reason: w.stateReason ? clip(w.stateReason, 500) : null,
    batchId: w.batchId,
    directory: w.spec.directory,
    pending: pendingAsks(w).map(pendingItem),
    lastActivity: w.lastActivity ? { summary: clip(w.lastActivity.summary, 200), agoSec: secs(now - w.lastActivity.ts) } : null,
    currentTool: w.currentTool,
    stalled: w.stalled,
    elapsedSec: elapsedSec(w, now),
    verdict: w.verdict?.verdict ?? null,
    honest: w.verdict?.honest ?? null,
  };
}

/** Slots of the active target (or of `targetId`), summed when several targets are in use. */
export function slotsOf(list: { targetId: string; slots: number; inUse: number; queued: number }[], targetId?: string | null): Slots {
  const rows = targetId ? list.filter((s) => s.targetId === targetId) : list;
  const total = rows.reduce((n, s) => n + s.slots, 0);
  const inUse = rows.reduce((n, s) => n + s.inUse, 0);
  return { total, inUse, free: Math.max(0, total - inUse), queued: rows.reduce((n, s) => n + s.queued, 0) };
}

/** One aggregate state for a set of workers (a batch): the worker's own state when there is one. */
export function aggregateState(ws: Worker[]): string {
  if (ws.length === 1) return ws[0]!.state;
  if (ws.every((w) => isFinal(w.state))) return "settled";
  if (ws.some((w) => pendingAsks(w).length)) return "waiting-approval";
  if (ws.some((w) => ["running", "starting", "settled", "grading"].includes(w.state))) return "running";
  return "queued";
}

/**
 * A check's output bounded to `max` characters. Whole when short; otherwise its start and end (failures usually
 * show at the end), or — when `offset` is given — the window from `offset`.
 */
export function pageOutput(output: string, max: number, offset?: number): { output: string; truncated: boolean; nextOffset: number | null } {
  if (offset !== undefined) {
    const chunk = output.slice(offset, offset + max);
    const end = offset + chunk.length;
    return { output: chunk, truncated: offset > 0 || end < output.length, nextOffset: end < output.length ? end : null };
  }
  if (output.length <= max) return { output, truncated: false, nextOffset: null };
  const head = Math.floor(max / 3);
  const tail = max - head;
  const omitted = output.length - head - tail;
  return {
    output: `${output.slice(0, head)}\n…[${omitted} characters omitted: call result with check and offset=${head} to read them]…\n${output.slice(output.length - tail)}`,
    truncated: true,
    nextOffset: head,
  };
}

export function checkOut(c: CheckResult, index: number, max: number, offset?: number) {
  const paged = pageOutput(c.output, max, offset);
  return {
    index,
    name: c.name,
    passed: c.passed,
    exitCode: c.exitCode ?? null,
    timedOut: c.timedOut ?? false,
    output: paged.output,
    outputChars: c.output.length,
    truncated: paged.truncated,
    nextOffset: paged.nextOffset,
  };
}

const byText = (by: PermissionAsk["by"]) => (by ? `${by.kind}${by.name ? ":" + by.name : ""}` : null);
export { byText };

/** The text that may accompany structured content (clients that ignore structuredContent read it). */
export function asText(value: unknown): string {
  return JSON.stringify(value);
}

/**
 * Whether two scope glob lists may overlap, conservatively: an empty scope means "anything", and globs are
 * compared by their literal directory prefix.
 */
export function scopesOverlap(a: string[], b: string[]): boolean {
  if (!a.length || !b.length) return true;
  const prefix = (g: string) => g.split(/[*?[{]/)[0]!;
  for (const x of a)
    for (const y of b) {
      const px = prefix(x);
      const py = prefix(y);
      if (px.startsWith(py) || py.startsWith(px)) return true;
    }
  return false;
}
