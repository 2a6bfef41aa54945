/**
 * Capture of a plain OpenAI-compatible endpoint (the scripted model server) and of an API provider; no llama-server needed.
 * Verify's tool-call round trip: a server that refuses `tools`, one whose parser is off (calls as text), a model that
 * does not call the tool; the context of captured ollama (/api/ps) and LM Studio (/api/v0/models) servers.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startScriptedModel, toolCall, type Script, type ScriptedModel, type ScriptContext } from "../fixtures/scripted-model";

process.env.OCW_STATE_DIR = mkdtempSync(path.join(os.tmpdir(), "ocw-capture-state-"));
const { runSetup } = await import("../../engine/commands/model-setup");
const { localSetupPort } = await import("../setup-port");
const { TargetStore } = await import("../../engine/store/targets");
const { discoverEndpoints } = await import("../../engine/serving/capture");

const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
const servers: ScriptedModel[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

/** A model that reads the file it is asked about with OpenCode's read tool and answers with what it read. */
const TOOL_USER: { match: (c: ScriptContext) => boolean; script: Script; name: string } = {
  name: "tool-user",
  match: (c) => c.hasTools,
  script: (c) => (c.toolResults.length ? { text: `The word is ${c.lastToolResult!.trim()}.` } : toolCall("read", { filePath: "notes/token.txt" })),
};

async function scripted(opts: {
  capable: boolean;
  apiKey?: string;
  modelId?: string;
  tools?: { match: (c: ScriptContext) => boolean; script: Script; name: string };
}): Promise<ScriptedModel> {
  const m = await startScriptedModel({
    apiKey: opts.apiKey,
    modelId: opts.modelId ?? "scripted-coder",
    chunkDelayMs: 15,
    scripts: [
      ...(opts.tools ? [opts.tools] : opts.capable ? [TOOL_USER] : []),
      ...(opts.capable ? [{ match: /sumOfSquares/, script: () => ({ text: GOOD }) }] : []),
    ],
    fallback: () => ({ text: "hello there, one two three four five six seven eight nine ten" }),
  });
  servers.push(m);
  return m;
}

describe("ocw setup --capture URL (scripted OpenAI-compatible endpoint)", () => {
  it("a capable, key-protected endpoint → built, active, exit 0; the key is referenced by name only", async () => {
    const m = await scripted({ capable: true, apiKey: "sk-scripted-123" });
    const r = await runSetup(
      {
        capture: m.url,
        apiKeyEnv: "OCW_TEST_CAPTURE_KEY",
        slots: "4",
        yes: true,
        json: true,
      },
      localSetupPort({ env: { OCW_TEST_CAPTURE_KEY: "sk-scripted-123" } }),
    );
    expect(r.stderr).toBe("");
    const j = JSON.parse(r.stdout);
    for (const c of j.checks) console.log(`  ${c.passed ? "✓" : "✗"} ${c.name}: ${c.evidence}`);
    expect(j.outcome).toBe("built");
    expect(r.code).toBe(0);
    expect(j.checks.every((c: { passed: boolean }) => c.passed)).toBe(true);
    expect(j.checks.map((c: { name: string }) => c.name)).toContain("tools");
    // the round trip went through: a streamed request offering OpenCode's 8 tools, then the tool result sent back
    const toolReqs = m.requests.filter((q) => Array.isArray(q.body?.tools));
    expect(toolReqs[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      "bash",
      "read",
      "write",
      "edit",
      "glob",
      "grep",
      "list",
      "todowrite",
    ]);
    expect(toolReqs[0]!.stream).toBe(true);
    expect(toolReqs[1]!.body.messages.at(-1)).toMatchObject({ role: "tool" });
    expect(j.target).toMatchObject({ model: "scripted-coder", keyRef: "OCW_TEST_CAPTURE_KEY", serving: { engine: "capture", slots: 4 } });
    expect(r.stdout).not.toContain("sk-scripted-123");
    expect(new TargetStore().active()?.id).toBe(j.target.id);
    expect(m.maxInFlight()).toBeGreaterThanOrEqual(4);
  });
  it("an endpoint that answers 'hello' → underpowered, exit 3, not active", async () => {
    const m = await scripted({ capable: false, modelId: "toy" });
    const r = await runSetup({ capture: m.url, slots: "2", yes: true, json: true }, localSetupPort({ env: {} }));
    const j = JSON.parse(r.stdout);
    expect(j.outcome).toBe("underpowered");
    expect(r.code).toBe(3);
    expect(j.checks.find((c: { name: string }) => c.name === "capability").passed).toBe(false);
    // a keyless server on loopback: "no key (loopback only)", not a failed check
    expect(j.checks.find((c: { name: string }) => c.name === "auth")).toMatchObject({
      passed: true,
      evidence: expect.stringMatching(/^no key \(loopback only\)/),
    });
    const store = new TargetStore();
    expect(store.get(j.target.id)?.outcome).toBe("underpowered");
    expect(store.active()?.id).not.toBe(j.target.id);
  });
  it("--accept-underpowered makes it active anyway", async () => {
    const m = await scripted({ capable: false, modelId: "toy2" });
    const r = await runSetup({ capture: m.url, slots: "1", yes: true, json: true, acceptUnderpowered: true }, localSetupPort({ env: {} }));
    expect(r.code).toBe(3);
    expect(new TargetStore().active()?.id).toBe(JSON.parse(r.stdout).target.id);
  });
  it("a key-protected endpoint without --api-key-env → exit 2 with the remedy", async () => {
    const m = await scripted({ capable: true, apiKey: "k" });
    const r = await runSetup({ capture: m.url, yes: true }, localSetupPort({ env: {} }));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/requires a key: pass --api-key-env/);
  });
  it("a llama-server still loading its model (503 'Loading model' on every path) → exit 2 saying so, not 'lists no model'", async () => {
    const http = await import("node:http");
    const srv = http.createServer((_req, res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "Loading model", type: "unavailable_error", code: 503 } }));
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
      const r = await runSetup({ capture: url, yes: true }, localSetupPort({ env: {} }));
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/still loading its model/);
      expect(r.stderr).not.toMatch(/lists no model/);
    } finally {
      srv.close();
    }
  });
  it("discovery probes given URLs (and the usual ports)", async () => {
    const m = await scripted({ capable: true });
    const found = await discoverEndpoints([m.url.replace(/\/v1$/, "")], null, []);
    expect(found).toEqual([expect.objectContaining({ engine: "capture", models: ["scripted-coder"] })]);
  });
});

