import { describe, expect, it } from "vitest";
import type { Target } from "../../shared/target";
import { compileOpencodeConfig } from "./config";

const target = (perSlotCtx: number, outputLimit?: number): Target =>
  ({
    id: "t",
    model: "m",
    quant: null,
    endpoint: "http://127.0.0.1:8080/v1",
    keyRef: null,
    contextLimit: perSlotCtx,
    ...(outputLimit ? { outputLimit } : {}),
    serving: { engine: "vllm", endpoints: [{ url: "http://127.0.0.1:8080/v1", slots: 1 }], slots: 1, perSlotCtx },
    checks: [],
  }) as unknown as Target;

const limit = (t: Target) => {
  const c = compileOpencodeConfig(t, { prompt: "p" } as never) as {
    provider: Record<string, { models: Record<string, { limit: { context: number; output: number } }> }>;
  };
  return c.provider.ocw!.models.m!.limit;
};

describe("the model limits opencode is given", () => {
  // opencode (its SessionCompaction) compacts once a turn's tokens reach context − output, and asks for max_tokens =
  // output; vLLM and SGLang refuse a request whose prompt + max_tokens passes --max-model-len / --context-length.
  it("a slot of 8192 (what verify accepts: the first request + 1024): the output is cut so the first request fits below the compaction line", () => {
    const l = limit(target(8192));
    expect(l.context).toBe(8192);
    expect(l.context - l.output).toBeGreaterThanOrEqual(6144);
    expect(l.output).toBeGreaterThanOrEqual(1024);
  });
  it("a large slot keeps the 8192-token output; a target's own outputLimit is kept where it fits", () => {
    expect(limit(target(32768))).toEqual({ context: 32768, output: 8192 });
    expect(limit(target(65536, 16384))).toEqual({ context: 65536, output: 16384 });
    expect(limit(target(12288, 16384)).output).toBe(12288 - 6144);
  });
});
