// Attempts in the engine, through its harness seam (a fake opencode; real git, real grading): N workers of one task in
// one attempt group; once one is built and honest, the attempts still queued or running are stopped (unless all were
// asked for), and the group's winner is the one the checks picked. The real boundary: test/integration/attempts.test.ts.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OcwError } from "../../shared/errors";
import { isAtRest } from "../../shared/worker";
import { fakeHarness, type FakeScript } from "../../test/fixtures/fake-harness";
import { TargetStore } from "../store/targets";
import { Engine } from "./engine";
import { retryWorker, revertLanded } from "./housekeeping";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-attempts-unit-"));
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

/** Attempts in the order opencode gets their first prompt: each plays the next of `plays` (the last repeats). */
function inTurn(plays: ReturnType<FakeScript>[]): FakeScript {
  let started = 0;
  return (_prompt, turn) => (turn === 0 ? plays[Math.min(started++, plays.length - 1)]! : [{ text: "OUTCOME: honest-failure — resumed" }]);
}

function engineIn(s: FakeScript, slots = 2, stateDir = mkdtempSync(path.join(tmp, "s-"))) {
  const store = new TargetStore(path.join(stateDir, "targets.json"));
  store.save({ id: "fake", model: "fake", endpoint, keyRef: null, serving: { engine: "scripted", endpoints: [], slots }, checks: [] }, true);
  store.save({ id: "fake-2", model: "fake", endpoint, keyRef: null, serving: { engine: "scripted", endpoints: [], slots }, checks: [] });
  return Object.assign(new Engine({ stateDir, targets: store, harness: fakeHarness(s).harness, noSandbox: true, stallSec: 3600 }), { stateDir });
}

