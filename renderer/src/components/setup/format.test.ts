import { describe, expect, it } from "vitest";
import { CPU_SLOTS_NOTE } from "../../../../shared/fit";
import { GiB, hardwareNote, newerJob, phaseChip, quantsText } from "./format";

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

describe("quantsText (the catalog's quants column)", () => {
  it("a model with no GGUF quants says so, not Infinity", () => {
    expect(quantsText([])).toBe("none (no GGUF)");
    expect(quantsText([])).not.toMatch(/Infinity|NaN/);
  });

  it("one size once; a range otherwise", () => {
    expect(quantsText([56 * GiB])).toBe("1 · 56 GiB");
    expect(quantsText([11 * GiB, 30 * GiB, 17 * GiB])).toBe("3 · 11 GiB–30 GiB");
  });
});

describe("newerJob", () => {
  const run = { jobId: "j1", state: "running" };
  const failed = { jobId: "j1", state: "failed" };
  it("keeps an ended job's picture against a later answer that read it running", () => {
    expect(newerJob(failed, run)).toBe(failed);
  });
  it("takes an end, another job, and the first picture", () => {
    expect(newerJob(run, failed)).toBe(failed);
    const other = { jobId: "j2", state: "running" };
    expect(newerJob(failed, other)).toBe(other);
    expect(newerJob(null, run)).toBe(run);
  });
});

describe("hardwareNote", () => {
  it("the CPU-only slots note on Setup points at the Slots field on that screen, not at Setup", () => {
    const local = hardwareNote(CPU_SLOTS_NOTE, true);
    expect(local).toBe("CPU only: 1 slot by default (decode speed is shared by all slots); for more, set Slots below");
    const other = hardwareNote(CPU_SLOTS_NOTE, false);
    expect(other).toBe(
      "CPU only: 1 slot by default (decode speed is shared by all slots); for more, choose “Run a model on this machine” below and set its Slots",
    );
    for (const t of [local, other]) expect(t).not.toMatch(/in Setup|command line/);
    // Any other note is the engine's words as they are.
    expect(hardwareNote("GPU 1 is not usable by this llama-server", true)).toBe("GPU 1 is not usable by this llama-server");
  });
});
