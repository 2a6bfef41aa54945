/**
 * What OpenCode's first request needs (issue 27): the floor under every slot's context (verify's
 * OPENCODE_FIRST_REQUEST_TOKENS) is measured here, not assumed — a real opencode worker (our agent prompt, OpenCode's
 * tools) sends its first request to the scripted model, and the request's messages + tool schemas are counted. Tokens
 * are estimated at 3.5 characters each (BPE tokenizers give 3.5–4.5 for English prose and JSON; the lower figure
 * counts more tokens, so the floor errs on the safe side).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { OPENCODE_FIRST_REQUEST_TOKENS } from "../../engine/serving/verify";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({ scripts: [{ name: "done", match: /TASK-FIRST/, script: () => ({ text: "Nothing to change.\nOUTCOME: built" }) }] });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 1), activate: true });
}, 120_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(...repos);
});

it("OpenCode's first request with our agent fits the floor verify puts under every slot", async () => {
  const repo = makeRepo();
  repos.push(repo);
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-FIRST add a README line saying hello", directory: repo, checks: [] });
  await settle(engine.client, [workerId]);
  const first = model.requests.find((r) => r.kind === "chat")!;
  expect(first).toBeDefined();
  const messages = JSON.stringify(first.body.messages ?? []);
  const tools = JSON.stringify(first.body.tools ?? []);
  const tokens = Math.ceil((messages.length + tools.length) / 3.5);
  console.log(
    `first request: ${(first.body.tools ?? []).length} tools, messages ${messages.length} chars + tools ${tools.length} chars ≈ ${tokens} tokens (floor ${OPENCODE_FIRST_REQUEST_TOKENS}); max_tokens ${first.body.max_tokens}`,
  );
  expect(tokens).toBeGreaterThan(1000);
  expect(tokens).toBeLessThanOrEqual(OPENCODE_FIRST_REQUEST_TOKENS);
}, 180_000);
