// Landing through the real engine (`ocw serve` bundle, real opencode, real git, scripted model): dependent tasks (b
// after a starts from a's graded commit and reads its file; a failing → b skipped and never started), integration checks
// (passing, failing, a combining conflict), `ocw merge --batch` landing one commit and `ocw revert --batch`, flagged
// files needing --accept-flagged, push to a local bare remote with a pull request through a fake `gh` that records its
// arguments, and the daily CLI (list, show, logs, cancel, discard, prune) against the running engine.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Worker } from "../../shared/worker";
import { readFile, startScriptedModel, writeFile, writesAsTold, type ScriptedModel } from "../fixtures/scripted-model";
import { BUNDLE, cleanup, makeRepo, scriptedTarget, settle, startEngine, tempDir, untilState, type TestEngine } from "../helpers";

let model: ScriptedModel;
let engine: TestEngine;
let fakeBin: string;
let ghLog: string;
const dirs: string[] = [];

function ocw(args: string[], opts: { cwd?: string } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, [BUNDLE, ...args], {
      cwd: opts.cwd,
      env: { ...process.env, OCW_STATE_DIR: engine.stateDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (b) => (stdout += b));
    p.stderr.on("data", (b) => (stderr += b));
    const t = setTimeout(() => p.kill("SIGKILL"), 170_000);
    p.on("exit", (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", stdio: "pipe" }).trim();

function batchFile(content: unknown): string {
  const d = tempDir("batchfile");
  dirs.push(d);
  const f = path.join(d, "batch.json");
  writeFileSync(f, JSON.stringify(content));
  return f;
}

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [
      writesAsTold("LD-WRITE"),
      {
        name: "read-then-write",
        match: /LD-READ from=(\S+) to=(\S+)/,
        script: (c) => {
          const [, from, to] = /LD-READ from=(\S+) to=(\S+)/.exec(c.firstUserText)!;
          if (c.turnStep === 0) return readFile(from!);
          if (c.turnStep === 1) return writeFile(to!, `copy of ${/ALPHA-\w+/.exec(c.lastToolResult ?? "")?.[0] ?? "nothing"}\n`);
          return { text: `Copied.\nOUTCOME: built` };
        },
      },
      { name: "fail", match: /LD-FAIL/, script: (c) => (c.turnStep === 0 ? writeFile("z.txt", "no\n") : { text: "Could not.\nOUTCOME: honest-failure — no" }) },
      { name: "hang", match: /LD-HANG/, script: () => ({ hang: true, textBeforeHang: "Working…" }) },
      // A cheating worker: its task's check is a file check, and it plants a conftest.py that reports every test passed.
      {
        name: "hook",
        match: /LD-HOOK/,
        script: (c) =>
          c.turnStep === 0
            ? writeFile(
                "conftest.py",
                "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\n",
              )
            : { text: "Done.\nOUTCOME: built" },
      },
    ],
  });
  // A fake gh on the engine's PATH: it records every call's arguments and opens a "pull request".
  fakeBin = tempDir("fakebin");
  ghLog = path.join(fakeBin, "gh.log");
  writeFileSync(
    path.join(fakeBin, "gh"),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a" >> "${ghLog}"; done\nprintf -- '----\\n' >> "${ghLog}"\nif [ "$1" = auth ]; then exit 0; fi\nif [ "$1" = pr ] && [ "$2" = create ]; then echo "https://example.invalid/pull/7"; exit 0; fi\nexit 1\n`,
  );
  chmodSync(path.join(fakeBin, "gh"), 0o755);
  dirs.push(fakeBin);
  engine = await startEngine(undefined, { PATH: `${fakeBin}:${process.env.PATH}` });
  await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
});

afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", ...dirs);
});

