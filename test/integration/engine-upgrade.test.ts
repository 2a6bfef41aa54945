// Engines outlive their clients: after a plugin update the new bridge (or `ocw`) finds the engine the old one started.
// An engine older than the client is replaced by the client's own once no worker is at work on it (same port and
// token, so open tabs reconnect), kept while workers are (the client says so once), and a newer engine, or another
// build of the same version, is used as it is (two installs never replace each other's engine back and forth).
// An "old install" here is what a plugin install is: the real bundle in dist/, a .claude-plugin/plugin.json beside it
// giving its version (engine/api/build-info.ts reads it there), and the runtime it needs (protocol/, packs/, …).
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../engine/api/client";
import { ensureEngine } from "../../engine/api/launcher";
import { lastStop, readLock } from "../../engine/api/lock";
import { startScriptedModel, type ScriptedModel } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, pidAlive, ROOT, runOcw, scriptedTarget, stopDetachedEngine, tempDir, untilState } from "../helpers";
import { startMcp } from "./mcp-helpers";

const CURRENT = JSON.parse(readFileSync(path.join(ROOT, "plugin", ".claude-plugin", "plugin.json"), "utf8")).version as string;
const dirs: string[] = [];
let model: ScriptedModel;

/** An install of version `version` (the real bundle, `extra` appended to make another build of it). Its bundle path. */
function install(version: string, extra = ""): string {
  const root = tempDir(`install-${version}`);
  dirs.push(root);
  mkdirSync(path.join(root, "dist"));
  mkdirSync(path.join(root, ".claude-plugin"));
  copyFileSync(BUNDLE, path.join(root, "dist", "ocw.mjs"));
  if (extra) writeFileSync(path.join(root, "dist", "ocw.mjs"), readFileSync(BUNDLE, "utf8") + extra);
  writeFileSync(path.join(root, ".claude-plugin", "plugin.json"), JSON.stringify({ name: "opencode-worker", version }));
  copyFileSync(path.join(ROOT, "package.json"), path.join(root, "package.json"));
  for (const d of ["protocol", "packs", "skills", "node_modules"]) symlinkSync(path.join(ROOT, d), path.join(root, d));
  symlinkSync(path.join(ROOT, "dist", "ui"), path.join(root, "dist", "ui"));
  return path.join(root, "dist", "ocw.mjs");
}

/** The engine's /health (its build: version and bundle hash). */
async function engineHealth(lock: { port: number; token: string }): Promise<{ pid: number; build?: { version: string | null; id: string } }> {
  const res = await fetch(`http://127.0.0.1:${lock.port}/health`, { headers: { authorization: `Bearer ${lock.token}` } });
  return (await res.json()) as never;
}

/** Starts the engine as a client of `bundle` would (detached, under its supervisor). */
async function engineOf(stateDir: string, bundle: string) {
  return ensureEngine(stateDir, { timeoutMs: 40_000, command: { node: process.execPath, bundle } });
}

/** `ocw ARGS` of another install's bundle. */
function ocwOf(bundle: string, stateDir: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [bundle, ...args], { env: { ...process.env, OCW_STATE_DIR: stateDir }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout!.on("data", (b) => (stdout += b));
    p.stderr!.on("data", (b) => (stderr += b));
    p.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  model = await startScriptedModel({ scripts: [{ match: /UPGRADE-HANG/, script: () => ({ hang: true, textBeforeHang: "working" }) }] });
});

afterAll(async () => {
  for (const d of dirs) await stopDetachedEngine(d).catch(() => undefined);
  await model?.close();
  cleanup(...dirs);
});

