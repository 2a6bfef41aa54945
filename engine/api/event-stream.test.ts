// The `events` subscription as the HTTP server writes it itself (event-stream.ts), read by the real tRPC client: every
// event in order with its cursor, a resume after a cursor replays what was missed, a stale cursor is a reset, one JSON
// per event for all subscribers, a subscriber that goes is unsubscribed; a request it does not serve still gets tRPC's answer.
import { EventEmitter } from "node:events";
import http from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { API_PATH } from "../../shared/api";
import type { Delivered, EngineEvent } from "../../shared/events";
import { EventBus } from "../events";
import type { Engine } from "../workers";
import { connect } from "./client";
import { BACKLOG_MAX, serveEvents } from "./event-stream";
import { type ApiServer, startApiServer } from "./server";

const servers: ApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function rig() {
  const bus = new EventBus();
  const server = await startApiServer({ engine: { bus } as unknown as Engine, version: "test", instanceId: "i", shutdown: () => {} });
  servers.push(server);
  return { bus, server, client: connect({ port: server.port, token: server.token }, "cli:test") };
}

const notice = (n: number) => ({ type: "notice", level: "info", message: `n${n}`, ts: n }) as EngineEvent;
const until = async (what: string, f: () => boolean) => {
  for (let i = 0; i < 400 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
};

function subscribe(client: ReturnType<typeof connect>, lastEventId?: string) {
  const got: { id: string; event: EngineEvent }[] = [];
  const errors: unknown[] = [];
  const sub = client.events.subscribe(
    { lastEventId },
    { onData: (d: { id: string; data: EngineEvent }) => got.push({ id: d.id, event: d.data }), onError: (e) => errors.push(e) },
  );
  return { got, errors, sub };
}

/** The raw response of a GET on the events path (what goes over the wire). */
function raw(server: ApiServer, query: string, until: (text: string) => boolean): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${server.url}${API_PATH}/events${query}`,
      { headers: { authorization: `Bearer ${server.token}`, host: `127.0.0.1:${server.port}` } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
          if (until(text)) {
            resolve({ status: res.statusCode!, headers: res.headers, text });
            req.destroy();
          }
        });
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on("error", reject);
  });
}

describe("the events subscription, written by the server itself", () => {
  it("the tRPC client gets every event in order with its cursor; a resume after a cursor replays exactly what came after it", async () => {
    const { bus, client } = await rig();
    const a = subscribe(client);
    await new Promise((r) => setTimeout(r, 200));
    const sent: Delivered[] = [];
    for (let i = 1; i <= 50; i++) sent.push(bus.publish(notice(i)));
    await until("50 events", () => a.got.length === 50);
    expect(a.got).toEqual(sent.map((d) => ({ id: d.cursor, event: d.event })));
    a.sub.unsubscribe();

    const b = subscribe(client, sent[39]!.cursor);
    await until("the 10 after the cursor", () => b.got.length === 10);
    bus.publish(notice(51));
    await until("the next one", () => b.got.length === 11);
    expect(b.got.map((g) => (g.event as { message: string }).message)).toEqual([...Array.from({ length: 10 }, (_, i) => `n${i + 41}`), "n51"]);
    expect(b.errors).toEqual([]);
    b.sub.unsubscribe();

    const c = subscribe(client, "another-epoch:5");
    await until("a reset", () => c.got.length === 1);
    expect(c.got[0]!.event.type).toBe("reset");
    c.sub.unsubscribe();
  });

  it("tRPC's frames: connected first, then data with its id; the same event's JSON made once for all subscribers; a subscriber that goes is let go", async () => {
    const { bus, server } = await rig();
    const listeners = () => (bus as unknown as { emitter: { listenerCount(e: string): number } }).emitter.listenerCount("event");
    const first = raw(server, "?input=%7B%7D", (t) => t.includes("n3"));
    const second = raw(server, `?input=${encodeURIComponent(JSON.stringify({ lastEventId: null }))}`, (t) => t.includes("n3"));
    await until("two subscribers", () => listeners() === 2);
    const e1 = bus.publish(notice(1));
    const e2 = bus.publish(notice(2));
    let serialized = 0;
    const n3 = notice(3);
    const e3 = bus.publish({ ...n3, toJSON: () => (serialized++, n3) } as unknown as EngineEvent);
    const got = await Promise.all([first, second]);
    expect(serialized).toBe(1);
    for (const r of got) {
      expect(r.status).toBe(200);
      expect(r.headers).toMatchObject({ "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", vary: "trpc-accept, accept" });
      expect(r.text).toBe(
        `event: connected\ndata: {"reconnectAfterInactivityMs":40000}\n\n` +
          `data: ${JSON.stringify(e1.event)}\nid: ${e1.cursor}\n\n` +
          `data: ${JSON.stringify(e2.event)}\nid: ${e2.cursor}\n\n` +
          `data: ${JSON.stringify(n3)}\nid: ${e3.cursor}\n\n`,
      );
    }
    await until("both let go", () => listeners() === 0);
  });

  it("an EventSource's own reconnect (Last-Event-ID header) resumes after it; a request it does not serve gets tRPC's answer", async () => {
    const { bus, server } = await rig();
    const sent = [1, 2, 3].map((n) => bus.publish(notice(n)));
    const resumed = await new Promise<string>((resolve, reject) => {
      const req = http.get(
        `${server.url}${API_PATH}/events?input=%7B%7D`,
        { headers: { authorization: `Bearer ${server.token}`, "last-event-id": sent[0]!.cursor } },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            text += c;
            if (text.includes("n3")) {
              resolve(text);
              req.destroy();
            }
          });
        },
      );
      req.on("error", reject);
    });
    expect(resumed).not.toContain('"n1"');
    expect(resumed).toContain(`id: ${sent[1]!.cursor}\n`);
    // a malformed input: tRPC's own error, as before
    const bad = await raw(server, `?input=${encodeURIComponent(JSON.stringify({ lastEventId: 5 }))}`, (t) => t.includes("error"));
    expect(bad.text).toMatch(/serialized-error|BAD_REQUEST|bad-input/);
    // the tRPC client still sees the stream work after a bad request
    const { got, sub } = subscribe(connect({ port: server.port, token: server.token }, "cli:test"), sent[2]!.cursor);
    bus.publish(notice(4));
    await until("the next event", () => got.length === 1);
    sub.unsubscribe();
  });

  it("a reader that reads slowly: each write held for the socket's drain lets go of what it waited with (no listener per held write)", async () => {
    const bus = new EventBus();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    // A response whose socket is always full: every write waits for a drain, which comes a moment later.
    const req = new EventEmitter();
    const frames: string[] = [];
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      writeHead: () => res,
      write(frame: string) {
        frames.push(frame);
        setImmediate(() => res.emit("drain"));
        return false;
      },
      end() {
        res.writableEnded = true;
        res.emit("close");
      },
    });
    // Replayed after a cursor: forty writes, each held until its drain.
    const from = bus.publish(notice(0)).cursor;
    for (let n = 1; n <= 40; n++) bus.publish(notice(n));
    const served = serveEvents({ bus } as unknown as Engine, from, req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
    try {
      await until("the forty events written", () => frames.some((f) => f.includes('"n40"')));
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes("abort listeners"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      req.emit("close");
      await served;
    }
    expect(res.writableEnded).toBe(true);
  });

  it("a write held past the ping's time: the ping does not take the held write's drain (the stream goes on after it)", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "Date"] });
    const bus = new EventBus();
    const req = new EventEmitter();
    const frames: string[] = [];
    let full = true;
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      writeHead: () => res,
      write(frame: string) {
        frames.push(frame);
        return !full;
      },
      end() {
        res.writableEnded = true;
        res.emit("close");
      },
    });
    const from = bus.publish(notice(0)).cursor;
    bus.publish(notice(1));
    const served = serveEvents({ bus } as unknown as Engine, from, req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
    try {
      // The connected frame is held (the socket is full) past the ping's time.
      await until("the connected frame", () => frames.length === 1);
      vi.advanceTimersByTime(20_000);
      // The reader reads at last: the socket drains and takes writes again.
      full = false;
      res.emit("drain");
      await until("the replayed event", () => frames.some((f) => f.includes('"n1"')));
      bus.publish(notice(2));
      await until("the next event", () => frames.some((f) => f.includes('"n2"')));
    } finally {
      vi.useRealTimers();
      req.emit("close");
      await served;
    }
  });

  it("a reader that stops reading is let go once BACKLOG_MAX events wait for it: its connection closed, the bus let go", async () => {
    const bus = new EventBus();
    let subscribers = 0;
    const counted = {
      ...bus,
      since: bus.since.bind(bus),
      get cursor() {
        return bus.cursor;
      },
      subscribe(fn: (d: Delivered) => void) {
        subscribers++;
        const off = bus.subscribe(fn);
        return () => {
          subscribers--;
          off();
        };
      },
    };
    const req = new EventEmitter();
    let destroyed = false;
    let written = 0;
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      writeHead: () => res,
      write() {
        written++;
        return written === 1; // takes the connected frame, then never drains
      },
      end() {
        res.writableEnded = true;
      },
      destroy() {
        destroyed = true;
        res.emit("close");
      },
    });
    const served = serveEvents({ bus: counted } as unknown as Engine, undefined, req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
    await until("subscribed", () => subscribers === 1);
    for (let n = 0; n <= BACKLOG_MAX + 1; n++) bus.publish(notice(n));
    await until("the reader let go", () => destroyed);
    await served;
    expect(subscribers).toBe(0);
    expect(written).toBeLessThanOrEqual(2); // the connected frame, perhaps the first event
  });

  it("an event's text cannot make a frame of its own (newlines, CR, id: and data: lines in a worker's words stay inside one data line)", async () => {
    const bus = new EventBus();
    const req = new EventEmitter();
    let text = "";
    const res = Object.assign(new EventEmitter(), {
      writableEnded: false,
      writeHead: () => res,
      write(frame: string) {
        text += frame;
        return true;
      },
      end() {
        res.writableEnded = true;
      },
    });
    const from = bus.publish(notice(0)).cursor;
    const evil = { type: "notice", level: "info", message: "a\n\nid: 1:999\r\ndata: {}\revent: ping\u2028\n", ts: 1 } as EngineEvent;
    const sent = bus.publish(evil);
    const served = serveEvents({ bus } as unknown as Engine, from, req as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
    await until("the event written", () => text.includes(`id: ${sent.cursor}`));
    req.emit("close");
    await served;
    const frames = text.split("\n\n").filter(Boolean);
    expect(frames).toHaveLength(2); // connected, the event
    expect(frames[1]!.split(/\r\n|\r|\n/)).toEqual([`data: ${JSON.stringify(evil)}`, `id: ${sent.cursor}`]);
  });
});
