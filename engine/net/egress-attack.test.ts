// Attack routes against the egress proxy (egress.ts) and the network guard's classification (address.ts), issue 25's
// network pass: what a worker aims a webfetch (or a redirect it answers) at, spelled every way opencode's fetch could
// send it to the proxy.
import dnsp from "node:dns/promises";
import { readFile } from "node:fs/promises";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { dnsLookup, LOOKUP_MS, localAddress, localTarget, lookupHost } from "./address";
import { EgressProxy } from "./egress";
import { dnsServer } from "../../test/fixtures/dns-server";
import { raw } from "../../test/fixtures/raw-tcp";

let open: net.Server;
let openPort = 0;

beforeAll(async () => {
  // A service of this machine's that listens on every interface (as dev servers, databases and many daemons do).
  open = net.createServer((s) => s.end("SERVICE ON 0.0.0.0\n"));
  await new Promise<void>((r) => open.listen(0, "0.0.0.0", r));
  openPort = (open.address() as AddressInfo).port;
});
afterAll(() => void open.close());
afterEach(() => vi.restoreAllMocks());

async function proxy(opts: ConstructorParameters<typeof EgressProxy>[0] = {}) {
  const p = new EgressProxy(opts);
  const url = new URL(await p.start());
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`;
  return { p, url, auth };
}

/** CONNECT through the proxy: its status, and what the far end said first when it was let through. */
function connectVia(proxy: URL, target: string, auth: string): Promise<{ status: number; said: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target, headers: { "proxy-authorization": auth } });
    req.on("connect", (res, socket) => {
      let said = "";
      socket.on("data", (b) => (said += b));
      socket.on("close", () => resolve({ status: res.statusCode!, said }));
      socket.on("error", () => {});
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, said: "" }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** This machine's interface addresses that the fixed ranges alone do not call local (a public or documentation address). */
function ownUnclassified(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((i): i is os.NetworkInterfaceInfo => !!i && !i.internal && i.family === "IPv4")
    .map((i) => i.address)
    .filter((a) => !/^(10|127|0)\.|^169\.254\.|^192\.168\.|^172\.(1[6-9]|2\d|3[01])\.|^100\.(6[4-9]|[7-9]\d|1[01]\d|12[0-7])\./.test(a));
}

describe("this machine's own addresses and its interfaces' networks", () => {
  it("an address of one of this machine's interfaces is local, whatever its range: a service on 0.0.0.0 answers there (was reached through the proxy)", async () => {
    vi.spyOn(os, "networkInterfaces").mockReturnValue({
      eth0: [
        { address: "93.184.216.7", netmask: "255.255.255.0", family: "IPv4", mac: "02:00:00:00:00:01", internal: false, cidr: "93.184.216.7/24" },
        {
          address: "2606:4700:1::5",
          netmask: "ffff:ffff:ffff:ffff::",
          family: "IPv6",
          mac: "02:00:00:00:00:01",
          internal: false,
          cidr: "2606:4700:1::5/64",
          scopeid: 0,
        },
      ],
      tun0: [{ address: "45.33.32.9", netmask: "0.0.0.0", family: "IPv4", mac: "00:00:00:00:00:00", internal: false, cidr: "45.33.32.9/0" }],
    });
    expect(localTarget("http://93.184.216.7:8080/")).toMatch(/a local or private network address/);
    // its network: the neighbours on the interface's prefix (a home network's global IPv6 /64)
    expect(localTarget("http://93.184.216.200/")).toMatch(/a local or private network address/);
    expect(localTarget("http://[2606:4700:1::77]/")).toMatch(/a local or private network address/);
    expect(localAddress("2606:4700:1:0:0:0:0:5")).toMatch(/a local or private network address/);
    // an interface with a /0 is its own address only, not the whole internet
    expect(localTarget("http://45.33.32.9/")).toMatch(/a local or private network address/);
    expect(localTarget("http://93.184.215.14/")).toBeNull();
    expect(localTarget("http://[2606:4700:2::1]/")).toBeNull();

    // Through the proxy: the public address a name resolves to is this machine's (the test's stand-in dials it on
    // loopback, where the 0.0.0.0 service answers): refused before connecting, by address and by name alike.
    const dialled: string[] = [];
    const { p, url, auth } = await proxy({
      lookup: async (h) => (h === "mine.example.com" ? ["93.184.216.7"] : h === "neighbour.example.com" ? ["2606:4700:1::99"] : []),
      dial: (a) => (dialled.push(a), "127.0.0.1"),
    });
    try {
      for (const target of [`93.184.216.7:${openPort}`, `mine.example.com:${openPort}`, `neighbour.example.com:${openPort}`, `[2606:4700:1::5]:${openPort}`]) {
        const r = await connectVia(url, target, auth);
        expect([target, r.status, r.said]).toEqual([target, 403, ""]);
      }
      expect(dialled).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it("on this machine's real interfaces: a service on 0.0.0.0 is not reached at the machine's own address", async (ctx) => {
    const mine = ownUnclassified();
    if (!mine.length) return ctx.skip();
    const { p, url, auth } = await proxy();
    try {
      for (const a of mine) {
        const r = await connectVia(url, `${a}:${openPort}`, auth);
        expect([a, r.status, r.said]).toEqual([a, 403, ""]);
      }
    } finally {
      await p.close();
    }
  });
});

describe("looking names up", () => {
  it("the default look-up never calls getaddrinfo (dns.lookup), whose blocked thread outlives the look-up's time limit", async () => {
    const spied = vi.spyOn(dnsp, "lookup");
    await lookupHost("nothing-here.invalid");
    expect(spied).not.toHaveBeenCalled();
  });

  it("asks the DNS servers for A and AAAA records and answers their addresses; a name they do not know is none", async () => {
    const dns = await dnsServer({ "pub.example.com": "93.184.215.14", "rebind.example.com": "127.0.0.1" });
    try {
      const lookup = dnsLookup([dns.server]);
      expect(await lookupHost("pub.example.com", lookup)).toEqual(["93.184.215.14"]);
      expect(await lookupHost("rebind.example.com", lookup)).toEqual(["127.0.0.1"]);
      expect(await lookupHost("unknown.example.com", lookup)).toEqual([]);
      expect(dns.asked).toEqual(expect.arrayContaining(["pub.example.com A", "pub.example.com AAAA"]));
    } finally {
      dns.close();
    }
  });

  it("names whose nameserver never answers, many at once: each is none after the time limit, and the engine's file reads go on meanwhile", async () => {
    const dns = await dnsServer({}, true);
    try {
      const lookup = dnsLookup([dns.server]);
      // When each look-up ended (none before its time limit), against the file reads below: an order, not a wall-clock
      // limit, so a loaded machine cannot fail it.
      const settledAt: number[] = [];
      // A shorter limit than the engine's LOOKUP_MS (the nameserver never answers: every look-up runs to it).
      const limit = LOOKUP_MS / 6;
      const pending = Array.from({ length: 16 }, (_, i) => lookupHost(`n${i}.slow.example.com`, lookup, limit).finally(() => settledAt.push(Date.now())));
      // libuv's pool (file system, crypto, zlib) is not held by the look-ups: the reads end while every look-up still waits
      await Promise.all(Array.from({ length: 8 }, () => readFile(__filename)));
      expect(settledAt).toEqual([]);
      expect(await Promise.all(pending)).toEqual(Array.from({ length: 16 }, () => []));
      // All at once, at their limit: none waited for another's (16 held threads of a pool of 4 would end a limit apart).
      expect(Math.max(...settledAt) - Math.min(...settledAt)).toBeLessThan(limit);
      expect(dns.asked.length).toBeGreaterThanOrEqual(16);
    } finally {
      dns.close();
    }
  }, 15_000);
});

describe("IPv6 addresses that carry an IPv4 one", () => {
  it("NAT64 (64:ff9b::/96) forms of a local IPv4 address are local, of a public one public; IPv4-compatible forms and the local-use NAT64 prefix are local whatever they carry", () => {
    for (const url of [
      "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", // 169.254.169.254 through the network's NAT64 translator
      "http://[64:ff9b::10.0.0.5]/",
      "http://[64:ff9b:0:0:0:0:c0a8:101]/",
      "http://[64:ff9b::7f00:1]:8080/",
      "http://[::127.0.0.1]/",
      "http://[::a00:1]/",
      "http://[64:ff9b:1::a00:1]/",
      "http://[64:ff9b:1:ffff::a9fe:a9fe]/",
      "http://[64:ff9b:1:ffff::5db8:d70e]/",
      "http://[::5db8:d70e]/",
      "http://[2001:db8::a00:1]/",
    ])
      expect([url, localTarget(url)]).toEqual([url, expect.stringMatching(/a local or private network address/)]);
    expect(localAddress("64:ff9b::169.254.169.254")).toMatch(/a local or private network address/);
    for (const url of ["http://[64:ff9b::5db8:d70e]/", "http://[64:ff9b::93.184.215.14]/", "http://[2606:4700::6810:1]/"])
      expect([url, localTarget(url)]).toEqual([url, null]);
  });

  it("the proxy refuses a CONNECT or a request to one before connecting (was reached: a translator on the network serves it)", async () => {
    const dialled: string[] = [];
    // The stand-in plays the network's NAT64 translator: it reaches the IPv4 address inside (here, loopback).
    const { p, url, auth } = await proxy({
      lookup: async (h) => (h === "dns64.example.com" ? ["64:ff9b::7f00:1"] : []),
      dial: (a) => (dialled.push(a), a.startsWith("64:ff9b:") || a.startsWith("::") ? "127.0.0.1" : a),
    });
    try {
      for (const target of [`[64:ff9b::7f00:1]:${openPort}`, `[::127.0.0.1]:${openPort}`, `dns64.example.com:${openPort}`]) {
        const r = await connectVia(url, target, auth);
        expect([target, r.status, r.said]).toEqual([target, 403, ""]);
      }
      expect(dialled).toEqual([]);
    } finally {
      await p.close();
    }
  });
});

/** A public server (played on loopback) that answers every request on a connection with the next of `answers`, raw (closing it after one that says `connection: close`). */
async function rawUpstream(answers: string[]) {
  const s = net.createServer((c) => {
    c.on("error", () => {});
    let buffered = "";
    c.on("data", (b) => {
      buffered += b;
      while (buffered.includes("\r\n\r\n")) {
        buffered = buffered.slice(buffered.indexOf("\r\n\r\n") + 4);
        const answer = answers.shift() ?? "HTTP/1.1 500 None\r\ncontent-length: 0\r\n\r\n";
        if (answer.includes("connection: close")) c.end(answer);
        else c.write(answer);
      }
    });
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return { port: (s.address() as AddressInfo).port, close: () => s.close() };
}

/** Requests through the proxy on one kept connection, one after the other: each status and body, or "no answer". */
async function onOneConnection(proxy: URL, auth: string, urls: string[]): Promise<string[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: string[] = [];
  try {
    for (const target of urls)
      out.push(
        await new Promise<string>((resolve) => {
          const req = http.request({ host: proxy.hostname, port: proxy.port, path: target, agent, headers: { "proxy-authorization": auth } }, (res) => {
            let body = "";
            res.on("data", (b) => (body += b));
            res.on("end", () => resolve(`${res.statusCode} ${body}`));
            res.on("error", () => resolve("no answer"));
          });
          req.setTimeout(2000, () => (req.destroy(), resolve("no answer")));
          req.on("error", () => resolve("no answer"));
          req.end();
        }),
      );
  } finally {
    agent.destroy();
  }
  return out;
}

describe("what a public server a worker fetches answers the proxy", () => {
  it("a status Node's writer refuses (099, 000) is a 502, and the proxy goes on serving (it was the engine's uncaught exception)", async () => {
    const up = await rawUpstream([
      "HTTP/1.1 099 Odd\r\ncontent-length: 2\r\n\r\nok",
      "HTTP/1.1 000 Odd\r\ncontent-length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\npublic page",
    ]);
    const thrown: unknown[] = [];
    const onThrow = (e: unknown) => thrown.push(e);
    process.on("uncaughtException", onThrow);
    const { p, url, auth } = await proxy({ lookup: async () => ["93.184.215.14"], dial: () => "127.0.0.1" });
    try {
      const page = `http://pub.example.com:${up.port}/`;
      const got = [];
      for (let i = 0; i < 3; i++) got.push(...(await onOneConnection(url, auth, [page])));
      expect(got.map((g) => g.split(" ")[0])).toEqual(["502", "502", "200"]);
      expect(got[0]).toMatch(/could not reach pub\.example\.com:\d+: it answered with status 99/);
      expect(got[2]).toBe("200 public page");
      expect(thrown).toEqual([]);
    } finally {
      process.off("uncaughtException", onThrow);
      await p.close();
      up.close();
    }
  });

  it("an answer the proxy relays is framed by the proxy: a transfer-encoding it does not undo is not passed on, so its body is never read as the next answer on a kept connection", async () => {
    const forged = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nFORGED";
    const up = await rawUpstream([
      `HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\nconnection: close\r\n\r\n${forged}`,
      "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond",
    ]);
    const { p, url, auth } = await proxy({ lookup: async () => ["93.184.215.14"], dial: () => "127.0.0.1" });
    try {
      const page = `http://pub.example.com:${up.port}/`;
      expect(await onOneConnection(url, auth, [`${page}a`, `${page}b`])).toEqual([`200 ${forged}`, "200 second"]);
    } finally {
      await p.close();
      up.close();
    }
  });
});

