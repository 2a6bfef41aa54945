import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { EngineEvent } from "../shared/events";
import { EventBus, seqOf } from "./events";

const notice = (n: number) => ({ type: "notice" as const, level: "info" as const, message: String(n), ts: n });
const logged = (busSeq: number) => ({ type: "worker.state" as const, state: "running" as const, workerId: "w", seq: busSeq, ts: busSeq, busSeq });

describe("EventBus", () => {
  it("replays everything after a cursor, and nothing twice", () => {
    const bus = new EventBus();
    const a = bus.publish(notice(1));
    bus.publish(notice(2));
    bus.publish(notice(3));
    expect(bus.since(a.cursor).events.map((d) => d.event)).toEqual([notice(2), notice(3)]);
    expect(bus.since(bus.cursor).events).toEqual([]);
  });

  it("asks for a reset when the cursor is from another state dir, fell off the ring, or is from the future", () => {
    const bus = new EventBus({ capacity: 3 });
    const first = bus.publish(notice(1));
    const fourth = [2, 3, 4].map((i) => bus.publish(notice(i))).at(-1)!;
    for (let i = 5; i <= 6; i++) bus.publish(notice(i));
    expect(bus.since(first.cursor).reset).toBe(true);
    expect(bus.since("deadbeef:1").reset).toBe(true);
    expect(bus.since(`${bus.epoch}:${seqOf(bus.cursor) + 10}`).reset).toBe(true);
    const recent = bus.since(fourth.cursor);
    expect(recent.reset).toBe(false);
    expect(recent.events.map((d) => (d.event as { ts: number }).ts)).toEqual([5, 6]);
  });

  it("a new run of the same state dir resumes a cursor of the last run from the logged events, and numbers on above it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-bus-"));
    const one = EventBus.forStateDir(dir);
    const log: EngineEvent[] = [];
    const record = (bus: EventBus) => {
      const e = { ...logged(0), busSeq: bus.nextSeq };
      log.push(e);
      return bus.publish(e);
    };
    record(one);
    const clientCursor = one.publish(notice(1)).cursor; // a client last saw a transient event
    const missed = [record(one), record(one)];
    // kill -9: the ring is gone; only the log is left.
    const two = EventBus.forStateDir(dir);
    expect(two.epoch).toBe(one.epoch);
    two.restore(log);
    const after = record(two);
    expect(seqOf(after.cursor)).toBeGreaterThan(seqOf(missed[1]!.cursor));
    const { reset, events } = two.since(clientCursor);
    expect(reset).toBe(false);
    expect(events.map((d) => d.cursor)).toEqual([...missed, after].map((d) => d.cursor));
  });

  it("restoring more logged events than the ring holds makes the oldest cursors ask for a reset", () => {
    const bus = new EventBus({ capacity: 2 });
    bus.restore([logged(10), logged(30), logged(20)]);
    expect(bus.since(`${bus.epoch}:5`).reset).toBe(true);
    expect(bus.since(`${bus.epoch}:10`).events.map((d) => seqOf(d.cursor))).toEqual([20, 30]);
    expect(bus.since(`${bus.epoch}:25`).events.map((d) => seqOf(d.cursor))).toEqual([30]);
  });
});
