// Counts shown to a person read as English: "1 tool failure", "3 tool failures".
import { describe, expect, it } from "vitest";
import { counted } from "./format";

describe("counted", () => {
  it("one is singular, others plural; an irregular plural can be given", () => {
    expect(counted(1, "tool failure")).toBe("1 tool failure");
    expect(counted(0, "tool failure")).toBe("0 tool failures");
    expect(counted(3, "tool failure")).toBe("3 tool failures");
    expect(counted(2, "batch", "batches")).toBe("2 batches");
  });
});
