/**
 * Verify, setup, List models and the key gateway against stand-ins that answer as the providers document:
 *  - base URLs that do not end in /v1 (Gemini's OpenAI endpoint …/v1beta/openai, Azure's …/openai/v1, OpenRouter's
 *    …/api/v1) are kept as given: setup used to add /v1 (…/v1beta/openai/v1, a 404) and verify to cut the path to its
 *    root and add /v1 again;
 *  - OpenAI's reasoning models refuse `temperature: 0` (400 unsupported_value): verify asks again without it;
 *  - an error inside a 200 stream (Anthropic's `event: error` overloaded_error, OpenRouter's mid-stream
 *    `data: {"error":…}`) is the provider's named failure, never "underpowered";
 *  - a key a provider echoes in such an error is never repeated.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { KeyGateway } from "../gateway";
import { TargetStore } from "../store";
import { providerModelsApi } from "./providers-api";
import { setupProvider } from "./setup";
import { verifyEndpoint } from "./verify";

const KEY = "sk-proj-shapes-0123456789";
const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
const GEMINI_BAD_KEY = {
  error: {
    code: 400,
    message: "API key not valid. Please pass a valid API key.",
    status: "INVALID_ARGUMENT",
    details: [
      {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        reason: "API_KEY_INVALID",
        domain: "googleapis.com",
        metadata: { service: "generativelanguage.googleapis.com" },
      },
      { "@type": "type.googleapis.com/google.rpc.LocalizedMessage", locale: "en-US", message: "API key not valid. Please pass a valid API key." },
    ],
  },
};
const servers: http.Server[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-provider-shapes-"));
afterAll(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Seen {
  method: string;
  url: string;
  body: Record<string, unknown>;
}
type Body = { stream?: boolean; tools?: unknown[]; temperature?: number; messages: { role: string; content: string | null }[] };
/** What a streamed request gets: null = a good answer; a string = raw SSE text sent after a 200's head. */
type StreamFault = (body: Body) => string | null;

const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c-1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/**
 * An OpenAI-compatible provider under `prefix` (its chat completions at `${prefix}/chat/completions`, its list at
 * `${prefix}/models`); anything else is Gemini's 404. `refuse` answers a request's body with an error first.
 */
async function provider(
  prefix: string,
  o: { refuse?: (b: Body) => { status: number; body: unknown } | null; fault?: StreamFault } = {},
): Promise<{ root: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const s = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = (raw ? JSON.parse(raw) : {}) as Body;
      seen.push({ method: req.method ?? "", url: req.url ?? "", body: body as unknown as Record<string, unknown> });
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (req.url !== `${prefix}/chat/completions` && req.url !== `${prefix}/models`)
        return send(404, [{ error: { code: 404, message: `Method not found: ${req.url}`, status: "NOT_FOUND" } }]);
      // Google answers a wrong key 400 INVALID_ARGUMENT, an array of one error, its reason API_KEY_INVALID
      if (prefix === "/v1beta/openai" && req.headers.authorization && req.headers.authorization !== `Bearer ${KEY}`) return send(400, [GEMINI_BAD_KEY]);
      if (req.headers.authorization !== `Bearer ${KEY}`)
        return send(401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } });
      if (req.method === "GET")
        return send(200, {
          object: "list",
          data: [
            { id: "models/gemini-2.5-flash", object: "model", owned_by: "google" },
            { id: "m", object: "model" },
          ],
        });
      const refused = o.refuse?.(body);
      if (refused) return send(refused.status, refused.body);
      const last = body.messages.at(-1)!;
      const text = String(body.messages.find((m) => m.role === "user")?.content ?? "");
      if (body.stream) {
        const fault = o.fault?.(body);
        res.writeHead(200, { "content-type": "text/event-stream" });
        if (fault !== null && fault !== undefined) return void res.end(fault);
        if (body.tools && last.role === "tool") return void res.end(chunk({ content: `It says ${String(last.content).trim()}.` }, "stop") + "data: [DONE]\n\n");
        if (body.tools)
          return void res.end(
            chunk({
              tool_calls: [
                { index: 0, id: "call_1", type: "function", function: { name: "read", arguments: JSON.stringify({ filePath: "notes/token.txt" }) } },
              ],
            }) +
              chunk({}, "tool_calls") +
              "data: [DONE]\n\n",
          );
        const parts = Array.from({ length: 6 }, (_, k) => chunk({ content: `word${k} ` }));
        let i = 0;
        const next = () => {
          if (i >= parts.length) return void res.end("data: [DONE]\n\n");
          res.write(parts[i++]);
          setTimeout(next, 10);
        };
        return next();
      }
      send(200, {
        id: "c-2",
        object: "chat.completion",
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: /sumOfSquares/.test(text) ? GOOD : "OK" }, finish_reason: "stop" }],
      });
    });
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  return { root: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen };
}

