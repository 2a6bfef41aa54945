/**
 * The `data:` payloads of a text/event-stream body, one string per event (multi-line data joined by "\n"), as they
 * arrive. Comments, `event:`/`id:` fields and keep-alives carry nothing for us and are skipped.
 */
export async function* sseData(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buf = "";
  let data: string[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        if (data.length) yield data.join("\n");
        data = [];
      } else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
  }
  if (buf.startsWith("data:")) data.push(buf.slice(5).trimStart());
  if (data.length) yield data.join("\n");
}
