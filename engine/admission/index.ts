// Admission's surface: reading endpoints' capacity, the pools that admit workers, preflight of a target.
// Code outside engine/admission/ imports only this file (scripts/layers.mjs).
export { type EndpointStatus, readEndpoint } from "./capacity";
export { Pools } from "./pools";
export { notModelApi, preflightEndpoint, preflightTarget, refusesWithoutKey, unlistedModel, unreachable } from "./preflight";
