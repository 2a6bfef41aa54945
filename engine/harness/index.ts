// The harness's surface: how the engine runs opencode (one server per target), the typed port to it, and its events
// turned into the engine's. Code outside engine/harness/ imports only this file (scripts/layers.mjs).
export { WORKER_AGENT } from "./config";
export { type Harness, type HarnessServer, opencodeHarness } from "./harness";
export { endStaleServer } from "./opencode-server";
export { failureText, noAnswer, type OpencodePort, okValue, type PortResult, type TurnMessage } from "./port";
export { modelFor, OpencodeServers } from "./servers";
export { type OpencodeEvent, permissionAsk, questionAsk, Translator } from "./translate";
