// Best-of-N: `ocw run --attempts N --target A --target B` runs N workers of one task over the targets in turn (two
// scripted model servers as two targets, real opencode, real git), the engine picks the winner with the held-back
// checks (built and honest; fewest changed lines, then earliest verdict) and stops the attempts still running once one
// is built, unless --all-attempts. The contract: `--json` prints {attempts: [{workerId, target, verdict, honest}],
// winner, …}; exit 0 iff there is a built winner.
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptContext, type ScriptedModel, type Step } from "../fixtures/scripted-model";
import { startMcp, waitUntil } from "./mcp-helpers";
import { cleanup, makeRepo, runOcw, scriptedTarget, startEngine, tempDir, type TestEngine } from "../helpers";

let engine: TestEngine;
let a: ScriptedModel;
let b: ScriptedModel;
const repos: string[] = [];
const repo = () => {
  const r = makeRepo();
  repos.push(r);
  return r;
};

const ocw = (args: string[], timeoutMs = 170_000) => runOcw(engine.stateDir, args, timeoutMs, { OCW_STALL_SEC: "600" });

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Resolves when target A's failing attempt has given its final answer. */
let aFailed: () => void = () => {};
const aFailedP = new Promise<void>((r) => (aFailed = r));
let stopStarts = 0;
/** What each named task makes a worker do on each target. */
const onA = (c: ScriptContext): Step | Promise<Step> => {
  const t = c.firstUserText;
  if (/ATT-STOP/.test(t)) {
    // The first attempt on A writes the wrong thing and says so; the second never finishes (it must be stopped).
    if (c.turnStep === 0) return ++stopStarts === 1 ? writeFile("out.txt", "bad\n") : { hang: true };
    aFailed();
    return { text: "OUTCOME: honest-failure — out.txt does not say good" };
  }
  if (/ATT-ALL/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "good\nand\nmore\nlines\n") : { text: "OUTCOME: built" };
  // Built by the checks, but the worker claims failure: dishonest, so never a winner.
  if (/ATT-NONE/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "good\n") : { text: "OUTCOME: honest-failure — unsure" };
  if (/ATT-BATCH/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "bad\n") : { text: "OUTCOME: honest-failure — wrong" };
  // Over MCP: A never finishes, so it must be stopped once B's attempt is built.
  if (/ATT-MCP/.test(t)) return { hang: true };
  return { text: "OUTCOME: honest-failure — no script" };
};
const onB = async (c: ScriptContext): Promise<Step> => {
  const t = c.firstUserText;
  if (/ATT-STOP/.test(t)) {
    if (c.turnStep === 0) {
      await aFailedP;
      await delay(1000);
      return writeFile("out.txt", "good\n");
    }
    return { text: "OUTCOME: built" };
  }
  if (/ATT-ALL/.test(t)) {
    // Later than A, but fewer changed lines: the winner all the same.
    if (c.turnStep === 0) {
      await delay(1500);
      return writeFile("out.txt", "good\n");
    }
    return { text: "OUTCOME: built" };
  }
  if (/ATT-NONE/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "bad\n") : { text: "OUTCOME: honest-failure — wrong" };
  if (/ATT-BATCH/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "good\n") : { text: "OUTCOME: built" };
  if (/ATT-MCP/.test(t)) return c.turnStep === 0 ? writeFile("out.txt", "good\n") : { text: "OUTCOME: built" };
  return { text: "OUTCOME: honest-failure — no script" };
};

beforeAll(async () => {
  a = await startScriptedModel({ modelId: "scripted-1", fallback: onA });
  b = await startScriptedModel({ modelId: "scripted-1", fallback: onB });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(a.url, 4, "target-a") });
  await engine.client.targets.save.mutate({ target: scriptedTarget(b.url, 4, "target-b") });
});

