// The egress proxy's identities and cap (egress.ts): each opencode serve has a key of its own, and one identity holds at
// most `cap` requests and tunnels through the proxy at once; past it a request is answered 503 at once (which frees the
// slot opencode's Bun would otherwise keep waiting: test/integration/egress-bun.test.ts shows the stall it prevents).
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EGRESS_CAP, EgressProxy } from "./egress";

const PUBLIC = "93.184.215.14";
/** A public server (played on loopback): `/hang` is never answered, anything else at once, on a kept connection. */
let pub: net.Server;
let pubPort = 0;
const held = { open: 0 };

beforeAll(async () => {
  pub = net.createServer((c) => {
    held.open++;
    c.on("close", () => held.open--);
    c.on("error", () => {});
    c.on("data", (b) => {
      if (!b.toString().includes(" /hang ")) c.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    });
  });
  await new Promise<void>((r) => pub.listen(0, "127.0.0.1", r));
  pubPort = (pub.address() as AddressInfo).port;
});
afterAll(() => pub.close());

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const basic = (u: URL) => `Basic ${Buffer.from(`${u.username}:${u.password}`).toString("base64")}`;

/** A connection to the proxy that sends `text` and keeps whatever comes back; open until `close()`. */
function hold(port: number, text: string) {
  const s = net.connect(port, "127.0.0.1", () => s.write(text));
  const got = { text: "", closed: false };
  s.on("data", (b) => (got.text += b));
  s.on("close", () => (got.closed = true));
  s.on("error", () => {});
  return { got, send: (t: string) => s.write(t), close: () => s.destroy() };
}

/** Waits until `ok()` or `ms` pass. */
async function until(ok: () => boolean, ms = 3000) {
  for (let t = 0; t < ms && !ok(); t += 20) await settle(20);
}

const connect = (auth: string) => `CONNECT pub.example.com:${pubPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`;
const get = (auth: string, p = "/hang") =>
  `GET http://pub.example.com:${pubPort}${p} HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`;

