// `ocw target remove --ad-hoc` removes the ad-hoc targets no worker needs one by one, each removal waiting on its model
// server stopping; a worker another client started meanwhile on a later one (or that one made active) keeps it.
import { describe, expect, it } from "vitest";
import { removeUnusedAdhoc } from "./router";

const A = "adhoc-aaaaaaaaaa";
const B = "adhoc-bbbbbbbbbb";
const C = "adhoc-cccccccccc";

describe("removeUnusedAdhoc", () => {
  it("asks again before each removal: a target taken by a worker or made active meanwhile is kept", async () => {
    const targets = [A, B, C].map((id) => ({ id, serving: { engine: "api" } }));
    let active: string | null = null;
    const workers: { id: string; targetId: string }[] = [];
    const engine = {
      targets: { list: () => ({ active, targets }) },
      list: () => workers,
    } as never;
    const removed: string[] = [];
    const r = await removeUnusedAdhoc(engine, async (id) => {
      if (id === A) {
        workers.push({ id: "w-new", targetId: B }); // `ocw run --endpoint` of B's URL and model, by another client
        active = C; // `ocw target use` by another
      }
      targets.splice(
        targets.findIndex((t) => t.id === id),
        1,
      );
      removed.push(id);
    });
    expect(removed).toEqual([A]);
    expect(r).toEqual({
      removed: [A],
      kept: [
        { id: B, active: false, workers: ["w-new"] },
        { id: C, active: true, workers: [] },
      ],
    });
  });
});
