// The budgets' surface: wall-clock and token budgets, the watchdog.
// Code outside engine/budgets/ imports only this file (scripts/layers.mjs).
export { Budgets, type Clock, realClock } from "./budgets";
