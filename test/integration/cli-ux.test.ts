// A newcomer's first mistakes with the real `ocw` bundle: words from other tools, a missing argument, a worker id
// where a batch id belongs (and back), a bad --timeout, an unknown hook; the exit statuses in `ocw --help`; --json on
// cancel and discard (valid JSON on stdout only; an error on stderr only, nonzero).
import { spawn } from "node:child_process";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLock } from "../../engine/api/lock";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, runOcw, startEngine, stopDetachedEngine, tempDir } from "../helpers";

const stateDir = tempDir("cli-ux-state");
const repos: string[] = [];
let model: ScriptedModel | undefined;

const ocw = (args: string[], timeoutMs = 120_000) => runOcw(stateDir, args, timeoutMs, { OCW_STALL_SEC: "600", NO_COLOR: "1" });

afterAll(async () => {
  await stopDetachedEngine(stateDir);
  await model?.close();
  cleanup(stateDir, ...repos);
});

describe("ocw: mistakes answered before any engine starts", () => {
  it("a word from other tools names the ocw command that does it (status was 'Did you mean setup?'); a typo still gets the spelling guess, in `ocw help WORD` too; `ocw help` exits 0 (it was 2)", async () => {
    const status = await ocw(["status"]);
    expect(status.code).toBe(2);
    expect(status.stdout).toBe("");
    expect(status.stderr).toContain("unknown command 'status'");
    expect(status.stderr).toContain("`ocw list`");
    expect(status.stderr).not.toContain("setup");
    const answer = await ocw(["answer", "per_x"]);
    expect(answer.code).toBe(2);
    expect(answer.stderr).toContain("`ocw approve ASK_ID`");
    const typo = await ocw(["lsit"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("Did you mean list?");
    // `ocw help WORD` too (it printed every command, and not the word).
    const helpTypo = await ocw(["help", "lsit"]);
    expect(helpTypo.code).toBe(2);
    expect(helpTypo.stderr).toContain("error: unknown command 'lsit'\n(Did you mean list?)");
    const helpOk = await ocw(["help", "list"]);
    expect(helpOk.code).toBe(0);
    expect(helpOk.stdout).toContain("Usage: ocw list");
    const helpAll = await ocw(["help"]);
    expect(helpAll.code).toBe(0);
    expect(helpAll.stdout).toContain("Exit status:");
    // Help for a command that needs its subcommand (`ocw target`) is a usage error still.
    expect((await ocw(["target"])).code).toBe(2);
  });

  it("a usage error points at the command's own help, not the list of every command", async () => {
    const r = await ocw(["show"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("missing required argument 'id'");
    expect(r.stderr).toContain("(run `ocw show --help` for usage)");
    const nested = await ocw(["target", "use"]);
    expect(nested.stderr).toContain("(run `ocw target use --help` for usage)");
    const top = await ocw(["nonsense-word"]);
    expect(top.stderr).toContain("(run `ocw --help` for usage)");
  });

  it("a worker id where a batch id belongs, and the other way round: one line naming the command that takes it, exit 2", async () => {
    const cases: [string[], string][] = [
      [["batch", "w-abc"], '"w-abc" is a worker id, not a batch id (b-…): `ocw show w-abc` shows that worker'],
      [["merge", "--batch", "w-abc"], "merge that worker with `ocw merge w-abc`"],
      [["merge", "b-abc"], "merge a batch with `ocw merge --batch b-abc`"],
      [["list", "--batch", "w-abc", "--json"], "is a worker id, not a batch id"],
      [["logs", "b-abc"], '"b-abc" is a batch id, not a worker id (w-…): `ocw show b-abc` lists its workers'],
      [["revert", "--batch", "w-abc"], "`ocw revert w-abc`"],
      [["push", "b-abc", "--remote", "origin"], "`ocw push --batch b-abc --remote origin`"],
      [["wait", "--worker", "b-abc"], "`ocw wait --batch b-abc`"],
      [["continue", "b-abc", "--message", "more"], "is a batch id, not a worker id"],
    ];
    for (const [args, msg] of cases) {
      const r = await ocw(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(r.stderr, args.join(" ")).toContain(msg);
      expect(r.stderr.trim().split("\n"), args.join(" ")).toHaveLength(1);
    }
    // Refused here: no engine was started to say "unknown batch".
    expect(readLock(stateDir)).toBeNull();
  });

  it("wait --timeout that is not a positive number is refused (it was a silent hour), serve --port that is not a port too; an unknown hook event is said at once (it was exit 0)", async () => {
    const w = await ocw(["wait", "--timeout", "soon"]);
    expect(w.code).toBe(2);
    expect(w.stderr).toContain("argument 'soon' is invalid");
    // each bad --port: what is wrong and what to do (one "must be from 1 to 65535" for all; 0 and 65536 unexplained)
    for (const [bad, words] of [
      ["abc", "It is not a whole number"],
      ["0", 'Port 0 is not a port to listen on (other tools read it as "any free port")'],
      ["65536", "Ports end at 65535"],
    ]) {
      const port = await ocw(["serve", "--port", bad!], 20_000);
      expect(port.code, bad).toBe(2);
      expect(port.stderr, bad).toContain(
        `argument '${bad}' is invalid. ${words}: give a port from 1024 to 65535 (e.g. --port 8080), or leave --port out for a free one.`,
      );
    }
    // `ocw run --dir .` without --task: it said "--task is empty".
    const noTask = await ocw(["run", "--dir", "."]);
    expect(noTask.code).toBe(2);
    expect(noTask.stderr).toContain("--task is required: say what the worker should do (or give several tasks with --batch FILE)");
    // An empty --scope, --protect or --check (an unset shell variable): said by its flag, not in zod's words
    // ("scope.0: Too small: expected string to have >=1 characters"), and before any engine starts.
    for (const [flag, words] of [
      ["--scope", '--scope is empty: give a glob of the files the worker may change, e.g. --scope "src/**"'],
      ["--protect", '--protect is empty: give a glob of the files the worker must not change, e.g. --protect "test/**"'],
      ["--check", '--check is empty: give a shell command that exits 0 when the task is done, e.g. --check "npm test"'],
    ] as const) {
      const empty = await ocw(["run", "--dir", ".", "--task", "x", "--check", "true", flag, ""]);
      expect(empty.code, flag).toBe(2);
      expect(empty.stderr.trim(), flag).toBe(`ocw: ${words}`);
    }
    expect(readLock(stateDir)).toBeNull();
    const h = await ocw(["hook", "session-end"]);
    expect(h.code).toBe(2);
    expect(h.stderr).toContain('unknown hook "session-end": session-start or stop');
  });

  it("serve --port N where another program holds N: one line saying so and what to do, exit 2 (it was Node's EADDRINUSE stack trace, exit 1)", async () => {
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const port = (squatter.address() as net.AddressInfo).port;
    const own = tempDir("cli-ux-port-state");
    try {
      const r = await runOcw(own, ["serve", "--port", String(port)], 60_000, { NO_COLOR: "1" });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim()).toBe(
        `ocw: port ${port} on 127.0.0.1 is already in use by another program: pick another --port, or leave --port out for a free one`,
      );
      expect(readLock(own)).toBeNull();
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
      cleanup(own);
    }
  });

  it("a foreground ocw serve that another shell stops with ocw stop says so before it exits (it ended without a word)", async () => {
    const own = tempDir("cli-ux-stop-state");
    const engine = await startEngine(own);
    // a second `ocw serve` in another terminal, attached to that engine: it ended without a word too
    const attached = spawn(process.execPath, [BUNDLE, "serve"], { env: { ...process.env, OCW_STATE_DIR: own }, stdio: ["ignore", "pipe", "pipe"] });
    let attachedErr = "";
    try {
      await new Promise<void>((resolve, reject) => {
        attached.stderr!.on("data", (b) => {
          attachedErr += b;
          if (attachedErr.includes("attached to the engine already running")) resolve();
        });
        attached.once("exit", () => reject(new Error(`ocw serve (attach) exited: ${attachedErr}`)));
      });
      const exited = new Promise<number | null>((resolve) => engine.proc.once("exit", (code) => resolve(code)));
      const attachedExit = new Promise<number | null>((resolve) => attached.once("exit", (code) => resolve(code)));
      const stop = await runOcw(own, ["stop"], 60_000);
      expect(stop.code, stop.stderr).toBe(0);
      expect(await exited).toBe(0);
      expect(engine.stderr().trim().split("\n").at(-1)).toBe("ocw: engine stopped (ocw stop from another client)");
      expect(await attachedExit).toBe(0);
      expect(attachedErr.trim().split("\n").at(-1)).toBe(
        `ocw: the engine (pid ${engine.proc.pid}) stopped (\`ocw stop\` or another client); this ocw serve ends`,
      );
    } finally {
      attached.kill();
      await engine.kill();
      cleanup(own);
    }
  });

  it("ocw --help shows first commands and what each exit status means; no escape sequence when piped", async () => {
    const r = await ocw(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Examples:");
    expect(r.stdout).toMatch(/Exit status:\n {2}0 .*\n {2}1 .*\n {2}2 .*\n {2}3 .*\n {2}130 /);
    expect(r.stdout).not.toContain("\x1b");
    const wait = await ocw(["wait", "--help"]);
    expect(wait.stdout).toContain(
      "Exit status: 0 a worker asked or settled (or nothing to wait for), 2 nothing before --timeout, 3 no engine runs or it went away.",
    );
  });
});

describe("ocw cancel / discard --json, ocw show of an attempts group", () => {
  beforeAll(async () => {
    model = await startScriptedModel({
      scripts: [
        { name: "ux", match: /UX-WRITE/, script: (c) => (c.turnStep === 0 ? writeFile("ux.txt", "ux\n") : { text: "OUTCOME: built" }) },
        { name: "ux-hang", match: /UX-HANG/, script: () => ({ hang: true, textBeforeHang: "working" }) },
      ],
    });
  });

  it("cancel and discard --json print the worker as JSON on stdout only, serving list --json a list; show takes an attempts group id; an unknown id is one line on stderr, nothing on stdout, exit 2", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const run = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "UX-WRITE",
      "--check",
      "test -f ux.txt",
      "--endpoint",
      model!.url,
      "--model",
      "m",
      "--approve",
      "once",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const id = JSON.parse(run.stdout).workerId as string;

    const cancel = await ocw(["cancel", id, "--json"]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(JSON.parse(cancel.stdout)).toMatchObject({ id, state: "built" });

    const discard = await ocw(["discard", id, "--json"]);
    expect(discard.code, discard.stderr).toBe(0);
    expect(JSON.parse(discard.stdout)).toMatchObject({ id, discarded: expect.anything() });

    // `serving list` takes --json as targets and doctor do (it was an unknown option).
    const serving = await ocw(["serving", "list", "--json"]);
    expect(serving.code, serving.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(serving.stdout))).toBe(true);

    // An attempts group id (`ocw run --attempts` prints it) is shown too; it was "unknown worker".
    const att = await ocw([
      "run",
      "--dir",
      dir,
      "--task",
      "UX-WRITE again",
      "--check",
      "test -f ux.txt",
      "--endpoint",
      model!.url,
      "--model",
      "m",
      "--approve",
      "once",
      "--attempts",
      "2",
      "--json",
    ]);
    expect(att.code, att.stderr).toBe(0);
    const groupId = JSON.parse(att.stdout).groupId as string;
    const shown = await ocw(["show", groupId]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`attempts (${groupId}): winner w-`);
    const shownJson = await ocw(["show", groupId, "--json"]);
    expect(JSON.parse(shownJson.stdout)).toMatchObject({ groupId, attempts: [expect.anything(), expect.anything()] });

    for (const args of [
      ["cancel", "w-nope", "--json"],
      ["discard", "w-nope", "--json"],
      ["show", "w-nope", "--json"],
    ]) {
      const r = await ocw(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain('unknown worker "w-nope"');
    }
  });

  it("ocw asks lists what a detached run's worker waits on, ocw approve ASK_ID answers it and the worker goes on (there was no CLI way)", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const env = { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600" };
    // --approve ask with no terminal: the ask stays pending, as after a Ctrl-C.
    const run = spawn(
      process.execPath,
      [BUNDLE, "run", "--dir", dir, "--task", "UX-WRITE asked", "--check", "test -f ux.txt", "--endpoint", model!.url, "--model", "m"],
      {
        env,
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let runErr = "";
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`the ask never came: ${runErr}`)), 90_000);
      run.stderr!.on("data", (b) => {
        runErr += b;
        if (/the ask stays pending/.test(runErr)) {
          clearTimeout(t);
          resolve();
        }
      });
    });
    run.kill("SIGKILL");
    const list = await ocw(["asks", "--json"]);
    expect(list.code, list.stderr).toBe(0);
    const ask = (JSON.parse(list.stdout) as { id: string; workerId: string; tool: string }[]).find((a) => a.tool === "edit")!;
    expect(ask.id).toMatch(/^per_/);
    const text = await ocw(["asks", "--worker", ask.workerId]);
    // As `ocw run` shows it: the path relative to the worker's workspace, not the engine's private folder.
    expect(text.stdout).toContain(`${ask.workerId} asks edit: ux.txt`);
    expect(text.stdout).not.toContain(stateDir);
    expect(text.stdout).toContain(`answer: ocw approve ${ask.id}`);

    const wrong = await ocw(["approve", ask.workerId]);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("is not an ask id: `ocw asks` lists the asks waiting");
    const ok = await ocw(["approve", ask.id]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`${ask.id} (${ask.workerId} edit): allowed once`);
    const again = await ocw(["approve", ask.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("is no longer pending");
    const settled = await ocw(["wait", "--worker", ask.workerId, "--timeout", "90"]);
    expect(settled.stdout).toContain(`worker ${ask.workerId}: 0 asks waiting, 1/1 settled (1 built)`);
  });

  it("logs --follow says when the engine goes away (it went silent and seemed to hang)", async () => {
    const dir = makeRepo();
    repos.push(dir);
    const lines = (p: ReturnType<typeof spawn>, stream: "stdout" | "stderr", re: RegExp) =>
      new Promise<string>((resolve, reject) => {
        let out = "";
        const t = setTimeout(() => reject(new Error(`never matched ${re}: ${out}`)), 60_000);
        p[stream]!.on("data", (b) => {
          out += b;
          const m = re.exec(out);
          if (m) {
            clearTimeout(t);
            resolve(m[1] ?? out);
          }
        });
      });
    const env = { ...process.env, OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600" };
    const run = spawn(
      process.execPath,
      [BUNDLE, "run", "--dir", dir, "--task", "UX-HANG", "--check", "true", "--endpoint", model!.url, "--model", "m", "--approve", "once"],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    const id = await lines(run, "stderr", /ocw: started (w-[a-z0-9]+)/);
    const logs = spawn(process.execPath, [BUNDLE, "logs", id, "--follow"], { env, stdio: ["ignore", "pipe", "pipe"] });
    try {
      await lines(logs, "stdout", /state running/);
      const lost = lines(logs, "stderr", /(ocw: the engine is unreachable[^\n]*)/);
      expect((await ocw(["stop"])).code).toBe(0);
      const said = await lost;
      expect(said).toContain("waiting for it to come back");
      expect(said).toContain(`\`ocw resume ${id}\``);
    } finally {
      logs.kill("SIGKILL");
      run.kill("SIGKILL");
    }
  });
});
