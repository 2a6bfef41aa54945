// The catalog's sizes from the Hub's tree listing when online (issue 27), against a stand-in Hub: derived sizes are
// replaced and flagged, the listing is kept for offline plans, a missing repo or no network leaves the catalog's
// figures. And the rank order from our own ledger where it exists.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HardwareReport } from "../hardware/detect";
import { planFit } from "../serving/fit-service";
import { CATALOG, findCatalog, rankByLedger } from "./catalog";
import { readHubSizes, refreshHubSizes, withHubSizes } from "./hub-sizes";

const GiB = 1024 ** 3;
const lfs = (p: string, size: number) => ({ type: "file", path: p, size: 135, lfs: { oid: "a".repeat(64), size } });
const TREES: Record<string, unknown[]> = {
  "unsloth/Qwen3.8-27B-GGUF": [
    { type: "file", path: "README.md", size: 100 },
    lfs("Qwen3.8-27B-Q4_K_M.gguf", 17_123_456_789),
    lfs("Qwen3.8-27B-Q8_0-00001-of-00002.gguf", 15e9),
    lfs("Qwen3.8-27B-Q8_0-00002-of-00002.gguf", 14.2e9),
    lfs("mmproj-F16.gguf", 0.9e9),
  ],
  "Qwen/Qwen3.8-27B-FP8": [lfs("model-00001-of-00002.safetensors", 16e9), lfs("model-00002-of-00002.safetensors", 14.5e9)],
};
let srv: http.Server;
let url = "";
const hits: string[] = [];
const dirs: string[] = [];
const envFor = (hub = url) => {
  const d = mkdtempSync(path.join(os.tmpdir(), "ocw-hub-sizes-"));
  dirs.push(d);
  return { ...process.env, OCW_HF_ENDPOINT: hub, OCW_STATE_DIR: d };
};
beforeAll(async () => {
  srv = http.createServer((req, res) => {
    hits.push(req.url ?? "");
    const m = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/main/.exec(req.url ?? "");
    const tree = m ? TREES[decodeURIComponent(m[1]!)] : undefined;
    res.statusCode = tree ? 200 : 404;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(tree ?? { error: "Repository not found" }));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
});
afterAll(() => {
  srv.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the Hub's real file sizes (issue 27)", () => {
  it("the December 2026 catalog: Qwen3.8-27B first, DeepSeek-V4-Flash and GLM-5.3-Flash listed for vLLM / SGLang; derived sizes are flagged", () => {
    expect(CATALOG[0]!.id).toBe("qwen3.8-27b");
    for (const id of ["qwen3.8-27b", "deepseek-v4-flash", "glm-5.3-flash"]) expect(findCatalog(id), id).toBeDefined();
    expect(findCatalog("deepseek-v4-flash")).toMatchObject({ totalParamsB: 284, activeParamsB: 13, contextLength: 1048576, runtimes: ["vllm", "sglang"] });
    expect(findCatalog("glm-5.3-flash")).toMatchObject({ totalParamsB: 320, activeParamsB: 18, contextLength: 1048576 });
    expect(findCatalog("qwen3.8-27b")!.quants.every((q) => q.derived)).toBe(true);
    expect(findCatalog("gpt-oss-20b")!.quants[0]!.derived).toBe(false);
  });

  it("a listing replaces derived sizes (shards summed, mmproj left out), is kept in the state dir, and is used by the next plan without the network", async () => {
    const env = envFor();
    const entries = [findCatalog("qwen3.8-27b")!];
    const r = await refreshHubSizes(entries, { env });
    expect(r.listed).toEqual(["unsloth/Qwen3.8-27B-GGUF", "Qwen/Qwen3.8-27B-FP8"]);
    // the bf16 repo is not on the stand-in Hub: a missing repo is not "offline"
    expect([r.failed, r.offline]).toEqual([["Qwen/Qwen3.8-27B"], false]);
    const kept = JSON.parse(readFileSync(path.join(env.OCW_STATE_DIR!, "hub-sizes.json"), "utf8"));
    expect(kept.repos["unsloth/Qwen3.8-27B-GGUF"].ggufs).toMatchObject({ Q4_K_M: 17_123_456_789, Q8_0: 29.2e9 });
    const [e] = withHubSizes(entries, readHubSizes(env));
    const q4 = e!.quants.find((q) => q.quant === "Q4_K_M")!;
    expect([q4.bytes, q4.derived, q4.sizeNote]).toEqual([
      17_123_456_789,
      false,
      expect.stringMatching(/^the Hub's listing of unsloth\/Qwen3.8-27B-GGUF \(\d{4}-\d\d-\d\d\)$/),
    ]);
    expect(e!.quants.find((q) => q.quant === "Q6_K")!.derived).toBe(true);
    // a listing far from the catalog's figure is not that file (a mirror answering every repo): the figure stands
    const odd = withHubSizes(entries, {
      version: 1,
      repos: { "unsloth/Qwen3.8-27B-GGUF": { at: Date.now(), ggufs: { Q6_K: 512 * 1024 }, safetensors: null } },
    });
    expect(odd[0]!.quants.find((q) => q.quant === "Q6_K")).toMatchObject({ bytes: 22.4e9, derived: true });
    expect(e!.weights!.find((w) => w.dtype === "fp8")).toMatchObject({ bytes: 30.5e9, derived: false });
    // a plan reads the kept listing (the stand-in Hub is not asked again)
    const before = hits.length;
    const hw: HardwareReport = {
      platform: "linux",
      arch: "x64",
      cpu: { model: "t", cores: 16, physicalCores: 8 },
      ram: { totalBytes: 64 * GiB, freeBytes: 64 * GiB },
      gpus: [
        {
          index: 0,
          vendor: "nvidia",
          name: "NVIDIA GeForce RTX 4090",
          totalBytes: 24 * GiB,
          freeBytes: 23.5 * GiB,
          usedBytes: 0.5 * GiB,
          unified: false,
          source: "x",
        },
      ],
      llamaDevices: null,
      probes: [],
      problems: [],
      ms: 1,
    };
    const p = await planFit({ model: "qwen3.8-27b:Q4_K_M", slots: 1 }, hw, { llamaServer: null, nvcc: true, env });
    expect(p.pick!.reason).toMatch(/qwen3\.8-27b Q4_K_M \(15\.9 GiB\)/);
    expect(hits.length).toBe(before);
    // a fresh state dir plans with the catalog's derived figure
    const fresh = await planFit({ model: "qwen3.8-27b:Q4_K_M", slots: 1 }, hw, { llamaServer: null, nvcc: true, env: envFor() });
    expect(fresh.pick!.reason).toMatch(/qwen3\.8-27b Q4_K_M \(15\.5 GiB\)/);
  });

  it("offline: nothing is kept, the catalog's figures stand, and the first failure stops the listing", async () => {
    const dead = http.createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", () => r()));
    const deadUrl = `http://127.0.0.1:${(dead.address() as AddressInfo).port}`;
    await new Promise((r) => dead.close(r));
    const env = envFor(deadUrl);
    const r = await refreshHubSizes(CATALOG.slice(0, 3), { env, fetchImpl: (u, i) => fetch(u, i) });
    expect([r.listed, r.failed.length, r.offline]).toEqual([[], 1, true]);
    expect(readHubSizes(env).repos).toEqual({});
    expect(withHubSizes(CATALOG, readHubSizes(env))).toEqual(CATALOG);
  });
});

describe("rank by our own ledger where it exists (issue 27)", () => {
  const modelOf = (t: string) => ({ a: "qwen3.8-27b:Q4_K_M", b: "unsloth/Qwen3.6-27B-GGUF:Q6_K", c: "gpt-oss-20b" })[t as "a"] ?? null;
  it("measured models swap places by pass@1; unmeasured ones keep the benchmark order; too few tasks change nothing", () => {
    const ids = (c: readonly { id: string }[]) => c.map((e) => e.id);
    const rows = [
      { target: "a", graded: 10, passAt1: 0.4 },
      { target: "b", graded: 8, passAt1: 0.75 },
      { target: "c", graded: 2, passAt1: 1 },
    ];
    const ranked = rankByLedger(CATALOG, rows, modelOf);
    expect(ids(ranked).slice(0, 2)).toEqual(["qwen3.6-27b", "qwen3.8-27b"]);
    // gpt-oss-20b has only 2 graded tasks: it stays where the benchmark put it
    expect(ids(ranked).indexOf("gpt-oss-20b")).toBe(ids(CATALOG).indexOf("gpt-oss-20b"));
    expect(ids(rankByLedger(CATALOG, rows.slice(0, 1), modelOf))).toEqual(ids(CATALOG));
  });
});
