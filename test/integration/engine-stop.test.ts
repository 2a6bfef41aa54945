// `ocw stop` while a worker runs: the worker is interrupted (resumable), never settled, graded or mergeable, and it
// stays so after the engine comes back. (Seen before the state machine: interrupted → settled → grading → built.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
let repo = "";

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "slow",
        match: /STOP-MID-RUN/,
        // First turn: the model hangs (the worker is mid-request when the engine stops). After the resume: do the task.
        script: (c) =>
          c.userTexts.length === 1
            ? { hang: true, textBeforeHang: "working" }
            : c.turnStep === 0
              ? writeFile("done.txt", "done\n")
              : { text: "OUTCOME: built" },
      },
    ],
  });
  engine = await startEngine();
  repo = makeRepo();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", repo);
});

describe("ocw stop during a run", () => {
  it("interrupts the worker; after the restart it is still interrupted with no verdict, and Resume finishes it", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "STOP-MID-RUN", directory: repo, checks: [{ file: "README.md" }] });
    await untilState(engine.client, workerId, (w) => w.state === "running" && model.requests.some((r) => r.matched === "slow"), 60_000);
    await engine.client.shutdown.mutate();
    await new Promise<void>((resolve) => (engine.proc.exitCode !== null ? resolve() : engine.proc.once("exit", () => resolve())));
    const stateDir = engine.stateDir;
    engine = await startEngine(stateDir);
    await new Promise((r) => setTimeout(r, 3000)); // anything late (an idle after the abort) has had time to land
    const w = await engine.client.workers.get.query({ workerId });
    expect(w.state).toBe("interrupted");
    expect(w.verdict).toBeNull();
    const states = (await engine.client.workers.events.query({ workerId })).flatMap((e) => (e.type === "worker.state" ? [e.state] : []));
    expect(states).not.toContain("settled");
    expect(states).not.toContain("grading");
    await expect(engine.client.workers.merge.mutate({ workerId })).rejects.toThrow(/interrupted/);
    await engine.client.workers.resume.mutate({ workerId });
    const done = (await settle(engine.client, [workerId], () => "once", 120_000)).get(workerId)!;
    expect(done.state).toBe("built");
  }, 240_000);
});
