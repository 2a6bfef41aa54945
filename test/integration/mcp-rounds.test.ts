// After the verdict over MCP (issue 26), as Claude Code drives it: delegate warns of checks that already pass on the
// base, result shows weak evidence and the rounds, review/continue/retry work on graded workers, and every `next` names
// a verb that works in the worker's state.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, startEngine, type TestEngine } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

let model: ScriptedModel;
let engine: TestEngine;
let mcp: McpHandle;
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
        name: "rounds",
        match: /MCP-ROUNDS/,
        script: (ctx) => {
          const round = ctx.userTexts.length;
          if (ctx.turnStep === 0) return writeFile("r.txt", `round ${round}\n`);
          return { text: `Wrote round ${round}.\nOUTCOME: ${round >= 2 ? "built" : "honest-failure — not sure"}` };
        },
      },
    ],
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
  mcp = await startMcp(engine.stateDir, "mcp-rounds");
});

afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

/** Waits over MCP, approving every ask once, until the worker settles. */
async function settleOverMcp(workerId: string) {
  for (let i = 0; i < 20; i++) {
    const r = await mcp.call("wait", { workerId, timeoutSec: 30 });
    for (const p of r.pending) await mcp.call("approve", { askId: p.askId, decision: "once" });
    if (r.settled) return r;
  }
  throw new Error("never settled");
}

describe("after the verdict, over MCP", () => {
  it("delegate warns when a check already passes on the base; result shows weak evidence; review starts round 2; result lists the rounds", async () => {
    const dir = repo({ "README.md": "# r\n" });
    const d = await mcp.call("delegate", {
      task: "MCP-ROUNDS: write r.txt",
      directory: dir,
      checks: [
        { run: "test -f README.md", name: "readme" },
        { file: "r.txt", matches: "round" },
      ],
      scope: ["r.txt"],
    });
    expect(d.baseline).toEqual({ passedOnBase: ["readme"] });
    expect(d.warnings.join("\n")).toMatch(/these checks already pass before any change: they prove nothing \(readme\)/);
    await settleOverMcp(d.workerId);
    const r1 = await mcp.call("result", { workerId: d.workerId });
    expect(r1).toMatchObject({ verdict: "built", claim: "honest-failure", honest: false, weakEvidence: false, baseline: { passedOnBase: ["readme"] } });
    expect(r1.next).toMatch(/review \{"workerId"/);

    const rv = await mcp.call("review", {
      workerId: d.workerId,
      comments: [{ file: "r.txt", line: 1, body: "Say which round this is." }],
      message: "One nit.",
    });
    expect(rv).toMatchObject({ workerId: d.workerId, round: 2 });
    expect(["queued", "starting"]).toContain(rv.state);
    await settleOverMcp(d.workerId);
    const r2 = await mcp.call("result", { workerId: d.workerId });
    expect(r2).toMatchObject({ verdict: "built", claim: "built", honest: true });
    expect(r2.rounds.map((x: any) => [x.round, x.kind, x.verdict, x.honest])).toEqual([
      [1, "task", "built", false],
      [2, "review", "built", true],
    ]);
    expect(r2.rounds[1].changedSincePrevious).toBe(1); // the names are the worker's: untrusted, not listed here
    const sent = JSON.stringify(model.requests.filter((q) => q.kind === "chat").at(-1)!.body.messages);
    expect(sent).toContain("- r.txt:1 — Say which round this is.");

    // continue takes a plain follow-up; a worker not graded yet is refused with the reason.
    const c = await mcp.call("continue", { workerId: d.workerId, message: "And once more." });
    expect(c).toMatchObject({ round: 3 });
    expect(["queued", "starting"]).toContain(c.state);
    expect(await mcp.fail("continue", { workerId: d.workerId, message: "too soon" })).toMatch(/only a graded worker/);
    await settleOverMcp(d.workerId);
    expect((await mcp.call("result", { workerId: d.workerId })).rounds).toHaveLength(3);
  });

  it("a no-op is an honest failure whose next names continue and retry; retry starts a new worker", async () => {
    const dir = repo({ "README.md": "# r\n" });
    const d = await mcp.call("delegate", { task: "MCP-NOTHING: nothing", directory: dir, checks: [{ run: "test -f README.md" }] });
    await settleOverMcp(d.workerId);
    const r = await mcp.call("result", { workerId: d.workerId });
    expect(r).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true });
    expect(r.verdictReason).toMatch(/nothing was shown/);
    // The engine's reason is said once, in verdictReason: not again as the worker's state reason under untrusted.
    expect(r.untrusted.reason).toBeNull();
    expect(JSON.stringify(r).split(r.verdictReason).length - 1).toBe(1);
    expect(r.next).toMatch(/continue \{"workerId"/);
    expect(r.next).toMatch(/retry \{"workerId"/);
    expect(r.next).not.toMatch(/resume/);
    const again = await mcp.call("retry", { workerId: d.workerId });
    expect(again).toMatchObject({ retryOf: d.workerId });
    expect(again.workerId).not.toBe(d.workerId);
    await settleOverMcp(again.workerId);
  });
});
