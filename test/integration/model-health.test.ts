// The engine watches the model server of the active target itself: status and a `model` event say when it stops
// answering and when it is back, with no worker needed to notice (the GUI showed a dead server as "ready").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, scriptedTarget, startEngine, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;

beforeAll(async () => {
  model = await startScriptedModel({});
  engine = await startEngine(undefined, { OCW_MODEL_PROBE_MS: "300" });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2, "watched"), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close().catch(() => undefined);
  cleanup(engine?.stateDir ?? "");
});

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("model server health", () => {
  it("is reported healthy, then down with what to do once the server dies, then healthy again when it is back", async () => {
    const seen: { healthy: boolean; message?: string }[] = [];
    const sub = engine.client.events.subscribe(
      { lastEventId: null },
      { onData: (d) => (d.data as { type: string }).type === "model" && seen.push(d.data as never) },
    );
    const health = () => engine.client.status.query().then((s) => s.models.find((m) => m.targetId === "watched"));
    expect((await until(health, (h) => h?.healthy === true))?.healthy).toBe(true);
    const port = Number(new URL(model.url).port);
    await model.close();
    const down = await until(health, (h) => h?.healthy === false);
    expect(down).toMatchObject({ healthy: false, problem: expect.stringContaining(model.url) });
    model = await startScriptedModel({ port });
    expect((await until(health, (h) => h?.healthy === true))?.healthy).toBe(true);
    sub.unsubscribe();
    expect(seen.map((e) => e.healthy)).toEqual(expect.arrayContaining([false, true]));
    expect(seen.find((e) => !e.healthy)?.message).toMatch(/does not answer.*start it/);
  }, 60_000);
});
