/**
 * Key rotation on a running engine: a provider target whose key was typed in (targets.setKey), a worker built on it,
 * then the provider revokes that key and the person sets a new one. The next worker must run on the new key — the
 * opencode server of the target is already running, and its key gateway used to keep the key read when it started
 * (the worker failed "refused the target's key" until the engine restarted). Then the key is removed: nothing is sent.
 * A target saved without a key and given one later: its server used to reach the provider directly, key-less, until
 * the engine restarted.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../../shared/target";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, settle, startEngine, tempDir, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
let proxy: http.Server;
let url: string;
/** The key the stand-in provider accepts now; what each model call carried. */
let valid = "sk-first-key";
const carried: string[] = [];
const home = tempDir("rotation-home");
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [{ match: /ROTATE-KEY/, script: (c) => (c.turnStep === 0 ? writeFile("r.txt", "r\n") : { text: "Wrote r.txt.\nOUTCOME: built" }) }],
  });
  // the provider: checks the key as OpenAI does, then serves from the scripted model
  proxy = http.createServer((req, res) => {
    const auth = String(req.headers.authorization ?? "");
    if (/chat\/completions/.test(req.url ?? "")) carried.push(auth);
    if (auth !== `Bearer ${valid}`) {
      req.resume();
      res.writeHead(401, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
    }
    const up = http.request(
      `${model.url}${(req.url ?? "").replace(/^\/v1/, "")}`,
      { method: req.method, headers: { ...req.headers, host: new URL(model.url).host } },
      (a) => {
        res.writeHead(a.statusCode ?? 502, a.headers);
        a.pipe(res);
      },
    );
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`;
  engine = await startEngine(undefined, { HOME: home, OCW_KEYCHAIN: "off" });
  const target: Target = {
    id: "api-rotating",
    model: "scripted-1",
    endpoint: url,
    keyRef: null,
    serving: { engine: "api", endpoints: [], slots: 2 },
    checks: [],
  };
  await engine.client.targets.save.mutate({ target, activate: true });
  await engine.client.targets.setKey.mutate({ id: "api-rotating", key: valid });
}, 60_000);
afterAll(async () => {
  await engine?.kill();
  proxy?.close();
  await model?.close();
  cleanup(engine?.stateDir ?? "", home, ...repos);
});

async function runOne(): Promise<string> {
  const dir = makeRepo();
  repos.push(dir);
  const { workerId } = await engine.client.workers.start.mutate({ task: "ROTATE-KEY write r.txt", directory: dir, checks: [] });
  const w = (await settle(engine.client, [workerId], () => "always")).get(workerId);
  return `${w!.state}${w!.stateReason ? `: ${w!.stateReason}` : ""}`;
}

describe("a provider key set again while the engine runs", () => {
  it("the next worker runs on the new key; a removed key is sent no more", async () => {
    expect(await runOne()).toBe("built");
    // the provider revokes the first key; the person sets the new one in Setup
    valid = "sk-second-key";
    await engine.client.targets.setKey.mutate({ id: "api-rotating", key: "sk-second-key" });
    carried.length = 0;
    expect(await runOne()).toBe("built");
    expect(carried.length).toBeGreaterThan(0);
    expect(new Set(carried)).toEqual(new Set(["Bearer sk-second-key"]));
    // removed: the worker's call carries no key, and its error says what to do
    await engine.client.targets.setKey.mutate({ id: "api-rotating", key: "" });
    carried.length = 0;
    const third = await runOne();
    expect(third).toMatch(
      /^error: the model API refused the target's key \(HTTP 401; the error's words, untrusted: "Incorrect API key provided"\): set the key again/,
    );
    // the command that sets this target's key, by its id
    expect(third).toContain("set the key again (`ocw target key api-rotating`, Setup, or its variable where the engine runs)");
    expect(carried).toEqual([""]);
  }, 240_000);
  it("a target saved without a key, given one later (ocw target key): the next worker sends it, no engine restart", async () => {
    valid = "sk-late-key";
    const target: Target = {
      id: "api-late",
      model: "scripted-1",
      endpoint: url,
      keyRef: null,
      serving: { engine: "api", endpoints: [], slots: 2 },
      checks: [],
    };
    await engine.client.targets.save.mutate({ target, activate: true });
    carried.length = 0;
    // its opencode server is made now, with no key to send: the provider refuses
    expect(await runOne()).toMatch(/^error: the model API refused the target's key \(HTTP 401/);
    expect(carried).toEqual([""]);
    await engine.client.targets.setKey.mutate({ id: "api-late", key: "sk-late-key" });
    carried.length = 0;
    // the same server (no restart): its gateway route sends the key now; a direct route made key-less sent none
    expect(await runOne()).toBe("built");
    expect(new Set(carried)).toEqual(new Set(["Bearer sk-late-key"]));
  }, 240_000);
});
