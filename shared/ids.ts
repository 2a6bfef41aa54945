/** The Web Crypto random source, present in Node ≥ 19 and every browser (shared/ is typed without either's library). */
const random = (globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): Uint8Array } }).crypto;

/** A new id: a prefix, the time in base 36 and 24 random bits (ids of workers, batches and grants). */
export function newId(prefix: string): string {
  const r = random.getRandomValues(new Uint8Array(3));
  return `${prefix}-${Date.now().toString(36)}${[...r].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
