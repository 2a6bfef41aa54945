// The egress proxy (egress.ts) under a second attacker's pass: what a worker's webfetch, or a page it fetches, can make
// opencode send the proxy, and what a public server can answer — real requests through the proxy against local stub
// servers (a public address played on loopback by the test's `dial`).
import dgram from "node:dgram";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dnsLookup } from "./address";
import { EgressProxy } from "./egress";
import { dnsServer } from "../../test/fixtures/dns-server";
import { raw } from "../../test/fixtures/raw-tcp";

const PUBLIC = "93.184.215.14";
let open: net.Server;
let openPort = 0;
const reached: string[] = [];
/** A public server (played on loopback): what `dial` reaches for a checked public address, on `pubPort`. */
let pub: net.Server;
let pubPort = 0;

beforeAll(async () => {
  // a local service the worker must never read
  open = net.createServer((s) => {
    reached.push("local service");
    s.on("error", () => {});
    s.end("HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nSECRET");
  });
  await new Promise<void>((r) => open.listen(0, "127.0.0.1", r));
  openPort = (open.address() as AddressInfo).port;
  pub = net.createServer((s) => {
    s.on("error", () => {});
    s.end("HTTP/1.1 200 OK\r\ncontent-length: 11\r\nconnection: close\r\n\r\npublic page");
  });
  await new Promise<void>((r) => pub.listen(0, "127.0.0.1", r));
  pubPort = (pub.address() as AddressInfo).port;
});
afterAll(() => {
  open.close();
  pub.close();
});

async function proxy(opts: ConstructorParameters<typeof EgressProxy>[0] = {}) {
  const dialled: string[] = [];
  const p = new EgressProxy({
    lookup: async (h) => (h === "pub.example.com" ? [PUBLIC] : []),
    ...opts,
    dial: (a) => (dialled.push(a), opts.dial ? opts.dial(a) : "127.0.0.1"),
  });
  const url = new URL(await p.start());
  const auth = `Basic ${Buffer.from(`${url.username}:${url.password}`).toString("base64")}`;
  return { p, port: Number(url.port), auth, dialled };
}

const first = (s: string) => s.split("\r\n")[0];

