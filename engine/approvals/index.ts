// The approvals' surface: the queue of asks and answers, and what an ask is looked at for.
// Code outside engine/approvals/ imports only this file (scripts/layers.mjs).
export { Approvals } from "./queue";
