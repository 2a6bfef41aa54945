// Faults injected into the real system: a failing model endpoint, malformed tool calls, writes outside the worktree,
// a hanging endpoint, and a storm of malformed or hostile API requests. (`npm run test:faults` runs every faults-*.test.ts
// and recovery.test.ts too.)
import { existsSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLock } from "../../engine/api/lock";
import { bash, startScriptedModel, toolCall, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, isAtRest, makeRepo, scriptedTarget, settle, startEngine, tempDir, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];
const outside = path.join(tempDir("outside"), "escape.txt");
const outsideByShell = path.join(path.dirname(outside), "shell-escape.txt");
const outsideByRedirect = path.join(path.dirname(outside), "redirect-escape.txt");
const repo = (files?: Record<string, string>) => {
  const r = makeRepo(files);
  repos.push(r);
  return r;
};

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      { name: "500", match: /FAULT-500/, script: () => ({ error: { status: 500, message: "upstream exploded", headers: { "retry-after-ms": "50" } } }) },
      { name: "hang", match: /FAULT-HANG/, script: () => ({ hang: true, textBeforeHang: "thinking" }) },
      { name: "midstream", match: /FAULT-MIDSTREAM/, script: () => ({ closeMidStream: true, textBeforeClose: "half an ans" }) },
      {
        name: "malformed",
        match: /FAULT-MALFORMED/,
        script: (c) =>
          c.turnStep === 0
            ? { toolCalls: [{ name: "write", args: '{"filePath": "m.txt", "content": ' }] }
            : c.turnStep === 1
              ? writeFile("m.txt", "ok\n")
              : { text: "OUTCOME: built" },
      },
      {
        name: "shell-escape",
        match: /FAULT-SHELL-ESCAPE/,
        script: (c) =>
          c.turnStep === 0
            ? bash(`touch ${outsideByShell}`)
            : c.turnStep === 1
              ? bash(`echo escaped > ${outsideByRedirect}`)
              : { text: "OUTCOME: honest-failure — the shell could not write outside" },
      },
      {
        name: "shell-protect",
        match: /FAULT-SHELL-PROTECT/,
        script: (c) =>
          c.turnStep === 0
            ? bash("printf 'exit 0\\n' > test/check.sh")
            : c.turnStep === 1
              ? writeFile("src/app.txt", "feature\n")
              : { text: "Made the test pass.\nOUTCOME: built" },
      },
      {
        name: "escape",
        match: /FAULT-ESCAPE/,
        script: (c) =>
          c.turnStep === 0
            ? toolCall("write", { filePath: outside, content: "escaped\n" })
            : { text: "Could not write outside.\nOUTCOME: honest-failure — write outside the worktree was denied" },
      },
    ],
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", path.dirname(outside), ...repos);
});

