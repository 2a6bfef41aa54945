// The engine driven through its harness seam by a fake opencode (test/fixtures/fake-harness.ts): the state machine,
// asks and grants, stop/resume, budgets, shutdown and recovery, in milliseconds. Real git, real grading; only opencode
// and the model are played. The real boundary is covered by test/integration (real `opencode serve`).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reduceWorker, type Worker, type WorkerState } from "../../shared/worker";
import { TargetStore } from "../store/targets";
import { fakeHarness, type FakeScript, type Session } from "../../test/fixtures/fake-harness";
import { realClock, type Clock } from "../budgets";
import { Engine, HOUSEKEEPING_MS } from "./engine";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-engine-unit-"));
let endpoint = "";
const model = http.createServer((_req, res) => res.end(JSON.stringify({ data: [{ id: "fake" }] })));

beforeAll(async () => {
  await new Promise<void>((r) => model.listen(0, "127.0.0.1", () => r()));
  endpoint = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
});
afterAll(() => {
  model.close();
  rmSync(tmp, { recursive: true, force: true });
});

let n = 0;
function repo(): string {
  const dir = path.join(tmp, `repo-${n++}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "README.md"), "# r\n");
  execFileSync("git", ["init", "-q", "-b", "main", dir]);
  execFileSync("git", ["-C", dir, "add", "-A"]);
  execFileSync("git", ["-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init"]);
  return dir;
}

/** The default play: TASK-EDIT asks to write a.txt then claims built; TASK-HANG hangs until aborted, then (resumed) writes. */
const script: FakeScript = (prompt, turn) => {
  if (/TASK-TWO/.test(prompt))
    return [{ ask: "edit", file: "a.txt", content: "a\n" }, { ask: "edit", file: "b.txt", content: "b\n" }, { text: "OUTCOME: built" }];
  if (/TASK-HANG/.test(prompt) && turn === 0) return [{ hang: true }];
  if (/TASK-BASH/.test(prompt))
    return [{ ask: "bash", command: "echo one" }, { ask: "bash", command: "echo one" }, { write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }];
  if (/TASK-FAIL/.test(prompt)) return [{ fail: "model exploded" }];
  return [{ ask: "edit", file: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }];
};

function engineIn(stateDir: string, s: FakeScript = script, sessions?: Map<string, Session>, extra: { handoverSec?: number; clock?: Clock } = {}) {
  const store = new TargetStore(path.join(stateDir, "targets.json"));
  store.save({ id: "fake", model: "fake", endpoint, keyRef: null, serving: { engine: "scripted", endpoints: [], slots: 2 }, checks: [] }, true);
  const fake = fakeHarness(s, sessions);
  const engine = new Engine({ stateDir, targets: store, harness: fake.harness, noSandbox: true, stallSec: 3600, ...extra });
  return { engine, fake };
}

async function until(engine: Engine, id: string, pred: (w: Worker) => boolean, ms = 10_000): Promise<Worker> {
  const end = Date.now() + ms;
  for (;;) {
    const w = engine.get(id);
    if (pred(w)) return w;
    if (Date.now() > end) throw new Error(`worker ${id} is ${w.state}${w.stateReason ? ` (${w.stateReason})` : ""}; gave up waiting`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
const pending = (w: Worker) => w.asks.filter((a) => a.status === "pending");
const states = (engine: Engine, id: string) => engine.events(id).flatMap((e) => (e.type === "worker.state" ? [e.state] : []));

// Each case runs real git (workspaces, grading): a few seconds on an idle 2-core machine, far more on a loaded one.
describe("the engine through a fake opencode", { timeout: 90_000 }, () => {
  it("ask → once → settled → grading → built, honest; the log replays to the same picture", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-EDIT", directory: repo(), checks: [{ file: "a.txt", equals: "a" }] });
    const asked = await until(engine, workerId, (w) => pending(w).length === 1);
    expect(asked.state).toBe("waiting-approval");
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    const w = await until(engine, workerId, (x) => x.state === "built");
    expect(states(engine, workerId)).toEqual(["starting", "running", "waiting-approval", "running", "settled", "grading", "built"]);
    expect(w.verdict).toMatchObject({ verdict: "built", honest: true, commit: expect.any(String) });
    const replayed = engine.events(workerId).reduce<Worker | null>((acc, e) => reduceWorker(acc, e), null);
    expect(replayed).toEqual(w);
    await engine.close();
  });

  it("an idle whose turn the event stream saw whole settles without asking opencode; after a steer or a reconnect the engine asks", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const server = () => fake.servers[0]!;
    const asked = (sessionId: string | null, method: string) => server().calls.filter((c) => c.method === method && c.args.sessionID === sessionId).length;
    /** Answers every ask until the worker is built (a steer's turn asks again). */
    const approveAll = async (id: string) => {
      for (;;) {
        const w = await until(engine, id, (x) => pending(x).length === 1 || x.state === "built");
        if (w.state === "built") return w;
        await engine.decide({ askId: pending(w)[0]!.id, decision: "once" }, { kind: "person" });
      }
    };
    const r = repo();

    const plain = await engine.start({ task: "TASK-EDIT", directory: r, checks: [{ file: "a.txt", equals: "a" }] });
    const built = await approveAll(plain.workerId);
    expect(built.verdict).toMatchObject({ honest: true, claim: "built" });
    expect(asked(built.sessionId, "session.messages")).toBe(0);
    expect(server().calls.some((c) => c.method === "session.status")).toBe(false);

    const steered = await engine.start({ task: "TASK-TWO", directory: r, checks: [{ file: "b.txt", equals: "b" }] });
    await until(engine, steered.workerId, (x) => pending(x).length === 1);
    await engine.steer(steered.workerId, "also keep it short", { kind: "person" });
    const afterSteer = await approveAll(steered.workerId);
    expect(asked(afterSteer.sessionId, "session.messages")).toBeGreaterThan(0);

    const reconnected = await engine.start({ task: "TASK-EDIT", directory: r, checks: [{ file: "a.txt", equals: "a" }] });
    await until(engine, reconnected.workerId, (x) => pending(x).length === 1);
    server().emit("resync");
    const afterResync = await approveAll(reconnected.workerId);
    expect(afterResync.verdict).toMatchObject({ honest: true });
    expect(asked(afterResync.sessionId, "session.messages")).toBeGreaterThan(0);
    await engine.close();
  });

  it("a retried batch worker stays in its batch as the same task: the batch counts it once, as its latest retry", async () => {
    let sessions = 0;
    const flaky: FakeScript = (prompt, turn) =>
      /TASK-FLAKY/.test(prompt) && turn === 0 && sessions++ === 0
        ? [{ fail: "model exploded" }]
        : [{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }];
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")), flaky);
    const r = repo();
    const { batchId, workerIds } = await engine.startBatch([
      { task: "TASK-FLAKY", directory: r, checks: [{ file: "a.txt", equals: "a" }] },
      { task: "TASK-OTHER", directory: r, checks: [{ file: "a.txt", equals: "a" }] },
    ]);
    await Promise.all(workerIds.map((id) => until(engine, id, (w) => w.state === "error" || w.state === "built" || pending(w).length > 0)));
    for (const id of workerIds) for (const a of pending(engine.get(id))) await engine.decide({ askId: a.id, decision: "once" }, { kind: "person" });
    const failed = workerIds.find((id) => engine.get(id).state === "error")!;
    expect(failed).toBeDefined();
    await Promise.all(workerIds.map((id) => until(engine, id, (w) => w.state === "error" || w.state === "built")));
    expect(engine.batch(batchId)).toMatchObject({ settled: true, built: 1, builtRate: 0.5 });
    const { retryWorker } = await import("./housekeeping");
    const { workerId: again } = await retryWorker(engine, failed);
    expect(engine.get(again)).toMatchObject({ batchId, retryOf: failed });
    await until(engine, again, (w) => w.state === "built");
    const b = engine.batch(batchId);
    expect(b.workerIds).toEqual(expect.arrayContaining([...workerIds, again]));
    // two tasks, both built: the failed first try of the retried task is not a third task
    expect(b).toMatchObject({ settled: true, built: 2, builtRate: 1, verdict: "built" });
    await engine.close();
  });

  it('"always" is never sent to opencode: it hears "once", the engine records a grant, and the grant answers the next ask', async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-BASH", directory: repo() });
    const asked = await until(engine, workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "always" }, { kind: "person", name: "t" });
    const w = await until(engine, workerId, (x) => x.state === "built");
    expect(fake.servers[0]!.calls.filter((c) => c.method === "permission.reply").map((c) => c.args.reply)).toEqual(["once", "once"]);
    expect(w.grants.map((g) => [g.tool, g.pattern])).toEqual([["bash", "echo one"]]);
    expect(w.asks[1]!.by).toMatchObject({ kind: "policy", name: expect.stringContaining("grant bash echo one") });
    engine.revokeGrant(w.grants[0]!.id);
    expect(engine.get(workerId).grants).toEqual([]);
    await engine.close();
  });

  it("a rejected edit → honest-failure; a session error → error with the reason", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const r = repo();
    const a = await engine.start({ task: "TASK-EDIT", directory: r, checks: [{ file: "a.txt" }] });
    const asked = await until(engine, a.workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "reject" }, { kind: "person" });
    expect((await until(engine, a.workerId, (w) => w.state === "honest-failure")).verdict!.honest).toBe(false);
    const b = await engine.start({ task: "TASK-FAIL", directory: r });
    expect((await until(engine, b.workerId, (w) => w.state === "error")).stateReason).toMatch(/model exploded/);
    await engine.close();
  });

  it("an engine that keeps running removes finished workers' workspaces once they pass the retention, not only at its start", async () => {
    // The engine's timers run for real; its housekeeping interval is kept to be fired by hand, on a clock 15 days on.
    let offset = 0;
    const every: (() => void)[] = [];
    const clock: Clock = {
      now: () => Date.now() + offset,
      setTimeout: realClock.setTimeout,
      setInterval: (fn, ms) => (ms === HOUSEKEEPING_MS && every.push(fn), realClock.setInterval(fn, ms)),
    };
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")), script, undefined, { clock });
    const { workerId } = await engine.start({ task: "TASK-FAIL", directory: repo() });
    const dir = (await until(engine, workerId, (w) => w.state === "error")).worktree!;
    expect(existsSync(dir)).toBe(true);
    expect(every.length).toBeGreaterThan(0);
    offset = 15 * 86_400_000; // past the default retention (OCW_RETENTION_DAYS, 14)
    for (const fn of every) fn();
    const end = Date.now() + 10_000;
    while (existsSync(dir) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(dir)).toBe(false);
    await engine.close();
  });

  it("a discarded or merged worker's session is deleted in opencode (its messages and events do not stay in opencode's database)", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const dir = repo();
    const a = await engine.start({ task: "TASK-FAIL", directory: dir });
    const failed = await until(engine, a.workerId, (x) => x.state === "error");
    const b = await engine.start({ task: "TASK-EDIT", directory: dir, checks: [{ file: "a.txt" }] });
    const asked = await until(engine, b.workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    const built = await until(engine, b.workerId, (w) => w.state === "built");
    const server = fake.servers[0]!;
    const gone = async (id: string) => {
      const end = Date.now() + 5000;
      while (server.sessions.has(id) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      return !server.sessions.has(id);
    };
    expect(server.sessions.has(failed.sessionId!)).toBe(true);
    await engine.discard(a.workerId);
    expect(await gone(failed.sessionId!)).toBe(true);
    expect(server.sessions.has(built.sessionId!)).toBe(true);
    await engine.merge(b.workerId);
    expect(await gone(built.sessionId!)).toBe(true);
    expect(server.calls.filter((c) => c.method === "session.delete").map((c) => c.args.sessionID)).toEqual([failed.sessionId, built.sessionId]);
    await engine.close();
  });

  it("a repository's graded objects whose removal was put off (a worker elsewhere was at work) go at the next cleanup", async () => {
    const stateDir = mkdtempSync(path.join(tmp, "s-"));
    const { engine } = engineIn(stateDir);
    const [one, two] = [repo(), repo()];
    const a = await engine.start({ task: "TASK-EDIT", directory: one, checks: [{ file: "a.txt" }] });
    const asked = await until(engine, a.workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, a.workerId, (w) => w.state === "built");
    const graded = path.join(stateDir, "repos", "graded", `${path.basename(one)}-`);
    const store = () => readdirSync(path.dirname(graded)).filter((n) => n.startsWith(path.basename(graded)));
    expect(store()).toHaveLength(1);
    const b = await engine.start({ task: "TASK-HANG", directory: two, checks: [] });
    await until(engine, b.workerId, (w) => w.state === "running");
    await engine.discard(a.workerId); // the last of its repository's workers, but b is at work: its objects stay for now
    expect(store()).toHaveLength(1);
    await engine.stop(b.workerId, "by test");
    await until(engine, b.workerId, (w) => w.state === "stopped");
    await engine.collectGarbage();
    expect(store()).toHaveLength(0);
    await engine.close();
  });

  it("a discarded worker is not resumed (its workspace and session are gone, and it could never be merged): retry it instead", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-HANG", directory: repo(), checks: [{ file: "a.txt" }] });
    await until(engine, workerId, (w) => w.state === "running");
    await engine.stop(workerId, "by test");
    await until(engine, workerId, (w) => w.state === "stopped");
    await engine.discard(workerId);
    await expect(engine.resume(workerId)).rejects.toThrow(/was discarded: nothing is left to resume; retry it/);
    expect(engine.get(workerId).state).toBe("stopped");
    await engine.close();
  });

  it("a resume racing a discard never starts the worker again in its removed workspace, on its deleted session", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const stopped = async () => {
      const { workerId } = await engine.start({ task: "TASK-HANG", directory: repo(), checks: [{ file: "a.txt" }] });
      await until(engine, workerId, (w) => w.state === "running");
      await engine.stop(workerId, "by test");
      return until(engine, workerId, (w) => w.state === "stopped");
    };
    // The resume passes its checks first, the discard comes while it checks the model; then the other way round.
    for (const resumeFirst of [true, false]) {
      const w = await stopped();
      const [r, d] = resumeFirst
        ? (() => {
            const r = engine.resume(w.id).then(
              () => null,
              (e: Error) => e,
            );
            return [r, engine.discard(w.id)] as const;
          })()
        : (() => {
            const d = engine.discard(w.id);
            return [
              engine.resume(w.id).then(
                () => null,
                (e: Error) => e,
              ),
              d,
            ] as const;
          })();
      await d;
      const err = await r;
      expect(err?.message).toMatch(/(was|is being) discarded: nothing is left to resume/);
      const after = engine.get(w.id);
      expect(after.discarded).toBeTruthy();
      expect(after.state).toBe("stopped");
      expect(fake.servers[0]!.calls.filter((c) => c.method === "session.delete").map((c) => c.args.sessionID)).toContain(w.sessionId);
    }
    await engine.close();
  });

  it("a follow-up racing a discard is refused: the built worker stays discarded, not queued", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const a = await engine.start({ task: "TASK-EDIT", directory: repo(), checks: [{ file: "a.txt" }] });
    const asked = await until(engine, a.workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, a.workerId, (w) => w.state === "built");
    const r = engine.continue(a.workerId, "one more thing").then(
      () => null,
      (e: Error) => e,
    );
    await engine.discard(a.workerId);
    expect((await r)?.message).toMatch(/(was|is being) discarded: nothing is left to continue/);
    expect(engine.get(a.workerId).state).toBe("built");
    expect(engine.get(a.workerId).rounds?.length ?? 1).toBe(1);
    await engine.close();
  });

  it("stop during a run → stopped, never graded; resume continues in the same session → built", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-HANG", directory: repo(), checks: [{ file: "a.txt" }] });
    await until(engine, workerId, (w) => w.state === "running");
    await engine.stop(workerId, "by test");
    await new Promise((r) => setTimeout(r, 100)); // the abort's idle arrives
    expect(engine.get(workerId)).toMatchObject({ state: "stopped", verdict: null });
    await engine.resume(workerId);
    const asked = await until(engine, workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, workerId, (w) => w.state === "built");
    expect(fake.servers[0]!.calls.filter((c) => c.method === "session.create").length).toBe(1);
    expect(states(engine, workerId)).not.toContain("interrupted");
    await engine.close();
  });

  it("stopped and resumed while still starting: the first run gives way, one session, one prompt → built", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const first = await engine.start({ task: "TASK-BASH", directory: repo(), checks: [] }); // makes the fake server
    await until(engine, first.workerId, (w) => pending(w).length === 1);
    const server = fake.servers[0]!;
    let open!: () => void;
    server.startGate = new Promise<void>((r) => (open = r));
    const { workerId } = await engine.start({ task: "TASK-EDIT", directory: repo(), checks: [{ file: "a.txt" }] });
    const end = Date.now() + 10_000;
    while (server.startsWaiting === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    expect(engine.get(workerId).state).toBe("starting");
    await engine.stop(workerId, "by test");
    await engine.resume(workerId);
    expect(engine.get(workerId).state).toMatch(/queued|starting/);
    server.startGate = null;
    open();
    const asked = await until(engine, workerId, (w) => pending(w).length === 1);
    await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, workerId, (w) => w.state === "built");
    const dir = engine.get(workerId).worktree;
    expect(server.calls.filter((c) => c.method === "session.create" && c.args.directory === dir).length).toBe(1);
    expect(server.calls.filter((c) => c.method === "session.promptAsync" && c.args.directory === dir).length).toBe(1);
    await engine.close();
  });

  it("shutdown mid-run → interrupted (never settled or graded); a new engine on the same state recovers it as interrupted; resume finishes it", async () => {
    const stateDir = mkdtempSync(path.join(tmp, "s-"));
    const first = engineIn(stateDir);
    const { workerId } = await first.engine.start({ task: "TASK-HANG", directory: repo(), checks: [{ file: "a.txt" }] });
    await until(first.engine, workerId, (w) => w.state === "running");
    await first.engine.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(states(first.engine, workerId)).toEqual(["starting", "running", "interrupted"]);
    const second = engineIn(stateDir, script, first.fake.sessions);
    expect(second.engine.get(workerId)).toMatchObject({ state: "interrupted", verdict: null });
    await second.engine.resume(workerId);
    const asked = await until(second.engine, workerId, (w) => pending(w).length === 1);
    await second.engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    await until(second.engine, workerId, (w) => w.state === "built");
    await second.engine.close();
  });

  it("opencode dies: running workers are interrupted and their pending asks cancelled on the record", async () => {
    const { engine, fake } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-EDIT", directory: repo() });
    await until(engine, workerId, (w) => pending(w).length === 1);
    fake.servers[0]!.crash();
    const w = await until(engine, workerId, (x) => x.state === "interrupted");
    expect(w.asks[0]).toMatchObject({ status: "cancelled", by: { kind: "engine", name: "opencode-down" } });
    await engine.close();
  });

  it("the wall-clock budget stops a worker with its reason", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const { workerId } = await engine.start({ task: "TASK-HANG", directory: repo(), budget: { wallSec: 0.2 } });
    const w = await until(engine, workerId, (x) => x.state === "stopped");
    expect(w.stateReason).toMatch(/budget: wall clock of 0.2s/);
    await engine.close();
  });

  it("admission: never more workers at once than the target's slots; the queue is served in submission order", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const r = repo();
    const { workerIds } = await engine.startBatch(Array.from({ length: 5 }, (_, i) => ({ task: `TASK-EDIT ${i}`, directory: r })));
    for (const id of workerIds) {
      const asked = await until(engine, id, (w) => pending(w).length === 1);
      await engine.decide({ askId: pending(asked)[0]!.id, decision: "once" }, { kind: "person" });
    }
    for (const id of workerIds) await until(engine, id, (w) => w.state === "built");
    // From the logs, in stream order: how many ran at once, and in which order they were admitted.
    const all = workerIds.flatMap((id) => engine.events(id)).sort((a, b) => (a.busSeq ?? 0) - (b.busSeq ?? 0));
    // Answered within the hand-over time, a worker waiting for a person keeps its slot: never more than `slots` live
    // (starting, running or waiting) at once.
    const onModel = new Set<string>();
    let maxAtAdmission = 0;
    const startedOrder: string[] = [];
    for (const e of all) {
      if (e.type !== "worker.state") continue;
      if (e.state === "starting") {
        startedOrder.push(e.workerId);
        maxAtAdmission = Math.max(maxAtAdmission, onModel.size + 1);
      }
      if ((["starting", "running", "waiting-approval"] as WorkerState[]).includes(e.state)) onModel.add(e.workerId);
      else onModel.delete(e.workerId);
    }
    expect(maxAtAdmission).toBeLessThanOrEqual(2);
    expect(startedOrder).toEqual(workerIds);
    expect(engine.list().map((w) => w.id)).toEqual(workerIds);
    await engine.close();
  });

  it("within the hand-over time a worker waiting for a person keeps its slot: the queue waits, and the panel says so", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")), script, undefined, { handoverSec: 3600 });
    const r = repo();
    const { workerIds } = await engine.startBatch(Array.from({ length: 2 }, (_, i) => ({ task: `TASK-EDIT ${i}`, directory: r })));
    for (const id of workerIds) await until(engine, id, (w) => pending(w).length === 1 && w.state === "waiting-approval");
    const third = (await engine.start({ task: "TASK-HANG", directory: r })).workerId;
    await new Promise((res) => setTimeout(res, 50));
    expect(engine.get(third).state).toBe("queued");
    expect(engine.slots()[0]).toMatchObject({ inUse: 2, queued: 1, waiting: 0 });
    const first = engine.get(workerIds[0]!);
    await engine.decide({ askId: pending(first)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, workerIds[0]!, (w) => w.state === "built");
    await until(engine, third, (w) => w.state === "running");
    await engine.close();
  });

  it("slots follow the model's work: workers waiting for a person hand their slots to queued ones; answered, they go on first", async () => {
    // A hand-over time of 0: a worker hands its slot over as soon as it waits for a person.
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")), script, undefined, { handoverSec: 0 });
    const r = repo();
    // 2 slots, 4 workers that each ask before they write; nobody answers.
    const { workerIds } = await engine.startBatch(Array.from({ length: 4 }, (_, i) => ({ task: `TASK-EDIT ${i}`, directory: r })));
    for (const id of workerIds) await until(engine, id, (w) => pending(w).length === 1 && w.state === "waiting-approval");
    expect(engine.slots()).toEqual([{ targetId: "fake", slots: 2, inUse: 0, queued: 0, waiting: 4, heldUntil: null }]);
    // A fifth is admitted at once though four wait for a person.
    const { workerId: fifth } = await engine.start({ task: "TASK-HANG", directory: r });
    await until(engine, fifth, (w) => w.state === "running");
    const sixth = (await engine.start({ task: "TASK-HANG", directory: r })).workerId;
    await until(engine, sixth, (w) => w.state === "running");
    // Both slots hold model work now: the seventh queues, and an answered worker goes on ahead of it.
    const seventh = (await engine.start({ task: "TASK-HANG", directory: r })).workerId;
    await new Promise((res) => setTimeout(res, 50));
    expect(engine.get(seventh).state).toBe("queued");
    expect(engine.slots()[0]).toMatchObject({ inUse: 2, queued: 1, waiting: 4 });
    const first = engine.get(workerIds[0]!);
    await engine.decide({ askId: pending(first)[0]!.id, decision: "once" }, { kind: "person" });
    await until(engine, workerIds[0]!, (w) => w.state === "built");
    expect(engine.get(seventh).state).toBe("queued");
    await engine.stop(fifth);
    await until(engine, seventh, (w) => w.state === "running");
    await engine.close();
  });

  it("any interleaving of answers, stops and resumes: no verdict without a settle after the last stop, and the log always replays to the engine's picture", async () => {
    const { engine } = engineIn(mkdtempSync(path.join(tmp, "s-")));
    const r = repo();
    const Op = fc.constantFrom("once", "reject", "stop", "resume", "wait");
    await fc.assert(
      fc.asyncProperty(fc.array(Op, { minLength: 1, maxLength: 8 }), async (ops) => {
        const { workerId } = await engine.start({ task: "TASK-TWO", directory: r, checks: [{ file: "a.txt" }] });
        for (const op of ops) {
          const w = engine.get(workerId);
          const ask = pending(w)[0];
          if ((op === "once" || op === "reject") && ask) await engine.decide({ askId: ask.id, decision: op }, { kind: "person" }).catch(() => undefined);
          else if (op === "stop") await engine.stop(workerId).catch(() => undefined);
          else if (op === "resume" && ["stopped", "interrupted", "error"].includes(w.state)) await engine.resume(workerId);
          await new Promise((res) => setTimeout(res, op === "wait" ? 30 : 5));
        }
        // Finish: answer whatever is asked, resume a halted worker once, stop anything still alive.
        await engine.stop(workerId).catch(() => undefined);
        await until(engine, workerId, (x) => ["built", "honest-failure", "stopped", "interrupted", "error"].includes(x.state));
        await new Promise((res) => setTimeout(res, 20));
        const w = engine.get(workerId);
        const seq = states(engine, workerId);
        const lastHalt = Math.max(seq.lastIndexOf("stopped"), seq.lastIndexOf("interrupted"));
        if (w.verdict) {
          expect(["built", "honest-failure"]).toContain(w.state);
          expect(seq.lastIndexOf("settled")).toBeGreaterThan(lastHalt);
        } else expect(["built", "honest-failure"]).not.toContain(w.state);
        const replayed = engine.events(workerId).reduce<Worker | null>((acc, e) => reduceWorker(acc, e), null);
        expect(replayed).toEqual(w);
      }),
      { numRuns: 25 },
    );
    await engine.close();
  }, 120_000);
});
