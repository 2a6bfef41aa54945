// Why a worker that is not built is not landed, and the next step its state asks for.
import { describe, expect, it } from "vitest";
import type { Worker } from "../../shared/worker";
import { notBuilt } from "./lifecycle";

const said = (state: Worker["state"]) => notBuilt({ id: "w-a", state } as Worker, "merged").message;

describe("notBuilt", () => {
  it("names the next step by the worker's state: an ask waiting on the person is answered first, not waited out", () => {
    expect(said("waiting-approval")).toBe(
      "worker w-a is waiting-approval: only a built worker's graded commit is merged; answer its ask (it waits on you), then land it once its verdict is built (nothing was changed)",
    );
    expect(said("running")).toMatch(/; wait for its verdict, then land it if it is built \(nothing was changed\)$/);
    expect(said("honest-failure")).toMatch(/^worker w-a is failed \(its held-back checks did not pass\): .*continue it with a review/);
    expect(said("stopped")).toMatch(/; resume it \(or retry its task\)/);
  });
});