describe("spellings of a local target, as bytes on the proxy's socket", () => {
  it("every spelling of loopback, 0.0.0.0 and a mapped address, in a request line and in CONNECT, is refused (or not parsed); a pipelined second request and a CL/TE conflict reach nothing", async () => {
    const dialled: string[] = [];
    const { p, url, auth } = await proxy({
      lookup: async (h) => (h === "pub.example.com" ? ["93.184.215.14"] : []),
      dial: (a) => (dialled.push(a), "127.0.0.1"),
    });
    const port = Number(url.port);
    const P = openPort;
    try {
      for (const h of [
        "2130706433",
        "0x7f.1",
        "017700000001",
        "127.1",
        "0",
        "0.0.0.0",
        "%31%32%37.0.0.1",
        "127.0.0.1.",
        "localhost.",
        "LOCALHOST",
        "[::]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
      ]) {
        const g = await raw(port, `GET http://${h}:${P}/ HTTP/1.1\r\nhost: pub.example.com\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
        const c = await raw(port, `CONNECT ${h}:${P} HTTP/1.1\r\nhost: pub.example.com:${P}\r\nproxy-authorization: ${auth}\r\n\r\n`);
        expect([h, g.split("\r\n")[0], c.split("\r\n")[0]]).toEqual([h, "HTTP/1.1 403 Forbidden", "HTTP/1.1 403 Forbidden"]);
      }
      // userinfo that names a public host (the host is what follows the @), and forms the parser refuses outright
      for (const t of [
        `http://pub.example.com@127.0.0.1:${P}/`,
        `http://pub.example.com\\@127.0.0.1:${P}/`,
        `http:127.0.0.1:${P}/`,
        `127.0.0.1:${P}`,
        "/",
        "*",
      ]) {
        const g = await raw(port, `GET ${t} HTTP/1.1\r\nhost: 127.0.0.1:${P}\r\nproxy-authorization: ${auth}\r\nconnection: close\r\n\r\n`);
        expect([t, /^HTTP\/1\.1 (403|400)|^$/.test(g)]).toEqual([t, true]);
      }
      const both = `proxy-authorization: ${auth}\r\n`;
      const up = await rawUpstream(["HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\npublic page"]);
      const U = up.port;
      const pipelined = await raw(
        port,
        `GET http://pub.example.com:${U}/a HTTP/1.1\r\nhost: pub.example.com\r\n${both}\r\nGET http://127.0.0.1:${P}/b HTTP/1.1\r\nhost: pub.example.com\r\n${both}connection: close\r\n\r\n`,
      );
      up.close();
      expect(pipelined).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*public pageHTTP\/1\.1 403 Forbidden[\s\S]*refused to connect to 127\.0\.0\.1/);
      const conflict = await raw(
        port,
        `POST http://pub.example.com:${P}/a HTTP/1.1\r\nhost: pub.example.com\r\n${both}content-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET http://127.0.0.1:${P}/ HTTP/1.1\r\n\r\n`,
      );
      expect(conflict.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
      expect(conflict).not.toMatch(/SERVICE|refused to connect/);
      // only the pipelined first request's public name was ever dialled
      expect(dialled).toEqual(["93.184.215.14"]);
    } finally {
      await p.close();
    }
  });
});
