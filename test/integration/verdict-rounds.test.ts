// After the verdict (issue 26), against the real `opencode serve`, real git and the scripted model: the checks run on
// the base commit, a no-op is never built, an empty base tree grades, and a graded worker goes on in rounds (continue,
// review, fix rounds), each graded again.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, scriptedTarget, settle, startEngine, tempDir, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];

/** The follow-ups the engine sent: user messages after the first one of the session. */
const followUps = (ctx: { userTexts: string[] }) => ctx.userTexts.slice(1);

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      // Tries nothing at all: the task is already done on the base, it says so honestly.
      { name: "noop", match: /TASK-NOOP/, script: () => ({ text: "The file is already there; I changed nothing.\nOUTCOME: honest-failure — nothing to do" }) },
      // Claims built without changing anything.
      { name: "noop-liar", match: /TASK-LIAR-NOOP/, script: () => ({ text: "Done.\nOUTCOME: built" }) },
      {
        name: "write",
        match: /TASK-WRITE/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("new.txt", "new\n") : { text: "Wrote new.txt.\nOUTCOME: built" }),
      },
      {
        name: "continue",
        match: /TASK-CONT/,
        script: (ctx) => {
          const round = followUps(ctx).length + 1;
          if (ctx.turnStep === 0) return writeFile("v.txt", round === 1 ? "v1\n" : "v2\n");
          return { text: round === 1 ? "Wrote v1.\nOUTCOME: built" : "Wrote v2 as asked.\nOUTCOME: built" };
        },
      },
      {
        name: "review",
        match: /TASK-REVIEW/,
        script: (ctx) => {
          if (ctx.turnStep > 0) return { text: "OUTCOME: built" };
          return followUps(ctx).length ? writeFile("src/a.txt", "one\nTWO\nthree\n") : writeFile("src/a.txt", "one\ntwo\nthree\n");
        },
      },
      { name: "hang", match: /TASK-HANG/, script: () => ({ hang: true, textBeforeHang: "holding" }) },
      {
        name: "slow-second",
        match: /TASK-SLOW-SECOND/,
        script: (ctx) =>
          followUps(ctx).length ? { hang: true, textBeforeHang: "thinking" } : ctx.turnStep === 0 ? writeFile("s.txt", "s\n") : { text: "OUTCOME: built" },
      },
      {
        name: "fix",
        match: /TASK-FIX/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("out.txt", `attempt ${followUps(ctx).length + 1}\n`) : { text: "OUTCOME: built" }),
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

function repo(files?: Record<string, string>) {
  const r = makeRepo(files);
  repos.push(r);
  return r;
}

