// Recovery's surface: a restart, a dead opencode, a reconnect.
// Code outside engine/recovery/ imports only this file (scripts/layers.mjs).
export { Recovery } from "./recovery";
