// The engine's one SSE reader, by the WHATWG event-stream rules: events split out of chunks cut anywhere (CRLF halves
// included), every line end, a BOM, comments, fields without a colon, one space dropped after the colon, the last
// unclosed event dropped; and linear work on a long stream cut small (the splitter never holds more than the line
// being read).
import { describe, expect, it } from "vitest";
import { SSE_EVENT_MAX, SseEventTooLarge, SseSplitter, sseData } from "./sse";

/** Every way to cut `text` into chunks of at most three pieces, run through a splitter: the data it handed on each time. */
function everyCut(text: string): string[][] {
  const runs: string[][] = [];
  for (let i = 0; i <= text.length; i++)
    for (let j = i; j <= text.length; j += 3) {
      const got: string[] = [];
      const s = new SseSplitter((d) => got.push(d));
      for (const c of [text.slice(0, i), text.slice(i, j), text.slice(j)]) s.push(c);
      s.end();
      runs.push(got);
    }
  return runs;
}

/** The payloads sseData reads from `chunks` (strings encoded as UTF-8, or raw bytes), as a fetch body would hand them. */
async function read(chunks: (string | Uint8Array)[]): Promise<string[]> {
  const enc = new TextEncoder();
  const body = (async function* () {
    for (const c of chunks) yield typeof c === "string" ? enc.encode(c) : c;
  })();
  const got: string[] = [];
  for await (const d of sseData(body)) got.push(d);
  return got;
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

  it("one BOM at the stream's start is dropped, a second is part of the first line; a field with no colon; comments that look like data", () => {
    const text = "\uFEFFdata: a\n\n:data: not data\n\ndata\n\ndata\ndata:b\n\n\uFEFFdata: mid\n\n";
    // the BOM in the middle makes its line a field named "\uFEFFdata": not data
    const want = JSON.stringify(["a", "", "\nb"]);
    expect(everyCut(text).find((got) => JSON.stringify(got) !== want)).toBeUndefined();
    const twice: string[] = [];
    const s = new SseSplitter((d) => twice.push(d));
    s.push("\uFEFF\uFEFFdata: x\n\ndata: y\n\n");
    expect(twice).toEqual(["y"]);
  });

  it("a CR at a chunk's end and an LF at the next one's start are one line end, not an empty line that ends the event", () => {
    const got: string[] = [];
    const s = new SseSplitter((d) => got.push(d));
    for (const c of ["data: a\r", "\ndata: b\r", "\n", "\r", "\n"]) s.push(c);
    expect(got).toEqual(["a\nb"]);
  });

  it("at the end of the stream an event with no blank line after it, or a line with no end, is dropped", () => {
    for (const tail of ["data: b", "data: b\n", "data: b\r", "data: b\r\n"]) {
      const got: string[] = [];
      const s = new SseSplitter((d) => got.push(d));
      s.push(`data: a\n\n${tail}`);
      s.end();
      s.push("data: c\n\n");
      expect(got, JSON.stringify(tail)).toEqual(["a", "c"]);
    }
  });

  it("a 5 MB stream in chunks of 1 to 13 characters: every event, and never more held than the line being read", () => {
    const ends = ["\n", "\r\n", "\r"];
    const events: string[] = [];
    let text = "";
    for (let i = 0; text.length < 5 * 2 ** 20; i++) {
      const e = ends[i % 3]!;
      const data = `{"i":${i},"pad":"${"x".repeat(i % 200)}"}`;
      events.push(i % 5 === 0 ? `${data}\n second` : data);
      text += i % 5 === 0 ? `data: ${data}${e}data:  second${e}${e}` : `: keep-alive${e}data: ${data}${e}${e}`;
    }
    const got: string[] = [];
    const s = new SseSplitter((d) => got.push(d));
    let lineStart = 0;
    let maxHeld = 0;
    let pushes = 0;
    const wrong: string[] = [];
    for (let at = 0; at < text.length; pushes++) {
      const next = Math.min(text.length, at + 1 + ((pushes * 7) % 13));
      s.push(text.slice(at, next));
      // what is held is exactly the text after the last line end read so far (a CR at the cut counts as one)
      for (let p = at; p < next; p++) if (text[p] === "\n" || text[p] === "\r") lineStart = p + 1;
      if (s.held !== next - lineStart && wrong.length < 3) wrong.push(`at ${next}: held ${s.held}, the line so far ${next - lineStart}`);
      maxHeld = Math.max(maxHeld, s.held);
      at = next;
    }
    s.end();
    expect(pushes).toBeGreaterThan(700_000);
    expect(wrong).toEqual([]);
    expect(got.length).toBe(events.length);
    expect(got).toEqual(events);
    expect(maxHeld).toBeLessThan(260);
  });
});

