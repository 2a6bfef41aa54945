// A URL's credentials quoted back by an engine error (an endpoint given as http://user:secret@host/…, refused by setup
// with the URL in its words) never reach a client: every API error message is redacted on its way out.
import { afterEach, describe, expect, it } from "vitest";
import { InputError } from "../../shared/errors";
import type { Engine } from "../workers";
import { EventBus } from "../events";
import { connect } from "./client";
import { type ApiServer, startApiServer } from "./server";

let server: ApiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("API error messages", () => {
  it("carry no URL credentials (a setup refusal quoting its endpoint)", async () => {
    const engine = {
      bus: new EventBus(),
      get: () => {
        throw new InputError("nothing OpenAI-compatible answers at http://alice:s3cret-token@127.0.0.1:9/v1; start the server or fix the URL", "not-found");
      },
    } as unknown as Engine;
    server = await startApiServer({ engine, version: "test", instanceId: "i", shutdown: () => {} });
    const client = connect({ port: server.port, token: server.token }, "cli:test");
    const err = await client.workers.get.query({ workerId: "w-x" }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe("nothing OpenAI-compatible answers at http://***@127.0.0.1:9/v1; start the server or fix the URL");
    expect(JSON.stringify(err)).not.toContain("s3cret");
  });
});
