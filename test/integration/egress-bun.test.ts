// What the egress proxy (engine/net/egress.ts) rests on, tried on the pinned opencode binary's own runtime (its Bun,
// run as `bun` with BUN_BE_BUN=1; opencode's webfetch is Effect's FetchHttpClient over this globalThis.fetch, redirects
// followed by fetch itself). If an opencode or Bun upgrade changes one of these, this file says which.
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net, { type AddressInfo, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { opencodeBinary } from "../../engine/harness/opencode-server";
import { EGRESS_CAP, EgressProxy } from "../../engine/net/egress";

const servers: http.Server[] = [];
const hits: string[] = [];
let secret = 0;
let redirector = 0;
let proxy = 0;

async function listen(s: http.Server): Promise<number> {
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return (s.address() as AddressInfo).port;
}

beforeAll(async () => {
  secret = await listen(http.createServer((req, res) => (hits.push(`secret ${req.url}`), res.end("SECRET"))));
  // Redirects to what ?to= says.
  redirector = await listen(
    http.createServer((req, res) => {
      hits.push(`redirector ${req.url}`);
      res.writeHead(302, { location: new URL(req.url!, "http://x").searchParams.get("to")! }).end();
    }),
  );
  // A recording proxy: relays plain http to loopback (as a permissive proxy would), answers every CONNECT 403.
  const p = http.createServer((req, res) => {
    hits.push(`proxy ${req.method} ${req.url} auth=${req.headers["proxy-authorization"] ?? "-"}`);
    const u = new URL(req.url!);
    if (u.hostname !== "127.0.0.1") return void res.writeHead(403).end();
    const up = http.request({ host: "127.0.0.1", port: u.port, path: u.pathname + u.search, headers: req.headers }, (a) => {
      res.writeHead(a.statusCode!, a.headers);
      a.pipe(res);
    });
    up.on("error", () => res.destroy());
    up.end();
  });
  p.on("connect", (req, socket: Socket) => {
    hits.push(`proxy CONNECT ${req.url} auth=${req.headers["proxy-authorization"] ?? "-"}`);
    socket.on("error", () => {});
    socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
  });
  proxy = await listen(p);
});
afterAll(() => {
  for (const s of servers) s.close();
});

/** `fetch(url)` in the binary's Bun with exactly `env`: its status and final URL, or its error. */
function bunFetch(url: string, env: Record<string, string>): Promise<string> {
  const code = `try { const r = await fetch(process.argv[1]); console.log(r.status + " " + r.url) } catch (e) { console.log("error " + (e.code ?? e.name)) }`;
  return new Promise((resolve) => {
    execFile(opencodeBinary(), ["-e", code, url], { env: { PATH: process.env.PATH ?? "", BUN_BE_BUN: "1", ...env }, timeout: 20_000 }, (_err, out) =>
      resolve(out.trim()),
    );
  });
}

const to = (target: string) => `http://127.0.0.1:${redirector}/?to=${encodeURIComponent(target)}`;
const run = async (url: string, env: Record<string, string> = {}) => {
  hits.length = 0;
  const out = await bunFetch(url, env);
  return { out, hits: [...hits] };
};

describe("the pinned opencode's fetch (Bun) and proxies", () => {
  it("without a proxy, a redirect to a loopback service is followed: the gap a look at the first URL leaves", async () => {
    const r = await run(to(`http://127.0.0.1:${secret}/meta`));
    expect(r.out).toBe(`200 http://127.0.0.1:${secret}/meta`);
    expect(r.hits).toEqual([expect.stringMatching(/^redirector/), "secret /meta"]);
  }, 30_000);

  it("with HTTP_PROXY and HTTPS_PROXY, every hop of a redirect chain goes through the proxy, with its credentials: plain http in absolute form, https as CONNECT", async () => {
    const px = `http://ocw:k3y@127.0.0.1:${proxy}`;
    const auth = `auth=Basic ${Buffer.from("ocw:k3y").toString("base64")}`;
    const r = await run(to(`http://127.0.0.1:${secret}/meta`), { HTTP_PROXY: px, HTTPS_PROXY: px });
    expect(r.hits).toEqual([
      `proxy GET ${to(`http://127.0.0.1:${secret}/meta`)} ${auth}`,
      expect.stringMatching(/^redirector/),
      `proxy GET http://127.0.0.1:${secret}/meta ${auth}`,
      "secret /meta",
    ]);
    const s = await run(to("https://127.0.0.1:9/x"), { HTTP_PROXY: px, HTTPS_PROXY: px });
    expect(s.hits).toEqual([expect.stringMatching(/^proxy GET/), expect.stringMatching(/^redirector/), `proxy CONNECT 127.0.0.1:9 ${auth}`]);
    expect(s.out).toBe("403 https://127.0.0.1:9/x");
  }, 30_000);

  it("HTTP_PROXY alone leaves https direct (so both are set)", async () => {
    const r = await run("https://127.0.0.1:9/", { HTTP_PROXY: `http://127.0.0.1:${proxy}` });
    expect(r.hits).toEqual([]);
    expect(r.out).toMatch(/^error /);
  }, 30_000);

  it("NO_PROXY host:port sends that port alone direct, and the redirects of a fetch that started direct are followed direct: the proxy decides once per fetch, by its first URL", async () => {
    const px = `http://127.0.0.1:${proxy}`;
    const direct = await run(to(`http://127.0.0.1:${secret}/meta`), { HTTP_PROXY: px, HTTPS_PROXY: px, NO_PROXY: `127.0.0.1:${redirector}` });
    expect(direct.hits).toEqual([expect.stringMatching(/^redirector/), "secret /meta"]);
    const other = await run(`http://127.0.0.1:${secret}/x`, { HTTP_PROXY: px, HTTPS_PROXY: px, NO_PROXY: `127.0.0.1:${redirector}` });
    expect(other.hits[0]).toMatch(/^proxy GET/);
    // …and a proxied first hop keeps the proxy for its redirects, even to a host:port NO_PROXY names.
    const kept = await run(to(`http://127.0.0.1:${secret}/meta`), { HTTP_PROXY: px, HTTPS_PROXY: px, NO_PROXY: `127.0.0.1:${secret}` });
    expect(kept.hits.filter((h) => h.startsWith("proxy")).length).toBe(2);
  }, 30_000);

  it("NO_PROXY host:443 does not match https://host/ (the default port is not in the URL): an endpoint on a default port is listed by its bare host", async () => {
    const px = `http://127.0.0.1:${proxy}`;
    const r = await run("https://api.example.test/", { HTTP_PROXY: px, HTTPS_PROXY: px, NO_PROXY: "api.example.test:443" });
    expect(r.hits).toEqual(["proxy CONNECT api.example.test:443 auth=-"]);
    const bare = await run("https://eu.api.example.test:8443/", { HTTP_PROXY: px, HTTPS_PROXY: px, NO_PROXY: "api.example.test" });
    expect(bare.hits).toEqual([]);
  }, 30_000);
});

/** A self-signed certificate for 127.0.0.1 (openssl), or null where there is no openssl. */
function selfSigned(): { key: Buffer; cert: Buffer } | null {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-egress-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "k.pem",
        "-out",
        "c.pem",
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { cwd: dir, stdio: "ignore" },
    );
    return { key: readFileSync(path.join(dir, "k.pem")), cert: readFileSync(path.join(dir, "c.pem")) };
  } catch {
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a proxied first hop keeps the proxy whatever the scheme of its redirects", () => {
  it("http → https and https → http, to a host:port NO_PROXY names: each later hop still goes through the proxy (CONNECT, absolute form)", async (ctx) => {
    const tls = selfSigned();
    if (!tls) return ctx.skip();
    const seen: string[] = [];
    const handler = (name: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(`${name} ${req.url}`);
      const to = new URL(req.url!, "http://x").searchParams.get("to");
      if (to) res.writeHead(302, { location: to }).end();
      else res.end("SECRET");
    };
    const plain = await listen(http.createServer(handler("http")));
    const secure = https.createServer(tls, handler("https"));
    servers.push(secure as unknown as http.Server);
    await new Promise<void>((r) => secure.listen(0, "127.0.0.1", r));
    const tlsPort = (secure.address() as AddressInfo).port;
    // A permissive recording proxy: relays plain http and tunnels CONNECT, both to loopback.
    const px = http.createServer((req, res) => {
      seen.push(`proxy ${req.method} ${req.url}`);
      const u = new URL(req.url!);
      const up = http.request({ host: "127.0.0.1", port: u.port, path: u.pathname + u.search, headers: req.headers }, (a) => {
        res.writeHead(a.statusCode!, a.headers);
        a.pipe(res);
      });
      up.on("error", () => res.destroy());
      up.end();
    });
    px.on("connect", (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
      seen.push(`proxy CONNECT ${req.url}`);
      socket.on("error", () => {});
      const up = net.connect(Number(req.url!.split(":").pop()), "127.0.0.1", () => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        up.write(head);
        up.pipe(socket);
        socket.pipe(up);
      });
      up.on("error", () => socket.destroy());
    });
    const proxyUrl = `http://127.0.0.1:${await listen(px)}`;
    const env = (direct: string) => ({ HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, NO_PROXY: direct, NODE_TLS_REJECT_UNAUTHORIZED: "0" });
    const via = (first: string, to: string) => `${first}/?to=${encodeURIComponent(to)}`;

    seen.length = 0;
    const up = await bunFetch(via(`http://127.0.0.1:${plain}`, `https://127.0.0.1:${tlsPort}/meta`), env(`127.0.0.1:${tlsPort}`));
    expect(up).toBe(`200 https://127.0.0.1:${tlsPort}/meta`);
    expect(seen).toEqual([expect.stringMatching(/^proxy GET http:/), expect.stringMatching(/^http /), `proxy CONNECT 127.0.0.1:${tlsPort}`, "https /meta"]);

    seen.length = 0;
    const down = await bunFetch(via(`https://127.0.0.1:${tlsPort}`, `http://127.0.0.1:${plain}/meta`), env(`127.0.0.1:${plain}`));
    expect(down).toBe(`200 http://127.0.0.1:${plain}/meta`);
    expect(seen).toEqual([`proxy CONNECT 127.0.0.1:${tlsPort}`, expect.stringMatching(/^https /), `proxy GET http://127.0.0.1:${plain}/meta`, "http /meta"]);
  }, 60_000);
});

