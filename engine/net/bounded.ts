/**
 * Bounded reads of HTTP bodies from servers the engine does not control (model endpoints: `/slots`, `/metrics`,
 * `/props`, `/v1/models` …). A server may answer with any size: a llama.cpp `/slots` of 150 MB once held the engine's
 * one thread for 107 s (reading, decoding and parsing it). Past the cap the body is not read further: the connection is
 * cancelled and the caller gets a clear error instead of the text.
 */

/** The most bytes read of one endpoint response (4 MiB): a real `/slots`, `/metrics` or `/props` is far smaller. */
export const ENDPOINT_MAX_BYTES = 4 * 1024 * 1024;

export class BodyTooLarge extends Error {
  readonly code = "BODY_TOO_LARGE";
  constructor(
    readonly url: string,
    readonly maxBytes: number,
  ) {
    super(
      `the answer of ${url} is larger than ${Math.round(maxBytes / 1024)} KiB: not read (a server answering this much is not one the engine can read safely)`,
    );
  }
}

/** The body as text, at most `maxBytes` (a larger Content-Length is refused before any byte is read). */
export async function readBounded(res: Response, url: string, maxBytes = ENDPOINT_MAX_BYTES): Promise<string> {
  return (await readBoundedBytes(res, url, maxBytes)).toString("utf8");
}

/**
 * The body's bytes, at most `maxBytes`, undecoded: a large one is decoded and parsed off the engine's thread
 * (parse.ts `parseBody`), not here.
 */
export async function readBoundedBytes(res: Response, url: string, maxBytes = ENDPOINT_MAX_BYTES): Promise<Buffer> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new BodyTooLarge(url, maxBytes);
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLarge(url, maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/**
 * The first `maxBytes` of a body (fewer where it is shorter); the rest is not read: the connection is cancelled. For a
 * ranged read of a large file from a server that may ignore `Range` and send all of it.
 */
export async function readPrefix(res: Response, maxBytes: number): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size < maxBytes) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    chunks.push(value);
    size += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  return Buffer.concat(chunks).subarray(0, maxBytes);
}
