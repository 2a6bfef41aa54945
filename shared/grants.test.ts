import { describe, expect, it } from "vitest";
import { grantInForce, grantShown, grantsInView } from "./grants";
import { grantsFor, type PermissionAsk } from "./permission";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "./worker";

const spec = WorkerSpec.parse({ task: "t", directory: "/repo" });
const ev = (seq: number, body: Record<string, unknown>) => ({ workerId: "w1", seq, ts: 1000 + seq, ...body }) as WorkerEvent;
const grant = (id: string, pattern: string) => ({ id, workerId: "w1", tool: "bash", pattern, askId: `a-${id}`, by: { kind: "person" }, createdAt: 1 });
const ask = (what: string): PermissionAsk =>
  ({
    id: "a9",
    workerId: "w1",
    sessionId: "s",
    kind: "permission",
    tool: "bash",
    what,
    patterns: [],
    always: [],
    createdAt: 2,
    status: "pending",
  }) as PermissionAsk;

function running(): Worker {
  let w = reduceWorker(null, ev(1, { type: "worker.created", spec, batchId: null, targetId: "t" }));
  w = reduceWorker(w, ev(2, { type: "worker.state", state: "running" }));
  return reduceWorker(w, ev(3, { type: "grant.added", grant: grant("g1", "npm test") }));
}

describe("grants expire with their worker's run", () => {
  it("in force while running; expired when the run settles, and then it answers nothing", () => {
    let w = running();
    expect(grantsFor(ask("npm test"), w.grants)?.map((g) => g.id)).toEqual(["g1"]);
    w = reduceWorker(w, ev(4, { type: "worker.state", state: "settled" }));
    expect(w.grants).toEqual([expect.objectContaining({ id: "g1", expiredAt: 1004 })]);
    expect(grantInForce(w.grants[0]!)).toBe(false);
    expect(grantsFor(ask("npm test"), w.grants)).toBeUndefined();
    // later states keep the first expiry time
    w = reduceWorker(w, ev(5, { type: "worker.state", state: "built" }));
    expect(w.grants[0]!.expiredAt).toBe(1004);
  });
  it("stopped, failed and discarded end them too; an engine restart's interruption does not", () => {
    for (const state of ["stopped", "error"]) expect(reduceWorker(running(), ev(4, { type: "worker.state", state })).grants[0]!.expiredAt).toBe(1004);
    expect(reduceWorker(running(), ev(4, { type: "discarded" })).grants[0]!.expiredAt).toBe(1004);
    expect(reduceWorker(running(), ev(4, { type: "worker.state", state: "interrupted" })).grants[0]!.expiredAt).toBeUndefined();
  });
  it("a list of every worker's grants shows those in force, newest first, and counts the expired ones", () => {
    const v = grantsInView([{ createdAt: 1, expiredAt: 5 }, { createdAt: 2 }, { createdAt: 3 }]);
    expect(v.shown.map((g) => g.createdAt)).toEqual([3, 2]);
    expect(v.expired).toBe(1);
  });
});

describe("grantShown: never another worker's absolute path", () => {
  const ws = "/home/u/.local/state/ocw/workspaces/repo/w_abc";
  it("a path inside the workspace reads repository-relative", () => {
    expect(grantShown(`${ws}/src/a.ts`, ws)).toBe("src/a.ts");
    expect(grantShown(ws, `${ws}/`)).toBe(".");
  });
  it("a command naming it gets the marker, never a rewritten command", () => {
    expect(grantShown(`cat ${ws}/x`, ws)).toBe("cat ⟨workspace⟩/x");
    expect(grantShown("npm test", ws)).toBe("npm test");
    expect(grantShown("/etc/hosts", ws)).toBe("/etc/hosts");
    expect(grantShown(`${ws}-other/x`, ws)).toBe("⟨workspace⟩-other/x");
    expect(grantShown("npm test", null)).toBe("npm test");
  });
});
