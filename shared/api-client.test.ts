// The client factory against a real tRPC handler whose connection breaks before it answers, as a keep-alive socket
// does when the engine closes it (stopping or restarting) just as a request goes out on it.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { initTRPC } from "@trpc/server";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_PATH } from "./api";
import { createEngineClient } from "./api-client";

const t = initTRPC.create();
const hits = { ping: 0, bump: 0 };
const router = t.router({
  ping: t.procedure.query(() => "pong"),
  bump: t.procedure.mutation(() => ++hits.bump),
});
/** How many of the next requests are dropped unanswered (the socket destroyed once the request arrived). */
let dropNext = 0;
let server: http.Server;
let origin = "";

beforeAll(async () => {
  const handler = createHTTPHandler({ router, allowMethodOverride: true, basePath: `${API_PATH}/` });
  server = http.createServer((req, res) => {
    if (req.url?.includes("ping")) hits.ping++;
    if (dropNext > 0) {
      dropNext--;
      req.socket.destroy();
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("a request that gets no answer (its connection broke)", () => {
  it("a query is sent once more and answers", async () => {
    const c = createEngineClient<typeof router>({ origin, token: "t" }, "cli:test");
    hits.ping = 0;
    dropNext = 1;
    await expect(c.ping.query()).resolves.toBe("pong");
    expect(hits.ping).toBe(2);
  });

  it("a query is sent at most twice: a second break reaches the caller", async () => {
    const c = createEngineClient<typeof router>({ origin, token: "t" }, "cli:test");
    hits.ping = 0;
    dropNext = 2;
    await expect(c.ping.query()).rejects.toThrow();
    expect(hits.ping).toBe(2);
  });

  it("a mutation is never sent again: the engine may have acted on it", async () => {
    const c = createEngineClient<typeof router>({ origin, token: "t" }, "cli:test");
    const before = hits.bump;
    dropNext = 1;
    await expect(c.bump.mutate()).rejects.toThrow();
    expect(dropNext).toBe(0);
    await expect(c.bump.mutate()).resolves.toBe(before + 1);
  });
});
