// Recovery against a fake opencode client and logs on disk: a restart rebuilds every worker from its log and sets it
// on its way; a dead opencode interrupts its live workers; a reconnect picks up what was missed, and a list that cannot
// be read keeps every pending ask as it is (the resync bug: it used to mark them all decided by opencode).
import { describe, expect, it } from "vitest";
import type { PermissionAsk } from "../../shared/permission";
import { Approvals } from "../approvals/queue";
import type { PermissionRequest, QuestionRequest } from "@opencode-ai/sdk/v2";
import type { PortResult } from "../harness";
import { FakeOpencode, stubPort } from "../../test/fixtures/fake-harness";
import { testRegistry } from "../../test/fixtures/registry";
import { Recovery } from "./recovery";

const ask = (workerId: string, id: string): PermissionAsk => ({
  id,
  workerId,
  sessionId: "ses_1",
  kind: "permission",
  tool: "edit",
  what: "a.txt",
  patterns: ["a.txt"],
  always: [],
  createdAt: 1,
  status: "pending",
});

function setup(stateDir?: string, lists?: { permissions: PermissionRequest[] | null; questions: QuestionRequest[] | null }) {
  const r = testRegistry(stateDir);
  const approvals = new Approvals({ stateDir: r.stateDir, registry: r.registry });
  const queued: string[] = [];
  const regraded: string[] = [];
  const idles: string[] = [];
  // A list that cannot be read is opencode's connection reset: no HTTP answer.
  const list =
    <T>(x: T[] | null | undefined) =>
    async (): Promise<PortResult<T[]>> =>
      x === null ? { ok: false, kind: "no-answer", error: new Error("ECONNRESET") } : { ok: true, value: x ?? [] };
  const server = new FakeOpencode(() => []);
  server.port = stubPort({
    permissions: list(lists?.permissions),
    questions: list(lists?.questions),
    replyPermission: async () => ({ ok: true, value: undefined }),
  });
  const recovery = new Recovery({
    stateDir: r.stateDir,
    registry: r.registry,
    logs: r.logs,
    bus: r.bus,
    approvals,
    enqueue: (id) => void queued.push(id),
    regrade: async (id) => void regraded.push(id),
    checkIdle: async (id) => void idles.push(id),
    serverOf: () => server,
  });
  return { ...r, approvals, recovery, queued, regraded, idles, server };
}

describe("recovery", () => {
  it("a restart: queued → queued again in order, live → interrupted with pending asks cancelled, settled/grading → graded again, the rest as they were", () => {
    const first = setup();
    const q = first.worker("queued");
    const run = first.worker("running", { sessionId: "ses_1" });
    first.approvals.onAsk(run.id, ask(run.id, "per_1"));
    const settled = first.worker("settled");
    const grading = first.worker("grading");
    const built = first.worker("built");
    const stopped = first.worker("stopped");
    const again = setup(first.stateDir);
    again.recovery.recover();
    const { registry } = again;
    expect(again.queued).toEqual([q.id]);
    expect(registry.get(run.id)).toMatchObject({ state: "interrupted", stateReason: expect.stringMatching(/resume it/) });
    expect(registry.get(run.id).asks[0]).toMatchObject({ status: "cancelled", by: { kind: "engine", name: "restart" } });
    expect(registry.sessions.get("ses_1")).toBe(run.id);
    expect(again.regraded.sort()).toEqual([settled.id, grading.id].sort());
    expect(registry.get(built.id).state).toBe("built");
    expect(registry.get(stopped.id).state).toBe("stopped");
  });

  it("opencode down: its live workers are interrupted (resumable) and their asks cancelled; finished ones untouched", () => {
    const { worker, recovery, registry, approvals } = setup();
    const a = worker("waiting-approval", { targetId: "t" });
    approvals.onAsk(a.id, ask(a.id, "per_9"));
    const other = worker("running", { targetId: "u" });
    const done = worker("built", { targetId: "t" });
    recovery.onServerDown("t", "opencode serve exited unexpectedly");
    expect(registry.get(a.id)).toMatchObject({
      state: "interrupted",
      stateReason: expect.stringMatching(/opencode serve exited unexpectedly; resume the worker/),
    });
    expect(registry.get(a.id).asks.map((x) => x.status)).toEqual(["cancelled"]);
    expect(registry.get(other.id).state).toBe("running");
    expect(registry.get(done.id).state).toBe("built");
  });

  it("resync with an unreadable list keeps every pending ask pending, and still looks for an idle", async () => {
    for (const lists of [
      { permissions: null, questions: [] },
      { permissions: [], questions: null },
    ]) {
      const { worker, recovery, registry, approvals, idles, lines } = setup(undefined, lists);
      const w = worker("running", { sessionId: "ses_1" });
      approvals.onAsk(w.id, ask(w.id, "per_1"));
      await recovery.resync("t");
      expect(registry.get(w.id).asks.map((a) => a.status)).toEqual(["pending"]);
      expect(registry.get(w.id).state).toBe("waiting-approval");
      expect(idles).toEqual([w.id]);
      expect(lines.some((l) => /could not be read after a reconnect/.test(l))).toBe(true);
    }
  });

  it("resync with readable lists: an ask opencode no longer has is resolved, one it has and we missed is opened", async () => {
    const missed = { id: "per_new", sessionID: "ses_1", permission: "edit", patterns: ["b.txt"], metadata: { filepath: "b.txt" }, always: [] };
    const { worker, recovery, registry, approvals } = setup(undefined, {
      permissions: [missed, { ...missed, id: "per_other", sessionID: "ses_x" }],
      questions: [],
    });
    const w = worker("running", { sessionId: "ses_1" });
    approvals.onAsk(w.id, ask(w.id, "per_old"));
    await recovery.resync("t");
    const asks = registry.get(w.id).asks;
    expect(asks.map((a) => [a.id, a.status])).toEqual([
      ["per_old", "decided"],
      ["per_new", "pending"],
    ]);
    expect(asks[0]!.by).toEqual({ kind: "engine", name: "opencode" });
    expect(registry.get(w.id).state).toBe("waiting-approval");
  });
});
