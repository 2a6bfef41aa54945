import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { httpJson } from "./http";

let server: http.Server | null = null;
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

/** A server that drops the connection of its first request without answering (what a closed idle kept-alive connection looks like to the client), then answers. */
async function dropsFirst(): Promise<{ url: string; requests: () => number }> {
  let n = 0;
  server = http.createServer((req, res) => {
    n += 1;
    if (n === 1) return req.socket.destroy();
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ n }));
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, requests: () => n };
}

describe("httpJson", () => {
  it("sends a GET again on a fresh connection when the server closed the one it went out on", async () => {
    const s = await dropsFirst();
    const r = await httpJson<{ n: number }>(s.url);
    expect(r).toMatchObject({ ok: true, status: 200, body: { n: 2 } });
    expect(s.requests()).toBe(2);
  });

  it("never sends a POST twice: the closed connection is the caller's error", async () => {
    const s = await dropsFirst();
    const r = await httpJson(s.url, { body: { prompt: "once" } });
    expect(r.status).toBe(0);
    expect(r.error).toMatch(/UND_ERR_SOCKET|ECONNRESET/);
    expect(s.requests()).toBe(1);
  });
});