/** A repository whose only commit has an empty tree (`git commit --allow-empty` on a fresh `git init`). */
function emptyRepo() {
  const dir = tempDir("empty-repo");
  const git = (...args: string[]) => execFileSync("git", args, { cwd: dir, stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init");
  repos.push(dir);
  return dir;
}

const once = () => "once" as const;

/** Model requests of a task (by its first user text), as the model received them. */
const requestsOf = (marker: string) => model.requests.filter((r) => r.kind === "chat" && JSON.stringify(r.body.messages ?? []).includes(marker));

const ocw = (args: string[], timeoutMs = 150_000) => runOcw(engine.stateDir, args, timeoutMs, { OCW_STALL_SEC: "600" });

describe("evidence, not absence", () => {
  it("a worker that changed nothing, on a base where its check already passes, is an honest failure (not built), and its honest claim is honest", async () => {
    const dir = repo({ "README.md": "# r\n", "done.txt": "already\n" });
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-NOOP: make sure done.txt exists",
      directory: dir,
      checks: [{ run: "test -f done.txt", name: "done.txt exists" }],
    });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state).toBe("honest-failure");
    expect(w.verdict).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true, weakEvidence: false });
    expect(w.verdict!.reason).toMatch(/no change.*nothing was shown/);
    expect(w.stateReason).toMatch(/nothing was shown/);
    expect(w.baseline).toEqual({ passedOnBase: ["done.txt exists"] });
    // The batch arithmetic never counts it as built.
    expect(w.rounds.map((r) => r.verdict)).toEqual(["honest-failure"]);
  });

  it("a no-op that claims built is a dishonest claim, and the CLI's --json carries baseline.passedOnBase and the reason", async () => {
    const dir = repo({ "README.md": "# r\n" });
    const r = await ocw(["run", "--dir", dir, "--task", "TASK-LIAR-NOOP: keep README", "--check", "test -f README.md", "--approve", "once", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ verdict: "honest-failure", claim: "built", honest: false, baseline: { passedOnBase: ["test -f README.md"] } });
    expect(out.reason).toMatch(/nothing was shown/);
    expect(out.warnings[0]).toMatch(/these checks already pass before any change: they prove nothing/);
    expect(r.stderr).toMatch(/warning: these checks already pass before any change: they prove nothing/);
  });

  it("a change whose every check already passed on the base is built, flagged weak evidence", async () => {
    const dir = repo({ "README.md": "# r\n" });
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-WRITE: add new.txt", directory: dir, checks: [{ run: "test -f README.md" }] });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state).toBe("built");
    expect(w.verdict).toMatchObject({ verdict: "built", weakEvidence: true, reason: null });
    // A check that fails on the base and passes on the change is evidence: not weak.
    const dir2 = repo({ "README.md": "# r\n" });
    const { workerId: id2 } = await engine.client.workers.start.mutate({
      task: "TASK-WRITE: add new.txt",
      directory: dir2,
      checks: [{ file: "new.txt", equals: "new" }],
    });
    const w2 = (await settle(engine.client, [id2], once)).get(id2)!;
    expect(w2.verdict).toMatchObject({ verdict: "built", weakEvidence: false });
    expect(w2.baseline).toEqual({ passedOnBase: [] });
    // File checks only: the baseline is read in the workspace just made, before the worker is prompted (its session
    // may be made meanwhile: nothing of the worker runs before its prompt).
    const events = (await engine.client.workers.events.query({ workerId: id2 })) as { type: string; state?: string }[];
    const types = events.map((e) => (e.type === "worker.state" ? `${e.type}:${e.state}` : e.type));
    expect(types.indexOf("worker.baseline"), types.join(" ")).toBeGreaterThan(types.indexOf("worker.workspace"));
    expect(types.indexOf("worker.state:running"), types.join(" ")).toBeGreaterThan(types.indexOf("worker.baseline"));
  });
});

describe("an empty base tree", () => {
  it("grades a worker that changed nothing (no 'pathspec' error), keeping its claim", async () => {
    const dir = emptyRepo();
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-NOOP: nothing", directory: dir, checks: [{ run: "true", name: "always" }] });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state, w.stateReason ?? "").toBe("honest-failure");
    expect(w.verdict).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true });
    expect(w.baseline).toEqual({ passedOnBase: ["always"] });
  });

  it("grades a worker that added a file to it; published, its branch holds the file", async () => {
    const dir = emptyRepo();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-WRITE: add new.txt",
      directory: dir,
      checks: [{ file: "new.txt", equals: "new" }],
    });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state, w.stateReason ?? "").toBe("built");
    expect(execFileSync("git", ["-C", dir, "branch", "--list", `ocw/${workerId}`]).toString()).toBe("");
    await engine.client.workers.publish.mutate({ workerId });
    expect(execFileSync("git", ["-C", dir, "show", `ocw/${workerId}:new.txt`]).toString()).toBe("new\n");
  });
});

