// Many workers at once, as the bench's scale part runs them (bench/scale.ts, there at 64 and 128): every worker asks
// before it writes its file, every ask is approved by a subscriber of the engine's API as it arrives, every worker is
// graded with a file check. At a size CI affords: all built, no error in the engine's log, every ask seen by the
// subscriber with the time it took.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { concurrent } from "../../bench/scale";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, startEngine, type TestEngine } from "../helpers";

const N = 12;
let model: ScriptedModel;
let engine: TestEngine;

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "batch",
        match: /BENCH-BATCH (\d+)/,
        script: (c) => (c.turnStep === 0 ? writeFile(`f${/BENCH-BATCH (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n") : { text: "OUTCOME: built" }),
      },
      { name: "tiny", match: /BENCH-TINY/, script: () => ({ text: "OUTCOME: honest-failure — warm-up" }) },
    ],
  });
  engine = await startEngine();
});

afterAll(async () => {
  await engine?.kill();
  cleanup(engine?.stateDir);
  await model?.close();
});

describe(`${N} workers at once`, () => {
  it("all built, no error, every ask reaches the subscriber", async () => {
    const c = await concurrent(engine, model, N);
    expect(c.errors).toEqual([]);
    expect(c.built).toBe(N);
    expect(c.askToSubscriberMs?.n).toBe(N);
    expect(c.askToSubscriberMs!.p99).toBeGreaterThanOrEqual(0);
    expect(c.engineRssMbPeak).toBeGreaterThan(0);
  }, 300_000);
});
