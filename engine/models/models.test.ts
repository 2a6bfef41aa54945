import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeModel } from "../../test/fixtures/gguf/writer";
import { CATALOG, catalogHparams, findCatalog, servedBy } from "./catalog";
import { downloadFile } from "./download";
import { readGgufFrom, shardNames } from "./gguf";
import { groupGgufs, repoGgufs } from "./hf";
import { hfUrl, loadGguf, loadMetadataFile, quantFromName } from "./source";

const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-models-"));
let server: http.Server;
let base = "";
let body = Buffer.alloc(0);
let ggufBytes = Buffer.alloc(0);
const rangeRequests: string[] = [];
let failAfter: number | null = null;

beforeAll(async () => {
  body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
  await writeModel(path.join(dir, "tiny-Q8_0.gguf"), { arch: "llama", nVocab: 2000, nLayer: 2 });
  ggufBytes = readFileSync(path.join(dir, "tiny-Q8_0.gguf"));
  server = http.createServer((req, res) => {
    const url = req.url ?? "";
    const src = url.includes("tiny") ? ggufBytes : body;
    if (url.startsWith("/api/models/acme/coder/tree/main")) {
      const page2 = url.includes("cursor=2");
      res.setHeader("content-type", "application/json");
      if (!page2) res.setHeader("link", `<${base}/api/models/acme/coder/tree/main?recursive=true&cursor=2>; rel="next"`);
      return res.end(
        JSON.stringify(
          page2
            ? [
                { type: "file", path: "coder-Q8_0-00002-of-00002.gguf", size: 10, lfs: { oid: "b".repeat(64), size: 200 } },
                { type: "file", path: "mmproj-F16.gguf", size: 5 },
              ]
            : [
                { type: "file", path: "README.md", size: 1 },
                { type: "file", path: "coder-Q4_K_M.gguf", size: 10, lfs: { oid: "a".repeat(64), size: 100 } },
                { type: "file", path: "coder-Q8_0-00001-of-00002.gguf", size: 10, lfs: { oid: "c".repeat(64), size: 200 } },
              ],
        ),
      );
    }
    if (url.startsWith("/api/models/acme/missing")) {
      res.statusCode = 404;
      return res.end("{}");
    }
    const range = req.headers.range;
    if (range) rangeRequests.push(range);
    const m = range ? /bytes=(\d+)-(\d*)/.exec(range) : null;
    const start = m ? Number(m[1]) : 0;
    const end = m && m[2] ? Number(m[2]) : src.length - 1;
    res.statusCode = m ? 206 : 200;
    res.setHeader("content-length", String(end - start + 1));
    const chunk = src.subarray(start, end + 1);
    if (failAfter !== null) {
      res.flushHeaders();
      res.write(chunk.subarray(0, failAfter));
      failAfter = null;
      setTimeout(() => res.destroy(), 50);
      return;
    }
    res.end(chunk);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("GGUF reader", () => {
  it("reads a local file written by the fixture writer", async () => {
    const f = await readGgufFrom(path.join(dir, "tiny-Q8_0.gguf"));
    expect(f.metadata["general.architecture"]).toBe("llama");
    expect(f.metadata["llama.block_count"]).toBe(2);
    expect(f.tensors.find((t) => t.name === "token_embd.weight")).toMatchObject({ shape: [256, 2000], type: 1, bytes: 256 * 2000 * 2 });
    expect(f.dataOffset % 32).toBe(0);
    const total = f.tensors.reduce((a, t) => a + Math.ceil(t.bytes / 32) * 32, 0);
    expect(f.dataOffset + total).toBe(ggufBytes.length);
  });
  it("reads the header of a remote file with Range requests only", async () => {
    rangeRequests.length = 0;
    const info = await loadGguf(`${base}/files/tiny-Q8_0.gguf`);
    expect(info.metadata["llama.embedding_length"]).toBe(256);
    expect(info.tensors!.length).toBeGreaterThan(5);
    expect(info.quant).toBe("Q8_0");
    expect(rangeRequests.length).toBeGreaterThan(0);
    expect(rangeRequests.every((r) => /^bytes=\d+-\d+$/.test(r))).toBe(true);
  });
  it("rejects garbage and truncated files", async () => {
    writeFileSync(path.join(dir, "junk.gguf"), "not a gguf at all");
    await expect(loadGguf(path.join(dir, "junk.gguf"))).rejects.toThrow(/not a GGUF file/);
    writeFileSync(path.join(dir, "trunc.gguf"), ggufBytes.subarray(0, 200));
    await expect(loadGguf(path.join(dir, "trunc.gguf"))).rejects.toThrow(/truncated/);
  });
  it("shards and names", () => {
    expect(shardNames("m-00001-of-00003.gguf")).toEqual(["m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"]);
    expect(shardNames("m.gguf")).toEqual(["m.gguf"]);
    expect(quantFromName("Qwen3-8B-Q4_K_M.gguf")).toBe("Q4_K_M");
    expect(quantFromName("gpt-oss-20b-mxfp4.gguf")).toBe("MXFP4");
    expect(hfUrl("hf:Qwen/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf")).toBe("https://huggingface.co/Qwen/Qwen3-8B-GGUF/resolve/main/Qwen3-8B-Q4_K_M.gguf");
  });
  it("reports missing shards", async () => {
    writeFileSync(path.join(dir, "s-00001-of-00002.gguf"), ggufBytes);
    await expect(loadGguf(path.join(dir, "s-00001-of-00002.gguf"))).rejects.toThrow(/missing shard/);
  });
  it("metadata JSON may carry tensor infos (type by name or id)", () => {
    const f = path.join(dir, "meta.json");
    writeFileSync(
      f,
      JSON.stringify({ metadata: { "general.architecture": "llama" }, tensorInfos: [{ name: "blk.0.attn_q.weight", shape: [4096, 4096], dtype: "Q4_K" }] }),
    );
    expect(loadMetadataFile(f).tensors![0]!.bytes).toBe((4096 / 256) * 144 * 4096);
  });
});

describe("Hub tree API", () => {
  it("lists quants (shards grouped, mmproj apart) across pages", async () => {
    const r = await repoGgufs("acme/coder", "main", fetch, { OCW_HF_ENDPOINT: base });
    expect(r.quants.map((q) => [q.quant, q.files.length, q.totalBytes])).toEqual([
      ["Q8_0", 2, 400],
      ["Q4_K_M", 1, 100],
    ]);
    expect(r.mmproj.map((m) => m.path)).toEqual(["mmproj-F16.gguf"]);
    expect(r.quants[1]!.files[0]!.sha256).toBe("a".repeat(64));
  });
  it("a missing repo is a clear error", async () => {
    await expect(repoGgufs("acme/missing", "main", fetch, { OCW_HF_ENDPOINT: base })).rejects.toThrow(/no Hugging Face repo acme\/missing/);
    expect(groupGgufs("x/y", "main", []).quants).toEqual([]);
  });
});

describe("download", () => {
  const sha = () => createHash("sha256").update(body).digest("hex");
  it("downloads with progress and verifies size and sha256", async () => {
    const seen: number[] = [];
    const r = await downloadFile({
      url: `${base}/blob`,
      dest: path.join(dir, "dl1.bin"),
      expectedSize: body.length,
      sha256: sha(),
      onProgress: (p) => seen.push(p.received),
    });
    expect(r).toMatchObject({ bytes: body.length, verified: "sha256", resumedFrom: 0 });
    expect(seen.at(-1)).toBe(body.length);
  });
  it("resumes a broken download with Range", async () => {
    const dest = path.join(dir, "dl2.bin");
    failAfter = 100_000;
    await expect(downloadFile({ url: `${base}/blob`, dest, expectedSize: body.length, sha256: sha() })).rejects.toThrow(/run again to resume/);
    expect(existsSync(`${dest}.part`)).toBe(true);
    rangeRequests.length = 0;
    const r = await downloadFile({ url: `${base}/blob`, dest, expectedSize: body.length, sha256: sha() });
    expect(r.resumedFrom).toBeGreaterThan(0);
    expect(rangeRequests[0]).toMatch(/^bytes=\d+-$/);
    expect(readFileSync(dest).equals(body)).toBe(true);
  });
  it("a checksum mismatch removes the partial file", async () => {
    const dest = path.join(dir, "dl3.bin");
    await expect(downloadFile({ url: `${base}/blob`, dest, sha256: "0".repeat(64) })).rejects.toThrow(/checksum mismatch/);
    expect(existsSync(`${dest}.part`)).toBe(false);
  });
  it("cancel keeps the partial file", async () => {
    const ctl = new AbortController();
    ctl.abort();
    await expect(downloadFile({ url: `${base}/blob`, dest: path.join(dir, "dl4.bin"), signal: ctl.signal })).rejects.toThrow(/cancelled/);
  });
});

describe("catalog", () => {
  it("entries are complete, sourced and honest about what is unverified", () => {
    for (const e of CATALOG) {
      expect(e.repo).toMatch(/^[\w.-]+\/[\w.-]+$/);
      expect(e.source).toMatch(/^https:\/\//);
      expect(e.released).toMatch(/^20\d\d-\d\d/);
      // a GGUF for llama.cpp, or (vLLM / SGLang only) the maker's safetensors weights
      if (servedBy(e, "llama.cpp")) expect(e.quants.length).toBeGreaterThan(0);
      else expect(e.weights!.length).toBeGreaterThan(0);
      // every size says whether it was read from a listing or derived (issue 27)
      for (const x of [...e.quants, ...(e.weights ?? [])]) expect(typeof x.derived).toBe("boolean");
      for (const x of [...e.quants, ...(e.weights ?? [])]) if (x.sizeNote?.startsWith("derived")) expect(x.derived).toBe(true);
      expect(e.toolCalling.status).toBe("unverified");
      for (const q of e.quants) expect(q.bytes).toBeGreaterThan(1e9);
      const h = catalogHparams(e);
      expect(h.kvLayer.filter(Boolean).length).toBeGreaterThan(0);
      if (e.spec.recurrent) expect(h.rsLayer.filter(Boolean).length).toBe(e.spec.nLayer - e.spec.nLayer / e.spec.attnInterval);
    }
    expect(findCatalog("gpt-oss-20b")?.license).toBe("apache-2.0");
    expect(findCatalog("hf:ggml-org/gpt-oss-20b-GGUF:MXFP4")?.id).toBe("gpt-oss-20b");
    // Qwen3.6-27B: 16 of 64 layers hold KV (interval 4)
    expect(catalogHparams(findCatalog("qwen3.6-27b")!).kvLayer.filter(Boolean)).toHaveLength(16);
  });
});

describe('read and download errors are classified (not "not a GGUF")', () => {
  let srv: http.Server;
  let url = "";
  beforeAll(async () => {
    srv = http.createServer((req, res) => {
      res.statusCode = req.url?.includes("gated") ? 401 : 404;
      res.end("no");
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  });
  afterAll(() => srv.close());
  it("404, 401 and an unreachable host each say what they are", async () => {
    await expect(loadGguf(`${url}/missing.gguf`)).rejects.toThrow(/HTTP 404: no such file/);
    await expect(loadGguf(`${url}/gated/x.gguf`)).rejects.toThrow(/gated or private.*HF_TOKEN/);
    await expect(loadGguf("http://127.0.0.1:9/x.gguf")).rejects.toThrow(/cannot reach 127\.0\.0\.1:9/);
    for (const u of [`${url}/missing.gguf`, "http://127.0.0.1:9/x.gguf"]) await expect(loadGguf(u)).rejects.not.toThrow(/not a GGUF/);
  });
  it("a download larger than the free disk is refused before any byte is fetched", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-dl-space-"));
    await expect(downloadFile({ url: `${url}/huge.gguf`, dest: path.join(dir, "huge.gguf"), expectedSize: 2 ** 60 })).rejects.toThrow(
      /needs .* GiB but .* free/,
    );
    expect(existsSync(path.join(dir, "huge.gguf.part"))).toBe(false);
  });
});
