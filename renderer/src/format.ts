import { useEffect, useState } from "react";
import type { DecidedBy } from "../../shared/permission";
import { askHoldingCall, type Worker, type WorkerState, workerTitle } from "../../shared/worker";
import { showUntrusted } from "../../shared/untrusted";
import { plainName } from "../../shared/wait";
import { counted, ENGINE_NO_ANSWER, isNoAnswer } from "../../shared/words";

export function duration(ms: number): string {
  if (ms < 0) ms = 0;
  // Under a second, in tenths: a speed "over 0s" on the model read as a rate over no time at all.
  if (ms > 0 && ms < 1000) return `${(Math.max(ms, 100) / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${String(m % 60).padStart(2, "0")}m`;
}

/** A count with its noun: "1 tool failure", "2 tool failures" (the one helper, in shared/words.ts). */
export { counted };

/**
 * The detail the engine-lost banner adds after its own words: nothing for a platform's "no answer" ("Failed to fetch",
 * "fetch failed", a refused connection — the banner already says the engine is not reachable and what to do), the
 * engine's or the server's own words otherwise.
 */
export function lostDetail(error: string | null | undefined): string | null {
  if (!error) return null;
  return isNoAnswer(error) || error.startsWith(ENGINE_NO_ANSWER) ? null : error;
}

export function ago(ts: number, now = Date.now()): string {
  return `${duration(now - ts)} ago`;
}

export function pct(x: number | null | undefined): string {
  return x === null || x === undefined ? "—" : `${Math.round(x * 100)}%`;
}

/** A clock that re-renders its users once a second (one timer for all). */
const clockSubs = new Set<(n: number) => void>();
let clockTimer: ReturnType<typeof setInterval> | null = null;
/**
 * What the clock shows while the engine is unreachable: the moment it was lost (set by the store), so durations and
 * "ago" stop counting instead of running on from a picture that is no longer live. Null while live.
 */
let frozenAt: number | null = null;
export function freezeClock(at: number | null): void {
  if (frozenAt === at) return;
  frozenAt = at;
  const n = at ?? Date.now();
  for (const [f, keepRunning] of clockKinds) f(keepRunning ? Date.now() : n);
}
const clockKinds = new Map<(n: number) => void, boolean>();
/** Now, once a second; frozen while the engine is unreachable unless `keepRunning` (the "lost … ago" banner). */
export function useNow(keepRunning = false): number {
  const [now, setNow] = useState(() => (keepRunning ? Date.now() : (frozenAt ?? Date.now())));
  useEffect(() => {
    clockSubs.add(setNow);
    clockKinds.set(setNow, keepRunning);
    clockTimer ??= setInterval(() => {
      const n = Date.now();
      for (const f of clockSubs) f(clockKinds.get(f) ? n : (frozenAt ?? n));
    }, 1000);
    return () => {
      clockSubs.delete(setNow);
      clockKinds.delete(setNow);
      if (!clockSubs.size && clockTimer) {
        clearInterval(clockTimer);
        clockTimer = null;
      }
    };
  }, [keepRunning]);
  return now;
}

export const STATE_LABEL: Record<WorkerState, string> = {
  queued: "queued",
  starting: "starting",
  running: "running",
  "waiting-approval": "needs approval",
  settled: "settled",
  grading: "grading",
  built: "built",
  "honest-failure": "failed",
  stopped: "stopped",
  interrupted: "interrupted",
  error: "error",
};

export function stateTone(s: WorkerState): "ok" | "warn" | "bad" | "busy" | "idle" {
  if (s === "built") return "ok";
  if (s === "waiting-approval") return "warn";
  if (s === "error" || s === "honest-failure") return "bad";
  if (s === "running" || s === "starting" || s === "grading" || s === "settled") return "busy";
  return "idle";
}

export const taskTitle = (spec: { title?: string; task: string }): string => workerTitle(spec);

/**
 * A tool or permission name shown to a person: a plain name as it is; any other (a name the model or a plugin chose: a
 * bidi control, an escape, a line break) made safe and bounded, as `ocw` (toolWord) and MCP (untrusted.tool) show it.
 */
export const toolShown = (name: string): string => (plainName(name) ? name : showUntrusted(name, { lines: false, max: 80 }));

/** What a worker is doing now, in words (its state, refined by the tool it runs and a stall). */
export function phaseOf(w: {
  state: WorkerState;
  currentTool: string | null;
  currentCall?: string | null;
  asks?: Worker["asks"];
  stalled: boolean;
  startedAt: number | null;
  discarded?: boolean;
  merged?: unknown;
}): string {
  if (w.discarded) return "discarded";
  if (w.merged) return "merged";
  switch (w.state) {
    case "queued":
      return w.startedAt ? "queued to resume" : "queued for a slot";
    case "starting":
      return "starting its session";
    case "running":
      if (w.stalled) return "stalled";
      // A call a pending ask holds waits for a person or Claude: it does not run yet.
      if (w.currentTool && w.asks && askHoldingCall({ asks: w.asks, currentCall: w.currentCall ?? null })) return "waiting for you";
      return w.currentTool ? `running ${toolShown(w.currentTool)}` : "thinking / writing";
    case "waiting-approval":
      return "waiting for you";
    case "settled":
      return "settled, grading next";
    case "grading":
      return "grading (held-back checks)";
    default:
      return STATE_LABEL[w.state];
  }
}

/** A token count in a few characters: 950, 12.3k, 1.2M. */
export function tokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** Who did it, in words: "you (gui)", "Claude (claude-code)", "policy rule …", "the engine". */
export function byText(by: DecidedBy | undefined): string {
  if (!by) return "nobody recorded";
  const name = by.name ? ` (${by.name})` : "";
  switch (by.kind) {
    case "person":
      return `you${name}`;
    case "mcp":
      return `Claude${name}`;
    case "policy":
      return `policy rule${name}`;
    case "cli":
      return `the terminal${name}`;
    case "engine":
      return `the engine${name}`;
  }
}
