// opencode's event stream, read straight off node:http: each chunk is split once into events, and each event's data
// handed on as text, so the caller decides what to parse. (The SDK's SSE client pipes the body through web streams and
// a TextDecoderStream, re-normalises the whole buffer on every chunk, and JSON-parses every event: ~3,600 events and
// 1.5 MB for a 32-task batch, three quarters of them of types the engine drops.)
import http from "node:http";

/**
 * Server-sent events out of text chunks, in order: each event's data (its `data:` lines joined by "\n"; one space after
 * the colon dropped) goes to `onData`. Events without data (comments, a bare `id:` or `retry:`) give nothing. Line ends
 * may be LF, CRLF or CR, a CRLF split across two chunks included.
 */
export class SseSplitter {
  private buf = "";
  /** Where the next search for an event's end starts in `buf` (what came before holds none). */
  private from = 0;

  constructor(private readonly onData: (data: string) => void) {}

  push(chunk: string): void {
    let text = this.buf + chunk;
    if (text.includes("\r")) {
      // A CR that ends the chunk may be the first half of a CRLF: it waits for the next chunk.
      const held = text.endsWith("\r");
      text = (held ? text.slice(0, -1) : text).replace(/\r\n?/g, "\n") + (held ? "\r" : "");
      this.from = 0;
    }
    let start = 0;
    for (let end = text.indexOf("\n\n", this.from); end !== -1; end = text.indexOf("\n\n", start)) {
      this.event(text.slice(start, end));
      start = end + 2;
    }
    this.buf = start ? text.slice(start) : text;
    this.from = Math.max(0, this.buf.length - 1);
  }

  private event(block: string): void {
    if (!block.includes("\n")) {
      // The usual event: one `data:` line.
      if (block.startsWith("data:")) this.onData(block.charCodeAt(5) === 32 ? block.slice(6) : block.slice(5));
      return;
    }
    const data: string[] = [];
    for (const line of block.split("\n")) if (line.startsWith("data:")) data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5));
    if (data.length) this.onData(data.join("\n"));
  }
}

/**
 * Follows an SSE endpoint until it ends, fails or `signal` aborts; resolves with why it stopped (never rejects). Each
 * event's data goes to `onData` as it arrives, in order; a handler that throws ends the stream with its message.
 */
export function followSse(url: string, headers: Record<string, string>, signal: AbortSignal, onData: (data: string) => void): Promise<string> {
  return new Promise<string>((resolve) => {
    let done = false;
    let req: http.ClientRequest | undefined;
    const finish = (why: string) => {
      if (done) return;
      done = true;
      req?.destroy();
      resolve(why);
    };
    if (signal.aborted) return finish("aborted");
    req = http.get(url, { headers: { accept: "text/event-stream", ...headers }, signal, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return finish(`SSE failed: ${res.statusCode} ${res.statusMessage ?? ""}`.trim());
      }
      const splitter = new SseSplitter(onData);
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        if (done) return;
        try {
          splitter.push(chunk);
        } catch (err) {
          finish((err as Error).message);
        }
      });
      res.on("end", () => finish("the stream ended"));
      res.on("error", (err) => finish(err.message));
      res.on("close", () => finish("the stream ended"));
    });
    req.on("error", (err) => finish(err.message));
  });
}