describe("names", () => {
  it("a CNAME chain that ends at a local address is refused; one that ends at a public one is reached there", async () => {
    const dns = await dnsServer({
      "a.example.com": "cname:b.example.com",
      "b.example.com": "cname:c.example.net",
      "c.example.net": "127.0.0.1",
      "ok.example.com": "cname:pub.example.net",
      "pub.example.net": PUBLIC,
    });
    const { p, port, auth, dialled } = await proxy({ lookup: dnsLookup([dns.server]) });
    try {
      const bad = await raw(port, `CONNECT a.example.com:${openPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
      expect(first(bad)).toBe("HTTP/1.1 403 Forbidden");
      expect(bad).toMatch(/a\.example\.com, which resolves to 127\.0\.0\.1/);
      const ok = await raw(port, `CONNECT ok.example.com:${pubPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
      expect(first(ok)).toBe("HTTP/1.1 200 Connection Established");
      expect(dialled).toEqual([PUBLIC]);
    } finally {
      dns.close();
      await p.close();
    }
  });

  it("answers mixing public and local addresses are refused, whichever comes first, by name and trailing-dot name alike", async () => {
    const { p, port, auth, dialled } = await proxy({
      lookup: async (h) => (h === "mixed.example.com" ? [PUBLIC, "10.0.0.5"] : h === "mixed6.example.com" ? [PUBLIC, "fd00::5"] : []),
    });
    try {
      for (const h of ["mixed.example.com", "mixed.example.com.", "MIXED.example.com", "mixed6.example.com"]) {
        const g = await raw(port, `GET http://${h}:${openPort}/ HTTP/1.1\r\nhost: ${h}\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
        const c = await raw(port, `CONNECT ${h}:${openPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
        expect([h, first(g), first(c)]).toEqual([h, "HTTP/1.1 403 Forbidden", "HTTP/1.1 403 Forbidden"]);
      }
      expect(dialled).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it("very long names, over-long labels, IDN and punycode spellings of local names: refused or not resolved, never reached, never a crash", async () => {
    const { p, port, auth, dialled } = await proxy();
    try {
      const long = `${"a".repeat(63)}.`.repeat(5) + "example.com";
      for (const h of [long, `${"b".repeat(64)}.example.com`, `${"c.".repeat(2000)}example.com`]) {
        const g = await raw(port, `GET http://${h}:${openPort}/ HTTP/1.1\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
        const c = await raw(port, `CONNECT ${h}:${openPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
        expect([h.length, /^HTTP\/1\.1 (502|400|431|403)/.test(g), /^HTTP\/1\.1 (502|400|431|403)/.test(c)]).toEqual([h.length, true, true]);
      }
      for (const h of ["ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", "１２７．０．０．１", "xn--localhost-", "localhost。", "127。0。0。1", "metadata．google．internal"]) {
        const g = await raw(port, Buffer.from(`GET http://${h}:${openPort}/ HTTP/1.1\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`));
        const c = await raw(port, Buffer.from(`CONNECT ${h}:${openPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`));
        expect([h, /^HTTP\/1\.1 (502|400|403)|^$/.test(g), /^HTTP\/1\.1 (502|400|403)|^$/.test(c)]).toEqual([h, true, true]);
      }
      expect(dialled).toEqual([]);
    } finally {
      await p.close();
    }
  });
});

describe("request forms", () => {
  it("CONNECT without a port, with userinfo, with a path, and odd Host headers: 400 or refused, never reached", async () => {
    const { p, port, auth, dialled } = await proxy();
    try {
      for (const t of [
        "127.0.0.1",
        "[::1]",
        "pub.example.com",
        "pub.example.com:",
        "user@pub.example.com:443",
        "pub.example.com:443/x",
        ":443",
        "[::ffff:127.0.0.1]:" + openPort,
        "http://pub.example.com:443",
      ]) {
        const c = await raw(port, `CONNECT ${t} HTTP/1.1\r\nhost: 127.0.0.1:${openPort}\r\nproxy-authorization: ${auth}\r\n\r\n`);
        expect([t, /^HTTP\/1\.1 (400|403)/.test(c)]).toEqual([t, true]);
      }
      for (const host of [`user:pw@127.0.0.1:${openPort}`, ` 127.0.0.1:${openPort}`, `127.0.0.1:${openPort} pub.example.com`, ""]) {
        const g = await raw(port, `GET / HTTP/1.1\r\nhost: ${host}\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
        expect([host, /^HTTP\/1\.1 400/.test(g)]).toEqual([host, true]);
      }
      expect(dialled).toEqual([]);
      expect(reached).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it("Expect: 100-continue, to a public page and to a local one: the body reaches the public page; the local one is refused", async () => {
    const bodies: string[] = [];
    const up = http.createServer((req, res) => {
      let b = "";
      req.on("data", (d) => (b += d));
      req.on("end", () => (bodies.push(b), res.end("posted")));
    });
    await new Promise<void>((r) => up.listen(0, "127.0.0.1", r));
    const upPort = (up.address() as AddressInfo).port;
    const { p, port, auth } = await proxy();
    try {
      const post = (target: string) =>
        new Promise<string>((resolve) => {
          const req = http.request({
            host: "127.0.0.1",
            port,
            method: "POST",
            path: target,
            headers: { "proxy-authorization": auth, expect: "100-continue", "content-length": 5 },
          });
          req.on("continue", () => req.end("hello"));
          req.on("response", (res) => {
            let b = "";
            res.on("data", (d) => (b += d));
            res.on("end", () => resolve(`${res.statusCode} ${b}`));
          });
          req.on("error", (e) => resolve(`error ${e.message}`));
          req.setTimeout(3000, () => req.destroy(new Error("no answer")));
        });
      expect(await post(`http://pub.example.com:${upPort}/`)).toBe("200 posted");
      expect(bodies).toEqual(["hello"]);
      expect(await post(`http://127.0.0.1:${openPort}/`)).toMatch(/^403 /);
      expect(reached).toEqual([]);
    } finally {
      await p.close();
      up.close();
    }
  });
});

/** A public server (played on loopback) that counts its open connections: `/hang` is never answered, `/drip` never ends, `/101` switches protocols unasked. */
async function countingUpstream() {
  const state = { open: 0, accepted: 0, peak: 0 };
  const s = net.createServer((c) => {
    state.open++;
    state.accepted++;
    state.peak = Math.max(state.peak, state.open);
    c.on("close", () => state.open--);
    c.on("error", () => {});
    c.once("data", (b) => {
      const path = b.toString().split(" ")[1] ?? "";
      if (path === "/hang") return;
      if (path === "/101") return void c.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\nRAW");
      if (path === "/drip") {
        c.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
        const t = setInterval(() => c.write("1\r\nx\r\n"), 50);
        c.on("close", () => clearInterval(t));
        return;
      }
      c.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    });
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return { port: (s.address() as AddressInfo).port, state, close: () => s.close() };
}
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("requests the proxy cannot serve", () => {
  it("a request Node's parser refuses is answered 400 (431 for an oversized head) and its connection closed; the proxy goes on serving (it was closed without a word)", async () => {
    const { p, port, auth, dialled } = await proxy();
    try {
      const cases: [string, string | Buffer][] = [
        [
          "CL/TE conflict",
          `POST http://pub.example.com:${pubPort}/ HTTP/1.1\r\nhost: x\r\n${"proxy-authorization: " + auth}\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n`,
        ],
        ["space in a header name", `GET http://pub.example.com:${pubPort}/ HTTP/1.1\r\nhost : x\r\nproxy-authorization: ${auth}\r\n\r\n`],
        ["NUL in the request line", `GET http://pub.example.com\0:${pubPort}/ HTTP/1.1\r\nhost: x\r\n\r\n`],
        ["non-ASCII request target", Buffer.from(`CONNECT ⓛⓞⓒⓐⓛⓗⓞⓢⓣ:${openPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`)],
        ["not HTTP", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"],
      ];
      for (const [what, text] of cases) expect([what, first(await raw(port, text))]).toEqual([what, "HTTP/1.1 400 Bad Request"]);
      const big = await raw(
        port,
        `GET http://pub.example.com:${pubPort}/ HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\nproxy-authorization: ${auth}\r\n\r\n`,
      );
      expect(first(big)).toBe("HTTP/1.1 431 Request Header Fields Too Large");
      const ok = await raw(port, `GET http://pub.example.com:${pubPort}/ HTTP/1.1\r\nhost: x\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
      expect(first(ok)).toBe("HTTP/1.1 200 OK");
      expect(dialled).toEqual([PUBLIC]);
    } finally {
      await p.close();
    }
  });

  it("an error nothing expected while serving one request (here the test's dial throws) is a 502 for that request, relayed or tunnelled (it was a connection closed without a word)", async () => {
    const { p, port, auth } = await proxy({
      dial: () => {
        throw new Error("no route");
      },
    });
    try {
      const g = await raw(port, `GET http://pub.example.com:${pubPort}/ HTTP/1.1\r\nhost: x\r\nproxy-authorization: ${auth}\r\n\r\n`);
      const c = await raw(port, `CONNECT pub.example.com:${pubPort} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
      expect([first(g), first(c)]).toEqual(["HTTP/1.1 502 Bad Gateway", "HTTP/1.1 502 Bad Gateway"]);
      expect(g).toMatch(/could not serve this request: no route/);
    } finally {
      await p.close();
    }
  });
});

describe("framing", () => {
  it("a chunked body of a GET, DELETE or OPTIONS reaches the server as that request's body, never as a second request (it was written unframed)", async () => {
    const got: string[] = [];
    const up = http.createServer((req, res) => {
      let b = "";
      req.on("data", (d) => (b += d));
      req.on("end", () => (got.push(`${req.method} ${req.url} ${JSON.stringify(b)}`), res.end("ok")));
    });
    await new Promise<void>((r) => up.listen(0, "127.0.0.1", r));
    const upPort = (up.address() as AddressInfo).port;
    const { p, port, auth } = await proxy();
    try {
      const body = "GET /smuggled HTTP/1.1\r\nhost: pub.example.com\r\n\r\n";
      for (const m of ["GET", "DELETE", "OPTIONS", "POST"]) {
        const g = await raw(
          port,
          `${m} http://pub.example.com:${upPort}/ HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
        );
        expect([m, first(g)]).toEqual([m, "HTTP/1.1 200 OK"]);
      }
      await settle(100);
      expect(got).toEqual(["GET", "DELETE", "OPTIONS", "POST"].map((m) => `${m} / ${JSON.stringify(body)}`));
    } finally {
      await p.close();
      up.close();
    }
  });
});

describe("what is held, and for how long", () => {
  it("a request opencode gives up while its name is looked up opens no upstream connection (each was held, to nobody, until it idled out at 130 s); a CONNECT's is closed", async () => {
    const up = await countingUpstream();
    const { p, port, auth, dialled } = await proxy({ lookup: async (h) => (await settle(200), h === "pub.example.com" ? [PUBLIC] : []) });
    try {
      const get = `GET http://pub.example.com:${up.port}/hang HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`;
      await Promise.all(Array.from({ length: 10 }, () => raw(port, get, 50)));
      await settle(600);
      expect([up.state.accepted, dialled]).toEqual([0, []]);
      const connect = `CONNECT pub.example.com:${up.port} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`;
      await Promise.all(Array.from({ length: 10 }, () => raw(port, connect, 50)));
      await settle(600);
      expect(up.state.open).toBe(0);
    } finally {
      await p.close();
      up.close();
    }
  });

  it("requests pipelined on one connection are relayed one at a time, and those still waiting when opencode leaves are never dialled (300 in one write were 300 upstream connections at once, held after it left until they idled out)", async () => {
    const up = await countingUpstream();
    const { p, port, auth } = await proxy();
    try {
      const one = `GET http://pub.example.com:${up.port}/hang HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`;
      await raw(port, one.repeat(300), 1000);
      await settle(300);
      expect([up.state.peak, up.state.accepted, up.state.open]).toEqual([1, 1, 0]);
      // in order, each answered, when the server answers
      const ok = `GET http://pub.example.com:${up.port}/ok HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`;
      const got = await raw(port, ok.repeat(5), 1000);
      expect(got.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(5);
    } finally {
      await p.close();
      up.close();
    }
  });

  it("a 101 to a request that asked for no upgrade is a 502 at once (opencode's fetch was left waiting until it gave up)", async () => {
    const up = await countingUpstream();
    const { p, port, auth } = await proxy();
    try {
      // Within raw's limit (the old proxy answered nothing: the fetch waited until it gave up).
      const g = await raw(port, `GET http://pub.example.com:${up.port}/101 HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`, 3000);
      expect(first(g)).toBe("HTTP/1.1 502 Bad Gateway");
      expect(g).toMatch(/it answered with status 101/);
      await settle(100);
      expect(up.state.open).toBe(0);
    } finally {
      await p.close();
      up.close();
    }
  });

  it("a response that never ends: when opencode leaves, the upstream connection is closed (relayed and tunnelled)", async () => {
    const up = await countingUpstream();
    const { p, port, auth } = await proxy();
    try {
      const g = await raw(port, `GET http://pub.example.com:${up.port}/drip HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`, 400);
      const c = await raw(port, `CONNECT pub.example.com:${up.port} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\nGET /drip HTTP/1.1\r\n\r\n`, 400);
      expect([first(g), first(c)]).toEqual(["HTTP/1.1 200 OK", "HTTP/1.1 200 Connection Established"]);
      await settle(300);
      expect(up.state.open).toBe(0);
    } finally {
      await p.close();
      up.close();
    }
  });

  it("an error of the listening socket after it listens (accept's ENOBUFS) is logged, the second one too: never the engine's uncaught exception", async () => {
    const log: string[] = [];
    const p = new EgressProxy({ log: (l) => log.push(l) });
    await p.start();
    try {
      const server = (p as unknown as { server: http.Server }).server;
      for (let i = 0; i < 2; i++) expect(() => server.emit("error", Object.assign(new Error("accept ENOBUFS"), { code: "ENOBUFS" }))).not.toThrow();
      expect(log).toEqual(["egress proxy: accept ENOBUFS", "egress proxy: accept ENOBUFS"]);
    } finally {
      await p.close();
    }
  });

  it("one client's flood (600 tunnels and relays held open to a server that never answers, 200 names whose nameserver never answers) does not stall another's request", async () => {
    const up = await countingUpstream();
    const silent = dgram.createSocket("udp4");
    await new Promise<void>((r) => silent.bind(0, "127.0.0.1", r));
    const slow = dnsLookup([`127.0.0.1:${silent.address().port}`]);
    // The cap on one identity (egress-cap.test.ts) lifted: the proxy's own load under a flood, which many identities
    // together could make.
    const { p, port, auth } = await proxy({
      lookup: async (h) => (h.endsWith(".slow.example.com") ? slow(h) : h === "pub.example.com" ? [PUBLIC] : []),
      cap: 10_000,
    });
    const other = new URL(p.identity("test"));
    const held: net.Socket[] = [];
    try {
      const hold = (text: string) => {
        const s = net.connect(port, "127.0.0.1", () => s.write(text));
        s.on("error", () => {});
        held.push(s);
      };
      for (let i = 0; i < 300; i++) {
        hold(`CONNECT pub.example.com:${up.port} HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\nGET /hang HTTP/1.1\r\n\r\n`);
        hold(`GET http://pub.example.com:${up.port}/hang HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\n\r\n`);
      }
      for (let i = 0; i < 200; i++) hold(`CONNECT n${i}.slow.example.com:443 HTTP/1.1\r\nproxy-authorization: ${auth}\r\n\r\n`);
      for (let i = 0; i < 100 && up.state.open < 560; i++) await settle(50);
      expect(up.state.open).toBeGreaterThanOrEqual(560);
      // Answered while the flood is still held (it never ends by itself): a stalled proxy answers nothing within raw's limit.
      const g = await raw(
        port,
        `GET http://pub.example.com:${up.port}/ok HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: Basic ${Buffer.from(`${other.username}:${other.password}`).toString("base64")}\r\nconnection: close\r\n\r\n`,
        5000,
      );
      expect(first(g)).toBe("HTTP/1.1 200 OK");
    } finally {
      for (const s of held) s.destroy();
      await p.close();
      up.close();
      silent.close();
    }
  }, 20_000);
});
