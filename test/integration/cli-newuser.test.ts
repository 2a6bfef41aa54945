// A newcomer following the README with the real `ocw` bundle, and the mistakes one makes: a --scope or --protect written
// as a path of the machine (it matched nothing: the worker failed as out of scope, the protect guarded nothing), an
// unknown worker id given to `ocw asks --worker` (it said "no asks waiting", exit 0), a quoted `~` in --dir.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startScriptedModel, writeFile, type ScriptedModel } from "../fixtures/scripted-model";
import { cleanup, makeRepo, runOcw, stopDetachedEngine, tempDir } from "../helpers";

const stateDir = tempDir("cli-newuser-state");
const repos: string[] = [];
let model: ScriptedModel | undefined;

const ocw = (args: string[], timeoutMs = 120_000) => runOcw(stateDir, args, timeoutMs, { OCW_STALL_SEC: "600", NO_COLOR: "1" });

beforeAll(async () => {
  model = await startScriptedModel({
    scripts: [{ name: "nu", match: /NU-WRITE/, script: (c) => (c.turnStep === 0 ? writeFile("cli.js", "v\n") : { text: "OUTCOME: built" }) }],
  });
});

afterAll(async () => {
  await stopDetachedEngine(stateDir);
  await model?.close();
  cleanup(stateDir, ...repos);
});

describe("ocw run: globs that can never match a file of the repository", () => {
  it("a --scope or --protect given as an absolute path, or above the repository, is refused in one line (exit 2) before any worker starts, with the relative glob to give", async () => {
    const dir = makeRepo({ "cli.js": "x\n", "test/a.test.js": "t\n" });
    repos.push(dir);
    const base = ["run", "--dir", dir, "--task", "NU-WRITE", "--check", "grep -q v cli.js", "--endpoint", model!.url, "--model", "m", "--approve", "once"];
    const cases: [string[], RegExp][] = [
      [["--scope", `${dir}/cli.js`], /scope glob ".*\/cli\.js" is an absolute path: .*relative to the task's folder.* give "cli\.js"/],
      [["--protect", `${dir}/test/**`], /protect glob ".*\/test\/\*\*" is an absolute path: .*give "test\/\*\*"/],
      [["--scope", "../cli.js"], /scope glob "\.\.\/cli\.js" points above the repository/],
    ];
    for (const [flags, msg] of cases) {
      const r = await ocw([...base, ...flags]);
      expect(r.code, `${flags.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toMatch(msg);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    }
    // nothing half-created: no worker was recorded
    const list = await ocw(["list", "--json"]);
    expect(JSON.parse(list.stdout)).toEqual([]);
    // `./cli.js` is a relative glob: still taken, and the worker is built
    const ok = await ocw([...base, "--scope", "./cli.js", "--json"]);
    expect(ok.code, ok.stderr).toBe(0);
  });
});

describe("ocw asks --worker", () => {
  it("an unknown worker id is one line on stderr, exit 2, as every other command says it (it was 'no asks waiting', exit 0)", async () => {
    const r = await ocw(["asks", "--worker", "w-nope"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('unknown worker "w-nope"');
  });
});

describe("ocw run --dir with a quoted ~", () => {
  it("says the shell did not expand it and what to give (it said only 'directory /cwd/~/src/repo does not exist')", async () => {
    const r = await ocw(["run", "--dir", "~/no-such-ocw-repo", "--task", "T", "--endpoint", model!.url, "--model", "m"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim()).toBe(
      'ocw: --dir ~/no-such-ocw-repo: a quoted ~ is not your home folder (the shell expands it only unquoted): give --dir "$HOME/no-such-ocw-repo" or an absolute path',
    );
  });
});

describe("ocw list with a filter that names nothing there is", () => {
  it("an unknown --batch (to list or to merge), or a --repo that is no folder, is one line on stderr, exit 2 (it was 'no workers match', exit 0); a real filter with no match is still exit 0", async () => {
    const batch = await ocw(["list", "--batch", "b-nope"]);
    expect(batch.code, batch.stderr).toBe(2);
    expect(batch.stdout).toBe("");
    expect(batch.stderr.trim()).toBe('ocw: unknown batch "b-nope": `ocw list` shows each worker\'s batch');
    // Every command that takes a batch id says where the ids are (merge said only "unknown batch").
    const merge = await ocw(["merge", "--batch", "b-nope"]);
    expect(merge.code, merge.stderr).toBe(2);
    expect(merge.stderr.trim()).toBe('ocw: unknown batch "b-nope": `ocw list` shows each worker\'s batch');
    const gone = tempDir("cli-newuser-gone");
    cleanup(gone);
    const repo = await ocw(["list", "--repo", gone]);
    expect(repo.code, repo.stderr).toBe(2);
    expect(repo.stderr.trim()).toBe(`ocw: no folder ${gone} here: give --repo the repository's folder, as \`ocw run --dir\` took it`);
    // A folder that is there, with no workers on it: nothing wrong with the filter.
    const dir = makeRepo({ "a.txt": "a\n" });
    repos.push(dir);
    const none = await ocw(["list", "--repo", dir, "--state", "built"]);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout.trim()).toBe("no workers match");
  });
});
