// Questions, policies, budgets, the watchdog, stop/resume and merge — against the real opencode.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bash, startScriptedModel, toolCall, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilAsk, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];
const repo = (files?: Record<string, string>) => {
  const r = makeRepo(files);
  repos.push(r);
  return r;
};

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "question",
        match: /TASK-QUESTION/,
        script: (ctx) => {
          if (ctx.turnStep === 0)
            return toolCall("question", {
              questions: [
                {
                  question: "Which colour?",
                  header: "Colour",
                  options: [
                    { label: "Red", description: "warm" },
                    { label: "Blue", description: "cold" },
                  ],
                },
              ],
            });
          const answer = /"Which colour\?"="(\w+)"/.exec(ctx.lastToolResult ?? "")?.[1];
          if (ctx.turnStep === 1 && answer) return writeFile("colour.txt", `${answer}\n`);
          return { text: answer ? "OUTCOME: built" : "OUTCOME: honest-failure — no answer" };
        },
      },
      { name: "policy", match: /TASK-POLICY/, script: (ctx) => (ctx.turnStep === 0 ? bash("echo policy-ok > p.txt") : { text: "OUTCOME: built" }) },
      { name: "budget", match: /TASK-BUDGET/, script: () => writeFile("never.txt", "x\n") },
      { name: "stall", match: /TASK-STALL/, script: () => ({ hang: true, textBeforeHang: "thinking" }) },
      {
        name: "stop-resume",
        match: /TASK-STOP/,
        script: (ctx) => {
          if (!ctx.userTexts.some((t) => t.includes("[Resume]"))) return { hang: true };
          return ctx.turnStep === 0 ? writeFile("resumed.txt", `${ctx.lastUserText.includes("hurry") ? "hurry" : "plain"}\n`) : { text: "OUTCOME: built" };
        },
      },
      {
        name: "merge",
        match: /TASK-MERGE-(\w+)/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("shared.txt", `${/TASK-MERGE-(\w+)/.exec(ctx.firstUserText)![1]}\n`) : { text: "OUTCOME: built" }),
      },
    ],
  });
  engine = await startEngine(undefined, { OCW_STALL_SEC: "3" });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 8), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

