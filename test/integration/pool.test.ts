// Targets that are pools of endpoints: `ocw setup --capture URL --capture URL …` makes one, `ocw targets --json` shows
// each endpoint's health, slots and workers, and the engine admits workers by each endpoint's live capacity (llama.cpp
// /slots, vLLM /metrics), keeps a worker on its endpoint, and moves the workers of a dead endpoint to the others.
// The endpoints are scripted OpenAI-compatible servers that also play llama.cpp's /slots and vLLM's /metrics.
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, toolCall, writeFile, type ScriptContext, type ScriptedModel, type ScriptedModelOptions } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, settle, startEngine, tempDir, untilState, type TestEngine, stopDetachedEngine } from "../helpers";
import type { Target } from "../../shared/target";

const GOOD = "```js\nfunction sumOfSquares(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) s += i * i;\n  return s;\n}\n```";
const models: ScriptedModel[] = [];
let engine: TestEngine;
const repos: string[] = [];

/** One endpoint of a pool: a capable scripted model (it passes verify) that solves POOL-n tasks. */
async function endpoint(extra: Partial<ScriptedModelOptions> = {}): Promise<ScriptedModel> {
  const m = await startScriptedModel({
    modelId: "pool-coder",
    chunkDelayMs: 5,
    scripts: [
      {
        name: "pool",
        match: /POOL-\d+/,
        script: (c) => (c.turnStep === 0 ? writeFile(`${/POOL-(\d+)/.exec(c.firstUserText)![1]}.txt`, "done\n") : { text: "OUTCOME: built" }),
      },
      {
        name: "tools",
        match: (c: ScriptContext) => c.hasTools && !/POOL-/.test(c.firstUserText),
        script: (c) => (c.toolResults.length ? { text: `The word is ${c.lastToolResult!.trim()}.` } : toolCall("read", { filePath: "notes/token.txt" })),
      },
      { name: "code", match: /sumOfSquares/, script: () => ({ text: GOOD }) },
    ],
    fallback: () => ({ text: "hello" }),
    ...extra,
  });
  models.push(m);
  return m;
}

const poolTarget = (id: string, ms: ScriptedModel[], slots = 2): Target => ({
  id,
  model: "pool-coder",
  endpoint: ms[0]!.url,
  keyRef: null,
  serving: { engine: "capture", endpoints: ms.map((m) => ({ url: m.url, slots })), slots: slots * ms.length },
  checks: [],
});

beforeAll(async () => {
  engine = await startEngine(undefined, { OCW_POOL_PROBE_MS: "500" });
});

afterAll(async () => {
  await engine?.kill();
  for (const m of models) await m.close().catch(() => undefined);
  cleanup(engine?.stateDir ?? "", ...repos);
});

