import { describe, expect, it } from "vitest";
import { phaseChip } from "./format";

describe("phaseChip", () => {
  it("Verify is not green when the verdict is underpowered, unverified or cannot-build", () => {
    const verify = { name: "verify", status: "done" } as const;
    expect(phaseChip(verify, "built")).toEqual({ tone: "ok", text: "done" });
    expect(phaseChip(verify, "underpowered")).toEqual({ tone: "warn", text: "underpowered" });
    expect(phaseChip(verify, "unverified")).toEqual({ tone: "warn", text: "unverified" });
    expect(phaseChip(verify, "cannot-build")).toEqual({ tone: "bad", text: "cannot-build" });
    // before the verdict is known, and for other phases, the status speaks
    expect(phaseChip(verify, null)).toEqual({ tone: "ok", text: "done" });
    expect(phaseChip({ name: "download", status: "done" }, "underpowered")).toEqual({ tone: "ok", text: "done" });
    expect(phaseChip({ name: "verify", status: "running" }, undefined)).toEqual({ tone: "busy", text: "running" });
    expect(phaseChip({ name: "runtime", status: "failed" })).toEqual({ tone: "bad", text: "failed" });
  });
});
