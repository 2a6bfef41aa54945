import { describe, expect, it } from "vitest";
import { EventBus } from "./events";

const notice = (n: number) => ({ type: "notice" as const, level: "info" as const, message: String(n), ts: n });

describe("EventBus", () => {
  it("replays everything after a cursor, and nothing twice", () => {
    const bus = new EventBus();
    const a = bus.publish(notice(1));
    bus.publish(notice(2));
    bus.publish(notice(3));
    expect(bus.since(a.cursor).events.map((d) => d.event)).toEqual([notice(2), notice(3)]);
    expect(bus.since(bus.cursor).events).toEqual([]);
  });
  it("asks for a reset when the cursor is from another run or fell off the ring", () => {
    const bus = new EventBus(3);
    const first = bus.publish(notice(1));
    for (let i = 2; i <= 6; i++) bus.publish(notice(i));
    expect(bus.since(first.cursor).reset).toBe(true);
    expect(bus.since("deadbeef:1").reset).toBe(true);
    const recent = bus.since(`${bus.epoch}:4`);
    expect(recent).toEqual({ reset: false, events: expect.any(Array) });
    expect(recent.events.map((d) => (d.event as { ts: number }).ts)).toEqual([5, 6]);
  });
});
