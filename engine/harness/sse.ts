import { sseData } from "../net/sse";

/** Reads a text/event-stream with fetch and yields each `data:` payload parsed as JSON. Ends when the stream ends. */
export async function* readSse(url: string, headers: Record<string, string>, signal: AbortSignal): AsyncGenerator<unknown> {
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal });
  if (!res.ok || !res.body) throw new Error(`event stream ${url} answered ${res.status}`);
  for await (const text of sseData(res.body)) {
    try {
      yield JSON.parse(text);
    } catch {
      // a non-JSON payload (comment/keep-alive) carries nothing for us
    }
  }
}
