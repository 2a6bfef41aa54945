/**
 * `ocw run --endpoint URL --model ID --api-key-env VAR` against an engine started earlier without VAR in its
 * environment (the desktop app's, say): the CLI holds the key, the engine does not. It used to refuse with "the key
 * variable VAR … is not set: export VAR=… before starting the engine" — though VAR was exported — so the person had
 * to `ocw stop` (interrupting every running worker) to use a provider from the command line. The engine now keeps the
 * key the CLI gives for that target (a 0600 file here: no keychain in tests), and the worker runs on it.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, ocwRunArgs, runOcw, startEngine, tempDir, type TestEngine } from "../helpers";

const KEY = `sk-adhoc-${Math.random().toString(36).slice(2)}`;
let model: ScriptedModel;
let engine: TestEngine;
const home = tempDir("adhoc-key-home");
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({
    apiKey: KEY,
    scripts: [{ match: /ADHOC-KEY/, script: (c) => (c.turnStep === 0 ? writeFile("k.txt", "k\n") : { text: "Wrote k.txt.\nOUTCOME: built" }) }],
  });
  // the engine's environment has no OCW_ADHOC_PROVIDER_KEY
  engine = await startEngine(undefined, { HOME: home, OCW_KEYCHAIN: "off" });
}, 60_000);
afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", home, ...repos);
});

/** `ocw run` of the task the model is scripted for, in `dir`, on the model's URL as an ad-hoc endpoint, with `extra` flags. */
const adhocRun = (dir: string, extra: string[], timeoutMs: number) =>
  runOcw(
    engine.stateDir,
    ocwRunArgs({ dir, task: "ADHOC-KEY write k.txt", check: "test -f k.txt", endpoint: model.url }, "--approve", "always", ...extra),
    timeoutMs,
  );

describe("ocw run --api-key-env VAR where the engine lacks VAR", () => {
  it("the engine keeps the key the CLI gives: the worker runs and is built; the key is in no file but its 0600 one", async () => {
    const dir = makeRepo();
    repos.push(dir);
    process.env.OCW_ADHOC_PROVIDER_KEY = KEY;
    let r: Awaited<ReturnType<typeof runOcw>>;
    try {
      r = await adhocRun(dir, ["--api-key-env", "OCW_ADHOC_PROVIDER_KEY", "--json"], 120_000);
    } finally {
      delete process.env.OCW_ADHOC_PROVIDER_KEY;
    }
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/the engine's environment does not hold OCW_ADHOC_PROVIDER_KEY: it keeps the key for adhoc-\w+ \(a 0600 file of its state dir\)/);
    expect(r.stderr + r.stdout).not.toContain(KEY);
    expect(readFileSync(path.join(engine.stateDir, "targets.json"), "utf8")).not.toContain(KEY);
    expect(model.requests.some((q) => q.matched === "unauthorized")).toBe(false);
  }, 150_000);

  it("no --api-key-env where the endpoint wants a key: refused before any worker, saying to pass --api-key-env (a worker started and ended in error 'set the key again')", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const before = (await engine.client.workers.list.query()).length;
    const r = await adhocRun(dir, [], 60_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim()).toBe(
      `ocw: the model endpoint ${model.url} refuses requests without a key (HTTP 401): export its key in a variable and pass --api-key-env VAR (the variable's name, never the key)`,
    );
    expect(await engine.client.workers.list.query()).toHaveLength(before);
    expect(model.requests.some((q) => q.kind === "chat" && q.matched === "unauthorized")).toBe(false);
  }, 90_000);
});
