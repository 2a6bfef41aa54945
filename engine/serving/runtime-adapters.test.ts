import { describe, expect, it } from "vitest";
import { CATALOG } from "../models/catalog";
import { reasoningParser, toolParser } from "./runtime-adapters";

const entry = (id: string) => CATALOG.find((e) => e.id === id);

describe("parsers per model family", () => {
  it("DeepSeek-V4 on vLLM gets its own reasoning and DSML tool parsers (hermes would leave tool calls in content)", () => {
    const e = entry("deepseek-v4-flash");
    expect(e).toBeDefined();
    expect(reasoningParser("vllm", e, "deepseek-ai/DeepSeek-V4-Flash")).toBe("deepseek_v4");
    expect(toolParser("vllm", e, "deepseek-ai/DeepSeek-V4-Flash")).toBe("deepseek_v4");
    expect(reasoningParser("sglang", e, "deepseek-ai/DeepSeek-V4-Flash")).toBe("deepseek-v4");
  });

  it("a thinking Qwen keeps the qwen3 reasoning parser; Qwen3-Coder has none", () => {
    expect(reasoningParser("vllm", undefined, "Qwen/Qwen3.6-27B")).toBe("qwen3");
    expect(reasoningParser("vllm", undefined, "Qwen/Qwen3-Coder-30B-A3B-Instruct")).toBeNull();
  });
});
