import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { describeFetchError } from "./cause";

async function failure(url: string): Promise<unknown> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(5000) });
  } catch (e) {
    return e;
  }
  throw new Error("the request did not fail");
}

describe("describeFetchError: a failed request's root cause in words, never a bare 'fetch failed'", () => {
  it("connection refused (a real closed port)", async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise((r) => srv.close(r));
    const e = await failure(`http://127.0.0.1:${port}/v1/models`);
    expect((e as Error).message).toBe("fetch failed"); // what the old code showed
    const text = describeFetchError(e, `http://127.0.0.1:${port}/v1/models`);
    expect(text).toBe(`cannot reach 127.0.0.1:${port}: nothing listens there (connection refused) [ECONNREFUSED]`);
  });

  it("a name that does not resolve (.invalid never does)", async () => {
    const e = await failure("http://no-such-host.invalid/x");
    expect(describeFetchError(e, "http://no-such-host.invalid/x")).toMatch(/^cannot reach no-such-host\.invalid: its name (does not|could not) resolve/);
  });

  it("a server that cuts the connection", async () => {
    const srv = createServer((req) => req.socket.destroy());
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
    const e = await failure(url);
    srv.close();
    expect(describeFetchError(e, url)).toMatch(/^cannot reach 127\.0\.0\.1:\d+: (the connection (was cut|broke)|.*socket)/i);
    expect(describeFetchError(e, url)).not.toMatch(/fetch failed/);
  });

  it("other errors keep their message (a file-system error is not a network failure)", () => {
    const fsErr = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    expect(describeFetchError(fsErr, "https://huggingface.co")).toBe("ENOSPC: no space left on device, write");
    expect(describeFetchError(new Error("HTTP 404 for model.gguf"))).toBe("HTTP 404 for model.gguf");
  });
});