describe("control", () => {
  it("a question from the worker is surfaced like a permission and answered through the API", async () => {
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-QUESTION: ask which colour, write it",
      directory: repo(),
      checks: [{ file: "colour.txt", equals: "Blue" }],
    });
    const w = await untilAsk(engine.client, workerId);
    const ask = w.asks[0]!;
    expect(ask).toMatchObject({ kind: "question", tool: "question", what: "Which colour?" });
    expect(ask.questions![0]!.options.map((o) => o.label)).toEqual(["Red", "Blue"]);
    await expect(engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" })).rejects.toThrow(/is a question .*pass answers/);
    await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once", answers: [["Blue"]] });
    const done = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(done.state).toBe("built");
    expect(done.asks[0]).toMatchObject({ status: "decided", decision: "once" });
  });

  it("a user-set policy rule answers matching asks and is recorded as the decider; none exist by default", async () => {
    const first = await engine.client.workers.start.mutate({ task: "TASK-POLICY: run echo", directory: repo() });
    const waiting = await untilAsk(engine.client, first.workerId);
    expect(waiting.asks[0]).toMatchObject({ tool: "bash", what: "echo policy-ok > p.txt", status: "pending" });
    await engine.client.workers.stop.mutate({ workerId: first.workerId });

    // An approving rule answers a redirection only where it spells it out (`echo *` alone never stretches over `> file`).
    writeFileSync(path.join(engine.stateDir, "policies.json"), JSON.stringify([{ tool: "bash", pattern: "echo * > p.txt", decision: "once" }]));
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-POLICY: run echo",
      directory: repo(),
      checks: [{ file: "p.txt", equals: "policy-ok" }],
    });
    const w = await settle(engine.client, [workerId]).finally(() => writeFileSync(path.join(engine.stateDir, "policies.json"), "[]"));
    expect(w.get(workerId)!.state).toBe("built");
    expect(w.get(workerId)!.asks[0]).toMatchObject({ decision: "once", by: { kind: "policy", name: "bash echo * > p.txt → once" } });
  });

  it("an unanswered ask stays pending with its age until the wall-clock budget expires; then the worker stops with the reason", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-BUDGET: write never.txt", directory: repo(), budget: { wallSec: 20 } });
    await untilAsk(engine.client, workerId);
    await new Promise((r) => setTimeout(r, 1500));
    const pending = (await engine.client.approvals.list.query()).find((a) => a.workerId === workerId)!;
    expect(pending.ageSec).toBeGreaterThanOrEqual(1);
    const w = await untilState(engine.client, workerId, (x) => x.state === "stopped", 30_000);
    expect(w.stateReason).toMatch(/budget: wall clock of 20s/);
    expect(w.asks[0]).toMatchObject({ status: "cancelled", by: { kind: "engine", name: "budget" } });
    expect((await engine.client.approvals.list.query()).some((a) => a.workerId === workerId)).toBe(false);
  });

  it("the watchdog flags a running worker that produced no event for the configured time", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-STALL: think forever", directory: repo() });
    const w = await untilState(engine.client, workerId, (x) => x.stalled, 30_000);
    expect(w.state).toBe("running");
    expect((await engine.client.workers.events.query({ workerId })).some((e) => e.type === "stalled")).toBe(true);
    await engine.client.workers.stop.mutate({ workerId, reason: "stalled" });
  });

  it("stop, then resume with a message in the same session", async () => {
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-STOP: wait, then write resumed.txt",
      directory: repo(),
      checks: [{ file: "resumed.txt", equals: "hurry" }],
    });
    const running = await untilState(engine.client, workerId, (w) => w.state === "running");
    await expect.poll(() => model.requests.some((r) => r.sessionId === running.sessionId && r.kind === "chat"), { timeout: 30_000 }).toBe(true);
    const stopped = await engine.client.workers.stop.mutate({ workerId, reason: "operator stop" });
    expect(stopped).toMatchObject({ state: "stopped", stateReason: "operator stop" });
    await expect(engine.client.workers.steer.mutate({ workerId, text: "go on" })).rejects.toThrow(/not running: resume it/);
    await engine.client.workers.resume.mutate({ workerId, message: "Please hurry." });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.state).toBe("built");
    expect(w.sessionId).toBe(running.sessionId);
  });

  it("the API serves policies, the clients it has seen, the hardware and the install root", async () => {
    expect(await engine.client.policies.get.query()).toEqual([]);
    const rules = [{ tool: "bash", pattern: "npm test*", decision: "once" as const }];
    expect(await engine.client.policies.set.mutate({ rules })).toEqual(rules);
    expect(JSON.parse(readFileSync(path.join(engine.stateDir, "policies.json"), "utf8"))).toEqual(rules);
    await expect(engine.client.policies.set.mutate({ rules: [{ tool: "bash", pattern: "*", decision: "sometimes" as never }] })).rejects.toThrow(
      /decision must be/,
    );
    await engine.client.policies.set.mutate({ rules: [] });
    expect((await engine.client.clients.query()).map((c) => `${c.kind}:${c.name}`)).toContain("person:test");
    const hw = await engine.client.hardware.query();
    expect(hw!.ramGiB).toBeGreaterThan(0);
    expect((await engine.client.health.query()).root).toBe(path.resolve(__dirname, "../.."));
    expect(await engine.client.grades.query()).toEqual(expect.any(Array));
  });

  it("merge: a built branch merges into its base branch; a conflicting one is refused and leaves the checkout clean", async () => {
    const dir = repo({ "shared.txt": "base\n" });
    const a = await engine.client.workers.start.mutate({ task: "TASK-MERGE-alpha", directory: dir, checks: [{ file: "shared.txt", equals: "alpha" }] });
    const b = await engine.client.workers.start.mutate({ task: "TASK-MERGE-beta", directory: dir, checks: [{ file: "shared.txt", equals: "beta" }] });
    const ws = await settle(engine.client, [a.workerId, b.workerId], () => "once");
    expect([...ws.values()].map((w) => w.state)).toEqual(["built", "built"]);
    const merged = await engine.client.workers.merge.mutate({ workerId: a.workerId });
    expect(merged.into).toBe("main");
    expect(readFileSync(path.join(dir, "shared.txt"), "utf8")).toBe("alpha\n");
    await expect(engine.client.workers.merge.mutate({ workerId: b.workerId })).rejects.toThrow(
      /conflicts in \(file names from the worker's change, untrusted: \["shared\.txt"\]\); nothing was changed/,
    );
    expect(execFileSync("git", ["-C", dir, "status", "--porcelain"]).toString()).toBe("");
    await expect(engine.client.workers.merge.mutate({ workerId: a.workerId })).rejects.toThrow(/already merged/);
    expect((await engine.client.workers.get.query({ workerId: a.workerId })).merged).toMatchObject({ into: "main" });
    // Housekeeping: the merged worker's workspace and branch are gone; the conflicting one keeps its work (in the engine's
    // store: grading published nothing) until a discard, which then removes its workspace and its published branch too.
    const wa = await engine.client.workers.get.query({ workerId: a.workerId });
    const wb = await engine.client.workers.get.query({ workerId: b.workerId });
    const branches = () => execFileSync("git", ["-C", dir, "branch", "--list", "ocw/*"]).toString();
    expect(existsSync(wa.worktree!)).toBe(false);
    expect(branches()).not.toContain(wa.branch!);
    expect(existsSync(wb.worktree!)).toBe(true);
    expect(branches()).not.toContain(wb.branch!);
    await engine.client.workers.publish.mutate({ workerId: b.workerId });
    expect(branches()).toContain(wb.branch!);
    await engine.client.workers.discard.mutate({ workerId: b.workerId });
    expect(existsSync(wb.worktree!)).toBe(false);
    expect(branches()).not.toContain(wb.branch!);
    expect((await engine.client.workers.get.query({ workerId: b.workerId })).discarded).toBe(true);
    await expect(engine.client.workers.merge.mutate({ workerId: b.workerId })).rejects.toThrow(/discarded/);
  });
});
