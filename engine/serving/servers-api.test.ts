/**
 * The model servers the engine started, as the wizard manages them: stop (the record stays, so it can be restarted),
 * restart exactly as recorded (same port, same generated key), keep running after `ocw stop`, delete (stop and forget,
 * with its key). The server is a stand-in llama-server (a real process that answers /health and checks the key).
 */
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OcwError } from "../../shared/errors";
import { pidAlive } from "../process/process";
import { generateKey, keyFilePath, storeKey } from "./keys";
import { freePort, startLlamaServer } from "./llama-server";
import { serverDeleteApi, serverKeepApi, serverRestartApi, serversListApi, serverStopApi, stopUnkeptServing } from "./servers-api";
import { stopServing, updateServing } from "./setup";

let state: string;
let prev: { state?: string; sup?: string };
let stub: string;

/** A stand-in llama-server: /health answers 200; /v1/models only with the key it was given in LLAMA_API_KEY. */
const STUB = `#!/usr/bin/env node
const http = require("node:http");
const port = Number(process.argv[process.argv.indexOf("--port") + 1]);
const key = process.env.LLAMA_API_KEY;
http.createServer((req, res) => {
  if (req.url === "/health") return res.writeHead(200).end("{}");
  if (req.headers.authorization !== "Bearer " + key) return res.writeHead(401).end("{}");
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ data: [{ id: "m" }] }));
}).listen(port, "127.0.0.1");
`;

async function launch(targetId: string): Promise<{ port: number; key: string }> {
  const port = await freePort();
  const key = generateKey();
  const keyFile = keyFilePath(targetId, state);
  storeKey(keyFile, key);
  const logFile = path.join(state, "logs", `${targetId}.log`);
  const args = ["--port", String(port), "-m", "model.gguf"];
  const s = await startLlamaServer({ bin: stub, args, apiKey: key, logFile, port, detached: true, readyTimeoutMs: 20_000 });
  updateServing((all) => [...all, { targetId, pid: s.pid, port, bin: stub, args, logFile, keyFile, startedAt: new Date().toISOString() }]);
  return { port, key };
}

const models = (port: number, key: string) =>
  fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then(
    (r) => r.status,
    () => 0,
  );

beforeEach(() => {
  prev = { state: process.env.OCW_STATE_DIR, sup: process.env.OCW_SUPERVISE };
  state = mkdtempSync(path.join(os.tmpdir(), "ocw-servers-"));
  process.env.OCW_STATE_DIR = state;
  process.env.OCW_SUPERVISE = "0";
  stub = path.join(state, "llama-server");
  writeFileSync(stub, STUB);
  chmodSync(stub, 0o755);
});

afterEach(async () => {
  await stopServing();
  if (prev.state === undefined) delete process.env.OCW_STATE_DIR;
  else process.env.OCW_STATE_DIR = prev.state;
  if (prev.sup === undefined) delete process.env.OCW_SUPERVISE;
  else process.env.OCW_SUPERVISE = prev.sup;
  rmSync(state, { recursive: true, force: true });
});

describe("servers the engine started", () => {
  it("stop keeps the record; restart brings it back on the same port with the same key", async () => {
    const { port, key } = await launch("local-a");
    const [v] = serversListApi();
    expect(v).toMatchObject({ targetId: "local-a", port, running: true, keep: false });
    expect(JSON.stringify(v)).not.toContain(key);
    const pid = v!.pid;

    const stopped = await serverStopApi("local-a");
    expect(stopped[0]).toMatchObject({ running: false, pid: 0 });
    expect(pidAlive(pid)).toBe(false);
    expect(await models(port, key)).toBe(0);
    expect(serversListApi().map((s) => s.targetId)).toEqual(["local-a"]);

    const back = await serverRestartApi("local-a", { readyTimeoutMs: 20_000 });
    expect(back[0]).toMatchObject({ running: true, port });
    expect(back[0]!.pid).not.toBe(pid);
    expect(await models(port, key)).toBe(200);
  });

  it("`ocw stop` stops every server but the ones kept, and remembers them stopped: restarted later as they were", async () => {
    const a = await launch("kept");
    const b = await launch("plain");
    expect(serverKeepApi("kept", true)[0]!.keep).toBe(true);
    expect(await stopUnkeptServing()).toEqual(["plain"]);
    expect(await models(a.port, a.key)).toBe(200);
    expect(await models(b.port, b.key)).toBe(0);
    // remembered stopped (it was forgotten, so `ocw serving restart plain` after the engine came back found nothing)
    expect(serversListApi().map((s) => [s.targetId, s.running])).toEqual([
      ["kept", true],
      ["plain", false],
    ]);
    // a second `ocw stop` has nothing more to stop
    expect(await stopUnkeptServing()).toEqual([]);
    const back = await serverRestartApi("plain", { readyTimeoutMs: 20_000 });
    expect(back[0]).toMatchObject({ running: true, port: b.port });
    expect(await models(b.port, b.key)).toBe(200);
  });

  it("delete stops it and forgets it with its generated key; an unknown id is a not-found error", async () => {
    const a = await launch("gone");
    const keyFile = keyFilePath("gone", state);
    expect(existsSync(keyFile)).toBe(true);
    expect(await serverDeleteApi("gone")).toEqual({ deleted: ["gone"] });
    expect(await models(a.port, a.key)).toBe(0);
    expect(serversListApi()).toEqual([]);
    expect(existsSync(keyFile)).toBe(false);
    // a vLLM server (recorded by start-runtimes.ts) is not restarted as a llama-server would be
    updateServing(() => [{ targetId: "vllm-x", pid: 0, port: 1, bin: "/usr/bin/vllm", args: [], logFile: "/dev/null", keyFile: null, startedAt: "" }]);
    await expect(serverRestartApi("vllm-x")).rejects.toThrow(/runs vllm, not llama-server: start it again/);
    updateServing(() => []);
    const err = await serverStopApi("gone").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OcwError);
    expect((err as OcwError).code).toBe("not-found");
    expect((err as Error).message).toMatch(/no model server started by the engine for "gone"/);
  });
});
