import { z } from "zod";
import { showUntrusted } from "./untrusted";

/** The Web Crypto random source, present in Node ≥ 19 and every browser (shared/ is typed without either's library). */
const random = (globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto;

/** A new id: a prefix, the time in base 36 and 24 random bits (ids of workers, batches and grants). */
export function newId(prefix: string): string {
  const r = random.getRandomValues(new Uint8Array(3));
  return `${prefix}-${Date.now().toString(36)}${[...r].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * An id a client may name (a job's, where none means the latest): at most 200 characters — every id the engine makes is
 * about 20 — so a refusal quotes it whole (an id of 200,000 characters came back in "unknown worker …").
 */
export const IdText = () => z.string().max(200, "an id is at most 200 characters");

/** An id a client names (a worker's, batch's, attempt group's, job's): required, and bounded as IdText. */
export const IdRef = (field: string) => IdText().min(1, `${field} is required`);

/**
 * An id a client named, quoted inside the engine's refusal ("unknown worker …"): one line, every control, bidi or
 * invisible character marked, bounded (IdText's 200). An id the engine made reads as itself: `"w-m1x2y3ab12cd"`.
 */
export const quotedId = (id: string): string => JSON.stringify(showUntrusted(id, { lines: false, max: 200 }));
