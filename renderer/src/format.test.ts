// Counts shown to a person read as English: "1 tool failure", "3 tool failures".
import { describe, expect, it } from "vitest";
import { counted, duration, lostDetail, phaseOf, toolShown } from "./format";

describe("counted", () => {
  it("one is singular, others plural; an irregular plural can be given", () => {
    expect(counted(1, "tool failure")).toBe("1 tool failure");
    expect(counted(0, "tool failure")).toBe("0 tool failures");
    expect(counted(3, "tool failure")).toBe("3 tool failures");
    expect(counted(2, "batch", "batches")).toBe("2 batches");
  });
});

describe("lostDetail: the engine-lost banner adds no raw 'Failed to fetch'", () => {
  it("drops a platform's no-answer words (the banner already says the engine is not reachable and what to do)", () => {
    for (const e of ["Failed to fetch", "TypeError: Failed to fetch", "fetch failed", "NetworkError when attempting to fetch resource."])
      expect(lostDetail(e)).toBeNull();
    expect(
      lostDetail("the engine did not answer (Failed to fetch): it may have stopped — start it with `ocw serve` (or reopen the app), then try again"),
    ).toBeNull();
    expect(lostDetail(null)).toBeNull();
  });

  it("keeps other words, which say something the banner does not", () => {
    expect(lostDetail("stream closed")).toBe("stream closed");
  });
});

describe("duration", () => {
  it("under a second in tenths (never a rate over 0s), then whole seconds, minutes, hours", () => {
    expect(duration(0)).toBe("0s");
    expect(duration(40)).toBe("0.1s");
    expect(duration(840)).toBe("0.8s");
    expect(duration(1000)).toBe("1s");
    expect(duration(59_999)).toBe("59s");
    expect(duration(61_000)).toBe("1m 01s");
    expect(duration(3_660_000)).toBe("1h 01m");
  });
});

describe("a tool name the model chose, shown to a person (the CLI's toolWord, MCP's untrusted.tool)", () => {
  const running = (currentTool: string) => phaseOf({ state: "running", currentTool, stalled: false, startedAt: 1 });
  it("a plain name is shown as it is", () => {
    expect(running("bash")).toBe("running bash");
    expect(toolShown("mcp_server.read-file")).toBe("mcp_server.read-file");
  });
  it("any other name shows its bidi controls, escapes and line breaks as visible markers, never raw", () => {
    expect(running("read\u202Etxt.exe")).toBe("running read⟪U+202E⟫txt.exe");
    expect(toolShown("x\u001b]52;c;eA==\u0007\napprove")).toBe("x⟪U+001B⟫]52;c;eA==⟪U+0007⟫⏎approve");
    expect(toolShown("a".repeat(500)).length).toBeLessThan(200);
  });
});
