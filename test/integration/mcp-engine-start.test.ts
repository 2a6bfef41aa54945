// With no engine running, the first tool call of `ocw mcp` starts one (detached) that every other client then finds.
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { connect } from "../../engine/api/client";
import { readLock } from "../../engine/api/lock";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, scriptedTarget, startEngine, stopDetachedEngine, tempDir } from "../helpers";
import { startMcp, waitUntil, type McpHandle } from "./mcp-helpers";

const stateDir = tempDir("mcp-start");
let model: ScriptedModel | undefined;
/** One scripted model for every test in this file, whichever runs first (each used to start it with its own scripts). */
const theModel = async () =>
  (model ??= await startScriptedModel({
    scripts: [
      { match: /MCP-START/, script: (ctx) => (ctx.turnStep === 0 ? writeFile("s.txt", "s\n") : { text: "OUTCOME: built" }) },
      { match: /MCP-HANG/, script: () => ({ hang: true, textBeforeHang: "thinking" }) },
    ],
  }));
let mcp: McpHandle | undefined;
const repos: string[] = [];

/** Pids of engine processes (`ocw serve`, not supervisors or their loaded standbys) on this state dir (Linux /proc). */
function enginesOn(dir: string): number[] {
  const pids: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((n) => /^\d+$/.test(n));
  } catch {
    return pids;
  }
  for (const pid of entries) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!cmd.some((a) => a.endsWith("ocw.mjs")) || !cmd.includes("serve")) continue;
      if ((cmd.includes("--background") && !cmd.includes("--supervised")) || cmd.includes("--standby")) continue;
      if (readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`OCW_STATE_DIR=${dir}`)) pids.push(Number(pid));
    } catch {
      /* gone or not ours */
    }
  }
  return pids;
}

afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await stopDetachedEngine(stateDir);
  await model?.close();
  cleanup(stateDir, ...repos);
});

