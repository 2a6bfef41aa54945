// opencode's event stream as the engine reads it: a real HTTP server's stream followed until it ends, fails, is aborted
// or its handler throws (the splitter's own rules: engine/net/sse.test.ts).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { followSse } from "./sse";

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("followSse against a real HTTP server", () => {
  it("reads every event in order, with the headers given, and says when the stream ended", async () => {
    let auth: string | undefined;
    const url = await serve((req, res) => {
      auth = req.headers.authorization;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: 1\n\ndata: 2\n");
      setTimeout(() => res.end("\ndata: 3\n\n"), 20);
    });
    const got: string[] = [];
    const why = await followSse(`${url}/global/event`, { Authorization: "Basic x" }, new AbortController().signal, (d) => got.push(d));
    expect(got).toEqual(["1", "2", "3"]);
    expect(why).toBe("the stream ended");
    expect(auth).toBe("Basic x");
  });

  it("a BOM first, lone CRs, a CRLF cut between two writes; an event the server ends without its blank line is not handed on", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(Buffer.from([0xef, 0xbb, 0xbf]));
      res.write("data: 1\r\rdata: 2\r");
      setTimeout(() => res.write("\n\r\n"), 10);
      setTimeout(() => res.end("data: cut"), 30);
    });
    const got: string[] = [];
    expect(await followSse(url, {}, new AbortController().signal, (d) => got.push(d))).toBe("the stream ended");
    expect(got).toEqual(["1", "2"]);
  });

  it("an error status is a failure that names it; nothing is handed on", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(401, "Unauthorized");
      res.end("data: no\n\n");
    });
    const got: string[] = [];
    expect(await followSse(url, {}, new AbortController().signal, (d) => got.push(d))).toBe("SSE failed: 401 Unauthorized");
    expect(got).toEqual([]);
  });

  it("nobody listening, an abort, a handler that throws: each ends the stream with its reason, never a rejection", async () => {
    const closed = await serve(() => {});
    servers.pop()!.close();
    await new Promise((r) => setTimeout(r, 20));
    expect(await followSse(closed, {}, new AbortController().signal, () => {})).toMatch(/ECONNREFUSED/);

    let open = 0;
    const url = await serve((_req, res) => {
      open++;
      res.writeHead(200);
      res.write("data: a\n\ndata: b\n\ndata: c\n\n");
    });
    const abort = new AbortController();
    const got: string[] = [];
    const following = followSse(url, {}, abort.signal, (d) => {
      got.push(d);
      if (d === "c") abort.abort();
    });
    expect(await following).toMatch(/abort/i);
    expect(got).toEqual(["a", "b", "c"]);

    const seen: string[] = [];
    const why = await followSse(url, {}, new AbortController().signal, (d) => {
      seen.push(d);
      if (d === "b") throw new Error("the listener failed");
    });
    expect(why).toBe("the listener failed");
    expect(seen).toEqual(["a", "b"]);
    expect(open).toBe(2);
  });
});
