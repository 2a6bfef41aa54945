/** Capture of a plain OpenAI-compatible endpoint (the scripted model server) and of an API provider; no llama-server needed. */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";

process.env.OCW_STATE_DIR = mkdtempSync(path.join(os.tmpdir(), "ocw-capture-state-"));
const { runSetup } = await import("../../engine/serving/commands");
const { TargetStore } = await import("../../engine/store/targets");
const { discoverEndpoints } = await import("../../engine/serving/capture");

const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
const servers: ScriptedModel[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

async function scripted(opts: { capable: boolean; apiKey?: string; modelId?: string }): Promise<ScriptedModel> {
  const m = await startScriptedModel({
    apiKey: opts.apiKey, modelId: opts.modelId ?? "scripted-coder", chunkDelayMs: 15,
    scripts: opts.capable ? [{ match: /sumOfSquares/, script: () => ({ text: GOOD }) }] : [],
    fallback: () => ({ text: "hello there, one two three four five six seven eight nine ten" }),
  });
  servers.push(m);
  return m;
}

describe("ocw setup --capture URL (scripted OpenAI-compatible endpoint)", () => {
  it("a capable, key-protected endpoint → built, active, exit 0; the key is referenced by name only", async () => {
    const m = await scripted({ capable: true, apiKey: "sk-scripted-123" });
    const r = await runSetup({ capture: m.url, apiKeyEnv: "OCW_TEST_CAPTURE_KEY", slots: "4", yes: true, json: true, env: { OCW_TEST_CAPTURE_KEY: "sk-scripted-123" } });
    expect(r.stderr).toBe("");
    const j = JSON.parse(r.stdout);
    for (const c of j.checks) console.log(`  ${c.passed ? "✓" : "✗"} ${c.name}: ${c.evidence}`);
    expect(j.outcome).toBe("built");
    expect(r.code).toBe(0);
    expect(j.checks.every((c: { passed: boolean }) => c.passed)).toBe(true);
    expect(j.target).toMatchObject({ model: "scripted-coder", keyRef: "OCW_TEST_CAPTURE_KEY", serving: { engine: "capture", slots: 4 } });
    expect(r.stdout).not.toContain("sk-scripted-123");
    expect(new TargetStore().active()?.id).toBe(j.target.id);
    expect(m.maxInFlight()).toBeGreaterThanOrEqual(4);
  });
  it("an endpoint that answers 'hello' → underpowered, exit 3, not active", async () => {
    const m = await scripted({ capable: false, modelId: "toy" });
    const r = await runSetup({ capture: m.url, slots: "2", yes: true, json: true, env: {} });
    const j = JSON.parse(r.stdout);
    expect(j.outcome).toBe("underpowered");
    expect(r.code).toBe(3);
    expect(j.checks.find((c: { name: string }) => c.name === "capability").passed).toBe(false);
    expect(j.checks.find((c: { name: string }) => c.name === "auth").evidence).toMatch(/no key configured/);
    const store = new TargetStore();
    expect(store.get(j.target.id)?.outcome).toBe("underpowered");
    expect(store.active()?.id).not.toBe(j.target.id);
  });
  it("--accept-underpowered makes it active anyway", async () => {
    const m = await scripted({ capable: false, modelId: "toy2" });
    const r = await runSetup({ capture: m.url, slots: "1", yes: true, json: true, acceptUnderpowered: true, env: {} });
    expect(r.code).toBe(3);
    expect(new TargetStore().active()?.id).toBe(JSON.parse(r.stdout).target.id);
  });
  it("a key-protected endpoint without --api-key-env → exit 2 with the remedy", async () => {
    const m = await scripted({ capable: true, apiKey: "k" });
    const r = await runSetup({ capture: m.url, yes: true, env: {} });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/requires a key: pass --api-key-env/);
  });
  it("discovery probes given URLs (and the usual ports)", async () => {
    const m = await scripted({ capable: true });
    const found = await discoverEndpoints([m.url.replace(/\/v1$/, "")], null, []);
    expect(found).toEqual([expect.objectContaining({ engine: "capture", models: ["scripted-coder"] })]);
  });
});

describe("engine identification", () => {
  const fake = async (routes: Record<string, unknown>): Promise<string> => {
    const http = await import("node:http");
    const srv = http.createServer((req, res) => {
      const body = routes[req.url ?? ""];
      res.statusCode = body === undefined ? 404 : 200;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(body ?? { error: "no route" }));
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    servers.push({ close: () => new Promise<void>((r) => srv.close(() => r())) } as ScriptedModel);
    return `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  };
  it("ollama (by /api/version), vLLM (owned_by + max_model_len), SGLang (/get_server_info)", async () => {
    const { probeEndpoint } = await import("../../engine/serving/capture");
    const ol = await fake({ "/v1/models": { object: "list", data: [{ id: "qwen3-coder:30b", owned_by: "library" }] }, "/api/version": { version: "0.12.3" } });
    expect(await probeEndpoint(ol)).toMatchObject({ engine: "ollama", models: ["qwen3-coder:30b"], build: "0.12.3" });
    const vl = await fake({ "/v1/models": { object: "list", data: [{ id: "Qwen/Qwen3-Coder-30B-A3B-Instruct", owned_by: "vllm", max_model_len: 65536 }] } });
    expect(await probeEndpoint(vl)).toMatchObject({ engine: "vllm", perSlotCtx: 65536 });
    const sg = await fake({ "/v1/models": { data: [{ id: "m", owned_by: "sglang" }] }, "/get_server_info": { max_running_requests: 16, context_length: 32768, version: "0.5.0" } });
    expect(await probeEndpoint(sg)).toMatchObject({ engine: "sglang", totalSlots: 16, perSlotCtx: 32768 });
    expect(await probeEndpoint(await fake({}))).toBeNull();
  });
});

describe("ocw setup --provider URL --model ID --api-key-env VAR", () => {
  it("verifies the provider like any endpoint and records engine api", async () => {
    const m = await scripted({ capable: true, apiKey: "prov-key", modelId: "vendor/coder-large" });
    const r = await runSetup({ provider: m.url.replace(/\/v1$/, ""), model: "vendor/coder-large", apiKeyEnv: "OCW_PROV", slots: "2", yes: true, json: true, env: { OCW_PROV: "prov-key" } });
    const j = JSON.parse(r.stdout);
    expect(j.outcome).toBe("built");
    expect(j.target).toMatchObject({ id: "api-vendor-coder-large", keyRef: "OCW_PROV", serving: { engine: "api", slots: 2 } });
  });
  it("a wrong key → exit 2 (unreachable with that key)", async () => {
    const m = await scripted({ capable: true, apiKey: "prov-key" });
    const r = await runSetup({ provider: m.url, model: "x", apiKeyEnv: "OCW_PROV", yes: true, env: { OCW_PROV: "nope" } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/not reachable with that key/);
  });
});