describe("ocw mcp without a running engine", () => {
  it("starts the engine on first use, works through it, and leaves it running for other clients after the bridge exits", async () => {
    expect(readLock(stateDir)).toBeNull();
    mcp = await startMcp(stateDir, "mcp-starter");
    // Starting the bridge alone starts nothing: the engine comes with the first call.
    expect(readLock(stateDir)).toBeNull();
    const s = await mcp.call("setup_status");
    expect(s).toMatchObject({ ready: false, activeTarget: null });
    expect(s.problem).toMatch(/no active target/);
    const lock = readLock(stateDir)!;
    expect(lock).toBeTruthy();
    expect(s.engine.pid).toBe(lock.pid);
    expect(mcp.stderr()).toMatch(/started the engine/);
    if (process.platform === "linux") expect(enginesOn(stateDir)).toEqual([lock.pid]);

    // A delegate without a target says how to get one.
    const dir = makeRepo();
    repos.push(dir);
    expect(await mcp.fail("delegate", { task: "x", directory: dir })).toMatch(/no active target/);

    // An API client (as the GUI) saves a target on the same engine; the bridge then delegates through it.
    const m = await theModel();
    const api = connect(lock, "gui:test");
    await api.targets.save.mutate({ target: scriptedTarget(m.url, 2), activate: true });
    expect((await mcp.call("setup_status")).ready).toBe(true);
    const d = await mcp.call("delegate", { task: "MCP-START write s.txt", directory: dir, checks: [{ file: "s.txt", equals: "s" }] });
    const w = await waitUntil(mcp, { workerId: d.workerId }, (r) => r.pending.length > 0);
    await mcp.call("approve", { askId: w.pending[0].askId, decision: "once" });
    const done = await waitUntil(mcp, { workerId: d.workerId }, (r) => r.settled);
    expect(done.state).toBe("built");
    expect((await mcp.call("workers", {})).workers.map((x: any) => x.workerId)).toEqual([d.workerId]);

    // The bridge exits with its client; the engine (and the worker record) stay for the GUI and other clients.
    await mcp.close();
    mcp = undefined;
    await new Promise((r) => setTimeout(r, 500));
    const still = readLock(stateDir)!;
    expect(still.pid).toBe(lock.pid);
    expect((await api.workers.list.query()).map((x) => x.id)).toEqual([d.workerId]);

    // A new bridge attaches to the same engine rather than starting another.
    mcp = await startMcp(stateDir, "mcp-second");
    expect((await mcp.call("setup_status")).engine.pid).toBe(lock.pid);
    expect(mcp.stderr()).not.toMatch(/started the engine/);

    // The engine stops (`ocw stop`); the bridge's next call finds none, starts a fresh one and carries on.
    await api.shutdown.mutate();
    const deadline = Date.now() + 15_000;
    while (readLock(stateDir) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(readLock(stateDir)).toBeNull();
    const after = await mcp.call("workers", {});
    const fresh = readLock(stateDir)!;
    expect(fresh.pid).not.toBe(lock.pid);
    expect(after.workers.map((x: any) => x.workerId)).toEqual([d.workerId]); // recovered from the state dir
    // It saw the lock gone before sending anything to the old port.
    expect(mcp.stderr()).toMatch(/the engine \(pid \d+\) is gone; finding it again/);
    // Two calls noticed the loss at once (workers lists and reads status in parallel): still only one engine.
    if (process.platform === "linux") expect(enginesOn(stateDir)).toEqual([fresh.pid]);
  });
});

describe("ocw mcp when the engine dies under it", () => {
  for (const signal of ["SIGKILL", "SIGINT"] as const) {
    it(`an engine run in a terminal (\`ocw serve\`) that ends by ${signal} while a wait streams does not hang the wait: it returns within its timeout`, async () => {
      const dir = tempDir("mcp-dies");
      const engine = await startEngine(dir);
      const bridge = await startMcp(dir, "mcp-dies");
      const repo = makeRepo();
      repos.push(dir, repo);
      try {
        const m = await theModel();
        await engine.client.targets.save.mutate({ target: scriptedTarget(m.url, 2), activate: true });
        const d = await bridge.call("delegate", { task: "MCP-START write s.txt", directory: repo, checks: [{ file: "s.txt", equals: "s" }] });
        await waitUntil(bridge, { workerId: d.workerId }, (r) => r.pending.length > 0);
        // A worker still at work: the wait on both waits for news (with only the ask it was shown, it would answer at once).
        const h = await bridge.call("delegate", { task: "MCP-HANG think", directory: repo, checks: [{ file: "never.txt" }] });
        const t0 = Date.now();
        // With a progress token the bridge waits on the engine's event stream (which, left alone, reconnects forever).
        const waiting = bridge.client.callTool({ name: "wait", arguments: { workerIds: [d.workerId, h.workerId], timeoutSec: 8 } }, undefined, {
          timeout: 60_000,
          onprogress: () => undefined,
        });
        await new Promise((r) => setTimeout(r, 1500));
        await engine.kill(signal);
        const r = await waiting;
        expect(Date.now() - t0).toBeLessThan(45_000);
        // Either the engine the bridge starts again answers (the worker was interrupted), or the bridge says what happened.
        if (r.isError) expect((r.content as { text: string }[])[0]!.text).toMatch(/engine/);
        else expect((r.structuredContent as { counts: Record<string, number> }).counts).toEqual({ interrupted: 2 });
      } finally {
        await bridge.close().catch(() => undefined);
        await engine.kill();
        await stopDetachedEngine(dir);
      }
    });
  }

  for (const streamed of [true, false]) {
    it(`a wait${streamed ? " streaming its progress" : ""} when \`ocw stop\` stops the engine ends saying so, and does not start the engine again; the next call does`, async () => {
      const dir = tempDir("mcp-stopped");
      const engine = await startEngine(dir);
      const bridge = await startMcp(dir, "mcp-stopped");
      const repo = makeRepo();
      repos.push(dir, repo);
      try {
        const m = await theModel();
        await engine.client.targets.save.mutate({ target: scriptedTarget(m.url, 2), activate: true });
        const d = await bridge.call("delegate", { task: "MCP-HANG think", directory: repo, checks: [] });
        const first = readLock(dir)!.pid;
        const waiting = bridge.client.callTool({ name: "wait", arguments: { workerId: d.workerId, timeoutSec: 20 } }, undefined, {
          timeout: 60_000,
          ...(streamed ? { onprogress: () => undefined } : {}),
        });
        await new Promise((r) => setTimeout(r, 1500));
        const stop = await runOcw(dir, ["stop"], 30_000);
        expect(stop.stderr).toContain("engine stopped");
        const r = await waiting;
        expect(r.isError).toBe(true);
        expect((r.content as { text: string }[])[0]!.text).toMatch(/^the engine was stopped \(`ocw stop`\) while this call waited/);
        // Nothing started it again behind the person's back.
        await new Promise((r) => setTimeout(r, 1000));
        expect(readLock(dir)).toBeNull();
        // The next call is a new request: it starts the engine, and the worker is interrupted, to be resumed.
        const after = await bridge.call("workers", {});
        expect(readLock(dir)!.pid).not.toBe(first);
        expect(after.workers.map((x: any) => [x.workerId, x.state])).toEqual([[d.workerId, "interrupted"]]);
      } finally {
        await bridge.close().catch(() => undefined);
        await engine.kill();
        await stopDetachedEngine(dir);
      }
    });
  }

  it("after `ocw stop`, the bridge's next call sends nothing to the old port (another local process may hold it now): it finds or starts the engine first", async () => {
    const dir = tempDir("mcp-squat");
    const engine = await startEngine(dir);
    const bridge = await startMcp(dir, "mcp-squat");
    repos.push(dir);
    const seen: string[] = [];
    const squatter = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
      res.end("<!doctype html>not the engine");
    });
    try {
      expect((await bridge.call("setup_status")).engine.pid).toBe(readLock(dir)!.pid);
      const old = readLock(dir)!;
      const stop = await runOcw(dir, ["stop"], 30_000);
      expect(stop.stderr).toContain("engine stopped");
      await new Promise<void>((resolve, reject) => squatter.once("error", reject).listen(old.port, "127.0.0.1", () => resolve()));
      const after = await bridge.call("workers", {});
      expect(after.workers).toEqual([]);
      expect(seen).toEqual([]);
      const fresh = readLock(dir)!;
      expect(fresh.port).not.toBe(old.port);
      expect(fresh.token).not.toBe(old.token);
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
      await bridge.close().catch(() => undefined);
      await engine.kill();
      await stopDetachedEngine(dir);
    }
  });

  it("`ocw wait --until-ask-or-settled` in the background ends with a line when the engine it watches ends, instead of waiting out its timeout", async () => {
    const dir = tempDir("ocw-wait-dies");
    const engine = await startEngine(dir);
    const repo = makeRepo();
    repos.push(dir, repo);
    try {
      const m = await theModel();
      await engine.client.targets.save.mutate({ target: scriptedTarget(m.url, 2), activate: true });
      const { workerId } = await engine.client.workers.start.mutate({ task: "MCP-HANG think", directory: repo, checks: [] } as never);
      const t0 = Date.now();
      const waiting = runOcw(dir, ["wait", "--until-ask-or-settled", "--worker", workerId, "--timeout", "600"], 90_000);
      await new Promise((r) => setTimeout(r, 2500));
      await engine.kill("SIGINT");
      const r = await waiting;
      expect(Date.now() - t0, r.stdout + r.stderr).toBeLessThan(30_000);
      expect(r.code, r.stdout + r.stderr).not.toBe(0);
      expect(r.stdout).toMatch(/^ocw: lost the engine/);
      expect(r.stdout.trim().split("\n")).toHaveLength(1);
    } finally {
      await engine.kill();
      await stopDetachedEngine(dir);
    }
  });
});
