// Streaming text reaches the engine's subscribers: a model that streams an answer token by token produces coalesced
// `delta` events on the event stream while the worker runs (the dashboard's live text), before the finished part.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, type TestEngine } from "../helpers";
import type { EngineEvent } from "../../shared/events";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];
const ANSWER = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");

beforeAll(async () => {
  model = await startScriptedModel({
    chunkDelayMs: 20,
    scripts: [{ name: "stream", match: /TASK-STREAM/, script: () => ({ text: `${ANSWER}\nOUTCOME: built` }) }],
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2), activate: true });
}, 120_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(...repos);
});

it("a streamed answer arrives as delta events on the event stream before the worker settles", async () => {
  const repo = makeRepo();
  repos.push(repo);
  const deltas: { workerId: string; delta: string }[] = [];
  const sub = engine.client.events.subscribe(
    { lastEventId: (await engine.client.health.query()).cursor },
    {
      onData: (t) => {
        const e = t.data as EngineEvent;
        if (e.type === "delta") deltas.push({ workerId: e.workerId, delta: e.delta });
      },
    },
  );
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-STREAM say the words", directory: repo, checks: [] });
  await settle(engine.client, [workerId]);
  sub.unsubscribe();
  const text = deltas
    .filter((d) => d.workerId === workerId)
    .map((d) => d.delta)
    .join("");
  expect(deltas.length).toBeGreaterThan(1);
  expect(text).toContain("word59");
}, 180_000);