describe("the egress proxy's identities and cap", () => {
  it("the cap is well under the 256 requests Bun runs at once, and above the 64 idle sockets it keeps", () => {
    expect(EGRESS_CAP).toBeGreaterThan(64);
    expect(EGRESS_CAP).toBeLessThanOrEqual(128);
  });

  it("each identity has a key of its own: one identity's user name with another's key is refused (407)", async () => {
    const p = new EgressProxy({ lookup: async () => [PUBLIC], dial: () => "127.0.0.1" });
    try {
      const first = new URL(await p.start());
      const a = new URL(p.identity("test"));
      const b = new URL(p.identity("test"));
      expect(new Set([first.username, a.username, b.username]).size).toBe(3);
      expect(new Set([first.password, a.password, b.password]).size).toBe(3);
      expect(a.password.length).toBeGreaterThanOrEqual(32);
      const mixed = `Basic ${Buffer.from(`${a.username}:${b.password}`).toString("base64")}`;
      const port = Number(a.port);
      const bad = hold(port, get(mixed, "/ok"));
      const good = hold(port, get(basic(b), "/ok"));
      await until(() => bad.got.text.length > 0 && good.got.text.length > 0);
      expect(bad.got.text.split("\r\n")[0]).toBe("HTTP/1.1 407 Proxy Authentication Required");
      expect(good.got.text.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      bad.close();
      good.close();
    } finally {
      await p.close();
    }
  });

  it("an identity's connection past the cap is answered 503 at once, naming the cap; another identity is not; what closes frees its place", async () => {
    const log: string[] = [];
    const p = new EgressProxy({ lookup: async () => [PUBLIC], dial: () => "127.0.0.1", cap: 3, log: (l) => log.push(l) });
    const conns: ReturnType<typeof hold>[] = [];
    try {
      await p.start();
      const a = new URL(p.identity("target a's opencode"));
      const b = new URL(p.identity("test"));
      const port = Number(a.port);
      // A holds its 3: two tunnels to a page that never answers, one relayed request it never answers.
      const t1 = hold(port, connect(basic(a)));
      const t2 = hold(port, connect(basic(a)));
      const r1 = hold(port, get(basic(a)));
      conns.push(t1, t2, r1);
      await until(() => t1.got.text.includes(" 200 ") && t2.got.text.includes(" 200 ") && held.open >= 3);
      expect(t1.got.text).toMatch(/^HTTP\/1\.1 200 Connection Established/);

      // The 4th and 5th (a tunnel, a request) are answered at once, and closed.
      const start = Date.now();
      const over = hold(port, connect(basic(a)));
      const over2 = hold(port, get(basic(a)));
      conns.push(over, over2);
      await until(() => over.got.closed && over2.got.closed);
      expect(Date.now() - start).toBeLessThan(1000);
      expect(over.got.text.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable");
      expect(over2.got.text.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable");
      expect(over.got.text).toMatch(/already has 3 connections open through it \(its limit\)/);
      expect(over.got.text).not.toMatch(/Egress|Identity/);
      // one line for the flood, naming whose it is, not one per refusal
      expect(log.filter((l) => l.includes("its limit"))).toEqual([
        "egress: target a's opencode holds 3 connections through the proxy (its limit): more are refused until some end",
      ]);

      // B is not touched by A's flood.
      const bt = hold(port, connect(basic(b)));
      const bg = hold(port, get(basic(b), "/ok"));
      conns.push(bt, bg);
      await until(() => bt.got.text.length > 0 && bg.got.text.length > 0);
      expect(bt.got.text).toMatch(/^HTTP\/1\.1 200 Connection Established/);
      expect(bg.got.text).toMatch(/^HTTP\/1\.1 200 OK/);

      // A tunnel and the relayed request closing free two places.
      t1.close();
      r1.close();
      await settle(100);
      const again = hold(port, connect(basic(a)));
      const again2 = hold(port, get(basic(a), "/ok"));
      conns.push(again, again2);
      await until(() => again.got.text.length > 0 && again2.got.text.length > 0);
      expect(again.got.text).toMatch(/^HTTP\/1\.1 200 Connection Established/);
      expect(again2.got.text).toMatch(/^HTTP\/1\.1 200 OK/);
    } finally {
      for (const c of conns) c.close();
      await p.close();
    }
  });

  it("a request answered frees its place though its connection stays open (requests on one kept connection are counted one at a time)", async () => {
    const p = new EgressProxy({ lookup: async () => [PUBLIC], dial: () => "127.0.0.1", cap: 2 });
    try {
      await p.start();
      const a = new URL(p.identity("test"));
      const port = Number(a.port);
      const kept = hold(port, get(basic(a), "/ok"));
      for (let i = 1; i < 12; i++) {
        await until(() => (kept.got.text.match(/200 OK/g) ?? []).length >= i);
        kept.send(get(basic(a), "/ok"));
      }
      await until(() => (kept.got.text.match(/200 OK/g) ?? []).length >= 12);
      expect((kept.got.text.match(/200 OK/g) ?? []).length).toBe(12);
      // and the cap still has both places: two requests that hang are taken
      const h1 = hold(port, get(basic(a)));
      const h2 = hold(port, get(basic(a)));
      await settle(200);
      expect(h1.got.text + h2.got.text).toBe("");
      const third = hold(port, get(basic(a), "/ok"));
      await until(() => third.got.closed);
      expect(third.got.text.split("\r\n")[0]).toBe("HTTP/1.1 503 Service Unavailable");
      for (const c of [kept, h1, h2, third]) c.close();
    } finally {
      await p.close();
    }
  });

  it("identity() before start() is an error, not a URL without a port", () => {
    expect(() => new EgressProxy().identity("test")).toThrow(/not started/);
  });
});