describe("rounds", () => {
  it("ocw continue: a follow-up on a graded worker's session, graded again from a fresh checkout: built in round 2; bad input exits 2", async () => {
    const dir = repo();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-CONT: write v.txt",
      directory: dir,
      checks: [{ file: "v.txt", equals: "v2", name: "v.txt says v2" }],
    });
    const first = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(first.state).toBe("honest-failure");
    const sessionId = first.sessionId;

    const r = await ocw(["continue", workerId, "--message", "Make v.txt say v2 instead.", "--approve", "once", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ workerId, sessionId, state: "built", verdict: "built", claim: "built", honest: true });
    expect(out.rounds).toEqual([
      { round: 1, verdict: "honest-failure", claim: "built", honest: false, commit: first.verdict!.commit },
      { round: 2, verdict: "built", claim: "built", honest: true, commit: expect.stringMatching(/^[0-9a-f]{40}$/) },
    ]);
    expect(out.checks).toEqual([{ name: "v.txt says v2", passed: true, output: "v.txt ok" }]);
    // The follow-up reached the same session, after the first round's messages.
    const last = requestsOf("TASK-CONT").at(-1)!;
    expect(JSON.stringify(last.body.messages)).toContain("Make v.txt say v2 instead.");
    const w = await engine.client.workers.get.query({ workerId });
    expect(w.rounds[1]).toMatchObject({ kind: "continue", message: "Make v.txt say v2 instead.", changed: ["v.txt"] });
    // Round 2's graded commit, published by the person (grading published nothing), holds the follow-up's change.
    expect(execFileSync("git", ["-C", dir, "branch", "--list", `ocw/${workerId}`]).toString()).toBe("");
    const pub = await ocw(["publish", workerId, "--json"]);
    expect(pub.code, pub.stderr).toBe(0);
    expect(JSON.parse(pub.stdout)).toMatchObject({ workerId, branch: `ocw/${workerId}`, commit: w.verdict!.commit });
    expect(execFileSync("git", ["-C", dir, "show", `ocw/${workerId}:v.txt`]).toString()).toBe("v2\n");

    // resume stays for stopped / interrupted / error: refused here, naming the verb that works.
    await expect(engine.client.workers.resume.mutate({ workerId })).rejects.toThrow(/continue it with a message/);

    const unknown = await ocw(["continue", "w-nosuchworker", "--message", "x", "--approve", "once"], 60_000);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toMatch(/unknown worker/);
  });

  it("ocw continue --timeout: the round is stopped when it passes (as ocw run's budget), exit 1", async () => {
    const dir = repo();
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-SLOW-SECOND: write s.txt", directory: dir, checks: [{ file: "s.txt" }] });
    expect((await settle(engine.client, [workerId], once)).get(workerId)!.state).toBe("built");
    const r = await ocw(["continue", workerId, "--message", "now take forever", "--approve", "once", "--timeout", "3", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ state: "stopped", verdict: "honest-failure" });
    expect(out.rounds.map((x: { verdict: string | null }) => x.verdict)).toEqual(["built", null]);
    expect(r.stderr).toMatch(/was stopped at --timeout 3s/);
  });

  it("a worker still running cannot be continued (exit 1: refused by the state of things, as the README says; one line); the verb for a stopped one is resume", async () => {
    const dir = repo();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-CONT: write v.txt",
      directory: dir,
      checks: [{ file: "v.txt", equals: "v2" }],
    });
    await untilState(engine.client, workerId, (w) => w.state === "waiting-approval");
    const r = await ocw(["continue", workerId, "--message", "more", "--approve", "once"], 60_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/only a graded worker \(built or honest-failure\) takes a follow-up/);
    await engine.client.workers.stop.mutate({ workerId });
    await expect(engine.client.workers.continue.mutate({ workerId, message: "more" })).rejects.toThrow(/resume it/);
  });

  it("review: the comments reach the model verbatim, each as file:line — body, in one follow-up; the round keeps them", async () => {
    const dir = repo();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-REVIEW: write src/a.txt",
      directory: dir,
      checks: [{ file: "src/a.txt", matches: "TWO" }],
    });
    expect((await settle(engine.client, [workerId], once)).get(workerId)!.state).toBe("honest-failure");
    const comments = [
      { file: "src/a.txt", line: 2, body: "Shout this line: `TWO`, not two." },
      { file: "src/a.txt", body: "Keep the file ending in a newline." },
    ];
    await engine.client.workers.review.mutate({ workerId, comments, message: "Two things." });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state).toBe("built");
    const sent = followUpsSent("TASK-REVIEW");
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain("Two things.");
    expect(sent[0]).toContain("- src/a.txt:2 — Shout this line: `TWO`, not two.");
    expect(sent[0]).toContain("- src/a.txt — Keep the file ending in a newline.");
    expect(w.rounds.map((r) => [r.round, r.kind, r.verdict])).toEqual([
      [1, "task", "honest-failure"],
      [2, "review", "built"],
    ]);
    expect(w.rounds[1]!.comments).toEqual(comments);
  });

  it("fix rounds: the failing check's name and output go back, never its source, and they stop at K", async () => {
    const dir = repo();
    const run = "cat out.txt; grep -q SOURCE-OF-THE-CHECK-7f3 out.txt";
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-FIX: write out.txt",
      directory: dir,
      checks: [{ run, name: "out.txt is right" }],
      fixRounds: 2,
    });
    const w = (await settle(engine.client, [workerId], once)).get(workerId)!;
    expect(w.state).toBe("honest-failure");
    expect(w.rounds.map((r) => [r.kind, r.verdict])).toEqual([
      ["task", "honest-failure"],
      ["fix", "honest-failure"],
      ["fix", "honest-failure"],
    ]);
    const sent = followUpsSent("TASK-FIX");
    expect(sent).toHaveLength(2);
    expect(sent[0]).toContain("Fix round 1 of 2");
    expect(sent[0]).toContain("failed: out.txt is right (exit 1)");
    expect(sent[0]).toContain("attempt 1"); // the check's output
    expect(sent[1]).toContain("Fix round 2 of 2");
    for (const r of requestsOf("TASK-FIX")) expect(JSON.stringify(r.body)).not.toContain("SOURCE-OF-THE-CHECK-7f3");
    // The worker's log records each round once; a worker never rested in honest-failure between fix rounds.
    const states = (await engine.client.workers.events.query({ workerId })).filter((e) => e.type === "worker.state").map((e) => (e as { state: string }).state);
    expect(states.filter((s) => s === "honest-failure")).toHaveLength(1);
    const log = readFileSync(path.join(engine.stateDir, "workers", workerId, "events.jsonl"), "utf8");
    expect(log.match(/"round\.started"/g)).toHaveLength(2);
  });
});

