// The workers' surface: the engine that composes every service, and what the API runs over its public methods.
// Code outside engine/workers/ imports only this file (scripts/layers.mjs); no service below imports it.
export { Engine } from "./engine";
export { continueOnNewBase, mergeBatch, pruneBranches, retryWorker, revertLanded } from "./housekeeping";
export { listWorkers } from "./listing";
export { pushWork } from "./push";
