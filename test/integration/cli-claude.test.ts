// The CLI made for Claude Code, run on the real bundle (against
// the real engine, opencode and the scripted model): `ocw wait --until-ask-or-settled` (a push channel: one line when
// a worker asks or settles), `ocw gui --url` (the dashboard URL, non-blocking) and the plugin's hooks.
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, type ScriptedModel, writesAsTold } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, ROOT, runOcw, scriptedTarget, startEngine, tempDir, untilAsk, type TestEngine } from "../helpers";

const run = promisify(execFile);
let model: ScriptedModel;
let engine: TestEngine;
const dirs: string[] = [];

/** `ocw …` on the test engine's state dir, in `cwd`, with `stdin` (hooks read Claude Code's JSON there). */
async function ocw(args: string[], o: { cwd?: string; stdin?: string } = {}) {
  const p = run(process.execPath, [BUNDLE, ...args], { cwd: o.cwd ?? ROOT, env: { ...process.env, OCW_STATE_DIR: engine.stateDir }, timeout: 120_000 });
  p.child.stdin?.end(o.stdin ?? "");
  try {
    const r = await p;
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

beforeAll(async () => {
  model = await startScriptedModel({ scripts: [writesAsTold("CLI-WRITE")] });
  engine = await startEngine();
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...dirs);
});

describe("ocw for Claude Code", () => {
  it("ocw gui --url prints the running engine's dashboard URL and returns", async () => {
    const r = await ocw(["gui", "--url"]);
    expect(r.code).toBe(0);
    const lock = JSON.parse(readFileSync(path.join(engine.stateDir, "engine.json"), "utf8"));
    expect(r.stdout.trim()).toBe(`http://127.0.0.1:${lock.port}/?token=${lock.token}`);
    expect((await fetch(r.stdout.trim())).status).toBe(200);
  });

  it("ocw gui where the desktop's opener opens no browser (xdg-open exits 3, or exits 0 saying so): the URL, then one line saying to open it by hand (it said nothing)", async () => {
    const bin = tempDir("gui-opener");
    dirs.push(bin);
    const called = path.join(bin, "called");
    const gui = async (body: string) => {
      writeFileSync(path.join(bin, "xdg-open"), `#!/bin/sh\necho "$@" >> "${called}"\n${body}\n`, { mode: 0o755 });
      return runOcw(engine.stateDir, ["gui"], 60_000, { PATH: `${bin}:${process.env.PATH}` });
    };
    const lock = JSON.parse(readFileSync(path.join(engine.stateDir, "engine.json"), "utf8"));
    const url = `http://127.0.0.1:${lock.port}/?token=${lock.token}`;
    // as the real xdg-open in a headless box: "xdg-open: no method available for opening '…'", exit 3
    const headless = await gui(`echo "xdg-open: no method available for opening '$1'" >&2; exit 3`);
    expect(headless.code, headless.stderr).toBe(0);
    expect(headless.stdout.trim()).toBe(url);
    expect(headless.stderr.trim()).toMatch(
      /^ocw: no browser opened \(xdg-open exited 3: xdg-open: no method available for opening '.*gui\.html'\): open the URL above in a browser by hand$/,
    );
    // the opener was handed the private page, never the token
    expect(readFileSync(called, "utf8")).toMatch(/gui\.html/);
    expect(readFileSync(called, "utf8")).not.toContain(lock.token);
    const failed = await gui(`exit 4`);
    expect(failed.stderr.trim()).toBe("ocw: no browser opened (xdg-open exited 4): open the URL above in a browser by hand");
    const saysSo = await gui(`echo "xdg-open: no method available for opening '$1'" >&2; exit 0`);
    expect(saysSo.stderr.trim()).toMatch(/^ocw: no browser opened \(xdg-open: xdg-open: no method available .*\): open the URL above in a browser by hand$/);
    // a browser that opened: nothing more than the URL
    const opened = await gui("exit 0");
    expect(opened.code).toBe(0);
    expect(opened.stdout.trim()).toBe(url);
    expect(opened.stderr).toBe("");
  });

  it("ocw wait --until-ask-or-settled prints one line on the worker's ask, then on its verdict; the hooks summarise and hold back a stop", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    // Before anything runs on the repository: the hooks stay silent.
    expect((await ocw(["hook", "session-start"], { stdin: JSON.stringify({ cwd: dir, hook_event_name: "SessionStart" }) })).stdout).toBe("");

    const { workerId } = await engine.client.workers.start.mutate({
      task: "CLI-WRITE file=c.txt text=c",
      directory: dir,
      checks: [{ file: "c.txt", equals: "c" }],
      scope: ["c.txt"],
      protect: [],
      budget: {},
    } as any);
    const asked = await ocw(["wait", "--until-ask-or-settled", "--worker", workerId]);
    expect(asked.code, asked.stderr).toBe(0);
    const lines = asked.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^ocw: ${workerId} asks edit \\(untrusted: "c\\.txt"\\); answer with approve \\{"askId":"[^"]+"\\} — worker ${workerId}: 1 ask waiting, 0/1 settled \\(0 built\\)$`,
      ),
    );

    // In the repository, with an ask open: the session summary names it; a stop is held back once, with the reason.
    const start = await ocw(["hook", "session-start"], { stdin: JSON.stringify({ cwd: path.join(dir), hook_event_name: "SessionStart" }) });
    expect(start.stdout.trim()).toMatch(/^opencode-worker on this repository: 1 worker waits for an answer/);
    const stop = await ocw(["hook", "stop"], { stdin: JSON.stringify({ cwd: dir, stop_hook_active: false }) });
    expect(JSON.parse(stop.stdout)).toMatchObject({
      decision: "block",
      reason: expect.stringMatching(/^1 opencode-worker ask on this repository is unanswered/),
    });
    expect((await ocw(["hook", "stop"], { stdin: JSON.stringify({ cwd: dir, stop_hook_active: true }) })).stdout).toBe("");
    // Elsewhere: nothing.
    const other = makeRepo();
    dirs.push(other);
    expect((await ocw(["hook", "stop"], { stdin: JSON.stringify({ cwd: other }) })).stdout).toBe("");

    const w = await untilAsk(engine.client, workerId);
    await engine.client.approvals.decide.mutate({ askId: w.asks.find((a) => a.status === "pending")!.id, decision: "once" });
    const settled = await ocw(["wait", "--until-ask-or-settled", "--worker", workerId]);
    expect(settled.stdout.trim()).toMatch(new RegExp(`^ocw: all settled — worker ${workerId}: 0 asks waiting, 1/1 settled \\(1 built\\)$`));
    const later = await ocw(["hook", "session-start"], { stdin: JSON.stringify({ cwd: dir }) });
    expect(later.stdout.trim()).toMatch(/1 finished since the last session \(1 built\)/);
    // Seen once: the next session start has nothing new to say.
    expect((await ocw(["hook", "session-start"], { stdin: JSON.stringify({ cwd: dir }) })).stdout).toBe("");
    expect((await ocw(["hook", "stop"], { stdin: JSON.stringify({ cwd: dir }) })).stdout).toBe("");
  });

  it("ocw wait with no engine running says so instead of starting one, with exit 3 (2 is a timeout to whoever waits)", async () => {
    const r = await run(process.execPath, [BUNDLE, "wait", "--until-ask-or-settled"], {
      env: { ...process.env, OCW_STATE_DIR: path.join(engine.stateDir, "nowhere") },
    }).catch((e) => e);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/no engine is running/);
  });
});
