// opencode's event stream, read straight off node:http: each chunk goes once through the engine's one SSE splitter
// (engine/net/sse.ts), and each event's data is handed on as text, so the caller decides what to parse. (The SDK's SSE
// client pipes the body through web streams and a TextDecoderStream, re-normalises the whole buffer on every chunk,
// and JSON-parses every event: ~3,600 events and 1.5 MB for a 32-task batch, three quarters of them of types the
// engine drops.)
import http from "node:http";
import { SseSplitter } from "../net";

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
      res.on("end", () => {
        splitter.end();
        finish("the stream ended");
      });
      res.on("error", (err) => finish(err.message));
      res.on("close", () => finish("the stream ended"));
    });
    req.on("error", (err) => finish(err.message));
  });
}
