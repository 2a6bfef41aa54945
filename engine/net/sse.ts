// The one reader of server-sent events: opencode's event stream (engine/harness/sse.ts, off node:http) and the model
// servers' chat streams (sseData below, off fetch) both go through SseSplitter. It follows the WHATWG rules for
// interpreting an event stream (html.spec.whatwg.org, "Event stream interpretation") as far as an event's data goes:
// - line ends LF, CRLF or a lone CR; a CR that ends one chunk and an LF that starts the next are ONE line end;
// - one U+FEFF at the very start of the stream is dropped (a second one is part of the first line);
// - a line that starts with ":" is a comment; `field:value` drops exactly one space after the colon; a line with no
//   colon is a field with an empty value (`data` alone adds an empty data line);
// - an event's `data` lines are joined with "\n" and handed on at the blank line that ends it; an event with no data
//   line (a comment, a bare `event:`, `id:` or `retry:`, llama.cpp's old `error:` field) hands on nothing;
// - at the end of the stream, an event not closed by a blank line (and a line not closed by a line end) is dropped,
//   as the spec says: it may have been cut. llama.cpp, vLLM and OpenAI-compatible servers end every event, `[DONE]`
//   included, with a blank line, and opencode's stream does too, so no caller relies on a last unclosed event.
// Each chunk is scanned once: the splitter keeps only the part of a line that has not ended yet, so the work is linear
// in the stream's size however it is cut.

/** The most characters one event may hold before its blank line (its data, and the line being read): 32 Mi. */
export const SSE_EVENT_MAX = 32 * 1024 * 1024;

/** A stream sent an event past SSE_EVENT_MAX without ending it: reading stops rather than hold it all in memory. */
export class SseEventTooLarge extends Error {
  readonly code = "SSE_EVENT_TOO_LARGE";
  constructor(readonly maxChars: number) {
    const size = maxChars >= 1024 * 1024 ? `${Math.round(maxChars / 1024 / 1024)} MiB` : `${Math.round(maxChars / 1024)} KiB`;
    super(`the stream sent an event of more than ${size} without ending it: not read further (a broken or hostile server)`);
  }
}

/**
 * Server-sent events out of text chunks, in order: each event's data goes to `onData` as its blank line arrives. The
 * caller decides what to parse (opencode's stream drops most events by their head, before any JSON.parse). An event
 * that grows past `maxChars` without ending (one endless line, or endless data lines) throws SseEventTooLarge.
 */
export class SseSplitter {
  /** The start of a line whose end has not arrived yet. */
  private partial = "";
  /** The data of the event being read; undefined until its first `data` line. */
  private data: string | undefined = undefined;
  /** Nothing has been read yet (a BOM may come). */
  private atStart = true;
  /** The last chunk ended with a CR: an LF that starts the next one belongs to that line end. */
  private afterCr = false;

  constructor(
    private readonly onData: (data: string) => void,
    private readonly maxChars = SSE_EVENT_MAX,
  ) {}

  /** Characters held back: the part of the current line read so far (never a whole line). */
  get held(): number {
    return this.partial.length;
  }

  push(chunk: string): void {
    const n = chunk.length;
    if (n === 0) return;
    let pos = 0;
    if (this.atStart) {
      this.atStart = false;
      if (chunk.charCodeAt(0) === 0xfeff) pos = 1;
    }
    if (this.afterCr) {
      this.afterCr = false;
      if (chunk.charCodeAt(0) === 10) pos = 1;
    }
    // The next LF and the next CR at or after pos; each is searched for again only once passed, so the chunk is read once.
    let lf = chunk.indexOf("\n", pos);
    let cr = chunk.indexOf("\r", pos);
    while (lf !== -1 || cr !== -1) {
      let end: number;
      let next: number;
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        end = lf;
        next = lf + 1;
        lf = chunk.indexOf("\n", next);
      } else {
        end = cr;
        next = cr + 1;
        if (next === n) this.afterCr = true;
        else if (lf === next) {
          next++;
          lf = chunk.indexOf("\n", next);
        }
        cr = chunk.indexOf("\r", next);
      }
      const piece = chunk.slice(pos, end);
      pos = next;
      if (this.partial) {
        const line = this.partial + piece;
        this.partial = "";
        this.line(line);
      } else this.line(piece);
    }
    if (pos < n) this.partial += chunk.slice(pos);
    this.bounded();
  }

  /** The stream ended: what was not closed (a line with no end, an event with no blank line) is dropped. */
  end(): void {
    this.partial = "";
    this.data = undefined;
    this.atStart = true;
    this.afterCr = false;
  }

  private line(line: string): void {
    if (line.length === 0) {
      const d = this.data;
      if (d === undefined) return;
      this.data = undefined;
      this.onData(d);
      return;
    }
    let value: string;
    if (line.startsWith("data:")) value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
    else if (line === "data") value = "";
    else return; // a comment, another field or a field of no use here
    this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    this.bounded();
  }

  /** The event being read (its data and the line not ended yet) past maxChars: dropped, and reading stops. */
  private bounded(): void {
    if (this.partial.length + (this.data?.length ?? 0) <= this.maxChars) return;
    this.end();
    throw new SseEventTooLarge(this.maxChars);
  }
}

/**
 * The `data:` payloads of a text/event-stream body, one string per event (multi-line data joined by "\n"), as they
 * arrive; SseSplitter's rules. The bytes are decoded as UTF-8 with the BOM left to the splitter (TextDecoder would drop
 * one too, and a second one must stay).
 */
export async function* sseData(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>, maxChars = SSE_EVENT_MAX): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let ready: string[] = [];
  const splitter = new SseSplitter((d) => ready.push(d), maxChars);
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    splitter.push(decoder.decode(chunk, { stream: true }));
    if (ready.length) {
      const out = ready;
      ready = [];
      yield* out;
    }
  }
  splitter.push(decoder.decode());
  splitter.end();
  yield* ready;
}
