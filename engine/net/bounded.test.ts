import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readLive } from "../admission/capacity";
import { httpJson } from "../serving/http";
import { providerModelsApi } from "../serving/providers-api";
import { toolRoundTrip } from "../serving/tool-probe";
import { ENDPOINT_MAX_BYTES } from "./bounded";

let server: http.Server | null = null;
afterEach(() => new Promise<void>((done) => (server ? (server.closeAllConnections(), server.close(() => done())) : done())));

const HUGE = 150 * 1024 * 1024;

/**
 * A model endpoint that answers /slots, /metrics and /props with 150 MB (a llama.cpp with many busy slots can): streamed
 * without a length, or declared up front. Counts what it managed to send before the client stopped reading.
 */
async function hugeEndpoint(declare: boolean, only?: RegExp, status = 200): Promise<{ url: string; sent: () => number }> {
  let sent = 0;
  server = http.createServer((req, res) => {
    if (only && !only.test(req.url ?? "")) return void res.writeHead(404).end();
    res.statusCode = status;
    res.setHeader("content-type", "application/json");
    if (declare) res.setHeader("content-length", String(HUGE));
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    res.write("[");
    const pump = () => {
      while (sent < HUGE) {
        if (res.destroyed) return;
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end("]");
    };
    res.on("close", () => undefined);
    pump();
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, sent: () => sent };
}

describe("bounded reads of endpoint answers", () => {
  for (const declare of [false, true]) {
    it(`a 150 MB /props is refused with a clear error after at most a few MiB (${declare ? "Content-Length declared" : "streamed"})`, async () => {
      const s = await hugeEndpoint(declare);
      const r = await httpJson(`${s.url}/props`, { timeoutMs: 60_000 });
      expect(r.ok).toBe(false);
      expect(r.body).toBeNull();
      expect(r.error).toContain(`is larger than ${ENDPOINT_MAX_BYTES / 1024} KiB: not read`);
      // The client stopped reading: the server could not push the 150 MB (socket buffers aside).
      expect(s.sent()).toBeLessThan(64 * 1024 * 1024);
    });
  }

  it("a 150 MB /slots (and /metrics) reads as 'reports nothing we understand', not as a frozen engine", async () => {
    const s = await hugeEndpoint(false);
    expect(await readLive(`${s.url}/v1`, null, 60_000)).toBeNull();
    expect(s.sent()).toBeLessThan(2 * 64 * 1024 * 1024);
  });

  it("a 150 MB /metrics (no /slots) reads as nothing, after at most a few MiB", async () => {
    const s = await hugeEndpoint(false, /^\/metrics/);
    expect(await readLive(`${s.url}/v1`, null, 60_000)).toBeNull();
    expect(s.sent()).toBeLessThan(64 * 1024 * 1024);
  });

  it("a provider's 150 MB /models streamed without a length is refused after 16 MiB, not read whole", async () => {
    const s = await hugeEndpoint(false, /^\/v1\/models/);
    await expect(providerModelsApi({ url: `${s.url}/v1` }, {}, 60_000)).rejects.toThrow(/answered more than 16 MB: not a model list/);
    expect(s.sent()).toBeLessThan(80 * 1024 * 1024);
  });

  it("a model endpoint's 150 MB error answer to a chat request is cut at 64 KiB", async () => {
    const s = await hugeEndpoint(false, /^\/v1\/chat/, 500);
    const r = await toolRoundTrip({ chatUrl: `${s.url}/v1/chat/completions`, model: "m", key: null, llamaExtensions: false, timeoutMs: 60_000 });
    expect(JSON.stringify(r).length).toBeLessThan(100_000);
    expect(s.sent()).toBeLessThan(64 * 1024 * 1024);
  });
});
