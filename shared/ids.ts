/** A new id: a prefix, the time in base 36 and 24 random bits (ids of workers, batches and grants). */
export function newId(prefix: string): string {
  const r = globalThis.crypto.getRandomValues(new Uint8Array(3));
  return `${prefix}-${Date.now().toString(36)}${[...r].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
