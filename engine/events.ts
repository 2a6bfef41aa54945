import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import path from "node:path";
import type { Delivered, EngineEvent } from "../shared/events";
import { readJson, writeJsonAtomic } from "./store";

/**
 * The engine's fan-out: every event gets a cursor `<epoch>:<seq>`; a ring of recent events lets a reconnecting client
 * resume without missing anything — across an engine restart too: the epoch belongs to the state dir, worker events
 * carry their sequence number into their log (`busSeq`), and a new run restores them and numbers on after them.
 * A cursor of another state dir, or older than the ring, yields `reset`: refetch state.
 */
export class EventBus {
  readonly epoch: string;
  private seq: number;
  /** Events at or below this sequence number are no longer replayable. */
  private floor = 0;
  private readonly ring: Delivered[] = [];
  private readonly emitter = new EventEmitter();
  private readonly capacity: number;

  constructor(opts: { epoch?: string; capacity?: number } = {}) {
    this.epoch = opts.epoch ?? randomBytes(4).toString("hex");
    this.capacity = opts.capacity ?? 20_000;
    // Transient events are not logged, so a client may hold a cursor past the last logged one. Numbering from the
    // clock (µs) keeps every new cursor above any cursor of an earlier run, unless it emitted > 1 event per µs.
    this.seq = Date.now() * 1000;
    this.emitter.setMaxListeners(0);
  }

  /** The epoch of the bus of a state dir, created on first use. */
  static forStateDir(stateDir: string, capacity?: number): EventBus {
    const file = path.join(stateDir, "events.json");
    let epoch = readJson<{ epoch?: string }>(file, {}).epoch;
    if (!epoch) {
      epoch = randomBytes(4).toString("hex");
      writeJsonAtomic(file, { epoch });
    }
    return new EventBus({ epoch, capacity });
  }

  /** The sequence number the next published event will get. */
  get nextSeq(): number {
    return this.seq + 1;
  }

  publish(event: EngineEvent): Delivered {
    const d: Delivered = { cursor: `${this.epoch}:${++this.seq}`, event };
    this.push(d);
    this.emitter.emit("event", d);
    return d;
  }

  /** Puts logged events of earlier runs (with their `busSeq`) back in the ring, so their cursors resume. */
  restore(events: (EngineEvent & { busSeq?: number })[]): void {
    const logged = events.filter((e) => typeof e.busSeq === "number").sort((a, b) => a.busSeq! - b.busSeq!);
    const kept = logged.slice(-this.capacity);
    if (kept.length < logged.length) this.floor = logged[logged.length - kept.length - 1]!.busSeq!;
    for (const e of kept) this.ring.push({ cursor: `${this.epoch}:${e.busSeq}`, event: e });
    this.seq = Math.max(this.seq, kept.at(-1)?.busSeq ?? 0);
  }

  private push(d: Delivered) {
    this.ring.push(d);
    if (this.ring.length > this.capacity) this.floor = seqOf(this.ring.splice(0, this.ring.length - this.capacity).at(-1)!.cursor);
  }

  get cursor(): string {
    return `${this.epoch}:${this.seq}`;
  }

  /** Events after `cursor`, or `reset` when they can no longer be replayed. */
  since(cursor: string | null | undefined): { events: Delivered[]; reset: boolean } {
    if (!cursor) return { events: [], reset: false };
    const [epoch, n] = cursor.split(":");
    const seq = Number(n);
    if (epoch !== this.epoch || !Number.isFinite(seq) || seq < this.floor || seq > this.seq) return { events: [], reset: true };
    // Sequence numbers in the ring increase but have gaps (restored runs), so search for the first one after `seq`.
    let lo = 0;
    let hi = this.ring.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (seqOf(this.ring[mid]!.cursor) <= seq) lo = mid + 1;
      else hi = mid;
    }
    return { events: this.ring.slice(lo), reset: false };
  }

  subscribe(fn: (d: Delivered) => void): () => void {
    this.emitter.on("event", fn);
    return () => this.emitter.off("event", fn);
  }
}

export const seqOf = (cursor: string) => Number(cursor.slice(cursor.indexOf(":") + 1));