const verify = (url: string, slots = 2) =>
  verifyEndpoint({ url, model: "m", key: KEY, engine: "api", slots, perSlotCtx: null, llamaExtensions: false, timeoutMs: 20_000 });

describe("base URLs that do not end in /v1 are kept as given", () => {
  it("Gemini's …/v1beta/openai: setup saves it as it is, verify and List models ask under it, nothing else", async () => {
    const p = await provider("/v1beta/openai");
    const store = new TargetStore(path.join(dir, "gemini.json"));
    const r = await setupProvider({
      url: `${p.root}/v1beta/openai/`,
      model: "m",
      apiKeyEnv: "GEMINI_API_KEY",
      env: { GEMINI_API_KEY: KEY },
      slots: 2,
      store,
      yes: true,
    });
    expect(r.outcome).toBe("built");
    expect(r.target.endpoint).toBe(`${p.root}/v1beta/openai`);
    expect(r.target.serving.endpoints[0]!.url).toBe(`${p.root}/v1beta/openai`);
    expect(p.seen.map((s) => s.url).filter((u) => !u.startsWith("/v1beta/openai/"))).toEqual([]);
    expect(p.seen.some((s) => s.url === "/v1beta/openai/models")).toBe(true);
    // a wrong key is Google's 400 API_KEY_INVALID: the auth check takes it as the refusal it is
    expect(r.checks.find((c) => c.name === "auth")).toMatchObject({ passed: true, evidence: "without key → 401, wrong key → 400, with key → 200" });
    const listed = await providerModelsApi({ url: `${p.root}/v1beta/openai`, key: KEY });
    expect(listed.models.map((m) => m.id)).toContain("models/gemini-2.5-flash");
    // and a wrong key given to setup is said as the key, not as a request the provider refused
    const wrong = await setupProvider({
      url: `${p.root}/v1beta/openai`,
      model: "m",
      apiKeyEnv: "GEMINI_API_KEY",
      env: { GEMINI_API_KEY: "AIza-wrong-key-000" },
      store,
      yes: true,
    }).catch((e: Error) => e);
    expect((wrong as Error).message).toMatch(
      /HTTP 400 API_KEY_INVALID: "API key not valid\. Please pass a valid API key\." — 127\.0\.0\.1:\d+ refused the key: check the value of GEMINI_API_KEY/,
    );
    expect((wrong as Error).message).not.toContain("AIza-wrong-key-000");
  }, 60_000);

  it("Azure's …/openai/v1 and OpenRouter's …/api/v1 are not cut to their root; a bare origin gets /v1", async () => {
    for (const prefix of ["/openai/v1", "/api/v1"]) {
      const p = await provider(prefix);
      const v = await verify(`${p.root}${prefix}`);
      expect(v.outcome).toBe("built");
      expect(p.seen.map((s) => s.url).filter((u) => !u.startsWith(`${prefix}/`))).toEqual([]);
    }
    const bare = await provider("/v1");
    const store = new TargetStore(path.join(dir, "bare.json"));
    const r = await setupProvider({ url: bare.root, model: "m", apiKeyEnv: "K", env: { K: KEY }, slots: 1, store, yes: true });
    expect(r.target.endpoint).toBe(`${bare.root}/v1`);
  }, 60_000);

  it("a base URL with a query (Azure's ?api-version=, a key in ?key=) is refused with what to use, the query not repeated", async () => {
    const store = new TargetStore(path.join(dir, "query.json"));
    const e = await setupProvider({
      url: "https://res.openai.azure.com/openai/deployments/gpt-4o?api-version=2024-10-21&key=AIzaSECRET",
      model: "m",
      apiKeyEnv: "K",
      env: { K: KEY },
      store,
      yes: true,
    }).catch((x: Error) => x);
    expect((e as Error).message).toMatch(/without a query or fragment .*https:\/\/NAME\.openai\.azure\.com\/openai\/v1/);
    expect((e as Error).message).not.toContain("AIzaSECRET");
    await expect(providerModelsApi({ url: "https://generativelanguage.googleapis.com/v1beta/openai?key=AIzaSECRET", key: KEY })).rejects.toThrow(
      /takes no query or fragment/,
    );
  });

  it("the key gateway forwards under the route's path as given", async () => {
    const p = await provider("/v1beta/openai");
    const gw = new KeyGateway();
    try {
      const route = await gw.add("gemini", { upstream: `${p.root}/v1beta/openai`, key: KEY, silenceMs: 10_000 });
      const res = await fetch(`${route.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${route.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "Say OK." }] }),
      });
      expect(res.status).toBe(200);
      expect(p.seen.at(-1)!.url).toBe("/v1beta/openai/chat/completions");
    } finally {
      gw.close();
    }
  });
});

describe("OpenAI's reasoning models refuse temperature 0", () => {
  it("verify asks again without temperature, and sends none after: the model is judged, not refused", async () => {
    // OpenAI's answer to o1/o3/o4-mini/gpt-5 with temperature ≠ 1
    const p = await provider("/v1", {
      refuse: (b) =>
        b.temperature !== undefined && b.temperature !== 1
          ? {
              status: 400,
              body: {
                error: {
                  message: "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
                  type: "invalid_request_error",
                  param: "temperature",
                  code: "unsupported_value",
                },
              },
            }
          : null,
    });
    const v = await verify(`${p.root}/v1`);
    expect(v.checks.find((c) => c.name === "reachable")!.evidence).toMatch(/without temperature/);
    expect(v.outcome).toBe("built");
    const chats = p.seen.filter((s) => s.method === "POST");
    expect(chats[0]!.body.temperature).toBe(0);
    expect(chats.length).toBeGreaterThan(4);
    expect(chats.slice(1).filter((s) => "temperature" in s.body)).toEqual([]);
  }, 60_000);
});

describe("an error inside a 200 stream is the provider's named failure", () => {
  const anthropic = (type: string, message: string) => `event: error\ndata: ${JSON.stringify({ type: "error", error: { type, message } })}\n\n`;

  it("Anthropic's event: error overloaded_error: cannot-build, the provider is overloaded — not underpowered", async () => {
    const p = await provider("/v1", { fault: () => chunk({ content: "" }) + anthropic("overloaded_error", "Overloaded") });
    const v = await verify(`${p.root}/v1`);
    expect(v.outcome).toBe("cannot-build");
    expect(v.summary).toMatch(/the model API failed verify's requests .*HTTP 529 overloaded_error: "Overloaded" — a failure on .* side \(overloaded or down\)/);
    expect(v.summary).not.toMatch(/underpowered|do not overlap|does not use tools/);
  }, 60_000);

  it("OpenRouter's mid-stream error chunk (code server_error, finish_reason error): the provider's side", async () => {
    const mid = `data: ${JSON.stringify({
      id: "cmpl-abc123",
      object: "chat.completion.chunk",
      created: 1234567890,
      model: "m",
      provider: "openai",
      error: { code: "server_error", message: "Provider disconnected unexpectedly" },
      choices: [{ index: 0, delta: { content: "" }, finish_reason: "error" }],
    })}\n\n`;
    const p = await provider("/api/v1", { fault: () => chunk({ content: "word " }) + mid });
    const v = await verify(`${p.root}/api/v1`);
    expect(v.outcome).toBe("cannot-build");
    expect(v.summary).toMatch(/Provider disconnected unexpectedly.*failure on .* side/);
  }, 60_000);

  it("a rate limit inside the stream (Anthropic rate_limit_error, OpenRouter code 429) is the rate limit, as its 429 would be", async () => {
    for (const fault of [
      anthropic("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
      `data: ${JSON.stringify({ error: { code: 429, message: "Rate limit exceeded: free-models-per-min." } })}\n\n`,
    ]) {
      const p = await provider("/v1", { fault: () => fault });
      const v = await verify(`${p.root}/v1`);
      expect(v.outcome).toBe("cannot-build");
      expect(v.summary).toMatch(/rate-limited verify's requests/);
    }
  }, 60_000);

  it("a key the provider echoes in a streamed error or a refused capability request is never repeated", async () => {
    const p = await provider("/v1", {
      fault: () => anthropic("overloaded_error", `Overloaded (key ${KEY})`),
      refuse: (b) =>
        /sumOfSquares/.test(String(b.messages[0]?.content))
          ? { status: 503, body: { error: { message: `Server Overloaded for ${KEY}`, type: "server_error" } } }
          : null,
    });
    const v = await verify(`${p.root}/v1`);
    expect(v.outcome).toBe("cannot-build");
    const all = JSON.stringify(v);
    expect(all).not.toContain(KEY);
    expect(all).toContain("<the key>");
  }, 60_000);
});
