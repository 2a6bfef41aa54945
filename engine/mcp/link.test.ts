// EngineLink against a stand-in engine: an HTTP server answering /health as the lock's engine does, a lock file and
// the stop record the engine writes before it drops its connections (engine/api/host.ts close()).
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { recordStop, removeLock, writeLock } from "../api/lock";
import { EngineLink, ToolError } from "./link";

const open: { dir: string; server: http.Server }[] = [];
afterEach(async () => {
  for (const { dir, server } of open.splice(0)) {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A stand-in engine that answers /health as the lock it wrote says, in a fresh state folder. */
async function standIn() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-link-"));
  const instanceId = "i-link-test";
  const server = http.createServer((_req, res) => res.end(JSON.stringify({ ok: true, pid: process.pid, instanceId })));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  open.push({ dir, server });
  const port = (server.address() as AddressInfo).port;
  writeLock(dir, { pid: process.pid, startTime: null, instanceId, port, token: "t", version: "0", startedAt: Date.now() });
  return dir;
}

/** What a fetch on a kept-alive connection the engine closed gives (undici: "fetch failed", caused by the socket). */
const droppedConnection = () =>
  Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) });

describe("EngineLink", () => {
  it("a long call cut off by a dropped (not refused) connection after `ocw stop` ends saying the engine was stopped", async () => {
    const dir = await standIn();
    const link = new EngineLink(dir, () => "mcp:test");
    const since = Date.now();
    const err = await link
      .call(
        async () => {
          // The engine's close: the stop recorded, the lock removed, then its connections dropped.
          recordStop(dir, "`ocw stop`");
          removeLock(dir);
          throw droppedConnection();
        },
        undefined,
        since,
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect((err as Error).message).toMatch(/^the engine was stopped \(`ocw stop`\) while this call waited/);
  });

  it("a dropped connection with no stop recorded since the call began is the connection's own error (a crash, not a stop)", async () => {
    const dir = await standIn();
    recordStop(dir, "`ocw stop`");
    const link = new EngineLink(dir, () => "mcp:test");
    const since = Date.now() + 1;
    const err = await link
      .call(
        async () => {
          removeLock(dir);
          throw droppedConnection();
        },
        undefined,
        since,
      )
      .catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ToolError);
    expect((err as Error).message).toBe("fetch failed");
  });

  it("a call that does not wait (no start time) is never turned into a stop", async () => {
    const dir = await standIn();
    const link = new EngineLink(dir, () => "mcp:test");
    const err = await link
      .call(async () => {
        recordStop(dir, "`ocw stop`");
        removeLock(dir);
        throw droppedConnection();
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe("fetch failed");
  });
});
