// `ocw run --endpoint URL --model ID`, the ad-hoc endpoint, on the real bundle and engine: a web server that is not a
// model API is refused up front (it passed the reachability check, and the worker then failed with "HTTP 405").
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adhocTarget } from "../../engine/commands/target-flags";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, startEngine, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
let web: http.Server;
let webUrl: string;
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({ scripts: [] });
  engine = await startEngine();
  // a plain web server: a page on every path, whatever the method (a static file server's index, a web app)
  web = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>files</title><ul><li>index.html</li></ul>");
  });
  await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
  webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  web?.closeAllConnections();
  await new Promise((r) => web?.close(r));
  cleanup(engine?.stateDir ?? "", ...repos);
});

const adhocRun = (dir: string, endpoint: string, model: string, extra: string[] = []) =>
  runOcw(
    engine.stateDir,
    ["run", "--dir", dir, "--task", "ADHOC write a.txt", "--check", "test -f a.txt", "--endpoint", endpoint, "--model", model, ...extra],
    60_000,
  );

describe("ocw run --endpoint at a server that is not a model API", () => {
  it("is refused before any worker or target, saying it answered but is not an OpenAI-compatible API and what to check", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const r = await adhocRun(dir, webUrl, "m");
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim()).toBe(
      `ocw: the model endpoint ${webUrl}/v1 answered, but is not an OpenAI-compatible API (GET ${webUrl}/v1/models answered HTTP 200 text/html, not a JSON model list; POST ${webUrl}/v1/chat/completions answered HTTP 200 text/html): check the URL is the model API's base — llama-server, vLLM, Ollama: http://HOST:PORT/v1; a provider: its OpenAI-compatible base URL — and not a web page or another service on that port`,
    );
    expect(await engine.client.workers.list.query()).toHaveLength(0);
    expect((await engine.client.targets.list.query()).targets.map((t) => t.id)).not.toContain(adhocTarget(webUrl, "m").id);
  });

  it("an OpenAI-compatible server (the scripted model) still passes the check", async () => {
    await expect(engine.client.targets.preflight.mutate({ target: adhocTarget(model.url, "scripted-1") })).resolves.toMatchObject({ ok: true });
  });
});
