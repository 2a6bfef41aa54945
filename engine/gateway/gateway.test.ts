import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { KeyGateway, upstreamUrl } from "./gateway";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((c) => c()));

/** An upstream model server on loopback that records what reached it. */
async function upstream(handler: Handler) {
  const seen: { headers: http.IncomingHttpHeaders; url: string; body: string; closedEarly: boolean }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry = { headers: req.headers, url: req.url ?? "", body: Buffer.concat(chunks).toString(), closedEarly: false };
      seen.push(entry);
      res.on("close", () => (entry.closedEarly = !res.writableFinished));
      handler(req, res, entry.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  closers.push(() => server.close());
  closers.push(() => server.closeAllConnections());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

async function gatewayTo(url: string, silenceMs = 60_000, key = "real-key", gw = new KeyGateway()) {
  closers.push(() => gw.close());
  return gw.add("t", { upstream: url, key, silenceMs });
}

/** A request exactly as written (fetch would normalize `..` away and refuses some headers). */
function raw(baseURL: string, pathAfterRoute: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const u = new URL(baseURL);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: `${u.pathname}/${pathAfterRoute}`, method: "GET", headers }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("key gateway", () => {
  it("forwards a streamed answer chunk by chunk with the real key, never the gateway's", async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
      setTimeout(() => res.end("data: [DONE]\n\n"), 300);
    });
    const { baseURL, apiKey } = await gatewayTo(up.url);
    const res = await fetch(`${baseURL}/chat/completions?x=1`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "m" }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // The first chunk arrives before the upstream has finished: streamed, not buffered.
    expect(first).toBe("data: 1\n\n");
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toBe("data: [DONE]\n\n");
    expect(up.seen[0]!.url).toBe("/v1/chat/completions?x=1");
    expect(up.seen[0]!.headers.authorization).toBe("Bearer real-key");
    expect(up.seen[0]!.body).toBe(JSON.stringify({ model: "m" }));
    expect(JSON.stringify(up.seen[0]!.headers)).not.toContain(apiKey);
  });

  it("answers only a loopback Host on its own port (no DNS rebinding), before looking at the key", async () => {
    const up = await upstream((_q, res) => res.end("{}"));
    const { baseURL, apiKey } = await gatewayTo(up.url);
    const port = new URL(baseURL).port;
    const auth = { authorization: `Bearer ${apiKey}` };
    for (const host of ["evil.example", `evil.example:${port}`, "127.0.0.1", `127.0.0.1:1`, `127.0.0.2:${port}`, `localhost.evil.example:${port}`]) {
      const r = await raw(baseURL, "models", { ...auth, host });
      expect([host, r.status]).toEqual([host, 421]);
      expect(r.body).toContain("foreign Host header");
    }
    expect(up.seen).toHaveLength(0);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`])
      expect((await raw(baseURL, "models", { ...auth, host })).status).toBe(200);
  });

  it("refuses a wrong or missing gateway key without reaching the upstream", async () => {
    const up = await upstream((_req, res) => res.end("{}"));
    const { baseURL, apiKey } = await gatewayTo(up.url);
    for (const auth of [`Bearer ${apiKey}x`, "", "Bearer real-key"]) {
      const res = await fetch(`${baseURL}/models`, { headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(401);
    }
    expect(up.seen).toHaveLength(0);
  });

  it("gives up after the route's silence: 504 saying so when nothing came, and frees the upstream's request", async () => {
    const up = await upstream(() => undefined); // never answers
    const { baseURL, apiKey } = await gatewayTo(up.url, 500);
    const t0 = Date.now();
    const res = await fetch(`${baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: "{}" });
    expect(res.status).toBe(504);
    expect(await res.text()).toMatch(/sent nothing for 0.5 s/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    await new Promise((r) => setTimeout(r, 100));
    expect(up.seen[0]!.closedEarly).toBe(true);
  });

  it("a silence shorter than the limit is waited out, after the headers as before them", async () => {
    const up = await upstream((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.flushHeaders();
        setTimeout(() => res.end("data: late\n\n"), 700);
      }, 700);
    });
    const { baseURL, apiKey } = await gatewayTo(up.url, 1500);
    const res = await fetch(`${baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: "{}" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("data: late\n\n");
  });

  it("a client that goes away ends the upstream request (the server's slot is freed)", async () => {
    const up = await upstream((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\n");
    });
    const { baseURL, apiKey } = await gatewayTo(up.url);
    const ctl = new AbortController();
    const res = await fetch(`${baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: "{}", signal: ctl.signal });
    await res.body!.getReader().read();
    ctl.abort();
    await new Promise((r) => setTimeout(r, 200));
    expect(up.seen[0]!.closedEarly).toBe(true);
  });

  it("the key goes only to the route's origin, under its base path, over http(s)", () => {
    const ok = (base: string, rest: string) => {
      const r = upstreamUrl(base, rest);
      return "url" in r ? r.url.href : `${r.status} ${r.message}`;
    };
    expect(ok("http://127.0.0.1:8080/v1", "chat/completions?x=1")).toBe("http://127.0.0.1:8080/v1/chat/completions?x=1");
    expect(ok("http://127.0.0.1:8080/v1/", "models")).toBe("http://127.0.0.1:8080/v1/models");
    for (const rest of ["../admin", "%2e%2e/admin", "x/../../admin", "%2E%2E/%2E%2E/slots"])
      expect(ok("http://127.0.0.1:8080/v1", rest)).toMatch(/^400 .*leaves/);
    expect(ok("localhost:8080/v1", "models")).toMatch(/^502 .*not an http\(s\) URL/);
    expect(ok("not a url", "models")).toMatch(/^502 .*not a URL/);
  });

  it("a path that leaves the base, an endpoint that is not http(s), a key no header can hold: a clear error each, and the gateway keeps serving", async () => {
    const up = await upstream((_req, res) => res.end("{}"));
    const gw = new KeyGateway();
    const good = await gatewayTo(up.url, undefined, "real-key", gw);
    const auth = (k: string) => ({ authorization: `Bearer ${k}` });
    expect((await raw(good.baseURL, "../../admin", auth(good.apiKey))).status).toBe(400);
    expect((await raw(good.baseURL, "%2e%2e/admin", auth(good.apiKey))).status).toBe(400);
    const noScheme = await gatewayTo(up.url.replace("http://127.0.0.1", "localhost"), undefined, "real-key", gw);
    expect(await raw(noScheme.baseURL, "models", auth(noScheme.apiKey))).toMatchObject({ status: 502, body: expect.stringMatching(/not an http\(s\) URL/) });
    const crlf = await gatewayTo(up.url, undefined, "real-key\r", gw);
    expect(await raw(crlf.baseURL, "models", auth(crlf.apiKey))).toMatchObject({ status: 502, body: expect.stringMatching(/could not be sent upstream/) });
    expect(up.seen).toHaveLength(0);
    expect((await raw(good.baseURL, "models", auth(good.apiKey))).status).toBe(200);
  });

  it("headers for the hop are not forwarded: those the client's Connection names, proxy credentials, Expect", async () => {
    const up = await upstream((_req, res) => res.end("{}"));
    const { baseURL, apiKey } = await gatewayTo(up.url);
    await raw(baseURL, "models", {
      authorization: `Bearer ${apiKey}`,
      connection: "keep-alive, x-hop",
      "x-hop": "1",
      "proxy-authorization": "Basic eA==",
      "x-kept": "1",
    });
    expect(up.seen[0]!.headers["x-kept"]).toBe("1");
    for (const h of ["x-hop", "proxy-authorization", "expect"]) expect(up.seen[0]!.headers[h]).toBeUndefined();
  });
});
