// Why an endpoint cannot be reached, in words a person can act on: never an internal error class name ("TypeError").
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { probeHealth } from "./capacity";

describe("probeHealth's problem", () => {
  it("names the failure, never the error class", async () => {
    // fetch throws TypeError("fetch failed") with a cause that has no code for these (the old answer: "TypeError").
    expect(await probeHealth("http://127.0.0.1:1/v1", null)).toBe("the request failed: bad port");
    expect(await probeHealth("ftp://127.0.0.1/v1", null)).toBe("the request failed: unknown scheme");
    expect(await probeHealth("http://127.0.0.1:99999/v1", null)).toBe("not a valid URL (ERR_INVALID_URL)");
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    expect(await probeHealth(`http://127.0.0.1:${port}/v1`, null)).toBe("connection refused (ECONNREFUSED)");
  });

  it("a server that never answers: the time it waited", async () => {
    const silent = http.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    try {
      expect(await probeHealth(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, null, 300)).toBe("no answer within 300 ms");
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });
});
