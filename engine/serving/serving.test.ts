import { mkdtempSync, readFileSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateKey, readKey, resolveKey, storeKey } from "./keys";
import { buildLlamaArgs, parseServerLog } from "./llama-server";
import { buildSglangArgs, buildVllmArgs } from "./runtimes";
import { checkCapabilityAnswer, extractCode, overlapFactor } from "./verify";

const LOGS = path.join(__dirname, "../../test/fixtures/llama-logs");

describe("llama-server log parsing (recorded -lv 4 lines)", () => {
  it("llama-gqa -c 4096 -np 4", () => {
    const r = parseServerLog(readFileSync(path.join(LOGS, "llama-gqa-c4096-np4.log"), "utf8"));
    expect(r.kv).toEqual([{ MiB: 4, cells: 1024, layers: 4, seqs: 4, streams: 4, kType: "f16", kMiB: 2, vType: "f16", vMiB: 2 }]);
    expect(r.computeMiB.CPU).toBe(5.51);
    expect(r.modelMiB.CPU_Mapped).toBeCloseTo(19.88);
    expect([r.nSlots, r.nCtxSlot, r.kvUnified]).toEqual([4, 1024, false]);
  });
  it("gemma3 has two caches (full + SWA)", () => {
    const r = parseServerLog(readFileSync(path.join(LOGS, "gemma3-swa-c4096-np4.log"), "utf8"));
    expect(r.kv.map((k) => [k.cells, k.layers, k.MiB])).toEqual([
      [1024, 2, 2],
      [1024, 4, 4],
    ]);
  });
  it("lfm2 has recurrent state", () => {
    const r = parseServerLog(readFileSync(path.join(LOGS, "lfm2-hybrid-c4096-np4.log"), "utf8"));
    expect(r.recurrent).toEqual([{ MiB: 0.03, cells: 4, layers: 6, seqs: 4, rMiB: 0.03, sMiB: 0 }]);
  });
  it("garbage yields empty figures", () => {
    expect(parseServerLog("random\nnoise").kv).toEqual([]);
  });
});

describe("llama-server args", () => {
  it("from a fit: loopback, unified, no key in argv", () => {
    const a = buildLlamaArgs({
      model: "/m.gguf",
      alias: "m",
      ctx: 16384,
      parallel: 4,
      kvUnified: true,
      port: 8080,
      cacheTypeK: "q8_0",
      cacheTypeV: "q8_0",
      nGpuLayers: 99,
      tensorSplit: [24000, 16000],
      noMmproj: true,
    });
    expect(a.join(" ")).toBe(
      "-m /m.gguf --alias m --host 127.0.0.1 --port 8080 -c 16384 -np 4 --kv-unified -ctk q8_0 -ctv q8_0 -fa auto -ngl 99 -ts 24000,16000 --jinja --no-mmproj -fit off -lv 4",
    );
    expect(a).not.toContain("--api-key");
  });
});

describe("other runtimes", () => {
  it("vLLM", () => {
    const v = buildVllmArgs({
      model: "Qwen/Qwen3-Coder-30B-A3B-Instruct",
      port: 8000,
      maxModelLen: 65536,
      maxNumSeqs: 4,
      tensorParallel: 2,
      toolCallParser: "qwen3_coder",
    });
    expect(v.args).toEqual(expect.arrayContaining(["--max-model-len", "65536", "--max-num-seqs", "4", "--tensor-parallel-size", "2", "--host", "127.0.0.1"]));
    expect(v.keyEnv).toBe("VLLM_API_KEY");
  });
  it("SGLang", () => {
    expect(buildSglangArgs({ model: "m", port: 30000, contextLength: 32768, maxRunningRequests: 8, apiKey: "k" }).args).toEqual(
      expect.arrayContaining(["--context-length", "32768", "--max-running-requests", "8"]),
    );
  });
  it("data parallel: vLLM --data-parallel-size, SGLang --dp-size (tensor × data parallel is planned in parallel.ts)", () => {
    expect(buildVllmArgs({ model: "m", port: 8000, maxModelLen: 4096, maxNumSeqs: 2, tensorParallel: 2, dataParallel: 4 }).args.join(" ")).toMatch(
      /--tensor-parallel-size 2 --data-parallel-size 4/,
    );
    expect(
      buildSglangArgs({ model: "m", port: 1, contextLength: 4096, maxRunningRequests: 2, tensorParallel: 2, dataParallel: 4, apiKey: "k" }).args.join(" "),
    ).toMatch(/--tp-size 2 --dp-size 4/);
  });
});

describe("keys", () => {
  it("stored 0600, read back, resolved from file or env", () => {
    const f = path.join(mkdtempSync(path.join(os.tmpdir(), "ocw-key-")), "keys", "t.key");
    const k = generateKey();
    storeKey(f, k);
    expect(statSync(f).mode & 0o777).toBe(0o600);
    expect(readKey(f)).toBe(k);
    expect(resolveKey({ keyFile: f })).toBe(k);
    expect(resolveKey({ keyRef: "X" }, { X: "v" })).toBe("v");
    expect(generateKey()).not.toBe(k);
  });
});

describe("capability check", () => {
  it("passes a correct solution", () => {
    expect(checkCapabilityAnswer("Here:\n```js\nfunction sumOfSquares(n){let s=0;for(let i=1;i<=n;i++)s+=i*i;return s}\n```").passed).toBe(true);
  });
  it("fails hello, a wrong answer, a hang and an escape attempt", () => {
    expect(checkCapabilityAnswer("hello").passed).toBe(false);
    expect(checkCapabilityAnswer("```js\nfunction sumOfSquares(n){return n*n}\n```").evidence).toMatch(/returned/);
    // A loop that never ends is stopped at the limit (a shorter one here: the engine's burns a second of CPU).
    expect(checkCapabilityAnswer("```js\nfunction sumOfSquares(n){while(true){}}\n```", 50)).toMatchObject({
      passed: false,
      evidence: expect.stringMatching(/timed out/),
    });
    expect(checkCapabilityAnswer("```js\nconst p = process; function sumOfSquares(n){return 0}\n```").passed).toBe(false);
  });
  it("extracts the first code block", () => {
    expect(extractCode("a\n```ts\nx\n```\n```js\ny\n```")).toBe("x");
  });
  it("overlap factor", () => {
    expect(overlapFactor(250, 650, 4)).toBeCloseTo(1.54, 2);
    expect(overlapFactor(250, 1000, 4)).toBe(1);
  });
});