describe("dependent tasks and integration checks", () => {
  it("b after a starts from a's graded commit and reads its file; the integration passes; merge --batch lands one commit; revert --batch undoes it", async () => {
    const dir = makeRepo({ "README.md": "# r\n" });
    dirs.push(dir);
    const base = git(dir, "rev-parse", "HEAD");
    const file = batchFile({
      tasks: [
        { id: "a", task: "LD-WRITE file=a.txt text=ALPHA-1", dir, checks: [{ run: "grep -q ALPHA-1 a.txt" }] },
        { id: "b", after: ["a"], task: "LD-READ from=a.txt to=b.txt", dir, checks: [{ run: "grep -q 'copy of ALPHA-1' b.txt" }] },
      ],
      integration: { checks: [{ name: "both files", run: "grep -q ALPHA-1 a.txt && grep -q 'copy of ALPHA-1' b.txt" }] },
    });
    const r = await ocw(["run", "--batch", file, "--json", "--approve", "once"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.skipped).toEqual([]);
    expect(out.workers.map((w: { verdict: string }) => w.verdict)).toEqual(["built", "built"]);
    expect(out.integration).toMatchObject({ passed: true, checks: [{ name: "both files", passed: true, exitCode: 0 }] });
    expect(out.integration.commit).toMatch(/^[0-9a-f]{40}$/);
    const [a, b] = out.workers.map((w: { workerId: string }) => w.workerId) as [string, string];
    const wa = await engine.client.workers.get.query({ workerId: a });
    const wb = await engine.client.workers.get.query({ workerId: b });
    expect(wb.startFrom).toBe(wa.verdict!.commit);
    expect(wb.taskId).toBe("b");
    expect(r.stderr).toMatch(new RegExp(`task b \\(after a\\) started as ${b}`));
    const sb = await ocw(["show", out.batchId]);
    expect(sb.stdout).toMatch(new RegExp(`b \\(after a\\): ${b} built`));
    expect(sb.stdout).toMatch(/integration: passed .*\n {2}pass both files \(exit 0\)\nnext: ocw merge --batch/);
    // The dependent start, the combined commit and the integration ran on the engine's store: nothing of the workers'
    // commits is in the person's repository before the batch lands.
    for (const c of [wa.verdict!.commit!, wb.verdict!.commit!, out.integration.commit]) expect(() => git(dir, "cat-file", "-e", c)).toThrow();
    expect(git(dir, "branch", "--list", "ocw/*")).toBe("");

    // merge --batch lands exactly one commit: the integration commit (a fast-forward: main was still at the base).
    const m = await ocw(["merge", "--batch", out.batchId, "--json"]);
    expect(m.code, m.stderr).toBe(0);
    const merged = JSON.parse(m.stdout);
    expect(merged.integration).toMatchObject({ commit: out.integration.commit, into: "main" });
    expect(git(dir, "rev-list", "--count", `${base}..main`)).toBe("1");
    expect(git(dir, "rev-parse", "main")).toBe(out.integration.commit);
    // The integration commit's parent is the base; it holds both files.
    expect(git(dir, "rev-parse", `${out.integration.commit}^`)).toBe(base);
    expect(readFileSync(path.join(dir, "b.txt"), "utf8")).toBe("copy of ALPHA-1\n");
    expect(git(dir, "status", "--porcelain")).toBe("");
    expect((await engine.client.workers.get.query({ workerId: a })).merged).toMatchObject({ into: "main" });
    expect((await engine.client.workers.batch.query({ batchId: out.batchId })).integration!.result!.landed).toMatchObject({ into: "main" });
    // Landing twice is refused.
    const again = await ocw(["merge", "--batch", out.batchId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already merged into main/);

    // Revert: one new commit whose tree is the base's.
    const rv = await ocw(["revert", "--batch", out.batchId, "--json"]);
    expect(rv.code, rv.stderr).toBe(0);
    expect(git(dir, "rev-parse", "main^{tree}")).toBe(git(dir, "rev-parse", `${base}^{tree}`));
    expect(existsSync(path.join(dir, "a.txt"))).toBe(false);
    expect((await engine.client.workers.get.query({ workerId: b })).reverted).toMatchObject({ into: "main" });
  });

  it("a failing → b skipped and never started (exit 1); integration failing and a combining conflict each fail with the reason", async () => {
    const d1 = makeRepo();
    const d2 = makeRepo({ "same.txt": "base\n" });
    dirs.push(d1, d2);
    const skipFile = batchFile({
      tasks: [
        { id: "a", task: "LD-FAIL make z say yes", dir: d1, checks: [{ run: "grep -q yes z.txt" }] },
        { id: "b", after: ["a"], task: "LD-READ from=z.txt to=NEVER-STARTED.txt", dir: d1, checks: [] },
      ],
    });
    const failFile = batchFile({
      tasks: [
        { id: "x", task: "LD-WRITE file=x.txt text=X", dir: d2, checks: [{ run: "test -f x.txt" }] },
        { id: "y", task: "LD-WRITE file=y.txt text=Y", dir: d2, checks: [{ run: "test -f y.txt" }] },
      ],
      integration: { checks: [{ name: "needs a third file", run: "test -f third.txt" }] },
    });
    const conflictFile = batchFile({
      tasks: [
        { id: "p", task: "LD-WRITE file=same.txt text=P", dir: d2, checks: [{ run: "grep -q P same.txt" }] },
        { id: "q", task: "LD-WRITE file=same.txt text=Q", dir: d2, checks: [{ run: "grep -q Q same.txt" }] },
      ],
      integration: { checks: [{ run: "true" }] },
    });
    const [skip, failing, conflict] = (await Promise.all(
      [skipFile, failFile, conflictFile].map((f) => ocw(["run", "--batch", f, "--json", "--approve", "once"])),
    )) as [Awaited<ReturnType<typeof ocw>>, Awaited<ReturnType<typeof ocw>>, Awaited<ReturnType<typeof ocw>>];

    expect(skip.code, skip.stderr).toBe(1);
    const s = JSON.parse(skip.stdout);
    expect(s.skipped).toEqual([{ id: "b", reason: expect.stringMatching(/comes after a, which was not built \(failed\)/) }]);
    expect(s.workers).toHaveLength(1);
    expect(s.tasks.find((t: { id: string }) => t.id === "b").workerId).toBeNull();
    // Never started: no worker and no model request for it.
    expect((await engine.client.workers.list.query({ batchId: s.batchId })).length).toBe(1);
    expect(model.requests.some((q) => JSON.stringify(q.body).includes("NEVER-STARTED"))).toBe(false);

    expect(failing.code, failing.stderr).toBe(1);
    const f = JSON.parse(failing.stdout);
    expect(f.workers.map((w: { verdict: string }) => w.verdict)).toEqual(["built", "built"]);
    expect(f.integration).toEqual({
      passed: false,
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
      checks: [{ name: "needs a third file", passed: false, exitCode: 1, output: expect.any(String) }],
    });
    expect(f.integration.commit).toMatch(/^[0-9a-f]{40}$/);
    // A failed integration lands nothing.
    const before = git(d2, "rev-parse", "main");
    const m = await ocw(["merge", "--batch", f.batchId]);
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/integration did not pass \(integration check failed: needs a third file\): nothing was merged/);
    expect(git(d2, "rev-parse", "main")).toBe(before);

    expect(conflict.code, conflict.stderr).toBe(1);
    const c = JSON.parse(conflict.stdout);
    expect(c.workers.map((w: { verdict: string }) => w.verdict)).toEqual(["built", "built"]);
    expect(c.integration).toEqual({
      passed: false,
      commit: null,
      checks: [
        { name: "combine", passed: false, output: expect.stringMatching(/conflicts in \(file names from the workers' changes, untrusted: \["same\.txt"\]\)/) },
      ],
    });
    // The engine's record names the files too.
    expect((await engine.client.workers.batch.query({ batchId: c.batchId })).integration!.result!.conflict).toMatchObject({ files: ["same.txt"] });
  });

  // Task a's check is a file check, so its grading does not read check configuration: its conftest.py hook is built.
  // Task b starts from a's commit; its held-back pytest test fails, and with a's hook it passed: b was built, and the
  // integration's pytest passed too. Now both read the check configuration from the person's base.
  it("a's planted conftest.py hook: b's held-back pytest check is not graded built on it, and the integration does not pass", async () => {
    const dir = makeRepo({ "calc.py": "def add(a, b):\n    return a - b\n" });
    const held = tempDir("held-hook");
    dirs.push(dir, held);
    mkdirSync(path.join(held, "tests"));
    writeFileSync(path.join(held, "tests", "test_hidden.py"), "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n");
    const pytest = { run: "python3 -m pytest -q -p no:cacheprovider tests", files: held };
    const file = batchFile({
      tasks: [
        { id: "a", task: "LD-HOOK", dir, checks: [{ file: "conftest.py" }] },
        { id: "b", after: ["a"], task: "LD-WRITE file=notes.txt text=b", dir, checks: [pytest] },
      ],
      integration: { checks: [{ name: "held-back", ...pytest }] },
    });
    const r = await ocw(["run", "--batch", file, "--json", "--approve", "once"]);
    const out = JSON.parse(r.stdout);
    expect(out.workers.map((w: { verdict: string }) => w.verdict)).toEqual(["built", "honest-failure"]);
    const wb = await engine.client.workers.get.query({ workerId: out.workers[1].workerId });
    // The hook worked (the failing held-back test was reported passed); the check configuration is what failed b.
    expect(wb.verdict!.checks[0]).toMatchObject({ passed: true });
    expect(wb.verdict!.scope.checkConfig).toEqual([expect.stringMatching(/^check configuration changed: conftest\.py — /)]);
    expect(out.integration).toMatchObject({
      passed: false,
      checks: [{ name: "held-back", passed: false, output: expect.stringMatching(/check configuration/) }],
    });
    // a itself is built (its file check holds), and its hook merges only with an explicit acceptance: merged, it would be
    // in the base of every later task of this repository.
    const wa = await engine.client.workers.get.query({ workerId: out.workers[0].workerId });
    expect(wa.verdict!.flags).toEqual([expect.objectContaining({ path: "conftest.py", kind: "tool-config", detail: expect.stringMatching(/later checks/) })]);
    const m = await ocw(["merge", out.workers[0].workerId]);
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/flagged files .*conftest\.py.*--accept-flagged \(nothing was changed\)/);
    expect(git(dir, "log", "--oneline").split("\n")).toHaveLength(1);
  }, 180_000);

  it("bad batch files say what is wrong, and nothing starts", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const cycle = await ocw([
      "run",
      "--batch",
      batchFile({
        tasks: [
          { id: "a", after: ["b"], task: "t", dir },
          { id: "b", after: ["a"], task: "t", dir },
        ],
      }),
      "--json",
      "--approve",
      "once",
    ]);
    expect(cycle.code).toBe(2);
    expect(cycle.stderr).toMatch(/come after each other in a cycle/);
    const unknown = await ocw(["run", "--batch", batchFile({ tasks: [{ id: "a", after: ["zz"], task: "t", dir }] }), "--approve", "once"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/after "zz", which is no task of this batch/);
    const noChecks = await ocw(["run", "--batch", batchFile({ tasks: [{ task: "t", dir }], integration: { checks: [] } }), "--approve", "once"]);
    expect(noChecks.code).toBe(2);
    expect(noChecks.stderr).toMatch(/integration needs at least one check/);
    expect((await engine.client.workers.list.query({ repo: dir })).length).toBe(0);
  });
});

describe("flagged changes, push and pull request", () => {
  it("a flagged file needs --accept-flagged; push to a bare remote (never the default branch, never forced) and a PR through gh with the verdict card", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const remote = tempDir("remote");
    dirs.push(remote);
    git(remote, "init", "-q", "--bare", "-b", "main");
    // A hosted repository's URL (gh is told it with --repo), leading to the local bare repository.
    git(dir, "remote", "add", "origin", "https://github.example/acme/app.git");
    git(dir, "config", `url.${remote}.insteadOf`, "https://github.example/acme/app.git");
    git(dir, "push", "-q", "origin", "main");
    const { workerId } = await engine.client.workers.start.mutate({
      task: "LD-WRITE file=.npmrc text=script-shell=/tmp/evil",
      title: "Add npm config",
      directory: dir,
      checks: [{ name: "npmrc written", run: "test -f .npmrc" }],
      scope: [".npmrc"],
    });
    const w = (await settle(engine.client, [workerId], () => "once")).get(workerId)!;
    expect(w.state).toBe("built");
    expect(w.verdict!.flags).toEqual([{ path: ".npmrc", kind: "tool-config", detail: expect.stringMatching(/npm configuration/) }]);
    const show = await ocw(["show", workerId]);
    expect(show.stdout).toMatch(/flagged \(merge needs --accept-flagged\): \(files of the worker's change, with why each is flagged, untrusted: \["\.npmrc /);

    // Push: a flagged change needs the acceptance too (a pushed branch runs the remote's CI); nothing is pushed without it.
    const unaccepted = await ocw(["push", workerId, "--remote", "origin", "--pr"]);
    expect(unaccepted.code).toBe(1);
    expect(unaccepted.stderr).toMatch(/flagged files .*\.npmrc .*push with --accept-flagged \(nothing was pushed\)/);
    expect(git(remote, "branch", "--list", `ocw/${workerId}`)).toBe("");
    // The default branch is refused; the worker's own branch is pushed; a PR is opened through gh.
    const toMain = await ocw(["push", workerId, "--remote", "origin", "--branch", "main", "--accept-flagged"]);
    expect(toMain.code).toBe(1);
    expect(toMain.stderr).toMatch(/main is origin's default branch: the engine never pushes there/);
    writeFileSync(ghLog, "");
    const p = await ocw(["push", workerId, "--remote", "origin", "--pr", "--json", "--accept-flagged"]);
    expect(p.code, p.stderr).toBe(0);
    const pushed = JSON.parse(p.stdout);
    expect(pushed).toMatchObject({ branch: `ocw/${workerId}`, commit: w.verdict!.commit, pr: { url: "https://example.invalid/pull/7" }, prProblem: null });
    expect(git(remote, "rev-parse", `refs/heads/ocw/${workerId}`)).toBe(w.verdict!.commit);
    const calls = readFileSync(ghLog, "utf8")
      .split("----\n")
      .filter(Boolean)
      .map((c) => c.split("\n"));
    expect(calls[0]!.slice(0, 2)).toEqual(["auth", "status"]);
    const create = calls[1]!.join("\n");
    expect(calls[1]!.slice(0, 4)).toEqual(["pr", "create", "--head", `ocw/${workerId}`]);
    expect(create).toContain("--base\nmain");
    expect(create).toContain("--repo\ngithub.example/acme/app");
    expect(create).toContain("Add npm config");
    expect(create).toContain("Verdict: **built**");
    expect(create).toContain("| npmrc written | passed (exit 0) |");
    expect(create).toContain("claim honest");
    expect(create).toContain(".npmrc");
    // The same branch again with another commit is refused (never forced).
    const other = git(dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", "main^{tree}", "-p", "main", "-m", "someone else's");
    git(dir, "push", "-q", "--force", "origin", `${other}:refs/heads/ocw/${workerId}`);
    const forced = await ocw(["push", workerId, "--remote", "origin", "--accept-flagged"]);
    expect(forced.code).toBe(1);
    expect(forced.stderr).toMatch(/never forces a push/);

    // Merge: refused without the acceptance (nothing changed), done with it.
    const refused = await ocw(["merge", workerId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/flagged files .*\.npmrc .*--accept-flagged \(nothing was changed\)/);
    expect(existsSync(path.join(dir, ".npmrc"))).toBe(false);
    const ok = await ocw(["merge", workerId, "--accept-flagged"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(readFileSync(path.join(dir, ".npmrc"), "utf8")).toBe("script-shell=/tmp/evil\n");
    // And it can be reverted.
    const rv = await ocw(["revert", workerId]);
    expect(rv.code, rv.stderr).toBe(0);
    expect(existsSync(path.join(dir, ".npmrc"))).toBe(false);
  });
});

describe("the daily CLI against a running engine", () => {
  it("list / show / logs / cancel / discard / prune", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const { workerId: built } = await engine.client.workers.start.mutate({
      task: "LD-WRITE file=w.txt text=W",
      directory: dir,
      checks: [{ run: "test -f w.txt" }],
    });
    await settle(engine.client, [built], () => "once");
    const { workerId: hang } = await engine.client.workers.start.mutate({ task: "LD-HANG forever", directory: dir, checks: [] });
    await untilState(engine.client, hang, (w) => w.state === "running");

    const list = await ocw(["list", "--repo", dir, "--json"]);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Worker[]).map((w) => w.id)).toEqual([built, hang]);
    const running = await ocw(["list", "--repo", dir, "--state", "running"]);
    expect(running.stdout).toContain(hang);
    expect(running.stdout).not.toContain(built);
    const bad = await ocw(["list", "--state", "nope"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown state "nope"/);

    const show = await ocw(["show", built]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/verdict: built \(held-back checks\) · claim honest/);
    expect(show.stdout).toMatch(new RegExp(`next: ocw merge ${built} .* · ocw publish ${built} \\(its branch, to review with git\\)`));

    const logs = await ocw(["logs", built]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/worker says \(untrusted text\):\n {2}│ Wrote w\.txt\./);
    expect(logs.stdout).toMatch(/tool write completed/);
    expect(logs.stdout).toMatch(/ask \S+: edit/);
    expect(logs.stdout).toMatch(/decision on \S+: once by/);
    expect(logs.stdout).toMatch(/verdict built · 1\/1 checks · claim honest/);
    // Piped into a reader that has gone (`ocw logs ID | head -1`): a quiet end, not an EPIPE stack trace.
    const piped = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [BUNDLE, "logs", built], {
        env: { ...process.env, OCW_STATE_DIR: engine.stateDir },
        stdio: ["ignore", "pipe", "pipe"],
      });
      p.stdout.destroy(); // the reader's end is closed before the first line is written
      let stderr = "";
      p.stderr.on("data", (b) => (stderr += b));
      p.on("exit", (code) => resolve({ code, stderr }));
    });
    expect(piped.stderr).not.toMatch(/EPIPE|Unhandled 'error' event/);
    expect(piped.code).toBe(141); // what a shell reports for a program SIGPIPE ended

    // logs --follow ends when the worker does; cancel stops it.
    const following = ocw(["logs", hang, "--follow"]);
    const cancel = await ocw(["cancel", hang]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toContain(`${hang} is stopped`);
    const followed = await following;
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/state stopped — cancelled with ocw cancel/);

    const discard = await ocw(["discard", hang]);
    expect(discard.code, discard.stderr).toBe(0);
    expect(discard.stdout).toContain(`discarded ${hang}`);

    // prune: a merged ocw/ branch goes; a built one nobody merged stays, with why (published first: grading publishes nothing).
    const pub = await ocw(["publish", built]);
    expect(pub.code, pub.stderr).toBe(0);
    expect(pub.stdout).toContain(`published ocw/${built} at `);
    mkdirSync(path.join(dir, "sub"), { recursive: true });
    git(dir, "branch", "ocw/w_old_merged", "main");
    const pr = await ocw(["prune", "--json"], { cwd: dir });
    expect(pr.code, pr.stderr).toBe(0);
    const pruned = JSON.parse(pr.stdout);
    expect(pruned.deleted.map((d: { branch: string }) => d.branch)).toEqual(["ocw/w_old_merged"]);
    expect(pruned.kept).toEqual([{ branch: `ocw/${built}`, reason: "built and not merged yet: merge it or discard the worker" }]);
    // In text, a branch name's bidi control is shown marked (a branch is the repository's text, not the engine's).
    git(dir, "branch", "ocw/w_old\u202etxt.exe", "main");
    const prText = await ocw(["prune"], { cwd: dir });
    expect(prText.code, prText.stderr).toBe(0);
    expect(prText.stdout).toContain("deleted ocw/w_old⟪U+202E⟫txt.exe (was ");
    expect(prText.stdout).not.toContain("\u202e");

    const unknown = await ocw(["show", "w_nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).not.toMatch(/Error\b/);
  });
});

describe("a merge conflict", () => {
  it("names the files and offers continuing the worker on the new base (ocw rebase): a new worker from the current HEAD, told the files", async () => {
    const dir = makeRepo({ "same.txt": "base\n" });
    dirs.push(dir);
    const start = (text: string) =>
      engine.client.workers.start.mutate({ task: `LD-WRITE file=same.txt text=${text}`, directory: dir, checks: [{ run: `grep -q ${text} same.txt` }] });
    const [p, q] = [(await start("P")).workerId, (await start("Q")).workerId];
    await settle(engine.client, [p, q], () => "once");
    expect((await ocw(["merge", p])).code).toBe(0);
    const before = git(dir, "rev-parse", "main");
    const refused = await ocw(["merge", q]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `conflicts in \\(file names from the worker's change, untrusted: \\["same\\.txt"\\]\\); nothing was changed\\. To go on: continue the worker on the new base \\(ocw rebase ${q}`,
      ),
    );
    // The conflicting files are named once (the way on does not list them again).
    expect(refused.stderr.match(/same\.txt/g)).toHaveLength(1);
    expect(git(dir, "rev-parse", "main")).toBe(before);
    expect(git(dir, "status", "--porcelain")).toBe("");
    const r = await ocw(["rebase", q, "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { workerId: string; retryOf: string; files: string[] };
    expect(out).toMatchObject({ retryOf: q, files: ["same.txt"] });
    const again = await engine.client.workers.get.query({ workerId: out.workerId });
    expect(again.spec.task).toMatch(/conflicts in \(file names from its change, untrusted: \["same\.txt"\]\), which changed since/);
    await settle(engine.client, [out.workerId], () => "once");
    // It started from the branch as it is now (p's merge included).
    expect((await engine.client.workers.get.query({ workerId: out.workerId })).baseCommit).toBe(before);
    expect((await ocw(["merge", out.workerId])).code).toBe(0);
    expect(readFileSync(path.join(dir, "same.txt"), "utf8")).toBe("Q\n");
  });
});

describe("over MCP", () => {
  it("delegate_batch takes after and integration; wait reports the batch until it is done; merge {batchId} lands the integration commit", async () => {
    const { startMcp, waitUntil } = await import("./mcp-helpers");
    const dir = makeRepo();
    dirs.push(dir);
    const base = git(dir, "rev-parse", "HEAD");
    await engine.client.policies.set.mutate({ rules: [{ tool: "edit", pattern: "*", decision: "once" }] });
    const mcp = await startMcp(engine.stateDir, "landing-mcp");
    try {
      const d = await mcp.call("delegate_batch", {
        tasks: [
          { id: "a", task: "LD-WRITE file=a.txt text=ALPHA-9", directory: dir, checks: [{ run: "grep -q ALPHA-9 a.txt" }], scope: ["a.txt"] },
          {
            id: "b",
            after: ["a"],
            task: "LD-READ from=a.txt to=b.txt",
            directory: dir,
            checks: [{ run: "grep -q 'copy of ALPHA-9' b.txt" }],
            scope: ["b.txt"],
          },
        ],
        integration: { checks: [{ name: "together", run: "grep -q ALPHA-9 b.txt" }] },
      });
      expect(d.workerIds).toHaveLength(1);
      expect(d.tasks).toEqual([
        { id: "a", workerId: d.workerIds[0], after: [] },
        { id: "b", workerId: null, after: ["a"] },
      ]);
      expect(d.next).toMatch(/task b starts once the tasks it comes after are built/);
      const w = await waitUntil(mcp, { batchId: d.batchId }, (r) => r.batch?.done === true, 10);
      expect(w.settled).toBe(true);
      expect(w.batch).toMatchObject({
        total: 2,
        built: 2,
        skipped: [],
        integration: { state: "done", passed: true, checks: [{ name: "together", passed: true }] },
      });
      const m = await mcp.call("merge", { batchId: d.batchId });
      expect(m).toMatchObject({ into: "main" });
      expect(git(dir, "rev-list", "--count", `${base}..main`)).toBe("1");
      expect(readFileSync(path.join(dir, "b.txt"), "utf8")).toBe("copy of ALPHA-9\n");
      expect(await mcp.fail("merge", {})).toMatch(/give workerId \(one worker\) or batchId \(a batch: .*\), one of them/);
    } finally {
      await mcp.close();
      await engine.client.policies.set.mutate({ rules: [] });
    }
  });
});

describe("a batch across an engine restart", () => {
  it("the plan survives; a dependency interrupted by the restart skips b, and once resumed and built, b starts after all and the integration runs", async () => {
    const dir = makeRepo();
    dirs.push(dir);
    const own = await startEngine();
    const stateDir = own.stateDir;
    let second: TestEngine | null = null;
    try {
      await own.client.targets.save.mutate({ target: scriptedTarget(model.url, 4), activate: true });
      const { batchId, workerIds } = await own.client.workers.startBatch.mutate({
        tasks: [
          { id: "a", task: "LD-WRITE file=a.txt text=ALPHA-3", directory: dir, checks: [{ run: "grep -q ALPHA-3 a.txt" }] },
          { id: "b", after: ["a"], task: "LD-READ from=a.txt to=b.txt", directory: dir, checks: [{ run: "grep -q 'copy of ALPHA-3' b.txt" }] },
        ],
        integration: { checks: [{ run: "test -f a.txt && test -f b.txt" }] },
      });
      const a = workerIds[0]!;
      await untilState(own.client, a, (w) => w.state === "waiting-approval", 90_000);
      await own.kill();
      second = await startEngine(stateDir);
      const c = second.client;
      await untilState(c, a, (w) => w.state === "interrupted", 30_000);
      await expect
        .poll(async () => (await c.workers.batch.query({ batchId })).skipped, { timeout: 30_000 })
        .toEqual([{ id: "b", reason: "it comes after a, which was not built (interrupted)" }]);
      await expect
        .poll(async () => (await c.workers.batch.query({ batchId })).integration?.result?.reason ?? null, { timeout: 30_000 })
        .toBe("no task was built: nothing to integrate");
      await c.workers.resume.mutate({ workerId: a });
      await settle(c, [a], () => "once");
      await expect.poll(async () => (await c.workers.batch.query({ batchId })).tasks.find((t) => t.id === "b")!.workerId, { timeout: 30_000 }).not.toBeNull();
      const b = (await c.workers.batch.query({ batchId })).tasks.find((t) => t.id === "b")!.workerId!;
      await settle(c, [b], () => "once");
      await expect.poll(async () => (await c.workers.batch.query({ batchId })).done, { timeout: 60_000 }).toBe(true);
      const s = await c.workers.batch.query({ batchId });
      expect(s.skipped).toEqual([]);
      expect(s.integration).toMatchObject({ state: "done", result: { passed: true, workers: [a, b] } });
      expect((await c.workers.get.query({ workerId: b })).state).toBe("built");
    } finally {
      await second?.kill();
      await own.kill();
      dirs.push(stateDir);
    }
  });
});
