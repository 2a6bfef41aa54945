// Answers of the Hugging Face Hub (or the mirror OCW_HF_ENDPOINT names), GitHub's release listing and a download are
// read to a cap: a stub server answering more than the cap gets a coded error back, and its answer is not read whole
// (the server sees the connection closed before it sent everything). Before, each was read whole with res.json().
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { pinnedRelease } from "../serving/get-llama";
import { resolveParallelModel } from "../serving/parallel";
import { downloadFile } from "./download";
import { urlSource } from "./gguf";
import { SetupError } from "./errors";
import { HUB_CONFIG_MAX_BYTES, HUB_LISTING_MAX_BYTES, listRepoFiles } from "./hf";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-hub-bounded-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let server: http.Server | null = null;
afterEach(() => new Promise<void>((done) => (server ? (server.closeAllConnections(), server.close(() => done())) : done())));

/**
 * A stub Hub: `routes` maps a path prefix to a JSON answer; a `huge` answer is a valid JSON list of `bytes` bytes,
 * streamed without a length (as a chunked answer is), and `sent()` says how much of it went out.
 */
async function stubHub(routes: Record<string, string | { huge: number; entry: string }>): Promise<{ url: string; sent: () => number }> {
  let sent = 0;
  server = http.createServer((req, res) => {
    const key = Object.keys(routes).find((k) => (req.url ?? "").startsWith(k));
    if (!key) return void res.writeHead(404).end();
    const r = routes[key]!;
    res.writeHead(200, { "content-type": "application/json" });
    if (typeof r === "string") return void res.end(r);
    res.write("[");
    sent = 1;
    const pump = () => {
      while (sent < r.huge) {
        if (res.destroyed) return;
        const chunk = `${Array(200).fill(r.entry).join(",")},`;
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end(`${r.entry}]`);
    };
    pump();
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, sent: () => sent };
}

const ENTRY = JSON.stringify({ type: "file", path: "model-00001-of-00002.safetensors", size: 1000, lfs: { oid: "a".repeat(64), size: 1000 } });

describe("Hub and release answers are read to a cap", () => {
  it("a Hub tree listing larger than HUB_LISTING_MAX_BYTES is a coded model-source error, not read whole", async () => {
    const huge = HUB_LISTING_MAX_BYTES * 3;
    const hub = await stubHub({ "/api/models/": { huge, entry: ENTRY } });
    const err = await listRepoFiles("org/model", "main", fetch, { OCW_HF_ENDPOINT: hub.url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as SetupError).code).toBe("unavailable");
    expect((err as SetupError).kind).toBe("model-source");
    expect((err as SetupError).data).toMatchObject({ maxBytes: HUB_LISTING_MAX_BYTES, tooLarge: true });
    expect((err as Error).message).toMatch(/answered more than 16 MiB for org\/model's file listing: not read/);
    expect(hub.sent()).toBeLessThan(huge);
  }, 60_000);

  it("a config.json larger than HUB_CONFIG_MAX_BYTES stops the vLLM/SGLang sizing with a coded error, not read whole", async () => {
    const huge = HUB_CONFIG_MAX_BYTES * 8;
    const listing = JSON.stringify([JSON.parse(ENTRY), { type: "file", path: "config.json", size: 100 }]);
    const hub = await stubHub({ "/api/models/": listing, "/org/model/resolve/main/config.json": { huge, entry: '{"num_hidden_layers":32}' } });
    const err = await resolveParallelModel("org/model", "vllm", { OCW_HF_ENDPOINT: hub.url, OCW_STATE_DIR: tmp }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as SetupError).data).toMatchObject({ maxBytes: HUB_CONFIG_MAX_BYTES, tooLarge: true });
    expect((err as Error).message).toMatch(/config\.json: not read/);
    expect(hub.sent()).toBeLessThan(huge);
  }, 60_000);

  it("a config.json of the usual size is still read (the sizing gets its layers)", async () => {
    const listing = JSON.stringify([JSON.parse(ENTRY), { type: "file", path: "config.json", size: 100 }]);
    const cfg = JSON.stringify({ num_hidden_layers: 48, num_attention_heads: 32, num_key_value_heads: 8, hidden_size: 4096, max_position_embeddings: 65536 });
    const hub = await stubHub({ "/api/models/": listing, "/org/model/resolve/main/config.json": cfg });
    const [m] = await resolveParallelModel("org/model", "vllm", { OCW_HF_ENDPOINT: hub.url, OCW_STATE_DIR: tmp });
    expect(m?.weightsBytes).toBe(1000);
    expect(JSON.stringify(m)).toContain("65536");
  });

  it("a GitHub release listing larger than its cap is a coded runtime error, not read whole", async () => {
    const huge = 8 * 1024 * 1024 * 4;
    const gh = await stubHub({ "/rel": { huge, entry: '{"name":"x"}' } });
    const err = await pinnedRelease({ OCW_LLAMA_TAG: "b1", OCW_LLAMA_RELEASES_URL: `${gh.url}/rel` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as SetupError).kind).toBe("runtime");
    expect((err as Error).message).toMatch(/answered more than 8 MiB for llama\.cpp release b1: not read/);
    expect(gh.sent()).toBeLessThan(huge);
  }, 60_000);

  it("a download sending more than the file's known size is stopped, and its partial file removed", async () => {
    const huge = 64 * 1024 * 1024;
    const srv = await stubHub({ "/file": { huge, entry: '"0123456789abcdef"' } });
    const dest = path.join(tmp, "m.gguf");
    const err = await downloadFile({ url: `${srv.url}/file`, dest, expectedSize: 1_000_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as Error).message).toMatch(/sent more than the 1000000 bytes expected: stopped and the partial file removed/);
    expect(existsSync(`${dest}.part`)).toBe(false);
    expect(existsSync(dest)).toBe(false);
    expect(srv.sent()).toBeLessThan(huge);
  }, 60_000);

  it("a ranged read of a model file from a server that ignores Range reads what was asked for, not the whole file", async () => {
    const huge = 64 * 1024 * 1024;
    const srv = await stubHub({ "/m.gguf": { huge, entry: '"0123456789abcdef"' } });
    const src = urlSource(`${srv.url}/m.gguf`);
    const head = await src.read(1, 1024);
    expect(head.byteLength).toBe(1024);
    expect(Buffer.from(head).subarray(0, 18).toString()).toBe('"0123456789abcdef"');
    expect(srv.sent()).toBeLessThan(huge);
  }, 60_000);
});
