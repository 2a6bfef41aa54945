import { z } from "zod";
import type { WorkerState } from "./worker";

/** What can happen to a worker. The engine moves a worker only by firing one of these. */
export const WorkerTransition = z.enum([
  "admit", // a slot is free: the workspace and session are being prepared
  "start", // the task prompt reached opencode
  "ask", // an ask waits for a person (or Claude)
  "answered", // no ask is pending any more
  "settle", // the session went idle with a finished reply
  "grade", // the engine commits the worker's files and runs the checks
  "pass", // every check and the scope passed
  "fail", // a check or the scope failed
  "stop", // a person, Claude or a budget stopped it
  "interrupt", // the engine, opencode or the model server went away under it
  "fail-run", // the session or the engine failed (an error worth reading)
  "resume", // continue a stopped, interrupted or errored worker in its session
  "continue", // a settled worker (built or honest-failure) takes a follow-up in its session: a new round
  "fix", // graded honest-failure with a fix round due: the engine sends the failing checks back at once (a new round)
]);
export type WorkerTransition = z.infer<typeof WorkerTransition>;

type Table = Record<WorkerState, Partial<Record<WorkerTransition, WorkerState>>>;

/**
 * Every legal move, and nothing else. A stopped or interrupted worker is never graded: only `resume` leaves those
 * states, and grading is reachable only from `settled`, which only a live session reaches. A graded worker leaves
 * built / honest-failure only by `continue` (a new round in the same session), never by `resume`.
 */
export const WORKER_TRANSITIONS: Table = {
  queued: { admit: "starting", stop: "stopped", "fail-run": "error" },
  starting: { start: "running", stop: "stopped", interrupt: "interrupted", "fail-run": "error" },
  running: { ask: "waiting-approval", settle: "settled", stop: "stopped", interrupt: "interrupted", "fail-run": "error" },
  "waiting-approval": { answered: "running", settle: "settled", stop: "stopped", interrupt: "interrupted", "fail-run": "error" },
  settled: { grade: "grading", stop: "stopped", "fail-run": "error" },
  // A restart during grading grades again (the verdict is recomputed from the same files).
  grading: { grade: "grading", pass: "built", fail: "honest-failure", fix: "queued", stop: "stopped", "fail-run": "error" },
  // A verdict is the end of a round, not of the worker: a follow-up (continue, review) starts the next round.
  built: { continue: "queued" },
  "honest-failure": { continue: "queued" },
  stopped: { resume: "queued" },
  interrupted: { resume: "queued" },
  error: { resume: "queued" },
};

/** The state a transition leads to, or null when it is illegal from `from`. */
export function nextState(from: WorkerState, t: WorkerTransition): WorkerState | null {
  return WORKER_TRANSITIONS[from][t] ?? null;
}
