// Housekeeping through the real engine (`ocw serve`, real opencode, real git): "merge all built" of a batch (one by one
// in submission order, stopping at the first conflict, saying which merged, where it stopped and why, what was not
// tried and what was skipped) and retry (the same task as a new worker), over the API and the `ocw` CLI.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MergeBatchResult, RetryResult } from "../../shared/api";
import { startScriptedModel, writeFile, writesAsTold, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine, untilState, type TestEngine, runOcw } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
const repos: string[] = [];

const ocw = (args: string[]) => runOcw(engine.stateDir, args);

const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: "pipe" });

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      writesAsTold("HK-WRITE"),
      {
        name: "fail",
        match: /HK-FAIL/,
        script: (c) => (c.turnStep === 0 ? writeFile("z.txt", "no\n") : { text: "Could not make it say yes.\nOUTCOME: honest-failure — no yes" }),
      },
      { name: "hang", match: /HK-HANG/, script: () => ({ hang: true, textBeforeHang: "Working…" }) },
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

describe("housekeeping", () => {
  it("merge all built: one by one in submission order, stops at the conflict with the reason, skips what is not built; again after a discard", async () => {
    const dir = makeRepo({ "shared.txt": "base\n" });
    repos.push(dir);
    const task = (t: string) => ({ task: t, directory: dir, checks: [{ run: "true" }] });
    const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: [
        task("HK-WRITE file=shared.txt text=alpha"),
        { ...task("HK-FAIL: make z.txt say yes"), checks: [{ run: "grep -q yes z.txt" }] },
        task("HK-WRITE file=shared.txt text=beta"),
        task("HK-WRITE file=c.txt text=gamma"),
      ],
    });
    const [a, fail, b, c] = workerIds as [string, string, string, string];
    const ws = await settle(engine.client, workerIds, () => "once");
    expect(workerIds.map((id) => ws.get(id)!.state)).toEqual(["built", "honest-failure", "built", "built"]);

    // Through the CLI: exit 1 (a conflict), the JSON names what merged, where it stopped and why.
    const r1 = await ocw(["merge", "--batch", batchId, "--json"]);
    expect(r1.code, r1.stderr).toBe(1);
    const m1 = JSON.parse(r1.stdout) as MergeBatchResult;
    expect(m1.merged.map((m) => m.workerId)).toEqual([a]);
    expect(m1.merged[0]!.into).toBe("main");
    expect(m1.stopped).toMatchObject({ workerId: b, code: "conflict" });
    expect(m1.stopped!.reason).toMatch(/conflicts in \(file names from the worker's change, untrusted: \["shared\.txt"\]\); nothing was changed/);
    expect(m1.stopped!.reason).toContain("shared.txt");
    expect(m1.notTried).toEqual([c]);
    expect(m1.skipped).toEqual([{ workerId: fail, reason: "not built (honest-failure)" }]);
    // The user's repository: alpha merged, nothing of beta or gamma, a clean checkout.
    expect(git(dir, "show", "main:shared.txt")).toBe("alpha\n");
    expect(() => git(dir, "show", "main:c.txt")).toThrow();
    expect(git(dir, "status", "--porcelain")).toBe("");
    expect((await engine.client.workers.get.query({ workerId: a })).merged).toMatchObject({ into: "main" });
    expect((await engine.client.workers.get.query({ workerId: c })).merged).toBeNull();

    // Discard the conflicting one; merge all again, twice at once: one call merges, the other is refused.
    await engine.client.workers.discard.mutate({ workerId: b });
    const both = await Promise.allSettled([engine.client.workers.mergeBatch.mutate({ batchId }), engine.client.workers.mergeBatch.mutate({ batchId })]);
    const done = both.filter((x) => x.status === "fulfilled").map((x) => (x as PromiseFulfilledResult<MergeBatchResult>).value);
    const refused = both.filter((x) => x.status === "rejected").map((x) => String((x as PromiseRejectedResult).reason));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/already under way/);
    expect(done[0]!.merged.map((m) => m.workerId)).toEqual([c]);
    expect(done[0]!.stopped).toBeNull();
    expect(done[0]!.skipped).toEqual([
      { workerId: a, reason: "already merged into main" },
      { workerId: fail, reason: "not built (honest-failure)" },
      { workerId: b, reason: "discarded" },
    ]);
    expect(git(dir, "show", "main:c.txt")).toBe("gamma\n");

    // Nothing left: the CLI says so and exits 0.
    const r3 = await ocw(["merge", "--batch", batchId]);
    expect(r3.code, r3.stderr).toBe(0);
    expect(r3.stdout).toContain(`batch ${batchId}: no built worker left to merge`);
    expect(r3.stdout).toContain(`skipped ${a}: already merged into main`);

    // Bad input says what to do.
    await expect(engine.client.workers.mergeBatch.mutate({ batchId: "b_nope" })).rejects.toThrow(/unknown batch "b_nope"/);
    const r4 = await ocw(["merge"]);
    expect(r4.code).toBe(2);
    expect(r4.stderr).toMatch(/give a worker id, or --batch BATCH_ID/);
  });

  it("retry: a failed worker's task runs again as a new worker in a fresh workspace on the same target; built or running workers are refused", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: [{ task: "HK-FAIL: make z.txt say yes", title: "Say yes", directory: dir, checks: [{ run: "grep -q yes z.txt" }], scope: ["*.txt"] }],
    });
    const failedId = workerIds[0]!;
    const failed = (await settle(engine.client, [failedId], () => "once")).get(failedId)!;
    expect(failed.state).toBe("honest-failure");

    const r = await ocw(["retry", failedId, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as RetryResult;
    expect(out.retryOf).toBe(failedId);
    const retried = await engine.client.workers.get.query({ workerId: out.workerId });
    expect(retried.spec).toEqual({ ...failed.spec, targetId: "scripted" });
    expect(retried.targetId).toBe("scripted");
    // It stays in the old batch, as the same task (the batch counts one task, as its latest retry).
    expect(retried.batchId).toBe(batchId);
    expect(retried.retryOf).toBe(failedId);
    expect((await engine.client.workers.batch.query({ batchId })).workerIds).toEqual([failedId, out.workerId]);
    const again = (await settle(engine.client, [out.workerId], () => "once")).get(out.workerId)!;
    expect(again.state).toBe("honest-failure");
    expect(await engine.client.workers.batch.query({ batchId })).toMatchObject({ settled: true, built: 0, builtRate: 0 });
    expect(again.worktree).not.toBe(failed.worktree);
    // The old worker is untouched: its workspace stays until a discard.
    expect(existsSync(failed.worktree!)).toBe(true);

    // Over the API too, and refusals with what to do.
    const viaApi = await engine.client.workers.retry.mutate({ workerId: failedId });
    expect(viaApi.retryOf).toBe(failedId);
    await settle(engine.client, [viaApi.workerId], () => "once");
    const built = await engine.client.workers.start.mutate({ task: "HK-WRITE file=ok.txt text=ok", directory: dir, checks: [{ run: "true" }] });
    await settle(engine.client, [built.workerId], () => "once");
    await expect(engine.client.workers.retry.mutate({ workerId: built.workerId })).rejects.toThrow(/is built: there is nothing to retry/);
    const hang = await engine.client.workers.start.mutate({ task: "HK-HANG: never ends", directory: dir });
    await untilState(engine.client, hang.workerId, (w) => w.state === "running");
    const r2 = await ocw(["retry", hang.workerId]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/is running: stop it first/);
    await engine.client.workers.stop.mutate({ workerId: hang.workerId });
    const r3 = await ocw(["retry", "w_nope"]);
    expect(r3.code).toBe(2);
    expect(r3.stderr).toMatch(/unknown worker "w_nope"/);
    expect(path.isAbsolute(dir)).toBe(true);
  });
});