describe("faults", () => {
  it("a model endpoint answering 500 → the worker ends in a clear error state, nothing hangs", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-500", directory: repo() });
    const w = await untilState(engine.client, workerId, (x) => x.state === "error", 120_000);
    expect(w.stateReason).toMatch(/upstream exploded|500/);
    expect(model.requests.filter((r) => r.matched === "500").length).toBeGreaterThan(1); // opencode retried first
  });

  it("a model endpoint that hangs mid-response → the wall-clock budget stops the worker with its reason; nothing hangs", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-HANG", directory: repo(), budget: { wallSec: 15 } });
    const w = await untilState(engine.client, workerId, (x) => isAtRest(x.state), 60_000);
    expect(w.state).toBe("stopped");
    expect(w.stateReason).toMatch(/budget: wall clock of 15s/);
    expect(model.requests.some((r) => r.matched === "hang" && r.response?.type === "hang")).toBe(true);
    expect((await engine.client.health.query()).ok).toBe(true);
  });

  it("a stream closed mid-response → clear error state", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-MIDSTREAM", directory: repo() });
    const w = await untilState(engine.client, workerId, (x) => ["error", "built", "honest-failure"].includes(x.state), 150_000);
    expect(w.state).toBe("error");
    expect(w.stateReason).toBeTruthy();
  });

  it("a malformed tool call is counted per worker, and the worker goes on", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-MALFORMED", directory: repo(), checks: [{ file: "m.txt", equals: "ok" }] });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.toolFailures).toBeGreaterThanOrEqual(1);
    expect(w.state).toBe("built");
  });

  it("a worker that tries to write outside its worktree is denied by the agent's rules; nothing is written", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-ESCAPE", directory: repo(), checks: [{ run: `test -f ${outside}` }] });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(existsSync(outside)).toBe(false);
    expect(w.asks.filter((a) => a.tool === "external_directory")).toEqual([]); // denied outright, never asked
    expect(w.verdict).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true });
    expect(w.toolFailures).toBeGreaterThanOrEqual(1);
  });

  it("shell commands that write outside the worktree (a path argument, a redirect) are denied even when every ask is approved; nothing is written", async () => {
    const { workerId } = await engine.client.workers.start.mutate({ task: "FAULT-SHELL-ESCAPE", directory: repo() });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(existsSync(outsideByShell)).toBe(false);
    expect(existsSync(outsideByRedirect)).toBe(false);
    // The path argument: opencode's external_directory rule denies it before any ask. The redirect reaches opencode as
    // an ordinary bash ask (approving it would write the file); the engine's worktree guard refuses it, on the record.
    expect(w.asks).toHaveLength(1);
    expect(w.asks[0]).toMatchObject({ tool: "bash", status: "decided", decision: "reject", by: { kind: "engine", name: "worktree guard" } });
    expect(w.asks[0]!.message).toContain(outsideByRedirect);
    expect(w.toolFailures).toBeGreaterThanOrEqual(1);
  });

  it("a protected file rewritten through an approved shell command → scope failure, the claim recorded as dishonest", async () => {
    const dir = repo({ "test/check.sh": "exit 1\n", "src/app.txt": "old\n" });
    const { workerId } = await engine.client.workers.start.mutate({
      task: "FAULT-SHELL-PROTECT",
      directory: dir,
      checks: [{ run: "sh test/check.sh" }],
      scope: ["src/**"],
      protect: ["test/**"],
    });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.asks.some((a) => a.tool === "bash")).toBe(true);
    expect(w.verdict!.checks[0]!.passed).toBe(true); // the worker made its own check pass …
    expect(w.verdict!.scope.violations).toContain("protected file changed: test/check.sh"); // … and the scope check saw how
    expect(w).toMatchObject({ state: "honest-failure", verdict: { claim: "built", honest: false } });
  });

  it("1,000 malformed or hostile API requests → each a 4xx with a message; the engine stays up and its memory stays bounded", async () => {
    const lock = readLock(engine.stateDir)!;
    const base = `http://127.0.0.1:${lock.port}`;
    const procedures = [
      "workers.start",
      "workers.startBatch",
      "workers.get",
      "workers.steer",
      "workers.stop",
      "workers.resume",
      "workers.merge",
      "approvals.decide",
      "targets.save",
      "targets.use",
      "workers.batch",
      "workers.wait",
    ];
    const hostile = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.constant("../../../../etc/passwd"),
      fc.constant("/etc"),
      fc.string({ minLength: 10_000, maxLength: 20_000 }),
      fc.integer(),
      fc.constant(null),
      fc.array(fc.string(), { maxLength: 5 }),
    );
    const body = fc.oneof(
      fc.record({ task: hostile, directory: hostile, checks: fc.oneof(hostile, fc.array(fc.record({ run: hostile }))) }, { requiredKeys: [] }),
      fc.record({ workerId: hostile, askId: hostile, decision: hostile, text: hostile, batchId: hostile, id: hostile }, { requiredKeys: [] }),
      // workers.wait's fields: never a valid wait (its ids are hostile or unknown), so never a long one.
      fc.record(
        { workerIds: hostile, batchId: hostile, shownAsks: hostile, timeoutMs: fc.oneof(hostile, fc.constant(-1), fc.constant(1e12)) },
        { requiredKeys: [] },
      ),
      fc.record({ tasks: fc.array(fc.record({ task: hostile, directory: hostile }), { maxLength: 3 }) }),
      hostile,
    );
    const auth = fc.constantFrom("good", "none", "wrong", "foreign-host", "foreign-origin");
    const rssBefore = await engineRss(lock.pid);
    let count = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...procedures), body, auth, async (proc, input, mode) => {
        count++;
        const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${lock.token}` };
        if (mode === "none") delete headers.authorization;
        if (mode === "wrong") headers.authorization = "Bearer nope";
        if (mode === "foreign-host") headers.host = "evil.example:80";
        if (mode === "foreign-origin") headers.origin = "http://evil.example";
        const res = await fetch(`${base}/trpc/${proc}`, { method: "POST", headers, body: JSON.stringify(input) });
        const text = await res.text();
        expect(res.status, text).toBeGreaterThanOrEqual(400);
        expect(res.status, text).toBeLessThan(500);
        if (mode === "good") expect(JSON.parse(text).error.message.length).toBeGreaterThan(3);
      }),
      { numRuns: 1000 },
    );
    expect(count).toBe(1000);
    expect((await engine.client.health.query()).ok).toBe(true);
    const rssAfter = await engineRss(lock.pid);
    expect(rssAfter - rssBefore).toBeLessThan(150);
  });
});

async function engineRss(pid: number): Promise<number> {
  const { readFileSync } = await import("node:fs");
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
}