describe("verify: the tool-call round trip", () => {
  const capture = async (m: ScriptedModel) => {
    const r = await runSetup({ capture: m.url, slots: "1", yes: true, json: true }, localSetupPort({ env: {} }));
    const j = JSON.parse(r.stdout);
    return { code: r.code, j, tools: j.checks.find((c: { name: string }) => c.name === "tools") as { passed: boolean; evidence: string } };
  };
  it("a server that refuses requests with tools (llama-server --no-jinja's answer) → cannot-build, with the reason", async () => {
    const m = await scripted({
      capable: true,
      modelId: "nojinja",
      tools: { name: "refuse", match: (c) => c.hasTools, script: () => ({ error: { status: 500, message: "tools param requires --jinja flag" } }) },
    });
    const { code, j, tools } = await capture(m);
    expect(tools.passed).toBe(false);
    expect(tools.evidence).toMatch(/refuses requests with tools \(HTTP 500: tools param requires --jinja flag\)/);
    expect(tools.evidence).toMatch(/--jinja/);
    expect(j.outcome).toBe("cannot-build");
    expect(j.summary).toMatch(/tool calls do not work/);
    expect(code).toBe(2);
  });
  it("a 400 for the tools field → cannot-build", async () => {
    const m = await scripted({
      capable: true,
      modelId: "notools",
      tools: { name: "400", match: (c) => c.hasTools, script: () => ({ error: { status: 400, message: "Unrecognized request argument supplied: tools" } }) },
    });
    const { j, tools } = await capture(m);
    expect(tools.evidence).toMatch(/HTTP 400/);
    expect(j.outcome).toBe("cannot-build");
  });
  it("a tool call returned as text (parser off) → cannot-build", async () => {
    const m = await scripted({
      capable: true,
      modelId: "textcall",
      tools: {
        name: "text",
        match: (c) => c.hasTools,
        script: () => ({ text: '<tool_call>\n{"name": "read", "arguments": {"filePath": "notes/token.txt"}}\n</tool_call>' }),
      },
    });
    const { j, tools } = await capture(m);
    expect(tools.evidence).toMatch(/came back as plain text/);
    expect(j.outcome).toBe("cannot-build");
  });
  it("a model that answers without calling the tool → underpowered (the server is fine)", async () => {
    const m = await scripted({
      capable: true,
      modelId: "chatty",
      tools: { name: "chat", match: (c) => c.hasTools, script: () => ({ text: "Sure, I would read the file." }) },
    });
    const { code, j, tools } = await capture(m);
    expect(tools.evidence).toMatch(/answered without a tool call/);
    expect(j.outcome).toBe("underpowered");
    expect(j.summary).toMatch(/does not use tools reliably/);
    expect(code).toBe(3);
  });
  it("a model that calls the tool but ignores its result → underpowered", async () => {
    const m = await scripted({
      capable: true,
      modelId: "ignorer",
      tools: {
        name: "ignore",
        match: (c) => c.hasTools,
        script: (c) => (c.toolResults.length ? { text: "Done." } : toolCall("read", { filePath: "notes/token.txt" })),
      },
    });
    const { j, tools } = await capture(m);
    expect(tools.evidence).toMatch(/did not use its result/);
    expect(j.outcome).toBe("underpowered");
  });
  it("broken JSON arguments → underpowered", async () => {
    const m = await scripted({
      capable: true,
      modelId: "badjson",
      tools: { name: "bad", match: (c) => c.hasTools, script: () => toolCall("read", '{"filePath": "notes/tok') },
    });
    const { tools } = await capture(m);
    expect(tools.evidence).toMatch(/not JSON/);
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
    const sg = await fake({
      "/v1/models": { data: [{ id: "m", owned_by: "sglang" }] },
      "/get_server_info": { max_running_requests: 16, context_length: 32768, version: "0.5.0" },
    });
    expect(await probeEndpoint(sg)).toMatchObject({ engine: "sglang", totalSlots: 16, perSlotCtx: 32768 });
    expect(await probeEndpoint(await fake({}))).toBeNull();
  });
});

