import { afterEach, describe, expect, it, vi } from "vitest";
import type { WorkerState } from "../../shared/worker";
import type { HarnessServer } from "../harness";
import { InstanceReleaser, RELEASE_BATCH, RELEASE_DELAY_MS } from "./release";
import { FakeOpencode, stubPort } from "../../test/fixtures/fake-harness";
import { type WorkerRegistry, WorkerRun } from "../registry";

/** A registry of workers on servers, enough for the releaser: states, servers, and the dispose calls it makes. */
function rig() {
  const disposed: string[] = [];
  const states = new Map<string, WorkerState>();
  const rts = new Map<string, WorkerRun>();
  const server = () => {
    const s = new FakeOpencode(() => []);
    s.port = stubPort({ dispose: async ({ directory }) => (disposed.push(directory), { ok: true, value: undefined }) });
    return s;
  };
  const serverA = server();
  const serverB = server();
  const reg = {
    rt: (id: string) => rts.get(id)!,
    list: () => [...states].map(([id, state]) => ({ id, state })),
    get: (id: string) => ({ id, state: states.get(id) }),
    workspaceOf: () => ({}),
    portOf: (id: string) => ({ port: rts.get(id)!.server!.port, directory: `/ws/${id}` }),
  } as unknown as WorkerRegistry;
  const add = (id: string, server: HarnessServer, state: WorkerState = "running") => {
    states.set(id, state);
    const run = new WorkerRun();
    run.attach(server);
    rts.set(id, run);
  };
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { releaser: new InstanceReleaser(reg), disposed, states, add, serverA, serverB, settle };
}

afterEach(() => vi.useRealTimers());

describe("releasing finished workers' opencode instances", () => {
  it("waits while its server has a worker at work, then releases every waiting one", async () => {
    const { releaser, disposed, states, add, serverA, serverB, settle } = rig();
    add("w1", serverA);
    add("w2", serverA);
    add("w3", serverB);
    states.set("w1", "built");
    releaser.finished("w1");
    await settle();
    expect(disposed).toEqual([]); // w2 still runs on the same server
    // settled and graded: still at work (a disposal would take CPU from its grading)
    for (const state of ["settled", "grading"] as const) {
      states.set("w2", state);
      releaser.moved("w2");
      await settle();
      expect(disposed).toEqual([]);
    }
    states.set("w2", "built");
    releaser.finished("w2");
    await settle();
    expect(disposed).toEqual(["/ws/w1", "/ws/w2"]); // a worker on another server (w3) does not hold them up
  });

  it("a 32-task batch finishing one by one keeps every instance until its last worker is at rest", async () => {
    // Disposals take opencode's one thread (~25 ms each): during a batch's tail they delay its last workers' turns.
    const { releaser, disposed, states, add, serverA, settle } = rig();
    for (let i = 0; i < 32; i++) add(`w${i}`, serverA);
    for (let i = 0; i < 31; i++) {
      states.set(`w${i}`, i % 3 ? "built" : "honest-failure");
      releaser.finished(`w${i}`);
      await settle();
    }
    expect(disposed).toEqual([]);
    states.set("w31", "built");
    releaser.finished("w31");
    await settle();
    expect(disposed.length).toBe(32);
  });

  it(`releases at ${RELEASE_BATCH} waiting even while busy, and after ${RELEASE_DELAY_MS} ms at the latest`, async () => {
    vi.useFakeTimers();
    const { releaser, disposed, states, add, serverA, settle } = rig();
    add("busy", serverA);
    for (let i = 0; i < RELEASE_BATCH; i++) {
      add(`f${i}`, serverA, "built");
      releaser.finished(`f${i}`);
    }
    await settle();
    expect(disposed.length).toBe(RELEASE_BATCH);
    add("late", serverA, "honest-failure");
    releaser.finished("late");
    await settle();
    expect(disposed.length).toBe(RELEASE_BATCH);
    await vi.advanceTimersByTimeAsync(RELEASE_DELAY_MS);
    expect(disposed.at(-1)).toBe("/ws/late");
    expect(states.get("busy")).toBe("running");
  });

  it(`at ${RELEASE_BATCH} waiting, waits while a worker of the server is graded (up to ${2 * RELEASE_BATCH})`, async () => {
    const { releaser, disposed, states, add, serverA, settle } = rig();
    add("busy", serverA);
    add("grading", serverA, "grading");
    for (let i = 0; i < RELEASE_BATCH; i++) {
      add(`f${i}`, serverA, "built");
      releaser.finished(`f${i}`);
    }
    await settle();
    expect(disposed).toEqual([]); // the other half of the batch is being graded
    states.set("grading", "built");
    releaser.finished("grading");
    await settle();
    expect(disposed.length).toBe(RELEASE_BATCH + 1); // gradings paused: released, though "busy" still runs
    // Gradings that never pause: released at twice the batch all the same.
    add("g2", serverA, "settled");
    for (let i = 0; i < 2 * RELEASE_BATCH; i++) {
      add(`h${i}`, serverA, "built");
      releaser.finished(`h${i}`);
      await settle();
      if (i < 2 * RELEASE_BATCH - 1) expect(disposed.length).toBe(RELEASE_BATCH + 1);
    }
    expect(disposed.length).toBe(3 * RELEASE_BATCH + 1);
  });

  it("a worker resumed before its release keeps its instance", async () => {
    const { releaser, disposed, states, add, serverA, settle } = rig();
    add("busy", serverA);
    add("w", serverA, "stopped");
    releaser.finished("w");
    releaser.cancel("w");
    states.set("busy", "built");
    releaser.finished("busy");
    await settle();
    expect(disposed).toEqual(["/ws/busy"]);
  });
});
