/**
 * Verify against a stand-in for a reasoning model on OpenRouter / Groq: thinking streams as `delta.reasoning` (not
 * llama.cpp's `reasoning_content`), a short answer is spent on thinking alone (finish_reason "length"), usage comes in a
 * last chunk with no choices, and the stream ends without `data: [DONE]`. The concurrency check must count the thinking
 * as output: it used to see no first token at all and call such a provider underpowered ("requests do not overlap").
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { TargetStore } from "../store";
import { setupProvider } from "./setup";
import { verifyEndpoint } from "./verify";

const KEY = "sk-or-v1-test";
const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
let server: http.Server;
let url: string;

function stream(res: http.ServerResponse, reasoning: string[], content: string[], toolCall?: { name: string; args: string }): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const chunk = (delta: unknown, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "gen-1", object: "chat.completion.chunk", model: "vendor/thinker", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const parts = [
    ...reasoning.map((r) => chunk({ role: "assistant", content: "", reasoning: r })),
    ...content.map((c) => chunk({ role: "assistant", content: c })),
    ...(toolCall ? [chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: toolCall.name, arguments: toolCall.args } }] })] : []),
    chunk({}, toolCall ? "tool_calls" : content.length ? "stop" : "length"),
    // OpenRouter's usage chunk: no choices
    `data: ${JSON.stringify({ id: "gen-1", object: "chat.completion.chunk", choices: [], usage: { prompt_tokens: 12, completion_tokens: 40, total_tokens: 52 } })}\n\n`,
  ];
  let i = 0;
  const next = () => {
    if (i >= parts.length) return void res.end(); // no [DONE]
    res.write(parts[i++]);
    setTimeout(next, 15);
  };
  next();
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      if (req.headers.authorization !== `Bearer ${KEY}`) {
        res.writeHead(401, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ error: { code: 401, message: "No auth credentials found" } }));
      }
      if (req.method === "GET" && req.url === "/big/v1/models") {
        // a list past 4 MB (OpenRouter's grows with every model and its description): the model asked for at its end
        const filler = Array.from({ length: 2500 }, (_, k) => ({ id: `vendor/m${k}`, description: "x".repeat(2000), context_length: 8192 }));
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(JSON.stringify({ data: [...filler, { id: "vendor/thinker", context_length: 131072 }] }));
      }
      if (req.method === "GET" && req.url === "/api/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        return void res.end(
          JSON.stringify({
            // OpenRouter's shape: many models, each with its context_length (Groq names it context_window)
            data: [
              { id: "aaa/tiny", name: "Tiny", context_length: 4096, pricing: { prompt: "0", completion: "0" } },
              { id: "groq-style/model", context_window: 65536 },
              { id: "vendor/thinker", name: "Thinker", context_length: 131072, pricing: { prompt: "0.0000002", completion: "0.0000008" } },
            ],
          }),
        );
      }
      const body = JSON.parse(raw || "{}") as { stream?: boolean; tools?: unknown[]; messages: { role: string; content: string | null }[] };
      const last = body.messages.at(-1)!;
      const text = String(body.messages.find((m) => m.role === "user")?.content ?? "");
      if (body.stream) {
        if (body.tools && last.role === "tool") return stream(res, ["The file says a word."], [`It says ${String(last.content).trim()}.`]);
        if (body.tools) return stream(res, ["I should read the file."], [], { name: "read", args: JSON.stringify({ filePath: "notes/token.txt" }) });
        // a short answer (the concurrency probe's 192 tokens): all of it thinking
        return stream(
          res,
          Array.from({ length: 8 }, (_, k) => `thinking step ${k} `),
          [],
        );
      }
      const content = /sumOfSquares/.test(text) ? GOOD : "OK";
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "gen-2",
          object: "chat.completion",
          model: "vendor/thinker",
          choices: [{ index: 0, message: { role: "assistant", content, reasoning: "Let me think." }, finish_reason: "stop" }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
afterAll(() => server?.close());

describe("verify: a reasoning model behind an OpenRouter-style API", () => {
  it("thinking streamed as `reasoning` counts as output: concurrency passes, the target is built", async () => {
    const v = await verifyEndpoint({
      url,
      model: "vendor/thinker",
      key: KEY,
      engine: "api",
      slots: 3,
      perSlotCtx: null,
      llamaExtensions: false,
      timeoutMs: 20_000,
    });
    const by = (n: string) => v.checks.find((c) => c.name === n)!;
    expect(by("concurrency").evidence).not.toMatch(/spread ∞/);
    expect(by("concurrency").passed).toBe(true);
    expect(by("tools").passed).toBe(true);
    expect(by("reasoning").evidence).toMatch(/thinking returned apart from the answer/);
    expect(v.outcome).toBe("built");
  }, 60_000);

  it("the model's context as the provider lists it (context_length, context_window) is the target's, not another model's", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-verify-provider-"));
    try {
      const store = new TargetStore(path.join(dir, "targets.json"));
      const r = await setupProvider({ url, model: "vendor/thinker", apiKeyEnv: "OR_KEY", env: { OR_KEY: KEY }, slots: 1, store, yes: true });
      expect(r.checks.find((c) => c.name === "slots")!.evidence).toMatch(/context 131072/);
      // before: no context recorded (opencode compacted at its 32,768 default), and verify read the first listed model's
      expect(store.get(r.target.id)!.contextLimit).toBe(131072);
      const g = await verifyEndpoint({ url, model: "groq-style/model", key: KEY, engine: "api", slots: 1, perSlotCtx: null, tools: false, timeoutMs: 20_000 });
      expect(g.observed.perSlotCtx).toBe(65536);
      const big = await verifyEndpoint({
        url: url.replace("/api/v1", "/big/v1"),
        model: "vendor/thinker",
        key: KEY,
        engine: "api",
        slots: 1,
        perSlotCtx: null,
        tools: false,
        timeoutMs: 20_000,
      });
      expect(big.observed.perSlotCtx).toBe(131072);
      const none = await verifyEndpoint({ url, model: "unlisted/model", key: KEY, engine: "api", slots: 1, perSlotCtx: null, tools: false, timeoutMs: 20_000 });
      expect(none.observed.perSlotCtx).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