describe("sseData (a fetch body's payloads)", () => {
  it("a llama.cpp stream: one data line and a blank line per event, [DONE] last", async () => {
    const chunk = (c: string) => `data: ${JSON.stringify({ choices: [{ delta: { content: c } }] })}\n\n`;
    expect(await read([chunk("a") + chunk("b"), "data: [DONE]\n\n"])).toEqual([
      JSON.stringify({ choices: [{ delta: { content: "a" } }] }),
      JSON.stringify({ choices: [{ delta: { content: "b" } }] }),
      "[DONE]",
    ]);
  });

  it("CRLF line ends, a CRLF cut between chunks", async () => {
    expect(await read(["data: a\r\n\r\ndata: b\r", "\n\r", "\ndata: [DONE]\r\n\r\n"])).toEqual(["a", "b", "[DONE]"]);
  });

  it("lone CR line ends", async () => {
    expect(await read(["data: a\r\rdata: b\r", "\r: c\r\rdata: [DONE]\r\r"])).toEqual(["a", "b", "[DONE]"]);
  });

  it("exactly one space is dropped after `data:`", async () => {
    expect(await read(["data:  x\n\ndata:y\n\ndata:   \n\n"])).toEqual([" x", "y", "  "]);
  });

  it("a multi-line event keeps each line's own spaces and its empty lines", async () => {
    expect(await read(["data: a\ndata:\ndata:  b\ndata\n\n"])).toEqual(["a\n\n b\n"]);
  });

  it("comments (keep-alives) and other fields hand on nothing, an `error:` field included (only `data` is read)", async () => {
    expect(await read([": ping\n\nevent: x\nid: 1\nerror: {}\n\n:data: no\n\ndata: yes\n\n"])).toEqual(["yes"]);
  });

  it("the last event with no blank line after it is dropped (the stream may have been cut inside it)", async () => {
    expect(await read(['data: a\n\ndata: {"cut', "\n"])).toEqual(["a"]);
    expect(await read(["data: a\n\ndata: b"])).toEqual(["a"]);
  });

  it("a BOM at the start is dropped once; characters cut between chunks are decoded whole", async () => {
    const bytes = new TextEncoder().encode("\uFEFFdata: ✓é\n\n\uFEFF\n");
    const cut = [bytes.slice(0, 1), bytes.slice(1, 2), bytes.slice(2, 11), bytes.slice(11)];
    expect(await read(cut)).toEqual(["✓é"]);
    expect(await read([new TextEncoder().encode("\uFEFF\uFEFFdata: a\n\ndata: b\n\n")])).toEqual(["b"]);
  });

  it("a 5 MB stream in many small chunks of bytes, line ends mixed: every event, in order", async () => {
    const ends = ["\n", "\r\n", "\r"];
    let text = "";
    const want: string[] = [];
    for (let i = 0; text.length < 5 * 2 ** 20; i++) {
      const d = `{"i":${i},"t":"✓${"y".repeat(i % 100)}"}`;
      want.push(d);
      text += `data: ${d}${ends[i % 3]}${ends[i % 3]}`;
    }
    const bytes = new TextEncoder().encode(text);
    const chunks: Uint8Array[] = [];
    for (let at = 0, k = 0; at < bytes.length; k++) {
      const next = Math.min(bytes.length, at + 1 + ((k * 131) % 257));
      chunks.push(bytes.subarray(at, next));
      at = next;
    }
    expect(chunks.length).toBeGreaterThan(30000);
    const got = await read(chunks);
    expect(got.length).toBe(want.length);
    expect(got).toEqual(want);
  });

  it("the reader stops when its consumer does", async () => {
    let pulled = 0;
    const body = (async function* () {
      for (let i = 0; i < 100; i++) {
        pulled++;
        yield new TextEncoder().encode(`data: ${i}\n\n`);
      }
    })();
    for await (const d of sseData(body)) if (d === "2") break;
    expect(pulled).toBe(3);
  });
});

describe("an event that never ends", () => {
  it("one endless line, or endless data lines with no blank line, stops the splitter past its cap, holding no more than that", () => {
    for (const piece of ["x".repeat(1000), "data: ".concat("y".repeat(994), "\n")]) {
      const got: string[] = [];
      const s = new SseSplitter((d) => got.push(d), 64 * 1024);
      let thrown: unknown;
      let pushed = 0;
      try {
        for (let i = 0; i < 1000; i++) {
          s.push(i === 0 ? `data: ok\n\n${piece}` : piece);
          pushed += piece.length;
          expect(s.held).toBeLessThanOrEqual(64 * 1024);
        }
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(SseEventTooLarge);
      expect((thrown as SseEventTooLarge).code).toBe("SSE_EVENT_TOO_LARGE");
      expect((thrown as Error).message).toBe("the stream sent an event of more than 64 KiB without ending it: not read further (a broken or hostile server)");
      // Stopped near the cap, not at the end of the million characters sent; the event before it was handed on.
      expect(pushed).toBeLessThan(70 * 1024);
      expect(got).toEqual(["ok"]);
      expect(s.held).toBe(0);
    }
  });

  it("sseData: the consumer gets the coded error and the body is let go; under the cap a long event is read whole", async () => {
    let pulled = 0;
    const endless = (async function* () {
      yield new TextEncoder().encode("data: first\n\n");
      // Endless as far as the reader can tell (16 MiB, all of one line).
      for (let i = 0; i < 4096; i++) {
        pulled++;
        yield new TextEncoder().encode("z".repeat(4096));
      }
    })();
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const d of sseData(endless, 1024 * 1024)) got.push(d);
      })(),
    ).rejects.toThrow(SseEventTooLarge);
    expect(got).toEqual(["first"]);
    expect(pulled).toBeLessThanOrEqual(257);
    const long = "w".repeat(2 * 1024 * 1024);
    expect(await read([`data: ${long.slice(0, 10)}`, `${long.slice(10)}\n\n`])).toEqual([long]);
    expect(SSE_EVENT_MAX).toBe(32 * 1024 * 1024);
  });
});
