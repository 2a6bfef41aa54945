/**
 * An endpoint pool: a target may name several endpoints of the same model; total slots is their sum and
 * workers are spread over them by free slots.
 */
import type { ServingEndpoint } from "../../shared/target";

export class EndpointPool {
  private readonly busy = new Map<string, number>();
  constructor(private readonly endpoints: ServingEndpoint[]) {
    if (!endpoints.length) throw new Error("an endpoint pool needs at least one endpoint");
    for (const e of endpoints) this.busy.set(e.url, 0);
  }

  get totalSlots(): number {
    return this.endpoints.reduce((a, e) => a + e.slots, 0);
  }

  get freeSlots(): number {
    return this.endpoints.reduce((a, e) => a + e.slots - (this.busy.get(e.url) ?? 0), 0);
  }

  /** The endpoint with the most free slots (ties: first listed), or null when all are full. */
  acquire(): ServingEndpoint | null {
    let best: ServingEndpoint | null = null;
    let bestFree = 0;
    for (const e of this.endpoints) {
      const free = e.slots - (this.busy.get(e.url) ?? 0);
      if (free > bestFree) {
        best = e;
        bestFree = free;
      }
    }
    if (best) this.busy.set(best.url, (this.busy.get(best.url) ?? 0) + 1);
    return best;
  }

  release(url: string): void {
    const n = this.busy.get(url);
    if (n === undefined) throw new Error(`unknown endpoint ${url}`);
    this.busy.set(url, Math.max(0, n - 1));
  }
}
