/**
 * An API provider verified with a key typed in the wizard (setup.providerKey): the scripted model demands that key;
 * once verified the key is kept in a 0600 file of the state dir and the target refers to it (keyFile), never in
 * targets.json or an error; a wrong key saves nothing; setup.models lists with a typed key too.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TargetStore } from "../../engine/store/targets";
import { resolveKey } from "../../engine/serving/keys";
import { providerModelsApi } from "../../engine/serving/providers-api";
import { setupProviderKeyApi } from "../../engine/serving/setup-api";
import { setupVerify } from "../../engine/serving/setup-commands";
import { startScriptedModel, toolCall, type ScriptedModel } from "../fixtures/scripted-model";

const KEY = "sk-typed-in-the-wizard-123";
const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
let model: ScriptedModel;
let state: string;
let prev: string | undefined;

beforeAll(async () => {
  prev = process.env.OCW_STATE_DIR;
  // no desktop keychain on this machine (and none in CI): the 0600 file; the keychain path is keys.test.ts's
  process.env.OCW_KEYCHAIN = "off";
  state = mkdtempSync(path.join(os.tmpdir(), "ocw-provider-key-"));
  process.env.OCW_STATE_DIR = state;
  model = await startScriptedModel({
    modelId: "scripted-coder",
    apiKey: KEY,
    chunkDelayMs: 5,
    scripts: [
      {
        name: "tools",
        match: (c) => c.hasTools,
        script: (c) => (c.toolResults.length ? { text: `It says ${c.lastToolResult!.trim()}.` } : toolCall("read", { filePath: "notes/token.txt" })),
      },
      { match: /sumOfSquares/, script: () => ({ text: GOOD }) },
    ],
    fallback: () => ({ text: "one two three four five six seven eight nine ten eleven twelve" }),
  });
});
afterAll(async () => {
  await model?.close();
  if (prev === undefined) delete process.env.OCW_STATE_DIR;
  else process.env.OCW_STATE_DIR = prev;
  rmSync(state, { recursive: true, force: true });
});

describe("setup.providerKey", () => {
  it("a wrong key is said plainly (no variable name invented) and nothing is saved, key included", async () => {
    const store = new TargetStore(path.join(state, "targets.json"));
    const err = await setupProviderKeyApi({ url: model.url, model: "scripted-coder", key: "sk-wrong", id: "typed" }, store).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/refused the key: check the key typed/);
    expect((err as Error).message).not.toMatch(/OCW_WIZARD_TYPED_KEY|sk-wrong/);
    expect(store.list().targets).toEqual([]);
    expect(existsSync(path.join(state, "keys", "typed.api-key"))).toBe(false);
  });

  it("verified with the typed key, saved and active; the key in a 0600 file the target refers to, nowhere else", async () => {
    const store = new TargetStore(path.join(state, "targets.json"));
    const r = await setupProviderKeyApi({ url: model.url, model: "scripted-coder", key: `  ${KEY} `, id: "typed", slots: 2 }, store);
    expect([r.outcome, r.saved, r.active]).toEqual(["built", true, true]);
    const t = store.get("typed")!;
    expect(t.keyRef ?? null).toBeNull();
    expect(t.keyStore ?? null).toBeNull();
    expect(t.keyFile).toBe(path.join(state, "keys", "typed.api-key"));
    expect(statSync(t.keyFile!).mode & 0o777).toBe(0o600);
    expect(resolveKey(t, {})).toBe(KEY);
    expect(readFileSync(path.join(state, "targets.json"), "utf8")).not.toContain(KEY);
    expect(JSON.stringify(r)).not.toContain(KEY);
  });

  it("setup.models lists with a typed key", async () => {
    const r = await providerModelsApi({ url: model.url, key: KEY }, {});
    expect(r.models.map((m) => m.id)).toContain("scripted-coder");
    await expect(providerModelsApi({ url: model.url, key: "sk-wrong" }, {})).rejects.toThrow(/refused the key \(HTTP 401\): check the key typed/);
  });
});

describe("ocw setup --provider URL --api-key-env VAR (setup.verify with the key exported where ocw runs)", () => {
  const input = { mode: "provider" as const, urls: [""], model: "scripted-coder", apiKeyEnv: "OCW_CLI_PROVIDER_KEY", apiKey: KEY, slots: 2, yes: true };

  it("an engine whose environment lacks the variable keeps the verified key: the target it saves can start workers", async () => {
    const store = new TargetStore(path.join(state, "targets-cli.json"));
    const { result, logs } = await setupVerify({ ...input, urls: [model.url] }, store, {});
    expect(result.outcome).toBe("built");
    const t = store.get(result.target.id)!;
    // before: keyRef OCW_CLI_PROVIDER_KEY only, which this engine cannot resolve (every worker refused at preflight)
    expect(resolveKey(t, {})).toBe(KEY);
    expect(t.keyRef ?? null).toBeNull();
    expect(t.keyFile).toBe(path.join(state, "keys", `${t.id}.api-key`));
    expect(statSync(t.keyFile!).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(state, "targets-cli.json"), "utf8")).not.toContain(KEY);
    expect(logs.join("\n")).toMatch(/the key in OCW_CLI_PROVIDER_KEY is kept by the engine .*does not hold OCW_CLI_PROVIDER_KEY/);
    // the command that changes it, not the API's name for it ("targets.setKey")
    expect(logs.join("\n")).toContain(`change it with \`ocw target key ${t.id}\` (or Setup's key field)`);
    expect(logs.join("\n")).not.toContain("targets.setKey");
    expect(logs.join("\n")).not.toContain(KEY);
  });

  it("an engine that holds the same value goes on naming the variable (nothing stored)", async () => {
    const store = new TargetStore(path.join(state, "targets-cli-env.json"));
    const { result } = await setupVerify({ ...input, urls: [model.url], apiKeyEnv: "OCW_CLI_SAME_KEY" }, store, { OCW_CLI_SAME_KEY: KEY });
    const t = store.get(result.target.id)!;
    expect([t.keyRef, t.keyFile ?? null, t.keyStore ?? null]).toEqual(["OCW_CLI_SAME_KEY", null, null]);
  });
});
