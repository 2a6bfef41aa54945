// The store's surface: append-only worker logs, targets, atomic JSON files and the state dir's place.
// Code outside engine/store/ imports only this file (scripts/layers.mjs); an app takes only its allow-listed paths.ts.
export { readJson, writeJsonAtomic } from "./json-file";
export { stateDir } from "./paths";
export { TargetStore } from "./targets";
export { WorkerLogStore } from "./worker-log";
