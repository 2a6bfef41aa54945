// `ocw run` exactly as the contract in issue 2 states it: flags, --json shape, exit codes, one-line errors.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../engine/api/client";
import { readLock } from "../../engine/api/lock";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, type OcwRun, ocwRunArgs, stopDetachedEngine, tempDir } from "../helpers";

let model: ScriptedModel;
const stateDir = tempDir("cli-state");
const repos: string[] = [];

function ocw(args: string[], opts: { stdin?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, [BUNDLE, ...args], {
      env: { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600", ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b) => (stdout += b));
    p.stderr.on("data", (b) => (stderr += b));
    if (opts.stdin !== undefined) p.stdin.end(opts.stdin);
    const t = setTimeout(() => p.kill("SIGKILL"), opts.timeoutMs ?? 150_000);
    p.on("exit", (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The run the model writes cli.txt for, in `dir`, checked by the file being there. */
const cliWrite = (dir: string): OcwRun => ({ dir, task: "CLI-WRITE: create cli.txt", check: "test -f cli.txt", endpoint: model.url });

const repo = () => {
  const r = makeRepo();
  repos.push(r);
  return r;
};

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      {
        name: "cli",
        match: /CLI-WRITE/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("cli.txt", "from cli\n") : { text: "MILESTONE: wrote cli.txt\nOUTCOME: built" }),
      },
      {
        name: "cli-hang",
        match: /CLI-HANG/,
        // First turn: the model hangs (the worker is mid-request when the engine stops). Resumed: do the task.
        script: (c) =>
          c.userTexts.length === 1
            ? { hang: true, textBeforeHang: "working" }
            : c.turnStep === 0
              ? writeFile("hang.txt", "done\n")
              : { text: "OUTCOME: built" },
      },
      {
        name: "cli-batch",
        match: /CLI-BATCH-(\w)/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile(`${/CLI-BATCH-(\w)/.exec(ctx.firstUserText)![1]}.txt`, "b\n") : { text: "OUTCOME: built" }),
      },
    ],
  });
});

afterAll(async () => {
  await stopDetachedEngine(stateDir);
  await model?.close();
  cleanup(stateDir, ...repos);
});