describe("pool targets", () => {
  it("`ocw setup --capture URL --capture URL --capture URL` makes one pool target; `ocw targets --json` lists its endpoints", async () => {
    const ms = [await endpoint({ slots: 2 }), await endpoint({ slots: 2 }), await endpoint({ slots: 2 })];
    const state = tempDir("pool-state");
    // Async: the endpoints live in this process and must keep answering while the CLI runs.
    const run = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, [BUNDLE, ...args], { env: { ...process.env, OCW_STATE_DIR: state }, timeout: 120_000 }, (err, stdout, stderr) =>
          resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const setup = await run("setup", ...ms.flatMap((m) => ["--capture", m.url]), "--slots", "2", "--accept-underpowered", "--json");
    expect([0, 3], setup.stderr).toContain(setup.status);
    const made = JSON.parse(setup.stdout);
    expect(made.target.serving).toMatchObject({ slots: 6, endpoints: ms.map((m) => ({ url: m.url, slots: 2 })) });
    const listed = await run("targets", "--json");
    expect(listed.status, listed.stderr).toBe(0);
    const t = JSON.parse(listed.stdout).targets.find((x: { id: string }) => x.id === made.target.id);
    expect(
      t.endpoints.map((e: { url: string; healthy: boolean; slots: number; inUse: number }) => ({
        url: e.url,
        healthy: e.healthy,
        slots: e.slots,
        inUse: e.inUse,
      })),
    ).toEqual(ms.map((m) => ({ url: m.url, healthy: true, slots: 2, inUse: 0 })));
    await ms[2]!.close();
    const again = JSON.parse((await run("targets", "--json")).stdout).targets.find((x: { id: string }) => x.id === made.target.id);
    expect(again.endpoints.map((e: { healthy: boolean }) => e.healthy)).toEqual([true, true, false]);
    // Bad input: the same URL twice.
    const twice = await run("setup", "--capture", ms[0]!.url, "--capture", ms[0]!.url, "--json");
    expect(twice.status).toBe(2);
    expect(twice.stderr).toMatch(/twice/);
    // `ocw setup` and `ocw targets` asked the engine they started in this state dir: stopped last, or a later command
    // would start another there.
    await stopDetachedEngine(state);
    cleanup(state);
  }, 240_000);

  it("12 workers on 3 endpoints × 2 slots: never more than an endpoint's slots, each worker on one endpoint; kill -9 of one mid-batch → its workers move; its return is taken back", async () => {
    const ms = [await endpoint({ slots: 2 }), await endpoint({ slots: 2 }), await endpoint({ slots: 2 })];
    await engine.client.targets.save.mutate({ target: poolTarget("pool3", ms), activate: true });
    const repo = makeRepo();
    repos.push(repo);
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: Array.from({ length: 12 }, (_, i) => ({ task: `POOL-${i}`, directory: repo, targetId: "pool3", checks: [{ file: `${i}.txt` }] })),
    });
    // Six start at once (2 per endpoint); hold their asks until the third endpoint dies under its two.
    const victim = ms[2]!;
    const onVictim = await untilState(engine.client, workerIds[0]!, () => true).then(async () => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const ws = await engine.client.workers.list.query();
        const mine = ws.filter((w) => w.endpoint === victim.url && w.state === "waiting-approval");
        if (mine.length === 2 || Date.now() > deadline) return mine.map((w) => w.id);
        await new Promise((r) => setTimeout(r, 200));
      }
    });
    expect(onVictim.length).toBe(2);
    const before = await engine.client.targets.endpoints.query();
    expect(before.find((t) => t.targetId === "pool3")!.endpoints.map((e) => e.inUse)).toEqual([2, 2, 2]);
    await victim.close(); // the server is gone, as after kill -9
    const done = await settle(engine.client, workerIds, () => "once", 300_000);
    expect([...done.values()].map((w) => w.state)).toEqual(Array(12).fill("built"));
    for (const id of onVictim) {
      const events = await engine.client.workers.events.query({ workerId: id });
      const reasons = events.flatMap((e) => (e.type === "worker.state" && e.state === "interrupted" ? [e.reason ?? ""] : []));
      expect(reasons.join(" ")).toMatch(/stopped answering/);
      expect(done.get(id)!.endpoint).not.toBe(victim.url);
    }
    // Live capacity held: no endpoint ever served more requests at once than its slots.
    for (const m of ms) expect(m.maxInFlight()).toBeLessThanOrEqual(2);
    // Stickiness: no session ever moved between the two endpoints that stayed up.
    const sessionsOf = (m: ScriptedModel) => new Set(m.requests.filter((q) => q.kind === "chat" && q.sessionId).map((q) => q.sessionId));
    const [a, b] = [sessionsOf(ms[0]!), sessionsOf(ms[1]!)];
    expect([...a].filter((s) => b.has(s))).toEqual([]);
    // The endpoint comes back on its port: back in admission.
    const back = await endpoint({ slots: 2, port: Number(new URL(victim.url).port) });
    const deadline = Date.now() + 20_000;
    let healthy = false;
    while (!healthy && Date.now() < deadline) {
      const { workerId } = await engine.client.workers.start.mutate({ task: "POOL-99", directory: repo, targetId: "pool3" });
      await settle(engine.client, [workerId], () => "once", 120_000);
      healthy = (await engine.client.targets.endpoints.query()).find((t) => t.targetId === "pool3")!.endpoints[2]!.healthy;
    }
    expect(healthy).toBe(true);
    void back;
  }, 420_000);

  it("a vLLM endpoint whose /metrics shows a queue takes no worker until the queue is gone", async () => {
    const llama = await endpoint({ slots: 1 });
    const vllm = await endpoint({ metrics: "vllm" });
    vllm.setLoad({ waiting: 3, busy: 8 });
    await engine.client.targets.save.mutate({ target: poolTarget("pool-vllm", [llama, vllm], 1), activate: false });
    const repo = makeRepo();
    repos.push(repo);
    const { workerIds } = await engine.client.workers.startBatch.mutate({
      tasks: [0, 1].map((i) => ({ task: `POOL-${100 + i}`, directory: repo, targetId: "pool-vllm" })),
    });
    const first = await untilState(engine.client, workerIds[0]!, (w) => w.state === "waiting-approval", 60_000);
    expect(first.endpoint).toBe(llama.url);
    await new Promise((r) => setTimeout(r, 2000));
    const waiting = await engine.client.workers.get.query({ workerId: workerIds[1]! });
    expect(waiting.state, JSON.stringify({ endpoint: waiting.endpoint, endpoints: await engine.client.targets.endpoints.query() })).toBe("queued");
    vllm.setLoad({ waiting: 0, busy: 0 });
    const second = await untilState(engine.client, workerIds[1]!, (w) => w.state === "waiting-approval", 60_000);
    expect(second.endpoint).toBe(vllm.url);
    await settle(engine.client, workerIds, () => "once", 120_000);
  }, 240_000);
});
