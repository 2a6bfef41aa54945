// The worker registry's surface: the workers the engine knows, each one's live run, and the replies of its turn.
// It sits below every service that acts on workers (approvals, budgets, recovery, admission) and below workers/, which
// runs them: those import this file, never engine/workers/ (scripts/layers.mjs; no file cycle, types included).
export { type StateFacts, WorkerRegistry } from "./registry";
export type { Replies } from "./replies";
export { type Usage, WorkerRun } from "./worker-run";