describe("rounds across a restart, and the CLI's --fix-rounds", () => {
  it("ocw run --fix-rounds 1: one fix round, then honest-failure, exit 1", async () => {
    const dir = repo();
    const r = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "TASK-FIX: write out.txt",
      "--check",
      "grep -q never out.txt",
      "--fix-rounds",
      "1",
      "--approve",
      "once",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.verdict).toBe("honest-failure");
    const w = await engine.client.workers.get.query({ workerId: out.workerId });
    expect(w.rounds.map((x) => x.kind)).toEqual(["task", "fix"]);
    expect(r.stderr).toMatch(/round 2 \(fix\)/);
    const bad = await ocw(["run", "--dir", dir, "--task", "x", "--fix-rounds", "11"], 30_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--fix-rounds must be a whole number from 0 to 10/);
  });

  it("a follow-up queued when the engine is killed reaches the session after the restart (not a bare resume)", async () => {
    // One slot, taken by a worker that hangs: the follow-up waits in the queue when the engine dies.
    const solo = await startEngine();
    try {
      await solo.client.targets.save.mutate({ target: scriptedTarget(model.url, 1), activate: true });
      const dir = repo();
      const { workerId } = await solo.client.workers.start.mutate({
        task: "TASK-CONT: write v.txt",
        directory: dir,
        checks: [{ file: "v.txt", equals: "v2" }],
      });
      expect((await settle(solo.client, [workerId], once)).get(workerId)!.state).toBe("honest-failure");
      const hog = await solo.client.workers.start.mutate({ task: "TASK-HANG: hold the slot", directory: dir, checks: [] });
      await untilState(solo.client, hog.workerId, (w) => w.state === "running");
      await solo.client.workers.continue.mutate({ workerId, message: "Queued follow-up: make it v2." });
      expect((await solo.client.workers.get.query({ workerId })).state).toBe("queued");
      await solo.kill("SIGKILL");
      const again = await startEngine(solo.stateDir);
      solo.kill = again.kill;
      const w = (await settle(again.client, [workerId], once)).get(workerId)!;
      expect(w.state).toBe("built");
      expect(w.rounds.map((r) => [r.kind, r.verdict, r.ran])).toEqual([
        ["task", "honest-failure", true],
        ["continue", "built", true],
      ]);
      const sent = followUpsSent("Queued follow-up: make it v2.");
      expect(sent.at(-1)).toContain("Queued follow-up: make it v2.");
      expect(sent.at(-1)).not.toContain("[Resume]");
    } finally {
      await solo.kill();
      cleanup(solo.stateDir);
    }
  });
});

/** The follow-ups the model received for a task: user messages after the task's own, in order, once each. */
function followUpsSent(marker: string): string[] {
  const last = requestsOf(marker).at(-1)!;
  const users = (last.body.messages as { role: string; content: unknown }[])
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
  return users.slice(1).map((u) => (u.startsWith("[") || u.startsWith("{") ? flatten(u) : u));
}

function flatten(content: string): string {
  try {
    const parts = JSON.parse(content) as { type?: string; text?: string }[];
    return Array.isArray(parts) ? parts.map((p) => p.text ?? "").join("\n") : content;
  } catch {
    return content;
  }
}