describe("ocw run", () => {
  it("--approve once --json: built, exit 0, the result has the contract's fields; the engine started itself", async () => {
    const dir = repo();
    const r = await ocw(ocwRunArgs(cliWrite(dir), "--scope", "*.txt", "--approve", "once", "--json"));
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ verdict: "built", claim: "built", honest: true, scope: { passed: true, violations: [] } });
    expect(out.workerId).toMatch(/^w-/);
    expect(out.sessionId).toMatch(/^ses_/);
    expect(out.checks).toEqual([{ name: "test -f cli.txt", passed: true, exitCode: 0, output: "" }]);
    expect(out.approvals).toEqual([
      expect.objectContaining({ tool: "edit", what: expect.stringContaining("cli.txt"), decision: "once", by: expect.objectContaining({ kind: "cli" }) }),
    ]);
    expect(Array.isArray(out.events) && out.events.length > 3).toBe(true);
    expect(r.stderr).toContain("MILESTONE: wrote cli.txt");
    expect(readLock(stateDir)).not.toBeNull();
  });

  it("Ctrl-C while a run follows its worker: it says the worker keeps running in the engine and how to follow or stop it (exit 130)", async () => {
    const dir = repo();
    const p = spawn(process.execPath, [BUNDLE, ...ocwRunArgs({ dir, task: "CLI-HANG ctrl-c", check: "true", endpoint: model.url }, "--approve", "always")], {
      env: { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600" },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    const running = new Promise<void>((resolve) =>
      p.stderr.on("data", (b) => {
        stderr += b;
        // Once it says it started, Ctrl-C is its own (the worker may be running before the run follows it).
        if (/ocw: started w-/.test(stderr)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => p.on("exit", (code) => resolve(code)));
    // Bounded, so a run that never gets there fails here with what it printed (and is killed), not at the test's timeout.
    const late = new Promise<never>((_, reject) =>
      setTimeout(() => {
        p.kill("SIGKILL");
        reject(new Error(`ocw run never said it started: ${stderr}`));
      }, 120_000).unref(),
    );
    await Promise.race([running, late]);
    p.kill("SIGINT");
    expect(await exited).toBe(130);
    const workerId = /ocw: started (w-[a-z0-9]+)/.exec(stderr)![1]!;
    expect(stderr).toContain(`ocw: detached: ${workerId} keeps running in the engine`);
    expect(stderr).toContain(`ocw cancel ${workerId}`);
    const listed = await ocw(["list", "--state", "queued,starting,running"]);
    expect(listed.stdout).toContain(workerId);
    expect((await ocw(["cancel", workerId])).code).toBe(0);
  });

  it("a checkout with uncommitted changes: the run says the worker starts from the last commit without them", async () => {
    const dir = repo();
    writeFileSync(path.join(dir, "README.md"), "# edited, not committed\n");
    const runIn = (where: string) => ocw(ocwRunArgs(cliWrite(where), "--approve", "always"));
    const r = await runIn(dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /ocw: warning: .*: your checkout has 1 uncommitted change \(README\.md\): the worker starts from the last commit and does not see them/,
    );
    const clean = await runIn(repo());
    expect(clean.stderr).not.toMatch(/uncommitted/);
  });

  it("--approve ask reads y/a/n from the terminal; n rejects → honest-failure, exit 1", async () => {
    const dir = repo();
    const r = await ocw(ocwRunArgs(cliWrite(dir), "--json"), { stdin: "n\n" });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/asks edit: .*cli\.txt/);
    // The path as the repository's, as the GUI and MCP show it: never the engine's private folder.
    expect(r.stderr).toMatch(/asks edit: cli\.txt\n/);
    expect(r.stderr).not.toContain(stateDir);
    const out = JSON.parse(r.stdout);
    expect(out.verdict).toBe("honest-failure");
    expect(out.approvals[0]).toMatchObject({ decision: "reject" });
    expect(out.checks[0].passed).toBe(false);
  });

  it("--approve ask: an ask answered elsewhere (the GUI) while the terminal is asked says so with the answer, and the run goes on", async () => {
    const dir = repo();
    const p = spawn(process.execPath, [BUNDLE, ...ocwRunArgs(cliWrite(dir))], {
      env: { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600" },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let stderr = "";
    const prompted = new Promise<void>((resolve) =>
      p.stderr.on("data", (b) => {
        stderr += b;
        if (/allow\? \[y\]es once/.test(stderr)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => p.on("exit", (code) => resolve(code)));
    const late = setTimeout(() => p.kill("SIGKILL"), 120_000);
    try {
      await Promise.race([prompted, exited.then(() => Promise.reject(new Error(`ocw run ended before asking: ${stderr}`)))]);
      // the GUI answers it (stdin stays open: the terminal is still being asked)
      const gui = connect(readLock(stateDir)!, "gui");
      const workerId = /ocw: started (w-[a-z0-9]+)/.exec(stderr)![1]!;
      const ask = (await gui.workers.get.query({ workerId })).asks.find((a) => a.status === "pending")!;
      await gui.approvals.decide.mutate({ askId: ask.id, decision: "once" });
      expect(await exited, stderr).toBe(0);
      expect(stderr).toMatch(new RegExp(`ocw: ${workerId}'s edit ask was answered elsewhere \\(by person gui\\): once; no answer needed here, going on`));
    } finally {
      clearTimeout(late);
      p.kill("SIGKILL");
    }
  });

  it("--batch FILE.json runs every task and reports builtRate / honestRate / verdict", async () => {
    const dir = repo();
    const file = path.join(tempDir("batch"), "batch.json");
    writeFileSync(
      file,
      JSON.stringify([
        { task: "CLI-BATCH-a", dir, checks: [{ file: "a.txt" }] },
        { task: "CLI-BATCH-b", dir, checks: [{ file: "b.txt" }, { run: "false", name: "always fails" }] },
      ]),
    );
    const r = await ocw(["run", "--batch", file, "--endpoint", model.url, "--model", "scripted-1", "--approve", "always", "--json"]);
    expect(r.code, r.stderr).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.workers).toHaveLength(2);
    expect(out.builtRate).toBe(0.5);
    expect(out.verdict).toBe("honest-failure");
    expect(out.workers[1].checks.find((c: { name: string }) => c.name === "always fails").passed).toBe(false);
  });

  it("a batch file's name (or --name) names the batch: people read it instead of the id", async () => {
    const dir = repo();
    const file = path.join(tempDir("batch"), "named.json");
    writeFileSync(file, JSON.stringify({ name: "From the file", tasks: [{ task: "CLI-BATCH-a", dir, checks: [{ file: "a.txt" }] }] }));
    const r = await ocw(["run", "--batch", file, "--endpoint", model.url, "--model", "scripted-1", "--approve", "always", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const batchId = r.stderr.match(/\(batch (b-[a-z0-9]+) "From the file"\)/)?.[1];
    expect(batchId, r.stderr).toBeTruthy();
    const shown = await ocw(["batch", batchId!, "--name", "Renamed", "--json"]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: batchId, name: "Renamed" });
    const listed = await ocw(["list", "--batch", batchId!]);
    expect(listed.stdout).toContain(`batch "Renamed" ${batchId}`);
  });

  it("a check that hangs → killed at its timeout, a one-line error, exit 2", async () => {
    const dir = repo();
    const r = await ocw([
      "run",
      "--batch",
      writeBatch([{ task: "CLI-WRITE: create cli.txt", dir, checks: [{ run: "sleep 600", timeoutSec: 2 }] }]),
      "--endpoint",
      model.url,
      "--model",
      "scripted-1",
      "--approve",
      "once",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n").at(-1)).toMatch(/^ocw: check "sleep 600" hung and was killed at its timeout: /);
  });

  it.each([
    [["run", "--task", "x"], /--dir is required/],
    [["run", "--dir", "/definitely/not/here", "--task", "x"], /does not exist/],
    [["run", "--dir", "NOTGIT", "--task", "x"], /not a git repository/],
    [["run", "--dir", "REPO", "--task", "  "], /--task is empty/],
    [["run", "--dir", "REPO", "--task", "x", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"], /cannot reach the model endpoint/],
    [["run", "--dir", "REPO", "--task", "x", "--endpoint", "http://127.0.0.1:9/v1"], /--endpoint and --model go together/],
    [["run", "--dir", "REPO", "--task", "x", "--approve", "sometimes"], /--approve must be/],
    [["run", "--dir", "REPO", "--task", "x", "--endpoint", "URL", "--model", "m", "--api-key-env", "OCW_SURELY_UNSET"], /OCW_SURELY_UNSET is not set/],
    [["run", "--batch", "/no/such/batch.json"], /cannot read the batch file/],
    [["run", "--dir", "REPO", "--task", "x", "--name", "n"], /--name names a batch: give it with --batch/],
    // a check its shell cannot read: refused at once (every grading then failed it, for a reason no worker could fix)
    [
      ["run", "--dir", "REPO", "--task", "x", "--check", "npm test && ("],
      /^ocw: check 1's command is not valid shell \(bash reads: line 2: syntax error: unexpected end of file\): close its quotes and parentheses/,
    ],
  ])("bad input %j → one line, exit 2, nothing created", async (args, message) => {
    const dir = repo();
    const notGit = tempDir("notgit");
    repos.push(notGit);
    const workersBefore = existsSync(path.join(stateDir, "workers")) ? readdirSync(path.join(stateDir, "workers")).length : 0;
    const r = await ocw(
      (args as string[]).map((a) => (a === "REPO" ? dir : a === "NOTGIT" ? notGit : a === "URL" ? model.url : a)),
      { timeoutMs: 30_000 },
    );
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(message as RegExp);
    const workersAfter = existsSync(path.join(stateDir, "workers")) ? readdirSync(path.join(stateDir, "workers")).length : 0;
    expect(workersAfter).toBe(workersBefore);
    expect(readdirSync(dir).sort()).toEqual([".git", "README.md"]);
  });

  it("the engine stopped under a running `ocw run` is said on the terminal (no silent wait); once it is back the run reports the worker interrupted, and `ocw resume` finishes it", async () => {
    const sd = tempDir("cli-stop-state");
    const env = { ...process.env, OCW_STATE_DIR: sd, OCW_STALL_SEC: "600" };
    const dir = repo();
    const p = spawn(
      process.execPath,
      [BUNDLE, ...ocwRunArgs({ dir, task: "CLI-HANG", check: "test -f hang.txt", endpoint: model.url }, "--approve", "always")],
      {
        env,
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    const waiters: (() => void)[] = [];
    p.stderr.on("data", (b) => {
      stderr += b;
      for (const w of waiters.splice(0)) w();
    });
    const exited = new Promise<number | null>((resolve) => p.on("exit", (code) => resolve(code)));
    // A bound so that a run that never says it fails here (and the finally cleans up), not at the test's timeout.
    const until = async (re: RegExp, ms = 60_000) => {
      const deadline = Date.now() + ms;
      while (!re.test(stderr)) {
        if (p.exitCode !== null) throw new Error(`ocw run ended early: ${stderr}`);
        if (Date.now() > deadline) throw new Error(`ocw run never printed ${re}: ${stderr}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 1000);
        });
      }
    };
    try {
      await until(/ running\n/);
      expect((await ocw(["stop"], { env: { OCW_STATE_DIR: sd } })).code).toBe(0);
      await until(/the engine is unreachable/);
      const line = stderr.split("\n").find((l) => l.includes("the engine is unreachable"))!;
      expect(line).toMatch(/waiting for it to come back/);
      expect(line).not.toMatch(/TypeError|\bError:/);
      expect((await ocw(["gui", "--url"], { env: { OCW_STATE_DIR: sd } })).code).toBe(0);
      expect(await exited).toBe(1);
      expect(stderr).toContain("ocw: the engine is back");
      expect(stderr).toMatch(/interrupted/);
      const workerId = /ocw: started (w-[a-z0-9]+)/.exec(stderr)![1]!;
      const shown = await ocw(["show", workerId], { env: { OCW_STATE_DIR: sd } });
      expect(shown.stdout).toContain(`next: ocw resume ${workerId}`);
      const resumed = await ocw(["resume", workerId, "--approve", "always", "--json"], { env: { OCW_STATE_DIR: sd } });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ workerId, verdict: "built" });
      expect((await ocw(["resume", workerId], { env: { OCW_STATE_DIR: sd } })).stderr).toMatch(/^ocw: .*built/m);
    } finally {
      p.kill("SIGKILL");
      await stopDetachedEngine(sd);
      cleanup(sd);
    }
  }, 180_000);
});

function writeBatch(tasks: unknown[]): string {
  const file = path.join(tempDir("batch"), "batch.json");
  writeFileSync(file, JSON.stringify(tasks));
  return file;
}
