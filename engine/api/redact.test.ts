// A URL's credentials quoted back by an engine error (an endpoint given as http://user:secret@host/…, refused by setup
// with the URL in its words) never reach a client: every API error message is redacted on its way out.
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { InputError } from "../../shared/errors";
import { Target } from "../../shared/target";
import { TargetStore } from "../store";
import { testRegistry } from "../../test/fixtures/registry";
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

describe("an internal error", () => {
  it("is said as the engine's bug, with JavaScript's words kept as the detail; a coded error keeps its own words", async () => {
    let thrown: Error = new TypeError("Cannot read properties of undefined (reading 'state')");
    const engine = {
      bus: new EventBus(),
      get: () => {
        throw thrown;
      },
    } as unknown as Engine;
    server = await startApiServer({ engine, version: "test", instanceId: "i", shutdown: () => {} });
    const client = connect({ port: server.port, token: server.token }, "cli:test");
    const err = (await client.workers.get.query({ workerId: "w-x" }).catch((e: Error) => e)) as Error;
    expect(err.message).toBe(
      "the engine failed on an internal error (TypeError: Cannot read properties of undefined (reading 'state')): a bug in opencode-worker, not a fault of the request; please report it with what you did",
    );
    thrown = new InputError("unknown worker w-x: `ocw list` shows the workers", "not-found");
    const coded = (await client.workers.get.query({ workerId: "w-x" }).catch((e: Error) => e)) as Error;
    expect(coded.message).toBe("unknown worker w-x: `ocw list` shows the workers");
  });
});

describe("a target's URL credentials", () => {
  const target = (endpoint: string, pool: string[] = []) =>
    Target.parse({ id: "t1", model: "m", endpoint, serving: { engine: "api", endpoints: pool.map((url) => ({ url, slots: 1 })), slots: 1 } });

  it("are refused at save (a clear error pointing to the keychain), an endpoint of a pool too; nothing is stored", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-targets-"));
    const store = new TargetStore(path.join(dir, "targets.json"));
    for (const t of [
      target("https://alice:s3cret@api.example.com/v1"),
      target("http://127.0.0.1:9/v1", ["http://127.0.0.1:9/v1", "http://bob:s3cret@10.0.0.2:9/v1"]),
    ]) {
      const err = (() => {
        try {
          store.save(t);
        } catch (e) {
          return e as Error;
        }
      })();
      expect(err).toBeInstanceOf(InputError);
      expect(err!.message).toContain("ocw target key t1");
      expect(err!.message).toContain("***@");
      expect(err!.message).not.toContain("s3cret");
    }
    expect(store.list().targets).toEqual([]);
    expect(store.save(target("https://api.example.com/v1")).endpoint).toBe("https://api.example.com/v1");
    // Evidence quoting a request with credentials (a proxy's, a redirect's) is kept without them.
    const withEvidence = {
      ...target("https://api.example.com/v1"),
      checks: [{ name: "reachable" as const, passed: false, evidence: "GET http://carol:s3cret@proxy:3128/ refused" }],
    };
    expect(store.save(withEvidence).checks[0]!.evidence).toBe("GET http://***@proxy:3128/ refused");
    expect(JSON.stringify(store.list())).not.toContain("s3cret");
  });

  it("saved before they were refused, are never listed by the API (targets.list, status, endpoints)", async () => {
    const stored = {
      ...target("https://alice:s3cret@api.example.com/v1", ["https://alice:s3cret@api.example.com/v1"]),
      checks: [{ name: "reachable" as const, passed: true, evidence: "GET https://alice:s3cret@api.example.com/v1/models → 200" }],
    };
    const engine = {
      bus: new EventBus(),
      targets: { list: () => ({ active: "t1", targets: [stored] }), active: () => stored },
      endpoints: () => [{ targetId: "t1", endpoints: [{ url: stored.endpoint, healthy: true, slots: 1, inUse: 0 }] }],
    } as unknown as Engine;
    server = await startApiServer({ engine, version: "test", instanceId: "i", shutdown: () => {} });
    const client = connect({ port: server.port, token: server.token }, "cli:test");
    const listed = await client.targets.list.query();
    expect(listed.targets[0]!.endpoint).toBe("https://***@api.example.com/v1");
    expect(JSON.stringify(listed)).not.toContain("s3cret");
    expect(JSON.stringify(await client.targets.endpoints.query())).not.toContain("s3cret");
  });
});

describe("the engine's notices and log lines", () => {
  it("keep no URL credentials (a pool's endpoint that stopped answering, an error quoting a remote)", () => {
    const { registry, bus, lines, worker } = testRegistry();
    const seen: string[] = [];
    bus.subscribe((d) => seen.push(JSON.stringify(d)));
    registry.notice("warn", "endpoint https://alice:s3cret@10.0.0.2:8080/v1 of t1 stopped answering");
    registry.log("push to https://x-access-token:ghp_s3cret@github.com/o/r.git failed");
    expect(lines.join("\n")).toContain("https://***@10.0.0.2:8080/v1");
    expect(lines.join("\n")).not.toContain("s3cret");
    expect(seen.join("\n")).toContain("https://***@10.0.0.2:8080/v1");
    expect(seen.join("\n")).not.toContain("s3cret");
    // A worker's state reason (a model call that failed, quoting its URL) is recorded and shown without them.
    const { id } = worker("running");
    registry.fire(id, "fail-run", "model call to http://bob:s3cret@127.0.0.1:9/v1 failed");
    expect(registry.get(id).stateReason).toBe("model call to http://***@127.0.0.1:9/v1 failed");
  });
});
