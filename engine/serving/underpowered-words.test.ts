// An underpowered verdict says what would lift it where the model runs: an API provider's model is not lifted by "more
// VRAM", "a higher quant" or "an API provider" (what `ocw setup --provider` said to a person who had just set one up).
import { describe, expect, it } from "vitest";
import { underpoweredSummary } from "./verify";

describe("underpoweredSummary", () => {
  it("an API provider's model: another of its models or another provider; nothing of VRAM, quants or machines", () => {
    for (const failed of ["capability", "concurrency", "tools"] as const) {
      const text = underpoweredSummary(failed, "evidence", "api");
      expect(text, failed).toContain("(evidence)");
      expect(text, failed).not.toMatch(/VRAM|quant|machine|an API provider/);
    }
    expect(underpoweredSummary("capability", "x", "api")).toBe(
      "reachable but failed the coding task (x); a stronger coding model of this provider, or another provider, would lift it",
    );
  });

  it("a model of one's own (llama.cpp, vLLM, a captured server): a larger model, more VRAM, a quant, or an API provider, as before", () => {
    expect(underpoweredSummary("capability", "x", "llama.cpp")).toBe(
      "reachable but failed the coding task (x); a larger or better coding model, more VRAM, or an API provider would lift it",
    );
    expect(underpoweredSummary("concurrency", "x", "capture")).toBe("requests do not overlap (x); fewer slots or a stronger machine");
    expect(underpoweredSummary("tools", "x", "vllm")).toContain("a higher quant, or an API provider");
  });
});
