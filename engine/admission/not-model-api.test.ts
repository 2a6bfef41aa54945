// `ocw run --endpoint URL` at a web server that is not a model API (a static file server, a web app): it passed the
// reachability check (any HTTP answer counts) and the worker then failed with "HTTP 405". notModelApi tells them apart.
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { notModelApi, unlistedModel } from "./preflight";

const servers: http.Server[] = [];
/** A local server answering with `handle`; its base URL (…/v1). */
async function serve(handle: http.RequestListener): Promise<string> {
  const s = http.createServer(handle);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
}
const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe("notModelApi", () => {
  it("a web server answering a page on every path, or 404/405: says what GET /models and POST /chat/completions answered", async () => {
    const page = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<!doctype html><h1>It works</h1>");
    });
    expect(await notModelApi(page, null)).toBe(
      `GET ${page}/models answered HTTP 200 text/html, not a JSON model list; POST ${page}/chat/completions answered HTTP 200 text/html`,
    );
    const refuses = await serve((req, res) => {
      res.writeHead(req.method === "GET" ? 404 : 405, { "content-type": "text/plain" });
      res.end("no");
    });
    expect(await notModelApi(refuses, null)).toBe(
      `GET ${refuses}/models answered HTTP 404 text/plain, not a JSON model list; POST ${refuses}/chat/completions answered HTTP 405 text/plain`,
    );
  });

  it("an OpenAI-compatible API passes: a JSON model list, a key wanted (401), or no /models but a JSON error for an empty chat request", async () => {
    const list = await serve((_req, res) => json(res, 200, { object: "list", data: [{ id: "m", object: "model" }] }));
    expect(await notModelApi(list, null)).toBeNull();
    const keyed = await serve((_req, res) => json(res, 401, { error: { message: "no key" } }));
    expect(await notModelApi(keyed, null)).toBeNull();
    const noList = await serve((req, res) =>
      req.method === "GET" ? json(res, 404, { error: "not found" }) : json(res, 400, { error: { message: "messages is required" } }),
    );
    expect(await notModelApi(noList, null)).toBeNull();
    // no answer at all is the reachability check's to say
    expect(await notModelApi("http://127.0.0.1:1/v1", null, 500)).toBeNull();
  });

  it("an endpoint's content type is said as printable ASCII only: a Latin-1 byte like U+009B (a terminal's CSI) does not reach the line", async () => {
    const s = net.createServer((c) =>
      c.once("data", () => c.end(Buffer.from("HTTP/1.1 404 Not Found\r\nContent-Type: text/\x9b2Jhtml\r\nContent-Length: 2\r\n\r\nno", "latin1"))),
    );
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`;
    try {
      const said = await notModelApi(base, null);
      expect(said).toBe(
        `GET ${base}/models answered HTTP 404 text/?2Jhtml, not a JSON model list; POST ${base}/chat/completions answered HTTP 404 text/?2Jhtml`,
      );
    } finally {
      s.close();
    }
  });
});

// `ocw run --endpoint URL --model NAME` with a name the endpoint does not list: vLLM answers such a model 404 on the
// worker's first call ("The model `x` does not exist."), as Ollama and the providers do; llama-server serves its one
// model under any name. Listings as each server answers GET /v1/models (trimmed).
describe("unlistedModel", () => {
  const listing = (data: unknown[]) => serve((_req, res) => json(res, 200, { object: "list", data }));

  it("a vLLM or Ollama listing without the name: what it lists, in its order", async () => {
    const vllm = await listing([{ id: "Qwen/Qwen3-Coder-30B-A3B-Instruct", object: "model", created: 1, owned_by: "vllm", max_model_len: 32768 }]);
    expect(await unlistedModel(vllm, null, "qwen3-coder")).toEqual(["Qwen/Qwen3-Coder-30B-A3B-Instruct"]);
    const ollama = await listing([
      { id: "qwen3:8b", object: "model", created: 1, owned_by: "library" },
      { id: "gpt-oss:20b", object: "model", created: 1, owned_by: "library" },
    ]);
    expect(await unlistedModel(ollama, null, "qwen3")).toEqual(["qwen3:8b", "gpt-oss:20b"]);
  });

  it("nothing to say: the name listed, llama-server (any name is its one model), no list, an error, or no answer", async () => {
    const vllm = await listing([{ id: "m1", owned_by: "vllm" }]);
    expect(await unlistedModel(vllm, null, "m1")).toBeNull();
    const llama = await listing([
      { id: "/models/qwen3-coder-30b-q4_k_m.gguf", object: "model", created: 1, owned_by: "llamacpp", meta: { n_ctx_train: 262144 } },
    ]);
    expect(await unlistedModel(llama, null, "qwen3-coder")).toBeNull();
    expect(await unlistedModel(await listing([]), null, "m")).toBeNull();
    const keyed = await serve((_req, res) => json(res, 401, { error: { message: "no key" } }));
    expect(await unlistedModel(keyed, null, "m")).toBeNull();
    const page = await serve((_req, res) => (res.writeHead(200, { "content-type": "text/html" }), res.end("<h1>hi</h1>")));
    expect(await unlistedModel(page, null, "m")).toBeNull();
    expect(await unlistedModel("http://127.0.0.1:1/v1", null, "m", 500)).toBeNull();
  });

  it("sends the key it is given, and keeps at most 20 names of a long list", async () => {
    let auth: string | undefined;
    const many = await serve((req, res) => {
      auth = req.headers.authorization;
      json(res, 200, { object: "list", data: Array.from({ length: 300 }, (_, i) => ({ id: `vendor/model-${i}`, owned_by: "vendor" })) });
    });
    const got = await unlistedModel(many, "sk-test", "gpt-x");
    expect(auth).toBe("Bearer sk-test");
    expect(got).toHaveLength(20);
    expect(got?.[0]).toBe("vendor/model-0");
  });
});
