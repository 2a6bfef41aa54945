/**
 * The model-setup CLI as a real process (the real `dist/ocw.mjs` bundle): exit codes, one-line errors,
 * `ocw setup` on a real llama-server with a detached supervisor that restarts the server after kill -9.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { BUNDLE, pidAlive, stopDetachedEngine } from "../helpers";
import { vocabDirFor, writeTinyModels } from "../fixtures/gguf/writer";

const BIN = process.env.LLAMA_SERVER;
const VOCAB = vocabDirFor(BIN);
const SKIP = !BIN
  ? "LLAMA_SERVER is unset: build it with scripts/build-llama-server.sh and export LLAMA_SERVER=<path>"
  : !VOCAB
    ? `no llama.cpp test vocabularies next to ${BIN}`
    : null;
const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-cli-"));
const bundle = BUNDLE;
const state = path.join(tmp, "state");
const run = promisify(execFile);

async function ocw(args: string[], env: NodeJS.ProcessEnv = {}, timeout = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [bundle, ...args], { env: { ...process.env, OCW_STATE_DIR: state, ...env }, timeout });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code: number; stdout: string; stderr: string };
    return { code: x.code, stdout: x.stdout, stderr: x.stderr };
  }
}

afterAll(async () => {
  await ocw(["serving", "stop"]);
  // fit, targets, doctor, target use and serving stop ask the engine, started in this state dir by the first of them
  await stopDetachedEngine(state);
});

describe("ocw (model setup commands) as a process", () => {
  it("bad input → exit 2 and one line on stderr", async () => {
    for (const args of [
      ["fit", "--slots", "0"],
      ["fit", "--metadata", "/nope.json"],
      ["setup", "--runtime", "llama.cpp", "--model", "/nope.gguf", "--slots", "1"],
      ["setup", "--capture", "http://127.0.0.1:9"],
      ["target", "use", "nope"],
      ["fit", "--bogus"],
    ]) {
      const r = await ocw(args, { LLAMA_SERVER: BIN ?? process.execPath });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr.trim().split("\n")[0], args.join(" ")).toMatch(/^(ocw: |error: )/);
    }
  });
  it("ocw targets / doctor work on an empty state dir", async () => {
    expect((await ocw(["targets", "--json"])).stdout).toContain('"targets": []');
    const d = await ocw(["doctor", "--json"]);
    expect(d.code).toBe(0);
    expect(JSON.parse(d.stdout).hardware.ram.totalBytes).toBeGreaterThan(0);
  });
  it("doctor without a llama-server says where the engine looked and that `ocw setup` installs one (not a script only a checkout has)", async () => {
    const home = mkdtempSync(path.join(tmp, "home-"));
    const st = path.join(tmp, "state-nollama");
    const env = { OCW_STATE_DIR: st, HOME: home, OCW_LLAMA_CACHE: home, LLAMA_SERVER: "", PATH: `${path.dirname(process.execPath)}:/usr/bin:/bin` };
    try {
      const r = await ocw(["doctor"], env);
      expect(r.code, r.stderr).toBe(0);
      const line = r.stdout.split("\n").find((l) => l.startsWith("llama-server"))!;
      expect(line).toMatch(/not found .*`ocw setup` installs a pinned llama\.cpp release/);
      expect(line).not.toMatch(/scripts\//);
      // this shell's LLAMA_SERVER is not the running engine's (started without one): said, with how to restart it
      const mine = await ocw(["doctor"], { ...env, LLAMA_SERVER: process.execPath });
      expect(mine.stdout.split("\n").find((l) => l.startsWith("llama-server"))).toMatch(/not found/);
      expect(mine.stdout).toContain(
        `note       this shell's LLAMA_SERVER (${process.execPath}) is not the engine's (unset): the engine's environment is the one that counts.`,
      );
      expect(mine.stdout).toContain(`\`LLAMA_SERVER=${process.execPath} ocw doctor\``);
    } finally {
      await stopDetachedEngine(st);
    }
  });

  it("setup → underpowered (exit 3); kill -9 of the server → the supervisor restarts it; serving stop", async (ctx) => {
    if (SKIP) return ctx.skip(SKIP);
    const models = await writeTinyModels(tmp, VOCAB!);
    const r = await ocw(
      ["setup", "--runtime", "llama.cpp", "--model", models.lfm2, "--slots", "2", "--ctx", "8192", "--llama-server", BIN!, "--yes", "--json"],
      { OCW_SUPERVISOR_CMD: JSON.stringify([process.execPath, bundle]) },
      170_000,
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(3);
    const j = JSON.parse(r.stdout);
    expect(j.outcome).toBe("underpowered");
    const rec = () => JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8"))[0];
    const first = rec();
    expect(first.supervisorPid).toBeGreaterThan(0);
    expect(first.pid).toBe(j.server.pid);
    process.kill(first.pid, "SIGKILL");
    const t0 = Date.now();
    let now = rec();
    while (Date.now() - t0 < 20_000 && (now.pid === first.pid || !now.restarts)) {
      await new Promise((res) => setTimeout(res, 100));
      now = rec();
    }
    expect(now.pid).not.toBe(first.pid);
    expect(now.restarts).toBe(1);
    expect((await fetch(`http://127.0.0.1:${first.port}/health`)).status).toBe(200);
    const key = readFileSync(j.target.keyFile, "utf8").trim();
    expect((await fetch(`http://127.0.0.1:${first.port}/props`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    console.log(`restarted: pid ${first.pid} → ${now.pid} in ${Date.now() - t0} ms`);
    const s = await ocw(["serving", "stop"]);
    expect(s.code).toBe(0);
    expect(pidAlive(now.pid)).toBe(false);
    expect(pidAlive(first.supervisorPid)).toBe(false);
  }, 300_000);
});