describe("ocw setup --provider URL --model ID --api-key-env VAR", () => {
  it("verifies the provider like any endpoint and records engine api", async () => {
    const m = await scripted({ capable: true, apiKey: "prov-key", modelId: "vendor/coder-large" });
    const r = await runSetup(
      {
        provider: m.url.replace(/\/v1$/, ""),
        model: "vendor/coder-large",
        apiKeyEnv: "OCW_PROV",
        slots: "2",
        yes: true,
        json: true,
      },
      localSetupPort({ env: { OCW_PROV: "prov-key" } }),
    );
    const j = JSON.parse(r.stdout);
    expect(j.outcome).toBe("built");
    expect(j.target).toMatchObject({ id: "api-vendor-coder-large", keyRef: "OCW_PROV", serving: { engine: "api", slots: 2 } });
  });
  it("a wrong key → exit 2 (the key refused, named by its variable)", async () => {
    const m = await scripted({ capable: true, apiKey: "prov-key" });
    const r = await runSetup({ provider: m.url, model: "x", apiKeyEnv: "OCW_PROV", yes: true }, localSetupPort({ env: { OCW_PROV: "nope" } }));
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refused the key: check the value of OCW_PROV/);
  });
});

describe("captured ollama / LM Studio: the context the loaded model really has", () => {
  /** A scripted model behind a proxy that adds ollama's /api/version + /api/ps (or LM Studio's /api/v0/models). */
  async function behind(kind: "ollama" | "lmstudio", ctxLen: number | null, modelId: string): Promise<string> {
    const m = await scripted({ capable: true, modelId });
    const http = await import("node:http");
    const srv = http.createServer((req, res) => {
      const json = (v: unknown) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(v));
      };
      if (kind === "ollama" && req.url === "/api/version") return json({ version: "0.12.6" });
      if (kind === "ollama" && req.url === "/api/ps")
        return json({ models: [{ name: modelId, model: modelId, size: 1, ...(ctxLen ? { context_length: ctxLen } : {}) }] });
      if (kind === "lmstudio" && req.url === "/api/v0/models")
        return json({
          object: "list",
          data: [{ id: modelId, state: "loaded", max_context_length: 262144, ...(ctxLen ? { loaded_context_length: ctxLen } : {}) }],
        });
      if (kind === "lmstudio" && req.url === "/v1/models")
        return json({ object: "list", data: [{ id: modelId, object: "model", owned_by: "organization_owner" }] });
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const up = http.request({ host: "127.0.0.1", port: m.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        });
        up.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    servers.push({
      close: () =>
        new Promise<void>((r) => {
          srv.closeAllConnections();
          srv.close(() => r());
        }),
    } as ScriptedModel);
    return `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
  }
  it("ollama at its 4096 default fails the slots check with the fix; OpenCode is not told more than it has", async () => {
    const url = await behind("ollama", 4096, "qwen3-coder:30b");
    const r = await runSetup({ capture: url, slots: "1", yes: true, json: true }, localSetupPort({ env: {} }));
    const j = JSON.parse(r.stdout);
    const slots = j.checks.find((c: { name: string }) => c.name === "slots");
    expect(slots.passed).toBe(false);
    expect(slots.evidence).toMatch(/\/api\/ps context_length 4096 \(want ≥ 16384/);
    expect(slots.evidence).toMatch(/OLLAMA_CONTEXT_LENGTH/);
    expect(j.outcome).toBe("cannot-build");
    expect(j.target.contextLimit).toBe(4096);
  });
  it("ollama with OLLAMA_CONTEXT_LENGTH=32768 passes and records 32768 per slot", async () => {
    const url = await behind("ollama", 32768, "qwen3-coder:30b-b");
    const r = await runSetup({ capture: url, slots: "1", ctx: "32768", yes: true, json: true }, localSetupPort({ env: {} }));
    const j = JSON.parse(r.stdout);
    expect(j.checks.find((c: { name: string }) => c.name === "slots").passed).toBe(true);
    expect(j.target.serving).toMatchObject({ engine: "ollama", perSlotCtx: 32768 });
    expect(j.outcome).toBe("built");
  });
  it("LM Studio: loaded_context_length from /api/v0/models is checked", async () => {
    const url = await behind("lmstudio", 4096, "qwen/qwen3-coder-30b");
    const r = await runSetup({ capture: url, slots: "1", yes: true, json: true }, localSetupPort({ env: {} }));
    const j = JSON.parse(r.stdout);
    const slots = j.checks.find((c: { name: string }) => c.name === "slots");
    expect(slots.evidence).toMatch(/loaded_context_length 4096/);
    expect(slots.evidence).toMatch(/--context-length/);
    expect(slots.passed).toBe(false);
  });
});
