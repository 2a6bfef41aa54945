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
    // SGLang registers DeepSeek-V4's DSML tool calls as "deepseekv4" (function_call_parser.py ToolCallParserEnum); qwen25 would leave them in content
    expect(toolParser("sglang", e, "deepseek-ai/DeepSeek-V4-Flash")).toBe("deepseekv4");
  });

  it("GLM-4.7 / GLM-5 tool calls use glm47 (no newline after the name); GLM-4.5 / 4.6 keep glm45", () => {
    for (const rt of ["vllm", "sglang"] as const) {
      expect(toolParser(rt, entry("glm-4.7-flash"), "zai-org/GLM-4.7-Flash")).toBe("glm47");
      expect(toolParser(rt, undefined, "zai-org/GLM-5.1-FP8")).toBe("glm47");
      expect(toolParser(rt, undefined, "zai-org/GLM-4.6")).toBe("glm45");
      expect(toolParser(rt, undefined, "zai-org/GLM-4.5-Air")).toBe("glm45");
    }
  });

  it("a thinking Qwen keeps the qwen3 reasoning parser; Qwen3-Coder has none", () => {
    expect(reasoningParser("vllm", undefined, "Qwen/Qwen3.6-27B")).toBe("qwen3");
    expect(reasoningParser("vllm", undefined, "Qwen/Qwen3-Coder-30B-A3B-Instruct")).toBeNull();
  });
});
