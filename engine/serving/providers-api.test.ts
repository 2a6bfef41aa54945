/** setup.models against a stub OpenAI-compatible provider: the list, the key it needs, and failures in words. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_PRESETS } from "../../shared/servers";
import { providerModelsApi } from "./providers-api";

let srv: Server;
let base: string;
const seen: (string | undefined)[] = [];

beforeAll(async () => {
  srv = createServer((req, res) => {
    seen.push(req.headers.authorization);
    if (req.url === "/v1/models") {
      if (req.headers.authorization !== "Bearer sk-good")
        return res.writeHead(401, { "content-type": "application/json" }).end('{"error":{"message":"invalid key"}}');
      return res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify({
          object: "list",
          data: [
            { id: "z-ai/glm-4.6", context_length: 202752, name: "GLM 4.6", pricing: { prompt: "0.0000006", completion: "0.0000022" } },
            { id: "deepseek/deepseek-chat" },
            { nope: 1 },
          ],
        }),
      );
    }
    // Anthropic's GET /v1/models: x-api-key and anthropic-version, pages of `limit` (default 20) with has_more/last_id
    if (req.url?.startsWith("/anthropic/v1/models")) {
      if (req.headers["x-api-key"] !== "sk-ant-good" || !req.headers["anthropic-version"])
        return res
          .writeHead(401, { "content-type": "application/json" })
          .end('{"type":"error","error":{"type":"authentication_error","message":"x-api-key header is required"}}');
      const model = (id: string) => ({ type: "model", id, display_name: id.replace("claude-", "Claude "), created_at: "2026-01-01T00:00:00Z" });
      const second = req.url.includes("after_id=claude-c");
      const data = second ? [model("claude-d"), model("claude-e")] : [model("claude-a"), model("claude-b"), model("claude-c")];
      return res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ data, has_more: !second, first_id: data[0]!.id, last_id: data.at(-1)!.id }));
    }
    if (req.url === "/moved/v1/models") return res.writeHead(301, { location: "https://api.example.invalid/v1/models" }).end();
    if (req.url === "/html/models") return res.writeHead(200, { "content-type": "text/html" }).end("<html>hi</html>");
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => srv.close(r)));

describe("setup.models", () => {
  it("lists the provider's models, sorted, with the context and price it reports, sending the key the variable holds", async () => {
    const r = await providerModelsApi({ url: `${base}/v1/`, apiKeyEnv: "PROV_KEY" }, { PROV_KEY: "sk-good" });
    expect(r).toEqual({
      url: `${base}/v1`,
      models: [
        { id: "deepseek/deepseek-chat", contextLength: null, name: null, price: null },
        // OpenRouter's price per token, kept per million for the target's costs.
        { id: "z-ai/glm-4.6", contextLength: 202752, name: "GLM 4.6", price: { inputPerMTok: 0.6, outputPerMTok: 2.2 } },
      ],
    });
    expect(seen.at(-1)).toBe("Bearer sk-good");
  });

  it("a refused key, an unset variable, a wrong path, a non-API page and a dead host are each said plainly", async () => {
    await expect(providerModelsApi({ url: `${base}/v1`, apiKeyEnv: "PROV_KEY" }, { PROV_KEY: "sk-bad" })).rejects.toThrow(
      /refused the key \(HTTP 401\): check the value of PROV_KEY/,
    );
    await expect(providerModelsApi({ url: `${base}/v1`, apiKeyEnv: "PROV_KEY" }, {})).rejects.toThrow(
      /environment variable PROV_KEY is not set in the engine's environment/,
    );
    await expect(providerModelsApi({ url: `${base}/v1` }, {})).rejects.toThrow(/this provider needs a key/);
    await expect(providerModelsApi({ url: `${base}/nothing` }, {})).rejects.toThrow(/HTTP 404: .*usually ends in \/v1/);
    await expect(providerModelsApi({ url: `${base}/html` }, {})).rejects.toThrow(/did not answer JSON .*OpenAI-compatible/);
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const dead = await providerModelsApi({ url: `http://127.0.0.1:${port}/v1` }, {}).catch((e: Error) => e.message);
    expect(dead).toBe(`cannot reach 127.0.0.1:${port}: nothing listens there (connection refused) [ECONNREFUSED]; check the URL (it usually ends in /v1)`);
    expect(dead).not.toMatch(/fetch failed/);
  });

  it("presets: OpenRouter, DeepSeek, Together, Fireworks, Groq, each an https base URL with a key variable", () => {
    expect(PROVIDER_PRESETS.map((p) => p.name)).toEqual(["OpenRouter", "DeepSeek", "Together AI", "Fireworks AI", "Groq"]);
    for (const p of PROVIDER_PRESETS) {
      expect(p.url).toMatch(/^https:\/\/[^/]+\/.*v1$/);
      expect(p.keyEnv).toMatch(/^[A-Z_]+_API_KEY$/);
    }
  });

  it("Anthropic's list: its key header and version, every page (has_more / last_id), display_name as the name", async () => {
    const r = await providerModelsApi({ url: `${base}/anthropic/v1/`, key: "sk-ant-good" }, {});
    // before: Bearer only → 401 "x-api-key header is required"; and only the first page
    expect(r.models.map((m) => [m.id, m.name])).toEqual([
      ["claude-a", "Claude a"],
      ["claude-b", "Claude b"],
      ["claude-c", "Claude c"],
      ["claude-d", "Claude d"],
      ["claude-e", "Claude e"],
    ]);
  });

  it("an http:// URL the provider redirects to https:// is said, not followed (the key would be dropped, and blamed)", async () => {
    await expect(providerModelsApi({ url: `${base}/moved/v1`, key: "sk-good" }, {})).rejects.toThrow(
      /HTTP 301, a redirect to https:\/\/api\.example\.invalid\/v1\/models: use the https:\/\/ URL \(https:\/\/127\.0\.0\.1:\d+\/moved\/v1\)/,
    );
  });
});
