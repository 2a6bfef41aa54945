/**
 * A key set again (rotated) or removed in Setup while the target's opencode server runs: the engine's key gateway sends
 * the new key (or none) from the next worker on. It used to keep the key read when the server was made, so a rotated
 * key reached no worker — and a removed one went on being sent — until the engine restarted.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../../shared/target";
import { FakeOpencode } from "../../test/fixtures/fake-harness";
import { OpencodeServers } from "./servers";

let upstream: http.Server;
let upstreamUrl: string;
const seen: (string | undefined)[] = [];
const seenFixed: (string | undefined)[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-rekey-"));

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    req.resume();
    res.writeHead(200, { "content-type": "application/json" });
    res.end("{}");
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
});
afterAll(() => {
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Servers whose harness records the providers each server was given (no opencode starts). */
function stubServers() {
  const made: { baseURL: string; apiKey: string }[][] = [];
  const servers = new OpencodeServers({
    stateDir: dir,
    sandbox: { kind: "none" },
    workspacesRoot: path.join(dir, "ws"),
    tmpRoot: path.join(dir, "tmp"),
    mirrorsRoot: path.join(dir, "mirrors"),
    log: () => undefined,
    wire: () => undefined,
    harness: (o) => {
      made.push([o.provider ?? []].flat());
      return new FakeOpencode(() => []);
    },
  });
  return { made, servers };
}

describe("OpencodeServers: the key a running server's gateway sends", () => {
  it("follows a key set again, and a key removed, without a new server", async () => {
    const { made, servers } = stubServers();
    const target = (keyRef: string | null): Target => ({
      id: "api-provider",
      model: "m",
      quant: null,
      endpoint: upstreamUrl,
      keyRef,
      serving: { engine: "api", endpoints: [{ url: upstreamUrl, slots: 4 }], slots: 4, perSlotCtx: null },
      checks: [],
    });
    const env = process.env;
    const ask = async () => {
      const p = made[0]![0]!;
      await fetch(`${p.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${p.apiKey}` }, body: "{}" }).then((r) => r.text());
    };
    try {
      process.env.OCW_TEST_ROTATED_KEY = "sk-old";
      const first = await servers.for(target("OCW_TEST_ROTATED_KEY"));
      await ask();
      process.env.OCW_TEST_ROTATED_KEY = "sk-new";
      expect(await servers.for(target("OCW_TEST_ROTATED_KEY"))).toBe(first);
      await ask();
      // removed (targets.setKey with an empty key): nothing is sent in its place
      await servers.for(target(null));
      await ask();
      expect(made).toHaveLength(1);
      expect(seen).toEqual(["Bearer sk-old", "Bearer sk-new", undefined]);
      // the target saved again with its base URL fixed (re-running setup keeps its id): the route goes there now
      const fixed = http.createServer((req, res) => {
        seenFixed.push(req.url);
        req.resume();
        res.end("{}");
      });
      await new Promise<void>((r) => fixed.listen(0, "127.0.0.1", () => r()));
      const fixedUrl = `http://127.0.0.1:${(fixed.address() as AddressInfo).port}/api/v1`;
      try {
        await servers.for({
          ...target("OCW_TEST_ROTATED_KEY"),
          endpoint: fixedUrl,
          serving: { engine: "api", endpoints: [{ url: fixedUrl, slots: 4 }], slots: 4, perSlotCtx: null },
        });
        await ask();
        expect(seenFixed).toEqual(["/api/v1/chat/completions"]);
        expect(made).toHaveLength(1);
      } finally {
        fixed.close();
      }
    } finally {
      process.env = env;
      delete process.env.OCW_TEST_ROTATED_KEY;
      await servers.close();
    }
  });
  it("reaches a key-less model server of the person's own directly: its tokens never pass through the engine", async () => {
    const { made, servers } = stubServers();
    const local = (id: string, engine: "llama.cpp" | "capture"): Target => ({
      id,
      model: "m",
      quant: null,
      endpoint: "http://127.0.0.1:8080/v1",
      keyRef: null,
      serving: { engine, endpoints: [{ url: "http://127.0.0.1:8080/v1", slots: 2 }], slots: 2, perSlotCtx: null },
      checks: [],
    });
    try {
      await servers.for(local("own-llama", "llama.cpp"));
      await servers.for(local("own-captured", "capture"));
      expect(made.map((m) => m[0])).toEqual([
        { baseURL: "http://127.0.0.1:8080/v1", apiKey: "none" },
        { baseURL: "http://127.0.0.1:8080/v1", apiKey: "none" },
      ]);
    } finally {
      await servers.close();
    }
  });
  it("sends a key given later to a target saved without one, without a new server (no key-less direct route)", async () => {
    const heard: (string | undefined)[] = [];
    const model = http.createServer((req, res) => {
      heard.push(req.headers.authorization);
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
    await new Promise<void>((r) => model.listen(0, "127.0.0.1", () => r()));
    const modelUrl = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
    const { made, servers } = stubServers();
    const target = (keyRef: string | null): Target => ({
      id: "api-late-key",
      model: "m",
      quant: null,
      endpoint: modelUrl,
      keyRef,
      serving: { engine: "api", endpoints: [{ url: modelUrl, slots: 2 }], slots: 2, perSlotCtx: null },
      checks: [],
    });
    const ask = async () => {
      const p = made[0]![0]!;
      await fetch(`${p.baseURL}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${p.apiKey}` }, body: "{}" }).then((r) => r.text());
    };
    try {
      // saved without a key: its server is made, and its first request carries none
      const first = await servers.for(target(null));
      await ask();
      // opencode holds the gateway's address, never the endpoint's (a direct route could not be given a key later)
      expect(made[0]![0]!.baseURL.startsWith(modelUrl)).toBe(false);
      // `ocw target key ID` (here: the key's variable named): the same server, its next request with the key
      process.env.OCW_TEST_LATE_KEY = "sk-late-key";
      expect(await servers.for(target("OCW_TEST_LATE_KEY"))).toBe(first);
      await ask();
      expect(made).toHaveLength(1);
      expect(heard).toEqual([undefined, "Bearer sk-late-key"]);
    } finally {
      delete process.env.OCW_TEST_LATE_KEY;
      model.close();
      await servers.close();
    }
  });
});
