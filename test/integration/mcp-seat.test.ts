// From Claude's seat: a careless MCP client over the real bridge and engine. Attempts after the winner was merged
// (result's next, merge and retry of the others), retry's newBase in the states where it does not apply, and waits
// on asks already shown (two sessions, a batch with tasks after others).
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptContext, type ScriptedModel, type Step } from "../fixtures/scripted-model";
import { cleanup, loadScaledMs, makeRepo, scriptedTarget, startEngine, type TestEngine } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

let model: ScriptedModel;
let engine: TestEngine;
let mcp: McpHandle;
const repos: string[] = [];
const handles: McpHandle[] = [];
const repo = (files?: Record<string, string>) => {
  const r = makeRepo(files);
  repos.push(r);
  return r;
};
const open = async (name: string) => {
  const h = await startMcp(engine.stateDir, name);
  handles.push(h);
  return h;
};

let attemptStarts = 0;
/** SEAT-ATT: the attempts of one task write, in the order they start: one line (wins), two lines (built, loses), bad. */
const fallback = (c: ScriptContext): Step => {
  const t = c.firstUserText;
  const w = /SEAT-WRITE file=(\S+) text=(\S+)/.exec(t);
  if (w) return c.turnStep === 0 ? writeFile(w[1]!, `${w[2]}\n`) : { text: "OUTCOME: built" };
  if (/SEAT-ATT/.test(t)) {
    if (c.turnStep === 0) {
      const n = attemptStarts++ % 3;
      return writeFile("out.txt", n === 0 ? "good\n" : n === 1 ? "good\nmore\n" : "bad\n");
    }
    return { text: JSON.stringify(c.messages).includes("bad\\n") ? "OUTCOME: honest-failure — out.txt is wrong" : "OUTCOME: built" };
  }
  return { text: "OUTCOME: honest-failure — no script" };
};

beforeAll(async () => {
  model = await startScriptedModel({ fallback });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
  mcp = await open("seat-a");
});

afterAll(async () => {
  for (const h of handles) await h.close().catch(() => undefined);
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...repos);
});

/** Waits over MCP, approving every new ask once, until `args`' workers settle. */
async function settle(h: McpHandle, args: Record<string, unknown>) {
  for (let i = 0; i < 30; i++) {
    const r = await h.call("wait", { timeoutSec: 30, ...args });
    for (const p of r.pending) await h.call("approve", { askId: p.askId, decision: "once" });
    if (r.settled) return r;
  }
  throw new Error("never settled");
}

