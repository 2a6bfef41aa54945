// `ocw target remove --ad-hoc`: which of the targets `ocw run --endpoint` saved no worker needs any more.
import { describe, expect, it } from "vitest";
import { adhocUnused, isAdhocTarget } from "./target";

describe("adhocUnused", () => {
  it("removes ad-hoc targets no worker may run on again; keeps the active one and those of workers not merged or discarded; never others", () => {
    const targets = ["local", "adhoc-1", "adhoc-2", "adhoc-3", "adhoc-4", "adhoc-5"].map((id) => ({ id }));
    const workers = [
      { id: "w-run", targetId: "adhoc-1" }, // running, or at rest and resumable / continuable
      { id: "w-merged", targetId: "adhoc-2", merged: { into: "main", commit: "abc" } },
      { id: "w-gone", targetId: "adhoc-3", discarded: true },
      { id: "w-local", targetId: "local" },
    ];
    expect(adhocUnused(targets, "adhoc-5", workers)).toEqual({
      remove: ["adhoc-2", "adhoc-3", "adhoc-4"],
      kept: [
        { id: "adhoc-1", active: false, workers: ["w-run"] },
        { id: "adhoc-5", active: true, workers: [] },
      ],
    });
    expect(isAdhocTarget({ id: "local" })).toBe(false);
  });
});
