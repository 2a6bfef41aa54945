// The Attempts screen's line while no attempt has won: where the attempts are, by state (it said "the attempts are still
// running" while every one was queued for a model slot).
import { describe, expect, it, vi } from "vitest";

vi.mock("../api", () => ({ errorText: (e: unknown) => String(e), api: {} }));

const { attemptsNow } = await import("./Attempts");

describe("attemptsNow", () => {
  it("every attempt queued: says they wait for a model slot", () => {
    expect(attemptsNow([{ state: "queued" }, { state: "queued" }, { state: "queued" }])).toBe("every attempt is queued for a model slot");
  });

  it("a mix: each state's count, in the attempts' order", () => {
    expect(attemptsNow([{ state: "running" }, { state: "queued" }, { state: "running" }])).toBe("2 running, 1 queued");
    expect(attemptsNow([{ state: "waiting-approval" }, { state: "honest-failure" }, { state: "grading" }])).toBe("1 needs approval, 1 failed, 1 grading");
  });
});
