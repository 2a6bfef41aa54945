// A target's key is referenced by environment-variable name: it reaches the model, and never lands on disk.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, type TestEngine } from "../helpers";

const KEY = "sk-ocw-test-" + Math.random().toString(36).slice(2);
const SILENT_MS = 5000;
let model: ScriptedModel;
let engine: TestEngine;
let repo: string;

beforeAll(async () => {
  model = await startScriptedModel({
    apiKey: KEY,
    scripts: [
      { match: /KEYED/, script: (c) => (c.turnStep === 0 ? writeFile("k.txt", "k\n") : { text: "OUTCOME: built" }) },
      // As llama-server on a CPU: 200 at once, then nothing while the prompt is processed.
      { match: /SILENT/, script: (c) => (c.turnStep === 0 ? { ...writeFile("s.txt", "s\n"), silentMs: SILENT_MS } : { text: "OUTCOME: built" }) },
    ],
  });
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
    const hits = execFileSync("sh", ["-c", `grep -rl --binary-files=text '${KEY}' '${engine.stateDir}' || true`])
      .toString()
      .trim();
    expect(hits).toBe("");
  });

  it("a target whose key variable is unset is refused before anything is created, naming the variable", async () => {
    await engine.client.targets.save.mutate({ target: { ...scriptedTarget(model.url, 2, "unset"), keyRef: "OCW_NOT_SET_ANYWHERE" }, activate: true });
    const before = (await engine.client.workers.list.query()).length;
    await expect(engine.client.workers.start.mutate({ task: "KEYED", directory: repo })).rejects.toThrow(
      /OCW_NOT_SET_ANYWHERE .*is not set in the engine's environment: give the engine the key \(`ocw target key \S+ --from-env OCW_NOT_SET_ANYWHERE`/,
    );
    expect((await engine.client.workers.list.query()).length).toBe(before);
  });

  it("a model request is given up after the target's silence limit (opencode's own is 300 s), and within it the worker is built", async () => {
    const run = async (silenceSec: number) => {
      const target = { ...scriptedTarget(model.url, 2, `silent-${silenceSec}`), keyRef: "OCW_TEST_KEY" };
      await engine.client.targets.save.mutate({ target: { ...target, serving: { ...target.serving, silenceSec } }, activate: true });
      const repo = makeRepo();
      const { workerId } = await engine.client.workers.start.mutate({
        task: "SILENT: write s.txt",
        directory: repo,
        checks: [{ file: "s.txt" }],
        budget: { wallSec: 30 },
      });
      const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
      return { w, requests: model.requests.filter((r) => r.kind === "chat" && JSON.stringify(r.body?.messages ?? "").includes(path.basename(repo))) };
    };
    // Silent for SILENT_MS, through the gateway, with a limit above it.
    const patient = await run(Math.ceil((SILENT_MS * 3) / 1000));
    expect(patient.w.state).toBe("built");
    // With a 2 s limit, opencode gives up on each attempt after 2 s and retries (until the worker's wall-clock budget).
    const strict = await run(2);
    expect(strict.w.state).toBe("stopped");
    expect(strict.w.stateReason).toMatch(/budget: wall clock/);
    const attempts = strict.requests.filter((r) => r.clientAborted);
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    // Each attempt was given up by opencode (the client aborted) before the model would have answered. No lower bound
    // in ms: the model records a request when it arrives, after the gateway's hop, which a loaded machine stretches
    // (a fresh clone at load 12 saw 1249 ms against a 2 s limit).
    expect(attempts[0]!.abortedAt! - attempts[0]!.at).toBeLessThan(SILENT_MS);
  }, 120_000);
});
