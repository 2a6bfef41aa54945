/**
 * Each target's opencode serve reaches the egress proxy with an identity of its own (engine/net/egress.ts): what one
 * serve's webfetches hold there is counted and capped apart from every other's. All shared one key before, so one
 * target's hanging webfetches could fill a shared count.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Target } from "../../shared/target";
import type { HarnessServer } from "./harness";
import type { OpencodeServerOptions } from "./opencode-server";
import { OpencodeServers } from "./servers";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-servers-egress-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const target = (id: string, port: number): Target => ({
  id,
  model: "m",
  quant: null,
  endpoint: `http://127.0.0.1:${port}/v1`,
  keyRef: null,
  serving: { engine: "llama.cpp", endpoints: [], slots: 2, perSlotCtx: null },
  checks: [],
});

describe("OpencodeServers: each serve's identity at the egress proxy", () => {
  it("two targets' serves are given one proxy, each with a user name and key of its own", async () => {
    const given: OpencodeServerOptions["egress"][] = [];
    const servers = new OpencodeServers({
      stateDir: dir,
      sandbox: { kind: "none" },
      workspacesRoot: path.join(dir, "ws"),
      tmpRoot: path.join(dir, "tmp"),
      mirrorsRoot: path.join(dir, "mirrors"),
      log: () => undefined,
      wire: () => undefined,
      harness: (o) => {
        given.push(o.egress);
        return { ready: true, url: null, pid: undefined, start: async () => undefined, stop: async () => undefined } as unknown as HarnessServer;
      },
    });
    try {
      await servers.for(target("a", 8001));
      await servers.for(target("b", 8002));
      await servers.for(target("a", 8001));
      expect(given).toHaveLength(2);
      const [a, b] = given.map((e) => new URL(e!.proxy));
      expect(a!.host).toBe(b!.host);
      expect(a!.username).not.toBe(b!.username);
      expect(a!.password).not.toBe(b!.password);
      expect(a!.password.length).toBeGreaterThanOrEqual(32);
      expect(given[0]!.direct).toEqual(["127.0.0.1:8001", "127.0.0.1:9"]);
    } finally {
      await servers.close();
    }
  });
});
