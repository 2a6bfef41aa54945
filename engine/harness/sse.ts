/** Reads a text/event-stream with fetch and yields each `data:` payload parsed as JSON. Ends when the stream ends. */
export async function* readSse(url: string, headers: Record<string, string>, signal: AbortSignal): AsyncGenerator<unknown> {
  const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal });
  if (!res.ok || !res.body) throw new Error(`event stream ${url} answered ${res.status}`);
  const decoder = new TextDecoder();
  let buf = "";
  let data: string[] = [];
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) {
          const text = data.join("\n");
          data = [];
          try {
            yield JSON.parse(text);
          } catch {
            // a non-JSON payload (comment/keep-alive) carries nothing for us
          }
        }
      } else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
  }
}
