// The egress proxy opencode serve's HTTP goes through (egress.ts): only with its key; each host resolved here and
// refused when local or private, else reached at the address that was checked; plain http relayed (a redirect handed
// back untouched, for opencode to ask again), https tunnelled. And the NO_PROXY entries of the model's endpoints.
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bypassesProxy, directEntries, EgressProxy } from "./egress";

const PUBLIC = "93.184.215.14";
/** A public address played by a place nothing answers (IPv6 loopback, where the test servers do not listen). */
const DEAD = "2606:4700::6810:1";
let upstream: http.Server;
let upPort = 0;
const seen: { host?: string; url?: string; auth?: string; via?: string | string[] }[] = [];
let echo: net.Server;
let echoPort = 0;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.push({ host: req.headers.host, url: req.url, auth: req.headers["proxy-authorization"], via: req.headers["proxy-connection"] });
    if (req.url === "/redirect") res.writeHead(302, { location: "http://127.0.0.1:1/secret" }).end();
    else res.end("public body");
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  upPort = (upstream.address() as AddressInfo).port;
  echo = net.createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
  echoPort = (echo.address() as AddressInfo).port;
});
afterAll(() => {
  upstream.close();
  echo.close();
});

/** A proxy whose resolver answers from `names` (answer by answer, the last repeating) and which reaches PUBLIC on loopback. */
async function proxyWith(names: Record<string, string[][]>) {
  const looked: string[] = [];
  const dialled: string[] = [];
  const log: string[] = [];
  const p = new EgressProxy({
    lookup: async (h) => {
      looked.push(h);
      const list = names[h];
      if (!list) return [];
      return list.length > 1 ? list.shift()! : list[0]!;
    },
    dial: (a) => (dialled.push(a), a === PUBLIC ? "127.0.0.1" : a === DEAD ? "::1" : a === "93.184.215.15" ? "127.0.0.2" : a),
    log: (l) => log.push(l),
  });
  const url = new URL(await p.start());
  const auth = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`;
  return { p, url, auth, looked, dialled, log };
}

function get(proxy: URL, target: string, auth?: string): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, path: target, headers: auth ? { "proxy-authorization": auth } : {} }, (res) => {
      let body = "";
      res.on("data", (b) => (body += b));
      res.on("end", () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on("error", reject);
    req.end();
  });
}

function connectVia(proxy: URL, target: string, auth?: string): Promise<{ status: number; socket: net.Socket; head: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target, headers: auth ? { "proxy-authorization": auth } : {} });
    req.on("connect", (res, socket) => resolve({ status: res.statusCode!, socket, head: "" }));
    req.on("response", (res) => {
      let body = "";
      res.on("data", (b) => (body += b));
      res.on("end", () => resolve({ status: res.statusCode!, socket: res.socket, head: body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the egress proxy", () => {
  it("listens on loopback and serves only who holds its key (absolute-form http and CONNECT alike)", async () => {
    const { p, url, auth } = await proxyWith({ "docs.example.org": [[PUBLIC]] });
    try {
      expect(url.hostname).toBe("127.0.0.1");
      expect(url.password.length).toBeGreaterThanOrEqual(32);
      expect((await get(url, `http://docs.example.org:${upPort}/`)).status).toBe(407);
      expect((await get(url, `http://docs.example.org:${upPort}/`, "Basic b2N3Ondyb25n")).status).toBe(407);
      expect((await connectVia(url, `docs.example.org:${echoPort}`)).status).toBe(407);
      expect((await get(url, `http://docs.example.org:${upPort}/`, auth)).status).toBe(200);
    } finally {
      await p.close();
    }
  });

  it("relays a public page to the address it checked, by its name (Host kept, the key not passed on), and hands a redirect back untouched", async () => {
    const { p, url, auth, looked, dialled } = await proxyWith({ "docs.example.org": [[PUBLIC]] });
    try {
      seen.length = 0;
      const r = await get(url, `http://docs.example.org:${upPort}/page?q=1`, auth);
      expect(r).toMatchObject({ status: 200, body: "public body" });
      expect(seen).toEqual([{ host: `docs.example.org:${upPort}`, url: "/page?q=1", auth: undefined, via: undefined }]);
      expect(looked).toEqual(["docs.example.org"]);
      expect(dialled).toEqual([PUBLIC]);
      const back = await get(url, `http://docs.example.org:${upPort}/redirect`, auth);
      expect(back.status).toBe(302);
      expect(back.headers.location).toBe("http://127.0.0.1:1/secret");
    } finally {
      await p.close();
    }
  });

  it("refuses every local or private target before connecting: loopback, the metadata address, private and CGNAT ranges, IPv6 loopback and ULA, local names", async () => {
    const { p, url, auth, dialled, log } = await proxyWith({});
    try {
      for (const target of [
        "http://127.0.0.1:1/",
        "http://2130706433/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://[::1]:8080/",
        "http://[fd00::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://localhost:3000/",
        "http://printer.local/",
        "http://intranet/",
      ]) {
        const r = await get(url, target, auth);
        expect([target, r.status]).toEqual([target, 403]);
        expect(r.body).toMatch(/^opencode-worker refused to connect to .+ \(a local or private network address\); fetch only public pages/);
      }
      for (const target of ["127.0.0.1:443", "169.254.169.254:443", "[::1]:443", "localhost:443", "10.1.1.1:8443"]) {
        const r = await connectVia(url, target, auth);
        expect([target, r.status]).toEqual([target, 403]);
      }
      expect(dialled).toEqual([]);
      expect(log.length).toBe(18);
    } finally {
      await p.close();
    }
  });

  it("a name is resolved by the proxy when opencode connects: refused when any of its addresses is local (a rebinding name included), and reached at the address it checked", async () => {
    const { p, url, auth, looked, dialled } = await proxyWith({
      "rebind.example.org": [[PUBLIC], ["127.0.0.1"]],
      "mixed.example.org": [[PUBLIC, "10.0.0.7"]],
      "v6.example.org": [["2606:4700::1", "fe80::1"]],
    });
    try {
      expect((await get(url, `http://rebind.example.org:${upPort}/`, auth)).status).toBe(200);
      const again = await get(url, `http://rebind.example.org:${upPort}/`, auth);
      expect(again.status).toBe(403);
      expect(again.body).toContain("rebind.example.org, which resolves to 127.0.0.1 (a local or private network address)");
      expect((await get(url, `http://mixed.example.org:${upPort}/`, auth)).body).toContain("which resolves to 10.0.0.7");
      expect((await connectVia(url, "v6.example.org:443", auth)).status).toBe(403);
      expect((await get(url, "http://nowhere.example.org/", auth)).status).toBe(502);
      // One lookup per connection, and the connection goes to what that lookup answered (never a second lookup).
      expect(looked).toEqual(["rebind.example.org", "rebind.example.org", "mixed.example.org", "v6.example.org", "nowhere.example.org"]);
      expect(dialled).toEqual([PUBLIC]);
    } finally {
      await p.close();
    }
  });

  it("a name with several public addresses: the next checked one is tried when the first does not answer, and only those", async () => {
    const { p, url, auth, looked, dialled } = await proxyWith({ "two.example.org": [[DEAD, PUBLIC]] });
    try {
      expect(await get(url, `http://two.example.org:${upPort}/`, auth)).toMatchObject({ status: 200, body: "public body" });
      expect((await connectVia(url, `two.example.org:${echoPort}`, auth)).status).toBe(200);
      expect(looked).toEqual(["two.example.org", "two.example.org"]);
      expect(dialled).toEqual([DEAD, PUBLIC, DEAD, PUBLIC]);
    } finally {
      await p.close();
    }
  });

  it("two hosts on one port, one after the other: each request reaches its own host's address (no connection kept for the next)", async () => {
    const other = http.createServer((_req, res) => res.end("other body"));
    await new Promise<void>((r) => other.listen(upPort, "127.0.0.2", r)).catch(() => undefined);
    const { p, url, auth } = await proxyWith({ "a.example.org": [[PUBLIC]], "b.example.org": [["93.184.215.15"]] });
    // b's address is played on 127.0.0.2 where it can listen; else only the first half holds (nothing to mix up)
    const bound = other.listening;
    try {
      expect((await get(url, `http://a.example.org:${upPort}/`, auth)).body).toBe("public body");
      if (bound) expect((await get(url, `http://b.example.org:${upPort}/`, auth)).body).toBe("other body");
    } finally {
      other.close();
      await p.close();
    }
  });

  it("tunnels https (CONNECT) to the checked address: bytes both ways, the first ones sent with the request too", async () => {
    const { p, url, auth, dialled } = await proxyWith({ "api.example.org": [[PUBLIC]] });
    try {
      const { status, socket } = await connectVia(url, `api.example.org:${echoPort}`, auth);
      expect(status).toBe(200);
      const got = await new Promise<string>((resolve) => {
        let text = "";
        socket.on("data", (b) => {
          text += b;
          if (text.length >= 5) resolve(text);
        });
        socket.write("hello");
      });
      expect(got).toBe("hello");
      socket.destroy();
      expect(dialled).toEqual([PUBLIC]);
      // A port the URL parser would drop (80) is still the one named.
      expect((await connectVia(url, "api.example.org:notaport", auth)).status).toBe(400);
    } finally {
      await p.close();
    }
  });

  it("refuses a request that is not a proxy's (origin-form, another scheme)", async () => {
    const { p, url, auth } = await proxyWith({});
    try {
      expect((await get(url, "/just/a/path", auth)).status).toBe(400);
      expect((await get(url, "ftp://files.example.org/x", auth)).status).toBe(400);
    } finally {
      await p.close();
    }
  });
});

