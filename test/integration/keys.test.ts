// A target's key is referenced by environment-variable name: it reaches the model, and never lands on disk.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, type TestEngine } from "../helpers";

const KEY = "sk-ocw-test-" + Math.random().toString(36).slice(2);
let model: ScriptedModel;
let engine: TestEngine;
let repo: string;

beforeAll(async () => {
  model = await startScriptedModel({ apiKey: KEY, scripts: [{ match: /KEYED/, script: (c) => (c.turnStep === 0 ? writeFile("k.txt", "k\n") : { text: "OUTCOME: built" }) }] });
  engine = await startEngine(undefined, { OCW_TEST_KEY: KEY });
  repo = makeRepo();
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", repo);
});

describe("keys", () => {
  it("a keyed endpoint works through keyRef, and the key is nowhere in the state dir", async () => {
    await engine.client.targets.save.mutate({ target: { ...scriptedTarget(model.url, 2, "keyed"), keyRef: "OCW_TEST_KEY" }, activate: true });
    const { workerId } = await engine.client.workers.start.mutate({ task: "KEYED: write k.txt", directory: repo, checks: [{ file: "k.txt" }] });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.state).toBe("built");
    expect(model.requests.filter((r) => r.matched === "unauthorized")).toHaveLength(0);
    const hits = execFileSync("sh", ["-c", `grep -rl --binary-files=text '${KEY}' '${engine.stateDir}' || true`]).toString().trim();
    expect(hits).toBe("");
  });

  it("a target whose key variable is unset is refused before anything is created, naming the variable", async () => {
    await engine.client.targets.save.mutate({ target: { ...scriptedTarget(model.url, 2, "unset"), keyRef: "OCW_NOT_SET_ANYWHERE" }, activate: true });
    const before = (await engine.client.workers.list.query()).length;
    await expect(engine.client.workers.start.mutate({ task: "KEYED", directory: repo })).rejects.toThrow(/OCW_NOT_SET_ANYWHERE .*is not set/);
    expect((await engine.client.workers.list.query()).length).toBe(before);
  });
});
