// "always" means what it says, against the real parts (the bundle's engine, real opencode suggesting the pattern
// `npm test *`, bubblewrap when present, the scripted model): an "always" on `npm test` answers `npm test` again, and never a
// command chained to it, whatever the operator.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bash, startScriptedModel, writeFile, type ScriptedModel, turnSteps } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, scriptedTarget, settle, startEngine, untilState, type TestEngine } from "../helpers";
import { startMcp, waitUntil } from "./mcp-helpers";

let model: ScriptedModel;
let engine: TestEngine;
let repo = "";

beforeAll(async () => {
  model = await startScriptedModel();
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 2), activate: true });
  repo = makeRepo({ "package.json": JSON.stringify({ name: "p", version: "1.0.0", scripts: { test: "echo tests-ran" } }) + "\n" });
}, 60_000);

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", repo);
});

describe('"always" on a real worker', () => {
  it("`npm test` granted always: `npm test` again runs without a person; `npm test; touch pwned` and every other chained command still ask", async () => {
    const chained = [
      "npm test; touch pwned",
      "npm test && touch pwned2",
      "npm test $(touch pwned3)",
      "npm test || true; touch pwned4",
      "npm test\ntouch pwned5",
    ];
    model.addScript(/TASK-ALWAYS-NPM/, turnSteps(bash("npm test"), bash("npm test"), ...chained.map((c) => bash(c))), "always-npm");
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-ALWAYS-NPM: run the tests", directory: repo });
    const seen: { what: string; always: string[] }[] = [];
    const ws = await settle(
      engine.client,
      [workerId],
      (a) => {
        seen.push({ what: a.what, always: a.always });
        // The careful part of a careless person: "always" on the test command, and a refusal of whatever reaches them.
        return a.what === "npm test" ? "always" : "reject";
      },
      150_000,
    );
    const w = ws.get(workerId)!;
    // opencode itself suggested a pattern (`npm test *`, which matches `npm test; touch pwned`); the engine granted the exact command.
    expect(seen[0]!.always).toContain("npm test *");
    expect(w.grants.map((g) => [g.tool, g.pattern])).toEqual([["bash", "npm test"]]);
    const asked = w.asks.filter((a) => a.tool === "bash");
    expect(asked.map((a) => [a.what, a.decision, a.by?.kind])).toEqual([
      ["npm test", "always", "person"],
      ["npm test", "once", "policy"],
      ...chained.map((c) => [c, "reject", "person"]),
    ]);
    const files = readdirSync(w.worktree!);
    for (const f of ["pwned", "pwned2", "pwned3", "pwned4", "pwned5"]) expect(files, f).not.toContain(f);
    expect(existsSync(path.join(w.worktree!, "pwned"))).toBe(false);
  }, 200_000);

  it("over MCP (a real client, the bundle's bridge): a bidi command is shown with visible markers, a two-line one as two lines, and neither is offered 'always' wrongly", async () => {
    const BIDI = "npm test \u2067\u2066 ; rm -rf src \u2069\u2066 #\u2069\u2069";
    model.addScript(/TASK-MCP-HIDDEN/, turnSteps(bash(BIDI), bash("echo harmless\nrm -rf src")), "mcp-hidden");
    const mcp = await startMcp(engine.stateDir, "asks-test");
    try {
      const d = await mcp.call("delegate", { task: "TASK-MCP-HIDDEN: run the tests", directory: repo, checks: [{ run: "true" }] });
      await waitUntil(mcp, { workerId: d.workerId }, (r) => r.pending.length === 1);
      const first = (await mcp.call("pending_approvals", { workerId: d.workerId })).pending[0];
      expect(first.untrusted.what).toBe("npm test ⟪U+2067⟫⟪U+2066⟫ ; rm -rf src ⟪U+2069⟫⟪U+2066⟫ #⟪U+2069⟫⟪U+2069⟫");
      expect(first.untrusted.always).toEqual([]);
      expect(first.alwaysWhy).toMatch(/invisible or control character/);
      expect(await mcp.fail("approve", { askId: first.askId, decision: "always" })).toMatch(/"always" is not offered/);
      await mcp.call("approve", { askId: first.askId, decision: "reject", message: "no hidden characters" });
      await waitUntil(mcp, { workerId: d.workerId }, (r) => r.pending.length === 1);
      const second = (await mcp.call("pending_approvals", { workerId: d.workerId })).pending[0];
      expect(second.untrusted.what).toBe("echo harmless⏎\nrm -rf src");
      expect(second.untrusted.always).toEqual(["echo harmless", "rm -rf src"]);
      expect(second.alwaysWhy).toBeUndefined();
      await mcp.call("approve", { askId: second.askId, decision: "reject" });
    } finally {
      await mcp.close();
    }
  }, 200_000);

  it("`ocw grants` shows a path in the workspace as the repository's (never the engine's private folder), lists the grants in force and counts the expired", async () => {
    model.addScript(/TASK-GRANT-PATH/, turnSteps(writeFile("notes/a.txt", "a\n"), { hang: true }), "grant-path");
    const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-GRANT-PATH: write notes/a.txt", directory: repo });
    const asking = await untilState(engine.client, workerId, (w) => w.asks.some((a) => a.status === "pending"), 120_000);
    await engine.client.approvals.decide.mutate({ askId: asking.asks.find((a) => a.status === "pending")!.id, decision: "always" });
    await untilState(engine.client, workerId, (w) => w.grants.length === 1, 60_000);
    const grants = () => execFileSync(process.execPath, [BUNDLE, "grants"], { encoding: "utf8", env: { ...process.env, OCW_STATE_DIR: engine.stateDir } });
    const inForce = grants();
    expect(inForce).toMatch(new RegExp(`worker ${workerId} {2}edit notes/a\\.txt {2}\\(by `));
    expect(inForce).not.toContain(engine.stateDir);
    await engine.client.workers.stop.mutate({ workerId });
    const after = grants();
    expect(after).not.toContain(workerId);
    expect(after).toMatch(/(1 expired grant|\d+ expired grants) not shown/);
  }, 200_000);
});