describe("from Claude's seat", () => {
  it("attempts after the winner was merged: the others' result, merge and retry say it was merged, and where", async () => {
    const dir = repo();
    const d = await mcp.call("delegate", {
      task: "SEAT-ATT: write good to out.txt",
      directory: dir,
      checks: [{ run: "grep -q good out.txt" }],
      scope: ["out.txt"],
      attempts: 3,
      allAttempts: true,
    });
    expect(d.workerIds).toHaveLength(3);
    await settle(mcp, { workerIds: d.workerIds });
    const results = await Promise.all(d.workerIds.map((id: string) => mcp.call("result", { workerId: id })));
    const winner = results.find((r) => r.attempts.winner === r.workerId)!;
    const builtLoser = results.find((r) => r.verdict === "built" && r !== winner)!;
    const failed = results.find((r) => r.verdict !== "built")!;
    expect(winner && builtLoser && failed).toBeTruthy();
    expect(failed.next).toContain(`attempt ${winner.workerId} won`);
    expect(failed.next).toContain(`merge {"workerId":"${winner.workerId}"}`);

    const m = await mcp.call("merge", { workerId: winner.workerId });
    expect(m.into).toBe("main");
    const short = m.commit.slice(0, 12);

    // The failed attempt: the winner is merged, so there is nothing left to merge.
    const lost = await mcp.call("result", { workerId: failed.workerId });
    expect(lost.next).not.toMatch(/then merge/);
    expect(lost.next).toContain(`${winner.workerId} won and was merged into main (${short})`);
    // The built attempt that lost: not "merge it" (the engine refuses a second attempt's merge).
    const other = await mcp.call("result", { workerId: builtLoser.workerId });
    expect(other.next).not.toMatch(/then merge \{"workerId":"/);
    expect(other.next).toContain(`${winner.workerId} won and was merged into main (${short})`);
    expect(other.next).toContain(`discard {"workerId":"${builtLoser.workerId}"}`);
    expect(other.mergeHint).toBeNull();
    // Retried plainly or on a new base, the task would be done twice: refused in the tools' words, nothing started.
    const before = (await engine.client.workers.list.query()).length;
    for (const args of [{ workerId: failed.workerId }, { workerId: builtLoser.workerId, newBase: true }]) {
      const msg = await mcp.fail("retry", args);
      expect(msg, JSON.stringify(args)).toContain(`another attempt at its task, ${winner.workerId}, was merged into main (${short})`);
      expect(msg).toContain(`discard {"workerId":"${args.workerId}"}`);
      expect(msg).not.toMatch(/then retry \w/);
    }
    expect((await engine.client.workers.list.query()).length).toBe(before);
    const refused = await mcp.fail("merge", { workerId: builtLoser.workerId });
    expect(refused).toContain(`worker ${builtLoser.workerId} is not merged: another attempt at its task, ${winner.workerId}, was merged into main (${short})`);
    expect(refused).toContain(`discard {"workerId":"${builtLoser.workerId}"}`);
  });

  it("retry newBase: refused for a worker not built, already merged or discarded, and for one that merges cleanly; a conflicting one is told its files", async () => {
    const dir = repo({ "README.md": "# r\n", "s.txt": "base\n" });
    const b = await mcp.call("delegate_batch", {
      tasks: [
        { task: "SEAT-WRITE file=s.txt text=one", directory: dir, checks: [{ file: "s.txt", equals: "one" }], scope: ["s.txt"] },
        { task: "SEAT-WRITE file=s.txt text=two", directory: dir, checks: [{ file: "s.txt", equals: "two" }], scope: ["s.txt"] },
        { task: "SEAT-WRITE file=t.txt text=three", directory: dir, checks: [{ file: "t.txt", equals: "three" }], scope: ["t.txt"] },
        { task: "SEAT-WRITE file=u.txt text=four", directory: dir, checks: [{ file: "u.txt", equals: "nope" }], scope: ["u.txt"] },
      ],
    });
    await settle(mcp, { batchId: b.batchId });
    const [one, two, three, four] = b.workerIds as string[];
    await mcp.call("merge", { workerId: one });
    expect(await mcp.fail("retry", { workerId: one, newBase: true })).toMatch(/already merged into main/);
    expect(await mcp.fail("retry", { workerId: four, newBase: true })).toMatch(/only a built worker is continued on a new base/);
    // Merges cleanly where the base is now: a new worker would do the task again for nothing.
    const clean = await mcp.fail("retry", { workerId: three, newBase: true });
    expect(clean).toMatch(/merges cleanly/);
    expect(clean).toContain(`merge {"workerId":"${three}"}`);
    const again = await mcp.call("retry", { workerId: two, newBase: true });
    expect(again.untrusted.conflicts).toEqual(["s.txt"]);
    await mcp.call("stop", { workerId: again.workerId });
    await mcp.call("discard", { workerId: two });
    expect(await mcp.fail("retry", { workerId: two, newBase: true })).toMatch(/discarded/);
    expect(execFileSync("git", ["status", "--porcelain"], { cwd: dir, encoding: "utf8" })).toBe("");
  });

  it("a batch whose only running worker waits on a shown ask, the rest after it: wait {batchId}, {workerIds} and {} answer at once", async () => {
    const s = await open("seat-batch");
    const dir = repo();
    const b = await s.call("delegate_batch", {
      tasks: [
        { id: "first", task: "SEAT-WRITE file=f.txt text=f", directory: dir, checks: [{ file: "f.txt" }], scope: ["f.txt"] },
        { id: "second", after: ["first"], task: "SEAT-WRITE file=g.txt text=g", directory: dir, checks: [{ file: "g.txt" }], scope: ["g.txt"] },
        { id: "third", after: ["second"], task: "SEAT-WRITE file=h.txt text=h", directory: dir, checks: [{ file: "h.txt" }], scope: ["h.txt"] },
      ],
    });
    let shown: any;
    for (let i = 0; i < 6 && !shown?.pending?.length; i++) shown = await s.call("wait", { batchId: b.batchId, timeoutSec: 30 });
    const askId = shown.pending[0].askId;
    for (const args of [{ batchId: b.batchId }, { workerIds: [b.workerIds[0]] }, {}]) {
      const t0 = Date.now();
      const r = await s.call("wait", { ...args, timeoutSec: 20 });
      expect(Date.now() - t0, JSON.stringify(args)).toBeLessThan(loadScaledMs(5000));
      expect(r, JSON.stringify(args)).toMatchObject({ reason: "approval-pending", pending: [], stillOpen: [askId] });
      expect(r.next).toContain(askId);
      // Only the answer moves the batch: wait {} does not send Claude off to wait on it (that too returns at once).
      expect(r.next, JSON.stringify(args)).not.toMatch(/follows it/);
    }
    // A second session (another bridge), never shown the ask: it is news there.
    const other = await open("seat-other");
    const seen = await other.call("wait", { batchId: b.batchId, timeoutSec: 20 });
    expect(seen).toMatchObject({ reason: "approval-pending", pending: [{ askId }] });
    expect(seen.stillOpen).toBeUndefined();
    // Answered from the GUI meanwhile: the first session's next wait moves on (no ask of it left open).
    await engine.client.approvals.decide.mutate({ askId, decision: "once" });
    const moved = await s.call("wait", { batchId: b.batchId, timeoutSec: 30 });
    expect(moved.stillOpen ?? []).not.toContain(askId);
    await settle(s, { batchId: b.batchId });
  });
});
