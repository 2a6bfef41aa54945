// A full disk under the state dir (a small tmpfs, filled while a worker waits on an ask), against the real engine,
// the real opencode and the scripted model: every call that must record says so, the logs hold whole events only,
// the engine's picture never runs ahead of its logs, and once space is freed everything works again, restart included.
import { execFileSync } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, writeSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { follow } from "../../engine/api/follow";
import type { EngineEvent } from "../../shared/events";
import { pendingAsks, reduceWorker, WorkerEvent, type Worker } from "../../shared/worker";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, tempDir, untilAsk, type TestEngine } from "../helpers";

const DISK_FULL = /disk holding the state dir is full; free space/;
// Measured: the engine, opencode's home and two small worktrees use about 1 MB; the rest is headroom.
const SIZE = "32m";
// Worker D's wall-clock budget: long enough for its ask to come first on a loaded machine, then ends on the full disk.
const BUDGET_SEC = 60;

let model: ScriptedModel;
let engine: TestEngine | undefined;
let SKIP: string | null = null;
let mounted = false;
const stateDir = tempDir("state-tmpfs");
const filler = path.join(stateDir, "filler");
const repos: string[] = [];
const notices: Extract<EngineEvent, { type: "notice" }>[] = [];
let workerA = "";
let workerB = "";
let workerD = "";
const noticesAbout = (id: string) => notices.filter((n) => n.message.includes(id));

const repo = () => {
  const r = makeRepo();
  repos.push(r);
  return r;
};