afterAll(async () => {
  await engine?.kill();
  await a?.close();
  await b?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

const CHECK = ["--check", "grep -qx good out.txt"];

describe("ocw run --attempts", () => {
  it("target A's attempts fail or hang, B's builds: B wins, the attempt still running is stopped, exit 0", async () => {
    const dir = repo();
    const r = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "ATT-STOP: write good to out.txt",
      ...CHECK,
      "--scope",
      "out.txt",
      "--attempts",
      "3",
      "--target",
      "target-a",
      "--target",
      "target-b",
      "--approve",
      "once",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.groupId).toMatch(/^a-/);
    // Targets in turn: A, B, A.
    expect(out.attempts.map((x: { target: string }) => x.target)).toEqual(["target-a", "target-b", "target-a"]);
    const byTarget = (t: string) => out.attempts.filter((x: { target: string }) => x.target === t);
    const [built] = byTarget("target-b");
    expect(built).toMatchObject({ verdict: "built", honest: true, claim: "built", changedLines: 1 });
    expect(out.winner).toBe(built.workerId);
    // Of A's two attempts one failed honestly, the other was stopped for the winner (it had no verdict).
    const onATarget = byTarget("target-a").map((x: { verdict: string | null; honest: boolean | null; state: string; stoppedForWinner: boolean }) => ({
      verdict: x.verdict,
      honest: x.honest,
      state: x.state,
      stoppedForWinner: x.stoppedForWinner,
    }));
    expect(onATarget).toEqual(
      expect.arrayContaining([
        { verdict: "honest-failure", honest: true, state: "honest-failure", stoppedForWinner: false },
        { verdict: null, honest: null, state: "stopped", stoppedForWinner: true },
      ]),
    );
    expect(out.mergeHint).toContain(built.workerId);
    // The hanging attempt's model call was cut when it was stopped.
    const hung = a.requests.filter((q) => q.response?.type === "hang");
    expect(hung).toHaveLength(1);
    expect(hung[0]!.clientAborted).toBe(true);
    // The engine's own picture of the group says the same (every client reads it).
    const g = await engine.client.workers.attempts.query({ groupId: out.groupId });
    expect(g.winner).toBe(built.workerId);
    expect(g.settled).toBe(true);
    const stopped = await engine.client.workers.get.query({ workerId: g.attempts.find((x) => x.state === "stopped")!.workerId });
    expect(stopped.stateReason).toContain(built.workerId);
    expect(stopped.stateReason).toMatch(/another attempt of this task was built/);
  });

  it("--all-attempts: nothing is stopped; of two built attempts the one with fewer changed lines wins, though later", async () => {
    const dir = repo();
    const r = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "ATT-ALL: write good to out.txt",
      ...CHECK,
      "--target",
      "target-a",
      "--target",
      "target-b",
      "--all-attempts",
      "--approve",
      "once",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.attempts).toHaveLength(2);
    const [fromA, fromB] = out.attempts;
    expect(fromA).toMatchObject({ target: "target-a", verdict: "built", honest: true, changedLines: 4 });
    expect(fromB).toMatchObject({ target: "target-b", verdict: "built", honest: true, changedLines: 1 });
    expect(out.winner).toBe(fromB.workerId);
    const g = await engine.client.workers.attempts.query({ groupId: out.groupId });
    expect(g.all).toBe(true);
    expect(g.attempts.find((x) => x.workerId === fromA.workerId)!.gradedAt!).toBeLessThan(g.attempts.find((x) => x.workerId === fromB.workerId)!.gradedAt!);
  });

  it("no built, honest attempt (A built but claimed failure, B failed): winner null, exit 1", async () => {
    const dir = repo();
    const r = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "ATT-NONE: write good to out.txt",
      ...CHECK,
      "--attempts",
      "2",
      "--target",
      "target-a",
      "--target",
      "target-b",
      "--approve",
      "once",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.attempts.map((x: { verdict: string; honest: boolean }) => [x.verdict, x.honest])).toEqual([
      ["built", false],
      ["honest-failure", true],
    ]);
    expect(out.winner).toBeNull();
  });

  it("a batch file takes `attempts` and `targets` per task; the group counts once in the batch's built rate", async () => {
    const dir = repo();
    const file = path.join(tempDir("att-batch"), "batch.json");
    repos.push(path.dirname(file));
    writeFileSync(
      file,
      JSON.stringify([
        {
          task: "ATT-BATCH: write good to out.txt",
          dir,
          checks: [{ run: "grep -qx good out.txt" }],
          attempts: 2,
          targets: ["target-a", "target-b"],
          allAttempts: true,
        },
      ]),
    );
    const r = await ocw(["run", "--batch", file, "--approve", "once", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.workers).toHaveLength(2);
    expect(out.builtRate).toBe(1);
    expect(out.verdict).toBe("built");
    expect(out.groups).toHaveLength(1);
    expect(out.groups[0].winner).toBe(out.workers[1].workerId);
  });

  it("MCP delegate takes attempts and targets; result shows every attempt and the winner; the loser was stopped", async () => {
    const dir = repo();
    const mcp = await startMcp(engine.stateDir, "claude-code");
    try {
      const d = await mcp.call("delegate", {
        task: "ATT-MCP: write good to out.txt",
        directory: dir,
        checks: [{ run: "grep -qx good out.txt" }],
        scope: ["out.txt"],
        targets: ["target-a", "target-b"],
      });
      expect(d.groupId).toMatch(/^a-/);
      expect(d.workerIds).toHaveLength(2);
      expect(d.next).toContain("wait");
      const answered = new Set<string>();
      // A client answers the asks it was shown before it waits again (a wait on asks it was shown and left unanswered
      // returns at once: only its answer moves those workers).
      const answerThenSettled = async (r: { reason: string; pending?: { askId: string }[] }) => {
        const fresh = (r.pending ?? []).filter((p) => !answered.has(p.askId));
        for (const p of fresh) answered.add(p.askId);
        await Promise.all(fresh.map((p) => mcp.call("approve", { askId: p.askId, decision: "once" }).catch(() => undefined)));
        return r.reason === "settled";
      };
      const done = await waitUntil(mcp, { workerIds: d.workerIds }, answerThenSettled, 10);
      expect(done.reason).toBe("settled");
      const [onA, onB] = d.workerIds as string[];
      const won = await mcp.call("result", { workerId: onB });
      expect(won.verdict).toBe("built");
      expect(won.attempts).toMatchObject({ groupId: d.groupId, winner: onB, settled: true });
      const lost = await mcp.call("result", { workerId: onA });
      expect(lost.state).toBe("stopped");
      expect(lost.attempts.attempts[0]).toMatchObject({ workerId: onA, target: "target-a", stoppedForWinner: true, verdict: null });
      expect(lost.next).toContain(`attempt ${onB} won`);
      expect(await mcp.fail("delegate", { task: "x", directory: dir, attempts: 99 })).toMatch(/at most 16 attempts/);
      // delegate_batch: a task with attempts is one group, counted once in the batch's built rate.
      const b = await mcp.call("delegate_batch", {
        tasks: [
          {
            task: "ATT-BATCH: write good to out.txt",
            directory: repo(),
            checks: [{ run: "grep -qx good out.txt" }],
            attempts: 2,
            targets: ["target-a", "target-b"],
            allAttempts: true,
          },
        ],
      });
      expect(b.workerIds).toHaveLength(2);
      expect(b.groups).toEqual([{ groupId: expect.stringMatching(/^a-/), workerIds: b.workerIds }]);
      const settled = await waitUntil(mcp, { batchId: b.batchId }, answerThenSettled, 10);
      expect(settled.batch).toMatchObject({ builtRate: 1, verdict: "built" });
    } finally {
      await mcp.close();
    }
  });

  it("the ledger per target counts what ran: pass@1, pass@k, honest rate; the stopped attempt has no verdict and is not graded", async () => {
    const rows = await engine.client.ledger.query();
    const ra = rows.find((x) => x.target === "target-a")!;
    const rb = rows.find((x) => x.target === "target-b")!;
    // A: STOP (1 failed + 1 stopped), ALL (built), NONE (built, dishonest), BATCH (failed), MCP (1 stopped), MCP batch
    // (failed): 5 graded, 2 built.
    // The MCP run added one failed attempt on A, one stopped on A, and two built on B (delegate and delegate_batch).
    expect(ra).toMatchObject({ graded: 5, tasks: 5, passAt1: 0.4, honestRate: 0.8, built: 2, k: 2 });
    expect(rb).toMatchObject({ graded: 6, tasks: 6, passAt1: 5 / 6, honestRate: 1, built: 5, k: 1 });
    // A's workers include the two stopped for a winner (no verdict, not graded, but their tokens and time count).
    expect(ra.workerIds).toHaveLength(7);
  });

  it.each([
    [["--attempts", "0"], /--attempts must be a whole number from 1 to 16/],
    [["--attempts", "2", "--target", "no-such-target"], /unknown target "no-such-target"/],
    [["--target", "target-a", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"], /--target names a saved target/],
    [["--all-attempts"], /--all-attempts goes with --attempts/],
  ])("bad input %j → one line, exit 2, nothing created", async (extra, message) => {
    const dir = repo();
    const before = readdirSync(path.join(engine.stateDir, "workers")).length;
    const r = await ocw(["run", "--dir", dir, "--task", "x", ...(extra as string[])], 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message as RegExp);
    expect(readdirSync(path.join(engine.stateDir, "workers")).length).toBe(before);
    expect(existsSync(path.join(dir, "out.txt"))).toBe(false);
  });
});
