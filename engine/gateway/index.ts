// The key gateway's surface: the model key stays with the engine.
// Code outside engine/gateway/ imports only this file (scripts/layers.mjs).
export { KeyGateway } from "./gateway";
