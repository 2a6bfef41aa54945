// What the API's HTTP server answers a request Node's parser refuses (a head past its limit, bytes that are not HTTP):
// a status and the API's error shape in words (tRPC's `error.message`), where it was an empty 431. The engine's own
// clients never send such a head (a long input goes in a POST body): a browser's or another client's may.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { EventBus } from "../events";
import type { Engine } from "../workers";
import { type ApiServer, startApiServer } from "./server";

const servers: ApiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function rig() {
  const server = await startApiServer({ engine: { bus: new EventBus() } as unknown as Engine, version: "test", instanceId: "i", shutdown: () => {} });
  servers.push(server);
  return server;
}

/** Sends `bytes` on a raw connection and reads the whole answer (the server closes it). */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => s.write(bytes));
    let got = "";
    s.on("data", (d) => (got += d.toString("utf8")));
    s.on("end", () => resolve(got));
    s.on("error", reject);
  });
}

describe("a request the HTTP parser refuses", () => {
  it("a head over the limit: 431 with words in the API's error shape, and the connection closed", async () => {
    const server = await rig();
    const answer = await raw(server.port, `GET /trpc/workers.list?input=${"x".repeat(20_000)} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
    const [head, body] = answer.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(head).toMatch(/\r\ncontent-type: application\/json/);
    expect(JSON.parse(body!)).toEqual({
      error: {
        message:
          "the request's URL and headers are over the 16 KiB the engine reads: send a long input in a POST body (a subscription's too), or name fewer ids",
        code: -32600,
        data: { code: "BAD_REQUEST", httpStatus: 431 },
      },
    });
  });

  it("bytes that are not HTTP: 400 in words", async () => {
    const server = await rig();
    const answer = await raw(server.port, "\u0000\u0001 not http at all\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.split("\r\n\r\n")[1]!).error.message).toBe("the engine could not read the request as HTTP: it was refused");
  });
});
