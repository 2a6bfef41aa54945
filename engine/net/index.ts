// The network helpers' surface: bounded reads, answers parsed off the engine's thread, fetch failures in words, the
// one SSE reader (its splitter, and a body's payloads), the network guard's classification of local addresses, and the
// egress proxy opencode serve's connections go through. Code outside engine/net/ imports only this file
// (scripts/layers.mjs).
export { BodyTooLarge, ENDPOINT_MAX_BYTES, readBounded, readBoundedBytes, readPrefix } from "./bounded";
export { describeFetchError } from "./cause";
export { type Keep, type MetricsReading, PARSE_INLINE_MAX, parseBody, readJsonBounded, type SlotsSummary } from "./parse";
export { SSE_EVENT_MAX, SseEventTooLarge, SseSplitter, sseData } from "./sse";
export { type Lookup, localAddress, localTarget, lookupHost, resolvesLocal } from "./address";
export { bypassesProxy, directEntries, EGRESS_CAP, EgressProxy, type EgressOptions } from "./egress";