describe("a client finds an engine older than itself", () => {
  it("with no worker at work: replaces it with its own on the same port and token, and the call succeeds on the new one", async () => {
    const old = install("0.1.1");
    const stateDir = tempDir("upgrade-idle");
    dirs.push(stateDir);
    const before = await engineOf(stateDir, old);
    expect((await engineHealth(before))?.build?.version).toBe("0.1.1");
    const mcp = await startMcp(stateDir, "upgrade-idle");
    try {
      const s = await mcp.call("setup_status");
      const after = readLock(stateDir)!;
      expect(after.pid).not.toBe(before.pid);
      expect(s.engine.pid).toBe(after.pid);
      // the release the engine runs, not the package's version
      expect(s.engine.version).toBe(CURRENT);
      expect([after.port, after.token]).toEqual([before.port, before.token]);
      expect((await engineHealth(after))?.build?.version).toBe(CURRENT);
      expect(pidAlive(before.pid)).toBe(false);
      expect(s.warnings.join(" ")).not.toMatch(/running engine is/);
      // the old engine's stop was a replacement, recorded as such
      expect(lastStop(stateDir)?.pid).toBe(before.pid);
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("with a worker at work: keeps it and says so once (CLI on stderr, bridge in setup_status); once the worker is at rest the next call replaces it", async () => {
    const old = install("0.1.1");
    const stateDir = tempDir("upgrade-busy");
    dirs.push(stateDir);
    const before = await engineOf(stateDir, old);
    const api = connect(before, "gui:test");
    await api.targets.save.mutate({ target: scriptedTarget(model.url, 2), activate: true });
    const repo = makeRepo();
    dirs.push(repo);
    const { workerId } = await api.workers.start.mutate({ task: "UPGRADE-HANG", directory: repo, checks: [{ file: "README.md" }] });
    await untilState(api, workerId, (w) => w.state === "running", 60_000);

    const cli = await runOcw(stateDir, ["list"]);
    expect(cli.code).toBe(0);
    expect(cli.stderr).toContain(`the running engine is 0.1.1, this ocw ${CURRENT}`);
    expect(cli.stderr).toMatch(/replaced once no worker is at work, or now with `ocw stop`/);
    expect(readLock(stateDir)!.pid).toBe(before.pid);

    const mcp = await startMcp(stateDir, "upgrade-busy");
    try {
      const s = await mcp.call("setup_status");
      expect(s.engine.pid).toBe(before.pid);
      expect(s.warnings.join(" ")).toContain(`the running engine is 0.1.1, this bridge ${CURRENT}`);
      // said once: the next answer's next does not repeat it
      const ws = await mcp.call("workers", {});
      expect(JSON.stringify(ws)).not.toMatch(/running engine is/);
      expect(readLock(stateDir)!.pid).toBe(before.pid);

      // The worker comes to rest: the bridge's next call replaces the engine.
      await api.workers.stop.mutate({ workerId });
      await untilState(api, workerId, (w) => w.state === "stopped", 30_000);
      const later = await mcp.call("workers", {});
      const after = readLock(stateDir)!;
      expect(after.pid).not.toBe(before.pid);
      expect([after.port, after.token]).toEqual([before.port, before.token]);
      expect((await engineHealth(after))?.build?.version).toBe(CURRENT);
      expect(later.workers.map((w: any) => w.workerId)).toEqual([workerId]);
    } finally {
      await mcp.close();
    }
  }, 180_000);
});

describe("a client finds an engine as new as itself or newer", () => {
  it("uses a newer engine as it is, and two installs of different versions used alternately never replace each other's", async () => {
    const newer = install("9.9.9");
    const old = install("0.1.1");
    const stateDir = tempDir("upgrade-newer");
    dirs.push(stateDir);
    const engine = await engineOf(stateDir, newer);
    expect((await engineHealth(engine)).build?.version).toBe("9.9.9");
    for (const bundle of [BUNDLE, old, BUNDLE, old]) {
      const r = await ocwOf(bundle, stateDir, ["list"]);
      expect(r.code).toBe(0);
      expect(r.stderr).not.toMatch(/running engine is|replacing/);
      expect(readLock(stateDir)!.pid).toBe(engine.pid);
    }
  }, 120_000);

  it("`ocw --version`, the engine's /health build and its lock name the install's release", async () => {
    const b = install("9.8.7");
    const stateDir = tempDir("upgrade-version");
    dirs.push(stateDir);
    expect((await ocwOf(b, stateDir, ["--version"])).stdout.trim()).toBe("9.8.7");
    expect((await ocwOf(BUNDLE, stateDir, ["--version"])).stdout.trim()).toBe(CURRENT);
    const engine = await engineOf(stateDir, b);
    expect((await engineHealth(engine)).build?.version).toBe("9.8.7");
    expect(readLock(stateDir)!.version).toBe("9.8.7");
  }, 120_000);

  it("an engine of the current version started by another build of it is used as it is (and the build ids differ)", async () => {
    const other = install(CURRENT, "\n// another build of the same version\n");
    const stateDir = tempDir("upgrade-same");
    dirs.push(stateDir);
    const engine = await engineOf(stateDir, other);
    for (let i = 0; i < 2; i++) {
      const r = await runOcw(stateDir, ["list"]);
      expect(r.code).toBe(0);
      expect(r.stderr).not.toMatch(/running engine is|replacing/);
      expect(readLock(stateDir)!.pid).toBe(engine.pid);
    }
    const h = await engineHealth(engine);
    expect(h?.build?.version).toBe(CURRENT);
    expect(h?.build?.id).toMatch(/^[0-9a-f]{12}$/);
  }, 120_000);
});