describe("how many connections one opencode holds at the proxy", () => {
  it("Bun keeps at most 256 fetch connections open at once (600 fetches at a proxy that never answers): what bounds one opencode's share of the egress proxy", async () => {
    let open = 0;
    let peak = 0;
    const held = net.createServer((c) => {
      open++;
      peak = Math.max(peak, open);
      c.on("close", () => open--);
      c.on("error", () => {});
    });
    await new Promise<void>((r) => held.listen(0, "127.0.0.1", r));
    const port = (held.address() as AddressInfo).port;
    try {
      const code =
        "for (let i = 0; i < 600; i++) fetch(`http://h${i}.example.com/`).catch(() => {}); await new Promise((r) => setTimeout(r, 3000)); process.exit(0);";
      await new Promise<void>((resolve) =>
        execFile(
          opencodeBinary(),
          ["-e", code],
          { env: { PATH: process.env.PATH ?? "", BUN_BE_BUN: "1", HTTP_PROXY: `http://ocw:k3y@127.0.0.1:${port}` }, timeout: 20_000 },
          () => resolve(),
        ),
      );
      expect(peak).toBe(256);
    } finally {
      held.close();
    }
  }, 30_000);
});

describe("a worker's webfetches that never end, and the model's requests of the same opencode", () => {
  /**
   * 300 fetches through `proxy` to pages that never answer (half http, half https), then, 500 ms later, one to a model
   * stand-in that NO_PROXY sends direct, given 3 s: how it went, and what the 300 were answered.
   */
  const flood = `
    const [hang, fast] = [process.argv[1], process.argv[2]];
    const statuses = {};
    for (let i = 0; i < 300; i++)
      fetch((i % 2 ? "https" : "http") + "://h" + i + ".example.com:" + hang + "/").then((r) => (statuses[r.status] = (statuses[r.status] ?? 0) + 1), () => {});
    await new Promise((r) => setTimeout(r, 500));
    const t = performance.now();
    const model = await Promise.race([
      fetch(fast).then(async (r) => r.status + " " + (await r.text()) + " in " + Math.round(performance.now() - t) + " ms", (e) => "error " + (e.code ?? e.name)),
      new Promise((r) => setTimeout(() => r("stalled"), 3000)),
    ]);
    console.log(JSON.stringify({ model, statuses }));
    process.exit(0);`;

  it("past the proxy's cap on one opencode, its fetches are answered 503 at once, freeing Bun's slots: a model request is answered while 300 webfetches hang (with no cap it waited, Bun's 256 all held)", async (ctx) => {
    let bin: string;
    try {
      bin = opencodeBinary();
    } catch {
      return ctx.skip();
    }
    // Pages that never answer (plain http, and a tunnel whose TLS is never answered), counted.
    const up = { open: 0, peak: 0 };
    const hang = net.createServer((c) => {
      up.open++;
      up.peak = Math.max(up.peak, up.open);
      c.on("close", () => up.open--);
      c.on("error", () => {});
      // read (and drop) what comes: a socket never read never sees its peer close
      c.resume();
    });
    const hangPort = await listen(hang as unknown as http.Server);
    const modelPort = await listen(http.createServer((_req, res) => res.end("tokens")));
    const run = async (cap: number) => {
      up.peak = 0;
      const p = new EgressProxy({ lookup: async () => ["93.184.215.14"], dial: () => "127.0.0.1", cap });
      await p.start();
      const proxyUrl = p.identity("test");
      try {
        const out = await new Promise<string>((resolve) =>
          execFile(
            bin,
            ["-e", flood, String(hangPort), `http://127.0.0.1:${modelPort}/v1/chat/completions`],
            // Bun's own default limit (256), not the 512 serve is given: the cap alone is what is tried here.
            {
              env: { PATH: process.env.PATH ?? "", BUN_BE_BUN: "1", HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, NO_PROXY: `127.0.0.1:${modelPort}` },
              timeout: 15_000,
            },
            (_err, stdout) => resolve(stdout.trim()),
          ),
        );
        return { ...(JSON.parse(out || "{}") as { model?: string; statuses?: Record<string, number> }), peak: up.peak };
      } finally {
        await p.close();
        // the proxy's upstream connections close after it: none left over for the next run's count
        for (let i = 0; i < 100 && up.open > 0; i++) await new Promise((r) => setTimeout(r, 20));
      }
    };

    const uncapped = await run(10_000);
    expect(uncapped.model).toBe("stalled");
    expect(uncapped.peak).toBe(256);

    const capped = await run(EGRESS_CAP);
    expect(capped.model).toMatch(/^200 tokens in \d+ ms$/);
    expect(capped.peak).toBe(EGRESS_CAP);
    expect(capped.statuses).toEqual({ 503: 300 - EGRESS_CAP });
  }, 30_000);
});
