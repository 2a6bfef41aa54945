/**
 * `ocw setup --provider` / setup.provider against stand-ins that answer as the providers document (OpenAI, OpenRouter,
 * Anthropic's OpenAI-compatible endpoint, DeepSeek, Groq): each refusal says its cause and what to do next — not "not
 * reachable with that key" with the raw body for every one of them (the old message, for a 429 and a 404 alike).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TargetStore } from "../store";
import { setupProvider } from "./setup";
import { classifyFailure, describeError, explainChatFailure, retryAfterSec } from "./provider-errors";

type Answer = (req: http.IncomingMessage, res: http.ServerResponse) => void;
const servers: http.Server[] = [];
const state = mkdtempSync(path.join(os.tmpdir(), "ocw-provider-errors-"));
afterAll(() => {
  for (const s of servers) s.close();
  rmSync(state, { recursive: true, force: true });
});

async function stub(answer: Answer): Promise<{ url: string; requests: { method: string; url: string; auth: string }[] }> {
  const requests: { method: string; url: string; auth: string }[] = [];
  const s = http.createServer((req, res) => {
    requests.push({ method: req.method ?? "", url: req.url ?? "", auth: String(req.headers.authorization ?? "") });
    req.resume();
    req.on("end", () => answer(req, res));
  });
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, requests };
}
const json =
  (status: number, value: unknown, headers: Record<string, string> = {}): Answer =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(value));
  };

async function verifyError(url: string, model = "gpt-4o"): Promise<string> {
  const store = new TargetStore(path.join(state, `${Math.random()}.json`));
  const r = await setupProvider({
    url,
    model,
    apiKeyEnv: "OCW_TEST_PROVIDER_KEY",
    env: { OCW_TEST_PROVIDER_KEY: "sk-test-123" },
    store,
    saveCannotBuild: false,
    yes: true,
  }).then(
    (x) => new Error(`verified: ${x.outcome}`),
    (e: Error) => e,
  );
  expect(store.list().targets).toEqual([]);
  expect(r.message).not.toContain("sk-test-123");
  return r.message;
}

describe("setup --provider: each refusal says its cause and what to do", () => {
  it("401 invalid key (OpenAI): the key is refused, named by its variable", async () => {
    const s = await stub(
      json(401, { error: { message: "Incorrect API key provided: sk-test***123.", type: "invalid_request_error", param: null, code: "invalid_api_key" } }),
    );
    const m = await verifyError(`${s.url}/v1`);
    expect(m).toMatch(/HTTP 401 invalid_api_key: "Incorrect API key provided/);
    expect(m).toMatch(/refused the key: check the value of OCW_TEST_PROVIDER_KEY/);
  });

  it("a provider that echoes the key it refused: the key is not repeated", async () => {
    const s = await stub(json(401, { error: { message: "Invalid API key: sk-test-123 is not valid", code: "invalid_api_key" } }));
    expect(await verifyError(`${s.url}/v1`)).toMatch(/"Invalid API key: <the key> is not valid"/);
  });

  it("402 no credit (OpenRouter) and 429 insufficient_quota (OpenAI): the account, not the key", async () => {
    const a = await stub(json(402, { error: { code: 402, message: "Insufficient credits. Add more using https://openrouter.ai/credits" } }));
    expect(await verifyError(`${a.url}/api/v1`)).toMatch(/HTTP 402: "Insufficient credits.*no credit or quota left: add credit/);
    const b = await stub(
      json(429, {
        error: {
          message: "You exceeded your current quota, please check your plan and billing details.",
          type: "insufficient_quota",
          code: "insufficient_quota",
        },
      }),
    );
    const m = await verifyError(`${b.url}/v1`);
    expect(m).toMatch(/HTTP 429 insufficient_quota/);
    expect(m).toMatch(/no credit or quota left/);
    expect(m).not.toMatch(/rate-limiting/);
  });

  it("404 unknown model: use an id as the provider lists it", async () => {
    const s = await stub(
      json(404, {
        error: { message: "The model `gpt-9` does not exist or you do not have access to it.", type: "invalid_request_error", code: "model_not_found" },
      }),
    );
    const m = await verifyError(`${s.url}/v1`, "gpt-9");
    expect(m).toMatch(/does not serve a model "gpt-9" to this key: use a model id exactly as the provider lists it/);
    expect(m).toContain(`GET ${s.url}/v1/models`);
  });

  it("404 web page (a base URL without the API's path): the base URL is wrong, with examples", async () => {
    const s = await stub((_q, res) => {
      res.writeHead(404, { "content-type": "text/html" });
      res.end("<!DOCTYPE html><html><head><title>404: This page could not be found</title></head><body>Not found</body></html>");
    });
    const m = await verifyError(s.url);
    expect(m).toMatch(/there is no chat-completions API at .*\/v1\/chat\/completions: the base URL is wrong/);
    expect(m).toContain("https://openrouter.ai/api/v1");
  });

  it("429 rate limit (OpenAI/Groq headers): the wait from Retry-After and the x-ratelimit figures, the key is fine", async () => {
    const s = await stub(
      json(
        429,
        {
          error: {
            message: "Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            type: "requests",
            code: "rate_limit_exceeded",
          },
        },
        { "retry-after": "20", "x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20s" },
      ),
    );
    const m = await verifyError(`${s.url}/v1`);
    expect(m).toMatch(/Retry-After 20 s; 0 of 3 requests left, reset in 20s/);
    expect(m).toMatch(/rate-limiting this key \(the key and URL are right\): wait 20 s and verify again/);
    expect(m).not.toMatch(/with that key/);
  });

  it("529 overloaded (Anthropic) and 503 (DeepSeek): the provider's side, try again", async () => {
    const a = await stub(json(529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }));
    expect(await verifyError(`${a.url}/v1`)).toMatch(
      /HTTP 529 overloaded_error: "Overloaded" — a failure on .* side \(overloaded or down\), not of the key or URL: try again/,
    );
    const b = await stub(json(503, { error: { message: "Server Overloaded", type: "server_error" } }, { "retry-after": "7" }));
    expect(await verifyError(`${b.url}/v1`)).toMatch(/try again in 7 s/);
  });

  it("403 a model the key may not use", async () => {
    const s = await stub(
      json(403, { error: { message: "Project `proj_x` does not have access to model `o3`", type: "invalid_request_error", code: "model_not_found" } }),
    );
    expect(await verifyError(`${s.url}/v1`, "o3")).toMatch(/took the key but refused this request: the key \(or its project\) may not be allowed model "o3"/);
  });

  it("a web page answering 200: not an API", async () => {
    const s = await stub((_q, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body>Welcome to our site</body></html>");
    });
    expect(await verifyError(`${s.url}/v1`)).toMatch(/HTTP 200 but not a chat completion .*points at a web page/);
  });

  it("http → https redirect: said, and never followed with the key (a POST turned GET on the way)", async () => {
    const s = await stub((req, res) => {
      res.writeHead(301, { location: `https://api.example.invalid${req.url}` });
      res.end();
    });
    const m = await verifyError(`${s.url}/v1`);
    expect(m).toMatch(/HTTP 301, a redirect to https:\/\/api\.example\.invalid\/v1\/chat\/completions: .*use the https:\/\/ URL/);
    expect(s.requests).toHaveLength(1);
  });

  it("a whole request URL pasted as the base URL is cut back to the base", async () => {
    const s = await stub(json(401, { error: { message: "bad key", code: "invalid_api_key" } }));
    await verifyError(`${s.url}/v1/chat/completions`);
    expect(s.requests[0]!.url).toBe("/v1/chat/completions");
  });

  it("https:// to a plain-HTTP server: it does not speak TLS, use http://", async () => {
    const s = await stub(json(200, {}));
    const m = await verifyError(`${s.url.replace("http:", "https:")}/v1`);
    expect(m).toMatch(/does not speak TLS there: .*use http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(m).not.toMatch(/fetch failed/);
  });
});

describe("setup --provider: a rate limit hit in the middle of verify", () => {
  it("is a rate limit, not an underpowered model or machine: cannot-build with what to do, nothing saved", async () => {
    let keyed = 0;
    const s = await stub((req, res) => {
      if (req.headers.authorization !== "Bearer sk-test-123")
        return json(401, { error: { message: "Incorrect API key provided", code: "invalid_api_key" } })(req, res);
      if (req.method === "GET") return json(200, { object: "list", data: [{ id: "gpt-4o", object: "model" }] })(req, res);
      // 3 requests per minute (OpenAI's tier of a new account on some models): the first chat completion passes
      if (++keyed > 1)
        return json(
          429,
          {
            error: {
              message: "Rate limit reached for gpt-4o on requests per min (RPM): Limit 3, Used 3, Requested 1.",
              type: "requests",
              code: "rate_limit_exceeded",
            },
          },
          { "retry-after": "20" },
        )(req, res);
      json(200, { id: "c1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "OK" }, finish_reason: "stop" }] })(
        req,
        res,
      );
    });
    const store = new TargetStore(path.join(state, "limited.json"));
    const r = await setupProvider({
      url: `${s.url}/v1`,
      model: "gpt-4o",
      apiKeyEnv: "K",
      env: { K: "sk-test-123" },
      slots: 2,
      store,
      saveCannotBuild: false,
      yes: true,
    });
    // before: "underpowered: reachable but failed the coding task (capability request → 429 …); a larger or better coding model"
    expect(r.outcome).toBe("cannot-build");
    expect(r.summary).toMatch(
      /^the provider rate-limited verify's requests \(HTTP 429 in concurrency, capability, tools\): the model could not be judged — wait a minute and verify again/,
    );
    expect(r.summary).not.toMatch(/larger or better|stronger machine|do not overlap/);
    expect(store.list().targets).toEqual([]);
  });
});

describe("explainChatFailure / retryAfterSec", () => {
  it("Retry-After as seconds, as a date and as retry-after-ms", () => {
    expect(retryAfterSec(new Headers({ "retry-after": "20" }))).toBe(20);
    expect(retryAfterSec(new Headers({ "retry-after-ms": "1500" }))).toBe(2);
    expect(retryAfterSec(new Headers({ "retry-after": new Date(60_000).toUTCString() }), 0)).toBe(60);
    expect(retryAfterSec(new Headers({}))).toBeNull();
  });
  it("400 unsupported max_tokens (OpenAI's reasoning models): said, with why workers could not run on it", () => {
    const m = explainChatFailure(
      {
        status: 400,
        body: {
          error: {
            message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            type: "invalid_request_error",
            param: "max_tokens",
            code: "unsupported_parameter",
          },
        },
        text: "",
      },
      { chatUrl: "https://api.openai.com/v1/chat/completions", model: "o3" },
    );
    expect(m).toMatch(/model "o3" takes max_completion_tokens, not the max_tokens that OpenAI-compatible clients \(opencode's included\) send/);
  });
  it("http:// to a provider that listens on https only: try https://; a slow server of one's own is not told so", () => {
    const refused = { status: 0, body: null, text: "", why: "cannot reach api.example.com: nothing listens there (connection refused) [ECONNREFUSED]" };
    expect(explainChatFailure(refused, { chatUrl: "http://api.example.com/v1/chat/completions", model: "m" })).toMatch(
      /an API provider serves https:\/\/: try https:\/\/api\.example\.com\/v1; check the URL/,
    );
    const slow = { status: 0, body: null, text: "", why: "127.0.0.1:8000 sent no answer within 120 s" };
    expect(explainChatFailure(slow, { chatUrl: "http://127.0.0.1:8000/v1/chat/completions", model: "m" })).not.toMatch(/https/);
  });
  it("400 context_length_exceeded", () => {
    const m = explainChatFailure(
      { status: 400, body: { error: { message: "This model's maximum context length is 4096 tokens.", code: "context_length_exceeded" } }, text: "" },
      { chatUrl: "https://api.example.com/v1/chat/completions", model: "m" },
    );
    expect(m).toMatch(/context is too small/);
  });
});

describe("one classifier for verify's failures and a worker's session errors", () => {
  const chat = (status: number, body: unknown) =>
    explainChatFailure(
      { status, body, text: JSON.stringify(body), headers: new Headers() },
      { chatUrl: "https://api.example.com/v1/chat/completions", model: "m" },
    );
  const session = (statusCode: number, message: string) => describeError({ name: "APIError", data: { message, statusCode } });

  it("a refused key names the command that sets the worker's target's key again (an ad-hoc --endpoint target has no Setup row)", () => {
    const err = { name: "APIError", data: { message: "Incorrect API key provided", statusCode: 401 } };
    expect(describeError(err, "adhoc-8838aec6e2")).toBe(
      "the model API refused the target's key (HTTP 401; the error's words, untrusted: \"Incorrect API key provided\"): set the key again (`ocw target key adhoc-8838aec6e2`, Setup, or its variable where the engine runs), then resume the worker",
    );
    expect(describeError(err)).not.toContain("ocw target key");
  });

  it("a base URL with no chat API behind the key gateway is said as the target's endpoint, not the engine's gateway URL", () => {
    const err = (url: string) => ({ name: "APIError", data: { message: "Not Found", statusCode: 404, metadata: { url } } });
    const viaGateway = describeError(err("http://127.0.0.1:44187/adhoc-2c91b7d901-0-59210e11/chat/completions"), "adhoc-2c91b7d901");
    expect(viaGateway).toContain("there is no chat-completions API at target adhoc-2c91b7d901's endpoint (`ocw targets` shows its URL) (HTTP 404");
    expect(viaGateway).not.toContain("44187");
    // a request that went to the endpoint itself names it as it was
    expect(describeError(err("http://127.0.0.1:8080/v2/chat/completions"), "local")).toContain("at http://127.0.0.1:8080/v2/chat/completions (HTTP 404");
  });

  it("an empty account's 429 without a code reads as credit in both (verify used to call it a rate limit)", () => {
    const message = "You exceeded your current quota, please check your plan and billing details.";
    expect(classifyFailure({ status: 429, message })).toBe("credit");
    expect(chat(429, { error: { message, type: "requests" } })).toMatch(/no credit or quota left/);
    expect(session(429, message)).toMatch(/no credit or quota left/);
  });

  it("a context too small reads as the context in both (a worker's session used to get 'refused a request')", () => {
    const message = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";
    expect(chat(400, { error: { message, type: "invalid_request_error", code: "context_length_exceeded" } })).toMatch(/context is too small/);
    expect(session(400, message)).toMatch(/outgrew the model's context \(HTTP 400/);
  });

  it("Gemini's wrong key (400 INVALID_ARGUMENT) is the key in a worker's session too, where only its message is known", () => {
    expect(session(400, "API key not valid. Please pass a valid API key.")).toMatch(/^the model API refused the target's key \(HTTP 400/);
  });

  it("each cause by status, code or message", () => {
    expect(classifyFailure({ status: 0 })).toBe("unreachable");
    expect(classifyFailure({ status: 401 })).toBe("key");
    expect(classifyFailure({ status: 402 })).toBe("credit");
    expect(classifyFailure({ status: 404, message: "The model `x` does not exist" })).toBe("model");
    expect(classifyFailure({ status: 404, message: "Not Found" })).toBe("url");
    expect(classifyFailure({ status: 529, code: "overloaded_error" })).toBe("provider-side");
    expect(
      classifyFailure({
        status: 400,
        message: "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.",
      }),
    ).toBe("temperature");
    expect(
      classifyFailure({ status: 400, message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead." }),
    ).toBe("max-tokens");
    expect(classifyFailure({ status: 200, code: "rate_limit_error" })).toBe("rate-limit");
    expect(classifyFailure({ status: 200 })).toBe("not-chat");
  });
});
