// Admission by slots, and recovery after kill -9 of `opencode serve` and of the engine itself.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineEvent } from "../../shared/events";
import { isActive } from "../../shared/worker";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilAsk, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "conc",
        match: /TASK-CONC-(\d+)/,
        script: (ctx) => {
          const n = /TASK-CONC-(\d+)/.exec(ctx.firstUserText)![1];
          return ctx.turnStep === 0 ? writeFile(`out-${n}.txt`, `worker ${n}\n`) : { text: "OUTCOME: built" };
        },
      },
      {
        // Hangs mid-stream until resumed; after the resume prompt it finishes the job.
        name: "crash",
        match: /TASK-CRASH/,
        script: (ctx) => {
          if (!ctx.userTexts.some((t) => t.includes("[Resume]"))) return { hang: true, textBeforeHang: "working on it" };
          return ctx.turnStep === 0 ? writeFile("after.txt", "resumed\n") : { text: "OUTCOME: built" };
        },
      },
      {
        name: "ask-then-done",
        match: /TASK-ASK/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("asked.txt", "yes\n") : { text: "OUTCOME: built" }),
      },
    ],
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

describe("admission and recovery", () => {
  it("8 workers in 8 worktrees with 4 slots: never more than 4 run at once, all graded, no file outside its own worktree", async () => {
    const dir = makeRepo();
    repos.push(dir);
    let active = 0;
    let maxActive = 0;
    const states = new Map<string, string>();
    const sub = engine.client.events.subscribe(
      { lastEventId: (await engine.client.health.query()).cursor },
      {
        onData: ({ data }) => {
          const e = data as EngineEvent;
          if (e.type !== "worker.state") return;
          states.set(e.workerId, e.state);
          active = [...states.values()].filter((s) => isActive(s as never)).length;
          maxActive = Math.max(maxActive, active);
        },
      },
    );
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: Array.from({ length: 8 }, (_, n) => ({
        task: `TASK-CONC-${n}: write out-${n}.txt`,
        directory: dir,
        checks: [{ file: `out-${n}.txt`, equals: `worker ${n}` }],
        scope: [`out-${n}.txt`],
      })),
    });
    expect(workerIds).toHaveLength(8);
    const ws = await settle(engine.client, workerIds, () => "once");
    sub.unsubscribe();
    expect(maxActive).toBe(4);
    expect(model.maxInFlight()).toBeLessThanOrEqual(4);
    const worktrees = new Set<string>();
    for (const [n, id] of workerIds.entries()) {
      const w = ws.get(id)!;
      expect(w.state).toBe("built");
      worktrees.add(w.worktree!);
      const own = readdirSync(w.worktree!).filter((f) => f.startsWith("out-"));
      expect(own).toEqual([`out-${n}.txt`]);
    }
    expect(worktrees.size).toBe(8);
    expect(readdirSync(dir).filter((f) => f.startsWith("out-"))).toEqual([]);
    const batchId = ws.get(workerIds[0]!)!.batchId!;
    expect(await engine.client.workers.batch.query({ batchId })).toMatchObject({ settled: true, builtRate: 1, honestRate: 1, verdict: "built" });
    // opencode serve runs with the system allocator (config.ts): its memory maps stay in the hundreds. With Bun's
    // bmalloc they were 6,027 after these 8 workers, on their way to vm.max_map_count, where opencode livelocks.
    const pid = (await engine.client.status.query()).opencode[0]!.pid!;
    if (existsSync(`/proc/${pid}/maps`)) expect(readFileSync(`/proc/${pid}/maps`, "utf8").split("\n").length).toBeLessThan(4000);
  });

  it("kill -9 of opencode serve mid-run → interrupted within 2 s, serve restarted, resume completes in the same session", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-CRASH: write after.txt",
      directory: dir,
      checks: [{ file: "after.txt", equals: "resumed" }],
    });
    await untilState(engine.client, workerId, (w) => w.state === "running");
    await expect.poll(() => model.requests.some((r) => r.matched === "crash" && r.response?.type === "hang"), { timeout: 30_000 }).toBe(true);
    const before = (await engine.client.status.query()).opencode[0]!;
    const killedAt = Date.now();
    process.kill(before.pid!, "SIGKILL");
    const interrupted = await untilState(engine.client, workerId, (w) => w.state === "interrupted", 10_000);
    expect(interrupted.updatedAt - killedAt).toBeLessThan(2000);
    await expect.poll(async () => (await engine.client.status.query()).opencode[0], { timeout: 30_000 }).toMatchObject({ ready: true });
    expect((await engine.client.status.query()).opencode[0]!.pid).not.toBe(before.pid);
    await engine.client.workers.resume.mutate({ workerId });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.state).toBe("built");
    expect(w.sessionId).toBe(interrupted.sessionId);
    expect(readFileSync(path.join(w.worktree!, "after.txt"), "utf8")).toBe("resumed\n");
  });

  it("kill -9 of the engine → a new engine lists every worker with its state, verdict and approval history; the interrupted one resumes", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const done = await engine.client.workers.start.mutate({ task: "TASK-ASK: write asked.txt", directory: dir, checks: [{ file: "asked.txt" }] });
    await settle(engine.client, [done.workerId], () => "once");
    const pending = await engine.client.workers.start.mutate({
      task: "TASK-ASK: write asked.txt (left pending)",
      directory: dir,
      checks: [{ file: "asked.txt" }],
    });
    const waiting = await untilAsk(engine.client, pending.workerId);
    const before = await engine.client.workers.list.query();
    const oldServe = (await engine.client.status.query()).opencode[0]!.pid!;

    await engine.kill("SIGKILL");
    engine = await startEngine(engine.stateDir);
    const after = await engine.client.workers.list.query();
    expect(after.map((w) => w.id)).toEqual(before.map((w) => w.id));
    for (const b of before) {
      const a = after.find((w) => w.id === b.id)!;
      if (b.id === pending.workerId) continue;
      expect(a.state).toBe(b.state);
      expect(a.verdict).toEqual(b.verdict);
      expect(a.asks).toEqual(b.asks);
    }
    const p = after.find((w) => w.id === pending.workerId)!;
    expect(p.state).toBe("interrupted");
    expect(p.asks).toHaveLength(1);
    expect(p.asks[0]).toMatchObject({ id: waiting.asks[0]!.id, status: "cancelled", what: waiting.asks[0]!.what });
    await engine.client.workers.resume.mutate({ workerId: pending.workerId });
    const resumed = (await settle(engine.client, [pending.workerId], () => "once")).get(pending.workerId)!;
    // The old engine's orphaned opencode serve was ended, not left running beside the new one.
    expect(alive(oldServe)).toBe(false);
    expect(resumed.state).toBe("built");
    expect(existsSync(path.join(resumed.worktree!, "asked.txt"))).toBe(true);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