describe("NO_PROXY for the model's endpoints", () => {
  it("an endpoint on a port it names is that host:port alone; one on a default port is its bare host (Bun drops a default port from the URL, so host:443 never matches)", () => {
    expect(
      directEntries([
        "http://127.0.0.1:41233/v1",
        "http://127.0.0.1:41233/other",
        "https://API.openai.example/v1",
        "http://[::1]:8080/v1",
        "https://vllm.example.net:8443/v1",
        "http://host.example:80/v1",
        "not a url",
      ]),
    ).toEqual(["127.0.0.1:41233", "api.openai.example", "[::1]:8080", "vllm.example.net:8443", "host.example"]);
  });

  it("bypassesProxy reads the entries as Bun does, or wider: host:port exactly; a bare host and every name under it, on any port", () => {
    const entries = ["127.0.0.1:41233", "api.openai.example", "[::1]:8080", "vllm.example.net:8443"];
    const cases: [string, string | null][] = [
      ["http://127.0.0.1:41233/v1/chat", "127.0.0.1:41233"],
      ["http://127.0.0.1:41234/", null],
      ["http://localhost:41233/", null],
      ["https://api.openai.example/x", "api.openai.example"],
      ["https://eu.api.openai.example:8443/x", "api.openai.example"],
      ["https://API.openai.example./x", "api.openai.example"],
      ["https://notapi.openai.example/", null],
      ["https://xapi.openai.example/", null],
      ["http://[::1]:8080/", "[::1]:8080"],
      ["https://vllm.example.net:8443/", "vllm.example.net:8443"],
      ["https://a.vllm.example.net:8443/", null],
      ["https://vllm.example.net/", null],
      ["not a url", null],
    ];
    for (const [url, want] of cases) expect([url, bypassesProxy(url, entries)]).toEqual([url, want]);
    expect(bypassesProxy("https://anything.example/", ["*"])).toBe("*");
  });
});
