// One engine and one scripted model shared by a test file's tests: started before them, with a target of the model
// active, and stopped after them with every repository the tests made.
import { afterAll, beforeAll } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, startEngine, tempDir, type TestEngine } from "../helpers";

export interface ScriptedEngineRig {
  model: ScriptedModel;
  engine: TestEngine;
  /** A repository (makeRepo's), removed after the file's tests. */
  repo(files?: Record<string, string>): string;
}

/** `name` names the target and the engine's HOME (a folder of its own); `env` is the engine's environment on top. */
export function scriptedEngineRig(name: string, slots: number, env: NodeJS.ProcessEnv = {}): ScriptedEngineRig {
  const home = tempDir(`${name}-home`);
  const repos: string[] = [];
  const rig = {
    model: undefined as unknown as ScriptedModel,
    engine: undefined as unknown as TestEngine,
    repo(files?: Record<string, string>) {
      const r = makeRepo(files);
      repos.push(r);
      return r;
    },
  };
  beforeAll(async () => {
    rig.model = await startScriptedModel();
    rig.engine = await startEngine(undefined, { HOME: home, ...env });
    await rig.engine.client.targets.save.mutate({ target: scriptedTarget(rig.model.url, slots, name), activate: true });
  }, 60_000);
  afterAll(async () => {
    await rig.engine?.kill();
    await rig.model?.close();
    cleanup(rig.engine?.stateDir ?? "", home, ...repos);
  });
  return rig;
}
