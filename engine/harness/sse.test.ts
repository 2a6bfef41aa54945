// opencode's event stream as the engine reads it: events split out of chunks cut anywhere (CRLF halves included), and
// a real HTTP server's stream followed until it ends, fails, is aborted or its handler throws.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { followSse, SseSplitter } from "./sse";

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** Every way to cut `text` into chunks of at most three pieces, run through a splitter: the data it handed on each time. */
function everyCut(text: string): string[][] {
  const runs: string[][] = [];
  for (let i = 0; i <= text.length; i++)
    for (let j = i; j <= text.length; j += 3) {
      const got: string[] = [];
      const s = new SseSplitter((d) => got.push(d));
      for (const c of [text.slice(0, i), text.slice(i, j), text.slice(j)]) s.push(c);
      runs.push(got);
    }
  return runs;
}

describe("SseSplitter", () => {
  const lines = [
    '{"payload":{"type":"server.connected","properties":{}}}',
    '{"directory":"/a b","payload":{"type":"session.idle","properties":{"sessionID":"s\\n1"}}}',
    "ünïcode ✓",
  ];

  it("hands on each event's data once, in order, however the stream is cut", () => {
    const text = lines.map((l) => `data: ${l}\n\n`).join("");
    const want = JSON.stringify(lines);
    expect(everyCut(text).find((got) => JSON.stringify(got) !== want)).toBeUndefined();
  });

  it("CRLF and CR line ends (a CRLF cut between its halves too), several data lines joined, comments and id/retry-only events give nothing", () => {
    const text = `: ping\r\n\r\ndata: ${lines[0]}\r\n\r\nid: 7\r\nretry: 10\r\n\r\nevent: x\rdata:two\rdata: lines\r\rdata:  spaced\n\ndata: x\r\ndata: y\r\n\r\n`;
    const want = JSON.stringify([lines[0], "two\nlines", " spaced", "x\ny"]);
    expect(everyCut(text).find((got) => JSON.stringify(got) !== want)).toBeUndefined();
  });

  it("an event not yet ended waits for the rest of it", () => {
    const got: string[] = [];
    const s = new SseSplitter((d) => got.push(d));
    s.push('data: {"a":');
    s.push("1}\n");
    expect(got).toEqual([]);
    s.push("\ndata: 2");
    expect(got).toEqual(['{"a":1}']);
  });
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
