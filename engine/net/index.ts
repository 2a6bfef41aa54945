// The network helpers' surface: bounded reads, fetch failures in words, the SSE payload reader.
// Code outside engine/net/ imports only this file (scripts/layers.mjs).
export { BodyTooLarge, ENDPOINT_MAX_BYTES, readBounded } from "./bounded";
export { describeFetchError } from "./cause";
export { sseData } from "./sse";
