import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Delivered, EngineEvent } from "../shared/events";

/**
 * The engine's fan-out: every event gets a cursor; a ring of recent events lets a reconnecting client resume
 * without missing anything. A cursor from another engine run (or older than the ring) yields `reset`: refetch state.
 */
export class EventBus {
  readonly epoch = randomBytes(4).toString("hex");
  private seq = 0;
  private readonly ring: Delivered[] = [];
  private readonly emitter = new EventEmitter();

  constructor(private readonly capacity = 20_000) {
    this.emitter.setMaxListeners(0);
  }

  publish(event: EngineEvent): Delivered {
    const d: Delivered = { cursor: `${this.epoch}:${++this.seq}`, event };
    this.ring.push(d);
    if (this.ring.length > this.capacity) this.ring.splice(0, this.ring.length - this.capacity);
    this.emitter.emit("event", d);
    return d;
  }

  get cursor(): string {
    return `${this.epoch}:${this.seq}`;
  }

  /** Events after `cursor`, or `reset` when they can no longer be replayed. */
  since(cursor: string | null | undefined): { events: Delivered[]; reset: boolean } {
    if (!cursor) return { events: [], reset: false };
    const [epoch, n] = cursor.split(":");
    const seq = Number(n);
    if (epoch !== this.epoch || !Number.isFinite(seq)) return { events: [], reset: true };
    const first = this.ring[0] ? Number(this.ring[0].cursor.split(":")[1]) : this.seq + 1;
    if (seq < first - 1) return { events: [], reset: true };
    // The ring holds consecutive sequence numbers, so the position of `seq` is arithmetic.
    return { events: this.ring.slice(Math.max(0, seq - first + 1)), reset: false };
  }

  subscribe(fn: (d: Delivered) => void): () => void {
    this.emitter.on("event", fn);
    return () => this.emitter.off("event", fn);
  }
}
