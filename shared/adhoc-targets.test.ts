// `ocw target remove --ad-hoc`: which of the targets `ocw run --endpoint` saved no worker needs any more.
import { describe, expect, it } from "vitest";
import { adhocUnused, isAdhocTarget } from "./target";

describe("adhocUnused", () => {
  it("removes ad-hoc targets no worker may run on again; keeps the active one and those of workers not merged or discarded; never others", () => {
    const targets = ["local", "adhoc-1111111111", "adhoc-2222222222", "adhoc-3333333333", "adhoc-4444444444", "adhoc-5555555555"].map((id) => ({ id }));
    const workers = [
      { id: "w-run", targetId: "adhoc-1111111111" }, // running, or at rest and resumable / continuable
      { id: "w-merged", targetId: "adhoc-2222222222", merged: { into: "main", commit: "abc" } },
      { id: "w-gone", targetId: "adhoc-3333333333", discarded: true },
      { id: "w-local", targetId: "local" },
    ];
    expect(adhocUnused(targets, "adhoc-5555555555", workers)).toEqual({
      remove: ["adhoc-2222222222", "adhoc-3333333333", "adhoc-4444444444"],
      kept: [
        { id: "adhoc-1111111111", active: false, workers: ["w-run"] },
        { id: "adhoc-5555555555", active: true, workers: [] },
      ],
    });
    expect(isAdhocTarget({ id: "local" })).toBe(false);
  });

  it("a target of the person's own whose id merely starts with adhoc- is not ad-hoc: never removed with its key", () => {
    const own = [
      { id: "adhoc-gpu", serving: { engine: "api" } },
      { id: "adhoc-0123456789-mine", serving: { engine: "api" } },
      { id: "adhoc-0123456789", serving: { engine: "llama.cpp" } }, // a server of one's own, named so
    ];
    for (const t of own) expect(isAdhocTarget(t)).toBe(false);
    expect(adhocUnused(own, null, []).remove).toEqual([]);
    expect(isAdhocTarget({ id: "adhoc-0123456789", serving: { engine: "api" } })).toBe(true);
  });
});
