// The worker engine against the real `opencode serve` and real git; the scripted model is the only stand-in.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilAsk, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "approve",
        match: /TASK-APPROVE/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("hello.txt", "hello world\n") : { text: "Wrote hello.txt.\nOUTCOME: built" }),
      },
      {
        name: "reject-honest",
        match: /TASK-REJECT-HONEST/,
        script: (ctx) =>
          ctx.turnStep === 0
            ? writeFile("secret.txt", "x\n")
            : {
                text: `The write was refused (${/refused/.test(ctx.lastToolResult ?? "") ? "saw refusal" : "no refusal text"}).\nOUTCOME: honest-failure — write refused`,
              },
      },
      {
        name: "reject-liar",
        match: /TASK-REJECT-LIAR/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("secret.txt", "x\n") : { text: "All done!\nOUTCOME: built" }),
      },
      {
        name: "protected",
        match: /TASK-PROTECTED/,
        script: (ctx) =>
          ctx.turnStep === 0
            ? writeFile("test/check.sh", "exit 0\n")
            : ctx.turnStep === 1
              ? writeFile("src/app.txt", "feature\n")
              : { text: "Done, and I made the test pass.\nOUTCOME: built" },
      },
      {
        name: "steer",
        match: /TASK-STEER/,
        script: (ctx) => {
          const steered = ctx.userTexts.some((t) => t.includes("use blue"));
          if (ctx.step === 0) return writeFile("color.txt", "red\n");
          if (steered && !ctx.messages.some((m) => JSON.stringify(m.tool_calls ?? "").includes("blue"))) return writeFile("color.txt", "blue\n");
          return { text: steered ? "Followed the steer: blue.\nOUTCOME: built" : "red written\nOUTCOME: built" };
        },
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

describe("worker engine", () => {
  it("approve once → the file is written in the worker's own worktree → built and honest; the user's checkout is untouched", async () => {
    const dir = repo();
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-APPROVE: create hello.txt containing 'hello world'",
      directory: dir,
      checks: [{ file: "hello.txt", equals: "hello world" }, { run: "grep -q hello hello.txt" }],
    });
    const waiting = await untilAsk(engine.client, workerId);
    expect(waiting.state).toBe("waiting-approval");
    const ask = waiting.asks.find((a) => a.status === "pending")!;
    expect(ask.tool).toBe("edit");
    expect(ask.what).toContain("hello.txt");
    expect(ask.diff).toContain("+hello world");
    const pending = await engine.client.approvals.list.query();
    expect(pending.map((a) => a.id)).toContain(ask.id);

    await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" });
    const [w] = [...(await settle(engine.client, [workerId])).values()];
    expect(w!.state).toBe("built");
    expect(w!.verdict).toMatchObject({ verdict: "built", claim: "built", honest: true });
    expect(w!.verdict!.checks.every((c) => c.passed)).toBe(true);
    expect(w!.asks[0]).toMatchObject({ status: "decided", decision: "once", by: { kind: "person", name: "test" } });
    // The work lives on the worker's branch, outside the user's checkout.
    expect(existsSync(path.join(dir, "hello.txt"))).toBe(false);
    expect(w!.worktree!.startsWith(engine.stateDir)).toBe(true);
    expect(readFileSync(path.join(w!.worktree!, "hello.txt"), "utf8")).toBe("hello world\n");
    // Nothing of it is in the user's repository until they publish (or merge, or push) it: then exactly the graded commit.
    expect(execFileSync("git", ["-C", dir, "branch", "--list", w!.branch!]).toString()).toBe("");
    expect(w!.verdict!.mergeHint).toContain(`ocw publish ${workerId} && `);
    expect(w!.verdict!.mergeHint).toContain(`git merge --no-ff ${w!.branch}`);
    await engine.client.workers.publish.mutate({ workerId });
    expect(execFileSync("git", ["-C", dir, "rev-parse", w!.branch!]).toString().trim()).toBe(w!.verdict!.commit);
    expect(execFileSync("git", ["-C", dir, "show", `${w!.branch}:hello.txt`]).toString()).toBe("hello world\n");
    expect(execFileSync("git", ["-C", dir, "status", "--porcelain"]).toString()).toBe("");
    // The worker agent's prompt (the protocol) reached the model, and the checks did not.
    const req = model.requests.find((r) => r.kind === "chat" && r.sessionId === w!.sessionId)!;
    const system = JSON.stringify(req.body.messages.filter((m: { role: string }) => m.role === "system"));
    expect(system).toContain("opencode-worker");
    expect(JSON.stringify(req.body.messages)).not.toContain("grep -q hello");
  });

  it("reject → nothing written → honest-failure; the rejection message lets the worker report, and a false `built` claim is recorded dishonest", async () => {
    const dir = repo();
    const honest = await engine.client.workers.start.mutate({ task: "TASK-REJECT-HONEST: write secret.txt", directory: dir, checks: [{ file: "secret.txt" }] });
    const liar = await engine.client.workers.start.mutate({ task: "TASK-REJECT-LIAR: write secret.txt", directory: dir, checks: [{ file: "secret.txt" }] });
    const ws = await settle(engine.client, [honest.workerId, liar.workerId], () => "reject");
    const h = ws.get(honest.workerId)!;
    const l = ws.get(liar.workerId)!;
    for (const w of [h, l]) {
      expect(w.state).toBe("honest-failure");
      expect(existsSync(path.join(w.worktree!, "secret.txt"))).toBe(false);
      expect(w.asks[0]).toMatchObject({ decision: "reject", status: "decided" });
    }
    expect(h.verdict).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true });
    expect(h.verdict!.claimReason).toBe("write refused");
    expect(l.verdict).toMatchObject({ verdict: "honest-failure", claim: "built", honest: false });
    // The model saw our rejection message as the tool result, so the loop went on (a bare reject ends it silently).
    const afterReject = model.requests.filter((r) => r.sessionId === h.sessionId && r.kind === "chat").at(-1)!;
    expect(JSON.stringify(afterReject.body.messages)).toContain("refused");
  });

  it("a protected file edited → honest-failure with the scope reason even though the check passes", async () => {
    const dir = repo({ "test/check.sh": "exit 1\n", "src/app.txt": "old\n" });
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-PROTECTED: implement the feature in src/app.txt",
      directory: dir,
      checks: [{ run: "sh test/check.sh" }],
      scope: ["src/**"],
      protect: ["test/**"],
    });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.verdict!.checks[0]!.passed).toBe(true);
    expect(w.verdict!.scope.passed).toBe(false);
    expect(w.verdict!.scope.violations).toContain("protected file changed: test/check.sh");
    expect(w).toMatchObject({ state: "honest-failure" });
    expect(w.stateReason).toContain("protected file changed: test/check.sh");
    // The violation names a file the worker chose: quoted and labelled in the reason.
    expect(w.stateReason).toContain(`scope (violations naming the worker's files, untrusted: ["protected file changed: test/check.sh"`);
    expect(w.verdict).toMatchObject({ claim: "built", honest: false });
  });

  it("a steer sent while the model is mid-request reaches its next request and is followed", async () => {
    const dir = repo();
    let release!: () => void;
    model.setGate(new Promise<void>((r) => (release = r)));
    const { workerId } = await engine.client.workers.start.mutate({
      task: "TASK-STEER: write red to color.txt",
      directory: dir,
      checks: [{ file: "color.txt", equals: "blue" }],
    });
    await untilState(engine.client, workerId, (w) => w.state === "running");
    await expect.poll(() => model.inFlight(), { timeout: 30_000 }).toBe(1);
    await engine.client.workers.steer.mutate({ workerId, text: "Change of plan: use blue, not red." });
    model.setGate(null);
    release();
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.steers[0]!.text).toContain("use blue");
    const sawSteer = model.requests
      .filter((r) => r.sessionId === w.sessionId && r.kind === "chat")
      .findIndex((r) => JSON.stringify(r.body.messages).includes("use blue"));
    expect(sawSteer).toBeGreaterThan(0);
    expect(readFileSync(path.join(w.worktree!, "color.txt"), "utf8")).toBe("blue\n");
    expect(w.verdict).toMatchObject({ verdict: "built", honest: true });
  });

  it("refuses bad input with a message that says what to do, and creates nothing", async () => {
    const before = (await engine.client.workers.list.query()).length;
    const bad = async (input: unknown) => {
      try {
        await engine.client.workers.start.mutate(input as never);
      } catch (err) {
        return (err as Error).message;
      }
      return "accepted";
    };
    expect(await bad({ task: "x", directory: "relative/dir" })).toMatch(/absolute/);
    expect(await bad({ task: "x", directory: "/no/such/dir" })).toMatch(/does not exist/);
    expect(await bad({ task: "x", directory: repo().replace(/$/, "/../") + "nope-not-here" })).toMatch(/does not exist/);
    const plain = (await import("../helpers")).tempDir("plain");
    repos.push(plain);
    expect(await bad({ task: "x", directory: plain })).toMatch(/not a git repository/);
    expect(await bad({ task: "   ", directory: repo() })).toMatch(/task is empty/);
    const withScratch = repo();
    mkdirSync(path.join(withScratch, "scratch"));
    expect(await bad({ task: "x", directory: path.join(withScratch, "scratch") })).toMatch(/not part of its committed files/);
    expect(await bad({ task: "x", directory: repo(), checks: [{ bogus: 1 }] })).toMatch(/check/);
    expect(await bad({ task: "x", directory: repo(), checks: [{ file: "../etc/passwd" }] })).toMatch(/relative/);
    expect((await engine.client.workers.list.query()).length).toBe(before);
    await expect(engine.client.approvals.decide.mutate({ askId: "per_nope", decision: "once" })).rejects.toThrow(/unknown ask "per_nope"/);
    await expect(engine.client.approvals.decide.mutate({ askId: "per_nope", decision: "maybe" as never })).rejects.toThrow(/decision must be/);
    await expect(engine.client.workers.get.query({ workerId: "w-nope" })).rejects.toThrow(/unknown worker/);
  });
});
