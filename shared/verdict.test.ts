import { describe, expect, it } from "vitest";
import { parseClaim } from "./verdict";

describe("parseClaim", () => {
  it("reads the last OUTCOME line", () => {
    expect(parseClaim("did it\nOUTCOME: built")).toEqual({ claim: "built", reason: null });
    expect(parseClaim("OUTCOME: built\nthen it broke\nOUTCOME: honest-failure — tests fail")).toEqual({ claim: "honest-failure", reason: "tests fail" });
  });
  it("accepts the usual dash variants and markdown bold", () => {
    expect(parseClaim("**OUTCOME:** honest-failure - no access")).toEqual({ claim: "honest-failure", reason: "no access" });
    expect(parseClaim("OUTCOME: honest-failure – timeout").reason).toBe("timeout");
  });
  it("gives no claim when there is none, or when it is not on a line of its own", () => {
    expect(parseClaim("I think the OUTCOME: built is near")).toEqual({ claim: null, reason: null });
    expect(parseClaim("")).toEqual({ claim: null, reason: null });
    expect(parseClaim("OUTCOME: maybe")).toEqual({ claim: null, reason: null });
  });
});
