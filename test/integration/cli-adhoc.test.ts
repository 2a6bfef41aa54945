// `ocw run --endpoint URL --model ID`, the ad-hoc endpoint, on the real bundle and engine: a web server that is not a
// model API is refused up front (it passed the reachability check, and the worker then failed with "HTTP 405"); the
// targets it saves (one per URL, model and key variable) are said in `ocw targets` and cleared with
// `ocw target remove --ad-hoc`, but for those a worker may still run on (they piled up with no way but one by one).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adhocTarget } from "../../engine/commands/target-flags";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, scriptedTarget, settle, startEngine, type TestEngine } from "../helpers";

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

describe("ad-hoc targets", () => {
  it("ocw targets says how many there are and how to clear them; ocw target remove --ad-hoc removes those no worker needs and keeps one a worker may still run on", async () => {
    const [a, b, c] = ["m-a", "m-b", "m-c"].map((m) => adhocTarget(model.url, m));
    await engine.client.targets.save.mutate({ target: scriptedTarget(model.url), activate: true });
    for (const t of [a!, b!, c!]) await engine.client.targets.save.mutate({ target: t });
    const dir = makeRepo();
    repos.push(dir);
    // a worker of target a, at rest (honest-failure: no script matches) but one a follow-up could still run on
    const { workerId } = await engine.client.workers.start.mutate({
      task: "ADHOC nothing scripted",
      directory: dir,
      targetId: a!.id,
      checks: [{ file: "a.txt", equals: "a" }],
      scope: ["a.txt"],
      protect: [],
      budget: {},
    } as any);
    await settle(engine.client, [workerId]);

    const listed = await runOcw(engine.stateDir, ["targets"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split("\n").at(-1)).toBe(
      "3 ad-hoc targets (adhoc-…, saved by `ocw run --endpoint`): `ocw target remove --ad-hoc` removes those no worker needs any more",
    );

    const first = await runOcw(engine.stateDir, ["target", "remove", "--ad-hoc"]);
    expect(first.code, first.stderr).toBe(0);
    const gone = [b!.id, c!.id]; // in the order they were saved
    expect(first.stdout).toBe(
      `removed 2 ad-hoc targets (their kept keys with them): ${gone.join(", ")}\nkept ${a!.id}: 1 worker may still run on it (${workerId}): merge or discard it first\n`,
    );
    expect((await engine.client.targets.list.query()).targets.map((t) => t.id).sort()).toEqual([a!.id, "scripted"].sort());

    await engine.client.workers.discard.mutate({ workerId });
    const second = await runOcw(engine.stateDir, ["target", "remove", "--ad-hoc"]);
    expect(second.stdout).toBe(`removed 1 ad-hoc target (their kept keys with them): ${a!.id}\n`);
    expect((await engine.client.targets.list.query()).targets.map((t) => t.id)).toEqual(["scripted"]);
    expect((await runOcw(engine.stateDir, ["target", "remove", "--ad-hoc"])).stdout).toBe("no ad-hoc target to remove\n");
    expect((await runOcw(engine.stateDir, ["targets"])).stdout).not.toContain("ad-hoc");

    // neither an id nor --ad-hoc, or both: said, exit 2
    const none = await runOcw(engine.stateDir, ["target", "remove"]);
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      "ocw: give the id of the target to remove (`ocw targets` lists them), or --ad-hoc for the ad-hoc ones no worker needs any more",
    ]);
    expect((await runOcw(engine.stateDir, ["target", "remove", "scripted", "--ad-hoc"])).code).toBe(2);
  }, 150_000);
});

// After the ad-hoc targets' count above: these runs save two more.
describe("ocw run --endpoint with a model the endpoint does not list", () => {
  it("a model the endpoint does not list is said on stderr with what it lists (the endpoint's words, marked), not refused; a listed one says nothing", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const r = await adhocRun(dir, model.url, "qwen3-coder");
    expect(r.stderr).toContain(
      `ocw: warning: the model endpoint does not list the model "qwen3-coder" (the models it lists, untrusted: ["scripted-1"]): the worker's first model call may fail with HTTP 404`,
    );
    // not refused: the worker ran (the scripted model serves any name, as llama-server does)
    expect(r.code, r.stderr).not.toBe(2);
    expect((await engine.client.workers.list.query()).some((w) => w.targetId === adhocTarget(model.url, "qwen3-coder").id)).toBe(true);
    const listed = await adhocRun(dir, model.url, "scripted-1");
    expect(listed.code, listed.stderr).not.toBe(2);
    expect(listed.stderr).not.toContain("does not list the model");
  });
});