async function until(_engine: Engine, pred: () => boolean, what: () => string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
const picture = (engine: Engine, ids: string[]) => ids.map((id) => `${id}=${engine.get(id).state}`).join(", ");

describe("attempts through a fake opencode", { timeout: 90_000 }, () => {
  it("four attempts on two slots: one is built; those still running and the one still queued are stopped for it", async () => {
    // The first attempt to reach opencode writes a.txt and claims built; every other one hangs until it is stopped.
    const engine = engineIn(inTurn([[{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }], [{ hang: true }]]));
    const { groupId, workerIds } = await engine.startAttempts({ task: "TASK-ATT", directory: repo(), checks: [{ file: "a.txt", equals: "a" }], attempts: 4 });
    expect(groupId).toMatch(/^a-/);
    expect(workerIds.map((id) => engine.get(id).attempt)).toEqual([1, 2, 3, 4].map((index) => ({ groupId, index, of: 4, all: false })));
    await until(
      engine,
      () => workerIds.every((id) => isAtRest(engine.get(id).state)),
      () => picture(engine, workerIds),
    );
    const ws = workerIds.map((id) => engine.get(id));
    const built = ws.filter((w) => w.state === "built");
    expect(built).toHaveLength(1);
    const winner = built[0]!;
    const rest = ws.filter((w) => w !== winner);
    for (const w of rest)
      expect(w).toMatchObject({
        state: "stopped",
        lostTo: winner.id,
        stateReason: expect.stringContaining(`another attempt of this task was built (${winner.id})`),
      });
    // The winner is in the record (each stop event of the log names it), not only in the reason's words.
    for (const w of rest) {
      const log = readFileSync(path.join(engine.stateDir, "workers", w.id, "events.jsonl"), "utf8")
        .trim()
        .split("\n");
      expect(log.map((l) => JSON.parse(l)).findLast((e) => e.type === "worker.state")).toMatchObject({ state: "stopped", lostTo: winner.id });
    }
    // The winner's settle freed its slot for the third attempt; the fourth was still queued: stopped, never started.
    expect(ws[3]).toMatchObject({ state: "stopped", startedAt: null });
    expect(rest.filter((w) => w.startedAt !== null)).toHaveLength(2);
    const g = engine.attemptGroup(groupId!);
    expect(g).toMatchObject({ winner: winner.id, settled: true, all: false });
    expect(
      g.attempts
        .filter((a) => a.stoppedForWinner)
        .map((a) => a.workerId)
        .sort(),
    ).toEqual(rest.map((w) => w.id).sort());
    expect(g.attempts.filter((a) => a.lostTo === winner.id)).toHaveLength(3);
    await engine.close();
    // An engine started again on the same state reads the same losers, and whom they lost to, from the logs.
    const again = engineIn(inTurn([[{ hang: true }]]), 2, engine.stateDir);
    expect(rest.map((w) => again.get(w.id).lostTo)).toEqual(rest.map(() => winner.id));
    expect(again.get(winner.id).lostTo).toBeNull();
    await again.close();
  });

  it("a stop for any other cause records no winner, whatever its reason's words; retry of an attempt is refused once another one is merged", async () => {
    const engine = engineIn(
      inTurn([[{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }], [{ text: "OUTCOME: honest-failure — could not" }], [{ hang: true }]]),
      3,
    );
    const { workerIds } = await engine.startAttempts({
      task: "TASK-MERGED",
      directory: repo(),
      checks: [{ file: "a.txt", equals: "a" }],
      attempts: 3,
      allAttempts: true,
    });
    await until(
      engine,
      () => workerIds.filter((id) => isAtRest(engine.get(id).state)).length === 2 && workerIds.some((id) => engine.get(id).state === "running"),
      () => picture(engine, workerIds),
    );
    const built = workerIds.find((id) => engine.get(id).state === "built")!;
    const failed = workerIds.find((id) => engine.get(id).state === "honest-failure")!;
    const running = workerIds.find((id) => engine.get(id).state === "running")!;
    // A person's stop whose words read like the engine's: no losing attempt.
    await engine.stop(running, `another attempt of this task was built (${built}); the others still running were stopped`);
    expect(engine.get(running)).toMatchObject({ state: "stopped", lostTo: null });
    expect(engine.attemptGroup(engine.get(built).attempt!.groupId).attempts.filter((a) => a.stoppedForWinner)).toHaveLength(0);

    await engine.merge(built);
    for (const id of [failed, running]) {
      const err = await retryWorker(engine, id).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, id).toBeInstanceOf(OcwError);
      expect((err as OcwError).code).toBe("conflict");
      expect((err as OcwError).detail).toEqual({
        kind: "attempt-merged",
        data: { workerId: id, merged: built, into: "main", commit: engine.get(built).merged!.commit },
      });
      expect((err as OcwError).message).toContain(`another attempt at its task, ${built}, was merged into main`);
    }
    // That merge reverted, the task is open again: the failed attempt is retried.
    await revertLanded(engine, { workerId: built });
    const r = await retryWorker(engine, failed);
    expect(engine.get(r.workerId).retryOf).toBe(failed);
    await engine.stop(r.workerId);
    await engine.close();
  });

  it("all attempts: nothing is stopped; a dishonest build never wins, an honest one with fewer changed lines does; targets in turn", async () => {
    const engine = engineIn(
      inTurn([
        // Built by the checks, but it says it failed: not honest, never the winner.
        [{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: honest-failure — unsure" }],
        [{ write: "a.txt", content: "a\n" }, { write: "b.txt", content: "1\n2\n3\n" }, { text: "OUTCOME: built" }],
        [{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }],
      ]),
      3,
    );
    const { groupId, workerIds } = await engine.startAttempts({
      task: "TASK-ALL",
      directory: repo(),
      checks: [{ file: "a.txt", equals: "a" }],
      targets: ["fake", "fake-2"],
      attempts: 3,
      allAttempts: true,
    });
    await until(
      engine,
      () => workerIds.every((id) => isAtRest(engine.get(id).state)),
      () => picture(engine, workerIds),
    );
    expect(workerIds.map((id) => engine.get(id).targetId)).toEqual(["fake", "fake-2", "fake"]);
    const g = engine.attemptGroup(groupId!);
    expect(g.attempts.every((a) => a.verdict === "built")).toBe(true);
    expect(g.attempts.map((a) => [a.changedLines, a.honest]).sort()).toEqual([
      [1, false],
      [1, true],
      [4, true],
    ]);
    const winner = g.attempts.find((a) => a.workerId === g.winner)!;
    expect(winner).toMatchObject({ honest: true, changedLines: 1 });
    expect(g.attempts.filter((a) => a.stoppedForWinner)).toHaveLength(0);
    await engine.close();
  });

  it("after a restart, an attempt still queued since its creation whose group already has a winner is stopped, not started", async () => {
    const play = inTurn([[{ write: "a.txt", content: "a\n" }, { text: "OUTCOME: built" }]]);
    const a = engineIn(play);
    const { groupId, workerIds } = await a.startAttempts({ task: "TASK-RESTART", directory: repo(), checks: [{ file: "a.txt", equals: "a" }], attempts: 1 });
    await until(
      a,
      () => a.get(workerIds[0]!).state === "built",
      () => picture(a, workerIds),
    );
    await a.close();
    // The engine died between the winner's verdict and the stop of the rest: a second attempt is still queued in its log.
    const created = JSON.parse(readFileSync(path.join(a.stateDir, "workers", workerIds[0]!, "events.jsonl"), "utf8").split("\n")[0]!);
    const id = "w-queued2";
    mkdirSync(path.join(a.stateDir, "workers", id));
    writeFileSync(
      path.join(a.stateDir, "workers", id, "events.jsonl"),
      JSON.stringify({ ...created, workerId: id, attempt: { groupId, index: 2, of: 2, all: false } }) + "\n",
    );
    const b = engineIn(play, 2, a.stateDir);
    await until(
      b,
      () => b.get(id).state !== "queued",
      () => picture(b, [id]),
    );
    expect(b.get(id)).toMatchObject({
      state: "stopped",
      startedAt: null,
      lostTo: workerIds[0],
      stateReason: expect.stringContaining(`another attempt of this task was built (${workerIds[0]})`),
    });
    expect(b.attemptGroup(groupId!)).toMatchObject({ winner: workerIds[0], settled: true });
    await b.close();
  });

  it("bad input is refused before any worker is created", async () => {
    const engine = engineIn(inTurn([[{ text: "OUTCOME: built" }]]));
    const dir = repo();
    await expect(engine.startAttempts({ task: "x", directory: dir, attempts: 0 })).rejects.toThrow(/attempts must be at least 1/);
    await expect(engine.startAttempts({ task: "x", directory: dir, attempts: 17 })).rejects.toThrow(/at most 16 attempts/);
    await expect(engine.startAttempts({ task: "x", directory: dir, targets: ["fake", "nope"] })).rejects.toThrow(/unknown target "nope"/);
    await expect(engine.startAttempts({ task: "x", directory: dir, targets: ["fake"], targetId: "fake" })).rejects.toThrow(/either targetId or targets/);
    await expect(
      engine.startBatch([
        { task: "y", directory: dir },
        { task: "x", directory: dir, attempts: 2, targets: ["nope"] },
      ]),
    ).rejects.toThrow(/^task 2: unknown target "nope"/);
    expect(engine.list()).toHaveLength(0);
    await engine.close();
  });
});