/** Writes the filler until the filesystem refuses (ENOSPC): megabytes first, then single pages. */
function fill(): void {
  const fd = openSync(filler, "a");
  const buf = Buffer.alloc(1 << 20, 0x61);
  try {
    for (const chunk of [buf.length, 4096]) {
      try {
        for (;;) writeSync(fd, buf, 0, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** Every log on disk, line by line: each line must be a whole event (no torn or glued lines), each file end in "\n". */
function logsOnDisk(): Map<string, WorkerEvent[]> {
  const root = path.join(stateDir, "workers");
  const out = new Map<string, WorkerEvent[]>();
  for (const id of readdirSync(root)) {
    const text = readFileSync(path.join(root, id, "events.jsonl"), "utf8");
    expect(text.endsWith("\n"), `${id}: the log ends mid-line`).toBe(true);
    const lines = text.slice(0, -1).split("\n");
    out.set(
      id,
      lines.map((line, n) => {
        let json: unknown;
        try {
          json = JSON.parse(line);
        } catch {
          expect.fail(`${id} line ${n + 1} is torn or glued: ${line.slice(0, 200)}`);
        }
        const parsed = WorkerEvent.safeParse(json);
        expect(parsed.success, `${id} line ${n + 1} is not a WorkerEvent: ${line.slice(0, 200)}`).toBe(true);
        return parsed.data!;
      }),
    );
  }
  return out;
}

/** The engine's picture of each worker is exactly what its log folds into: nothing held in memory only. */
async function expectPicturesMatchLogs(e: TestEngine): Promise<Map<string, Worker>> {
  const logs = logsOnDisk();
  const listed = await e.client.workers.list.query();
  expect(listed.map((w) => w.id).sort()).toEqual([...logs.keys()].sort());
  const fromLogs = new Map<string, Worker>();
  for (const w of listed) {
    const events = logs.get(w.id)!;
    expect(events.map((x) => x.seq)).toEqual(events.map((_, i) => i + 1));
    const folded = events.reduce<Worker | null>((acc, x) => reduceWorker(acc, x), null)!;
    expect(w).toEqual(JSON.parse(JSON.stringify(folded)));
    fromLogs.set(w.id, folded);
  }
  return fromLogs;
}

/** Follows one worker until `pred` holds or a notice mentioning `mention` is published; returns those notices too. */
async function untilNoticeOr(e: TestEngine, workerId: string, mention: string, pred: (w: Worker) => boolean, timeoutMs: number) {
  const seen = noticesAbout(mention);
  const exited = new AbortController();
  const onExit = () => exited.abort();
  e.proc.once("exit", onExit);
  try {
    const r = await follow(e.client, [workerId], {
      onEvent: (ev) => void (ev.type === "notice" && ev.message.includes(mention) && seen.push(ev)),
      until: (ws) => seen.length > 0 || pred(ws.get(workerId)!),
      timeoutMs,
      signal: exited.signal,
    });
    return { worker: r.workers.get(workerId)!, notices: seen };
  } finally {
    e.proc.off("exit", onExit);
    expect(e.proc.exitCode, `the engine exited: ${e.stderr().slice(-2000)}`).toBeNull();
  }
}

/**
 * Steers of one character until the disk refuses one. tmpfs still takes appends into a log's last, partly used page;
 * these use up what is left of it, so that any larger event of that worker can no longer be appended.
 */
async function fillLogPage(e: TestEngine, workerId: string): Promise<number> {
  for (let sent = 0; sent < 60; sent++) {
    try {
      await e.client.workers.steer.mutate({ workerId, text: "?" });
    } catch (err) {
      expect((err as Error).message).toMatch(DISK_FULL);
      return sent;
    }
  }
  throw new Error(`60 steers of ${workerId} were recorded on a full disk`);
}

beforeAll(async () => {
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${SIZE},mode=0700`, "tmpfs", stateDir], { stdio: "pipe" });
    mounted = true;
  } catch (err) {
    const why = ((err as { stderr?: Buffer }).stderr?.toString() || (err as Error).message).trim().split("\n")[0];
    SKIP = `cannot mount a tmpfs as the state dir (${why}): this test needs root or CAP_SYS_ADMIN`;
    return;
  }
  model = await startScriptedModel({
    scripts: [{ name: "disk", match: /^DISK-[ABD]/, script: (c) => (c.turnStep === 0 ? writeFile("a.txt", "written\n") : { text: "OUTCOME: built" }) }],
  });
  engine = await startEngine(stateDir);
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
  const { cursor } = await engine.client.health.query();
  engine.client.events.subscribe(
    { lastEventId: cursor },
    { onData: (t) => void ((t.data as EngineEvent).type === "notice" && notices.push(t.data as (typeof notices)[number])) },
  );
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  if (mounted) {
    try {
      execFileSync("umount", [stateDir], { stdio: "pipe" });
    } catch {
      execFileSync("umount", ["-l", stateDir], { stdio: "pipe" });
    }
  }
  cleanup(stateDir, ...repos);
});

describe("faults: a full disk for the state dir", () => {
  it("while a worker waits on an ask: each call that must record fails saying the disk is full, nothing is half-done, the engine stays up", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const e = engine!;
    const checks = [{ file: "a.txt", equals: "written" }];
    workerA = (await e.client.workers.start.mutate({ task: "DISK-A: write a.txt", directory: repo(), checks })).workerId;
    const waiting = await untilAsk(e.client, workerA, 150_000);
    const ask = pendingAsks(waiting)[0]!;
    expect(ask, `worker A is ${waiting.state} and asks nothing`).toBeDefined();
    // Started once opencode is up, so that its budget's clock runs mostly on the full disk.
    workerD = (await e.client.workers.start.mutate({ task: "DISK-D: write a.txt", directory: repo(), checks, budget: { wallSec: BUDGET_SEC } })).workerId;
    const waitingD = await untilAsk(e.client, workerD, BUDGET_SEC * 1000);
    expect(pendingAsks(waitingD), `worker D reached no ask within its ${BUDGET_SEC}s budget (${waitingD.state}): raise BUDGET_SEC`).toHaveLength(1);

    fill();
    expect(statfsSync(stateDir).bavail).toBe(0);
    const sentD = await fillLogPage(e, workerD);

    // Payloads longer than a page, so these fail whatever room is left in the log's last page.
    const before = await e.client.workers.get.query({ workerId: workerA });
    await expect(e.client.workers.steer.mutate({ workerId: workerA, text: "s".repeat(8000) })).rejects.toThrow(DISK_FULL);
    expect(await e.client.workers.get.query({ workerId: workerA })).toMatchObject({ lastSeq: before.lastSeq, steers: [] });

    const dirsBefore = readdirSync(path.join(stateDir, "workers")).sort();
    await expect(e.client.workers.start.mutate({ task: `DISK-C ${"t".repeat(8000)}`, directory: repo() })).rejects.toThrow(DISK_FULL);
    expect(readdirSync(path.join(stateDir, "workers")).sort()).toEqual(dirsBefore);

    await expect(e.client.approvals.decide.mutate({ askId: ask.id, decision: "once", message: "m".repeat(4000) })).rejects.toThrow(
      new RegExp(`the worker got the answer to ${ask.id} \\(once\\), but it could not be recorded: .*${DISK_FULL.source}`),
    );
    // opencode then reports the reply itself: the engine records it if it still fits, or publishes the same clear notice.
    const replied = await untilNoticeOr(e, workerA, workerA, (w) => pendingAsks(w).length === 0, 20_000);
    if (replied.notices.length === 0)
      expect(replied.worker.asks[0]).toMatchObject({ status: "decided", decision: "once", by: { kind: "engine", name: "opencode" } });

    // With the last page used up, a stop's event (with its long reason) cannot be appended.
    const sentA = await fillLogPage(e, workerA);
    await expect(e.client.workers.stop.mutate({ workerId: workerA, reason: `stopped: the disk is full ${"r".repeat(200)}` })).rejects.toThrow(
      // Which event fails first depends on whether opencode's own report of the reply was recorded above.
      new RegExp(
        `(worker ${workerA} was not stopped|the stop of worker ${workerA} could not be recorded \\(it still shows running; stop it again\\)): .*${DISK_FULL.source}`,
      ),
    );

    // D's budget ends while its ask is pending: cancelling the ask cannot be recorded, and nobody awaits that stop.
    const budget = await untilNoticeOr(e, workerD, `worker ${workerD}`, () => false, (BUDGET_SEC + 30) * 1000);
    expect(budget.notices.map((n) => [n.level, n.message])).toEqual([
      [
        "error",
        expect.stringMatching(new RegExp(`^budget: wall clock of ${BUDGET_SEC}s used up, but worker ${workerD} was not stopped: .*${DISK_FULL.source}`)),
      ],
    ]);
    expect(budget.worker).toMatchObject({ state: "waiting-approval", asks: [{ status: "pending" }] });

    for (const n of notices) expect(n.message).toMatch(DISK_FULL);
    expect(e.proc.exitCode).toBeNull();
    expect((await e.client.health.query()).ok).toBe(true);
    const pictures = await expectPicturesMatchLogs(e);
    expect(pictures.get(workerA)!.steers).toHaveLength(sentA);
    expect(pictures.get(workerD)!.steers).toHaveLength(sentD);
  });

  it("once space is freed: the stuck worker stops and resumes to built, and a new worker is built", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    if (!workerA) throw new Error("the full-disk step did not start its worker");
    const e = engine!;
    rmSync(filler);
    // opencode's session died on its own full database (SQLITE_FULL) and never reports idle: stop and resume it.
    const stopped = await e.client.workers.stop.mutate({ workerId: workerA, reason: "the disk was full" });
    expect(stopped).toMatchObject({ state: "stopped", stateReason: "the disk was full" });
    // The budget's stop of D failed once; a person's stop now goes through, ask and all.
    const stoppedD = await e.client.workers.stop.mutate({ workerId: workerD, reason: "over budget" });
    expect(stoppedD).toMatchObject({ state: "stopped", stateReason: "over budget", asks: [{ status: "cancelled" }] });
    await e.client.workers.resume.mutate({ workerId: workerA });
    workerB = (await e.client.workers.start.mutate({ task: "DISK-B: write a.txt", directory: repo(), checks: [{ file: "a.txt", equals: "written" }] }))
      .workerId;
    const done = await settle(e.client, [workerA, workerB], () => "once", 120_000);
    expect(done.get(workerA)).toMatchObject({ state: "built", verdict: { verdict: "built" } });
    expect(done.get(workerB)).toMatchObject({ state: "built", verdict: { verdict: "built" } });
    await expectPicturesMatchLogs(e);
  });

  it("after a restart on the same state dir every worker is listed with the state its log holds", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    if (!workerB) throw new Error("the earlier steps did not finish");
    await engine!.kill();
    engine = await startEngine(stateDir);
    const pictures = await expectPicturesMatchLogs(engine);
    expect([...pictures.keys()].sort()).toEqual([workerA, workerB, workerD].sort());
    expect(Object.fromEntries([...pictures].map(([id, w]) => [id, w.state]))).toEqual({ [workerA]: "built", [workerB]: "built", [workerD]: "stopped" });
    expect(engine.stderr()).not.toMatch(/unreadable log line/);
  });
});
