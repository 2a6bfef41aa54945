// Attacks on the engine's commit, checkout and publish (commit 0fe0175: fixed sh scripts, lazy engine repo, published
// by copying object files + one update-ref). A worker controls every file of its workspace; a careless person names
// odd repositories. What must hold: the branch published in the user's repository is exactly the graded commit and
// every object it needs is there, nothing outside the engine's folders is written, no value is ever read as shell, and a
// change to a protected file is never graded built.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { grade } from "../grading/grade";
import { committedRepo } from "../../test/fixtures/git-repo";
import { commitAndCheckOut, createWorkspace, fullDiff, inspectRepo, publishBranch } from "./workspace";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-ws-attack-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
const repo = (files?: Record<string, string>, opts: { dir?: string; init?: string[] } = {}) =>
  committedRepo(opts.dir ?? path.join(tmp, `repo-${n++}`), files, opts.init);
const g = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", maxBuffer: 64 << 20 }).trim();

async function workspace(r: string, id: string, root = tmp) {
  return createWorkspace(path.join(root, "workspaces"), await inspectRepo(r), id, path.join(root, "repos", `${id}.git`));
}

/** Every object the published branch needs is in the user's repository, and none of them is corrupt. */
function expectComplete(r: string, branch: string, commit: string) {
  expect(g(r, "rev-parse", `refs/heads/${branch}`)).toBe(commit);
  const missing = g(r, "rev-list", "--objects", "--missing=print", commit)
    .split("\n")
    .filter((l) => l.startsWith("?"));
  expect(missing).toEqual([]);
  g(r, "fsck", "--no-dangling", "--connectivity-only");
}

describe("publishing the graded commit into the user's repository", () => {
  it("a file over git's big-file threshold (git add packs it instead of writing a loose object): the published branch still has it", async () => {
    const r = repo();
    const ws = await workspace(r, "w-big");
    // A sparse file just over core.bigFileThreshold (512 MiB): cheap to make, git streams it into a pack in the engine repo.
    const fd = openSync(path.join(ws.worktree, "big.bin"), "w");
    ftruncateSync(fd, 512 * 1024 * 1024 + 1);
    closeSync(fd);
    writeFileSync(path.join(ws.worktree, "small.txt"), "small\n");
    const out = path.join(tmp, "checkout-big");
    // Caps raised for this test (a 512 MiB file is over the default one-file cap: snapshot caps are tested in workspace.test.ts).
    const graded = await commitAndCheckOut(ws, "ocw: big", out, { files: 100, bytes: 2 ** 31, fileBytes: 2 ** 30 });
    rmSync(out, { recursive: true, force: true });
    rmSync(path.join(ws.worktree, "big.bin"));
    expect(graded.changed).toEqual(["big.bin", "small.txt"]);
    await publishBranch(ws, graded.commit);
    expectComplete(r, ws.branch, graded.commit);
  }, 120_000);

  it("repositories of other shapes (sha256, a linked worktree, a .git file): made, graded and published, complete", async () => {
    const sha256 = repo({ "README.md": "# r\n" }, { init: ["--object-format=sha256"] });
    const main = repo();
    const linked = path.join(tmp, "linked-wt");
    g(main, "worktree", "add", "-q", "-b", "side", linked);
    const sep = path.join(tmp, "separate");
    execFileSync("git", ["init", "-q", "-b", "main", "--separate-git-dir", path.join(tmp, "separate.git"), sep]);
    writeFileSync(path.join(sep, "README.md"), "# s\n");
    g(sep, "add", "-A");
    g(sep, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init");
    for (const [r, id] of [
      [sha256, "w-sha256"],
      [linked, "w-linked"],
      [sep, "w-sep"],
    ] as const) {
      const ws = await workspace(r, id);
      writeFileSync(path.join(ws.worktree, "feature.txt"), `${id}\n`);
      const out = path.join(tmp, `checkout-${id}`);
      const graded = await commitAndCheckOut(ws, "ocw: t", out);
      expect(graded.changed).toEqual(["feature.txt"]);
      expect(existsSync(path.join(out, "feature.txt"))).toBe(true);
      await publishBranch(ws, graded.commit);
      expectComplete(r, ws.branch, graded.commit);
    }
    expect(g(sha256, "rev-parse", "refs/heads/ocw/w-sha256")).toHaveLength(64);
    expect(g(main, "rev-parse", "refs/heads/ocw/w-linked")).toBe(g(linked, "rev-parse", "refs/heads/ocw/w-linked"));
  }, 60_000);

  it("a diff asked for while the first grading starts: both succeed (the engine repository is made once)", async () => {
    const r = repo();
    const info = await inspectRepo(r);
    for (let i = 0; i < 8; i++) {
      const ws = await createWorkspace(path.join(tmp, "workspaces"), info, `w-race-${i}`, path.join(tmp, "repos", `w-race-${i}.git`));
      writeFileSync(path.join(ws.worktree, "feature.txt"), "feature\n");
      const [diff, graded] = await Promise.all([fullDiff(ws), commitAndCheckOut(ws, "ocw: t", path.join(tmp, `checkout-race-${i}`)), fullDiff(ws)]);
      expect(diff).toContain("+feature");
      expect(graded.changed).toEqual(["feature.txt"]);
    }
  }, 60_000);

  // The engine inherits the environment of whatever started it first: an `ocw` run from another repository's git hook
  // (pre-commit, pre-push) carries its GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE, and git obeys them over its cwd.
  it("paths and a title full of shell syntax are values, never shell text; a git hook's GIT_DIR/GIT_INDEX_FILE the engine inherited steer nothing", async () => {
    const odd = path.join(tmp, 'it\'s "odd" $(touch PWNED1) `touch PWNED2` ${HOME}; touch PWNED3 & x');
    mkdirSync(odd, { recursive: true });
    const r = repo({ "README.md": "# r\n" }, { dir: path.join(odd, "re po $(touch PWNED4)") });
    const hook = repo({ "README.md": "# the hook's\n" });
    const hookIndex = readFileSync(path.join(hook, ".git", "index")).toString("hex");
    const hookRefs = g(hook, "for-each-ref");
    const saved = { GIT_DIR: process.env.GIT_DIR, GIT_WORK_TREE: process.env.GIT_WORK_TREE, GIT_INDEX_FILE: process.env.GIT_INDEX_FILE };
    Object.assign(process.env, { GIT_DIR: path.join(hook, ".git"), GIT_WORK_TREE: hook, GIT_INDEX_FILE: path.join(hook, ".git", "index") });
    let graded;
    let ws;
    try {
      const info = await inspectRepo(r).catch((e: Error) => e);
      expect(info instanceof Error ? info.message : info.root).toBe(r);
      ws = await workspace(r, "w-odd", odd);
      writeFileSync(path.join(ws.worktree, "$(touch PWNED5).txt"), "x\n");
      graded = await commitAndCheckOut(ws, "ocw: $(touch PWNED7) `touch PWNED8`; touch PWNED9", path.join(odd, "check out `touch PWNED6`"));
      await publishBranch(ws, graded.commit);
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
    expect(graded.changed).toEqual(["$(touch PWNED5).txt"]);
    expectComplete(r, ws.branch, graded.commit);
    expect(g(r, "log", "-1", "--format=%s", graded.commit)).toBe("ocw: $(touch PWNED7) `touch PWNED8`; touch PWNED9");
    const pwned = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.name.startsWith("PWNED") ? [path.join(dir, e.name)] : e.isDirectory() ? pwned(path.join(dir, e.name)) : [],
      );
    expect([...pwned(tmp), ...pwned(process.cwd()).filter((p) => !p.includes("node_modules"))]).toEqual([]);
    expect(readFileSync(path.join(hook, ".git", "index")).toString("hex")).toBe(hookIndex);
    expect(g(hook, "for-each-ref")).toBe(hookRefs);
  }, 60_000);
});

// The engine runs every git command from one shared command thread. A worker's diff (asked for by whoever reviews it,
// GUI or MCP) was read whole before being cut to 200 KB: a few hundred MB of text files make it longer than a string can
// be, the command thread dies, and every other worker's git command in flight with it (their grading fails).
describe("a worker whose diff is larger than the engine can hold", () => {
  it("its diff is cut short without reading it whole; a sibling's grading running at the same time succeeds", async () => {
    const r = repo();
    const [bomb, sibling] = [await workspace(r, "w-bomb"), await workspace(r, "w-sibling")];
    const line = Buffer.from("x".repeat(99) + "\n");
    const chunk = Buffer.concat(Array.from({ length: 10_000 }, () => line)); // 1 MB of 100-byte lines
    for (const f of ["a.txt", "b.txt"]) {
      const fd = openSync(path.join(bomb.worktree, f), "w");
      for (let i = 0; i < 290; i++) writeSync(fd, chunk);
      closeSync(fd);
    }
    writeFileSync(path.join(sibling.worktree, "feature.txt"), "feature\n");
    // The sibling is graded again and again while the diff is read, so one of its git commands is always in flight.
    let reading = true;
    const failures: string[] = [];
    let graded = 0;
    const siblingGrading = (async () => {
      while (reading) {
        await commitAndCheckOut(sibling, "ocw: t", path.join(tmp, "checkout-sibling")).then(
          (c) => void (c.changed.join() === "feature.txt" && graded++),
          (err: Error) => void failures.push(err.message),
        );
      }
    })();
    // Caps raised for this test (580 MB is over the default total: snapshot caps are tested in workspace.test.ts).
    process.env.OCW_SNAPSHOT_MAX_MB = "2048";
    process.env.OCW_SNAPSHOT_FILE_MAX_MB = "1024";
    const diff = await fullDiff(bomb).finally(() => {
      delete process.env.OCW_SNAPSHOT_MAX_MB;
      delete process.env.OCW_SNAPSHOT_FILE_MAX_MB;
    });
    reading = false;
    await siblingGrading;
    rmSync(bomb.worktree, { recursive: true, force: true });
    expect(failures).toEqual([]);
    expect(graded).toBeGreaterThan(0);
    expect(diff.length).toBeLessThan(300_000);
    expect(diff).toContain("diff truncated at 200000 bytes");
  }, 120_000);
});

describe("protected files whose names hold a line break", () => {
  // picomatch's `**` is a regular expression whose `.` stops at line terminators (\n, \r, U+2028, U+2029): a file the
  // worker adds under a protected folder with such a name matched no protect glob, and the work was graded built.
  it("a new file under a protected folder named with \\n, \\r or U+2028 is a protected change", async () => {
    const r = repo({ "tests/check.sh": "exit 0\n", "README.md": "# r\n" });
    for (const name of ["new\nline.sh", "cr\rname.sh", "ls\u2028sep.sh"]) {
      const ws = await workspace(r, `w-nl-${n++}`);
      writeFileSync(path.join(ws.worktree, "tests", name), "echo planted\n");
      const verdict = await grade({
        workspace: ws,
        checks: [{ file: "README.md" }],
        scope: [],
        protect: ["tests/**"],
        finalText: "OUTCOME: built",
        title: "t",
        checkoutDir: path.join(tmp, `checkout-nl-${n++}`),
      });
      expect(verdict.scope.changedFiles).toEqual([`tests/${name}`]);
      expect(verdict.verdict, JSON.stringify(name)).toBe("honest-failure");
      expect(verdict.scope.violations).toEqual([`protected file changed: tests/${name}`]);
    }
  }, 60_000);
});

// Protect globs are matched case-folded: on macOS and Windows `Tests/` and `TESTS/` are the folder `tests/`, and the
// user's checkout may be there whatever the engine runs on. Before, `tests/**` matched only the name as written.
describe("protected files under a case-variant of a protected folder", () => {
  it("Tests/Test_x.py, TESTS/x.py, a trailing-dot `tests./` and an NFD-named file are protected changes when tests/** is protected", async () => {
    const r = repo({ "tests/test_x.py": "def test_x():\n    assert False\n", "README.md": "# r\n" });
    for (const name of ["Tests/Test_x.py", "TESTS/conftest.py", "tests./x.py", "Te\u0301sts/x.py"]) {
      const ws = await workspace(r, `w-case-${n++}`);
      mkdirSync(path.join(ws.worktree, path.dirname(name)), { recursive: true });
      writeFileSync(path.join(ws.worktree, name), "def test_x():\n    assert True\n");
      const verdict = await grade({
        workspace: ws,
        checks: [{ file: "README.md" }],
        scope: [],
        protect: name.startsWith("Te\u0301") ? ["t\u00e9sts/**"] : ["tests/**"],
        finalText: "OUTCOME: built",
        title: "t",
        checkoutDir: path.join(tmp, `checkout-case-${n++}`),
      });
      expect(verdict.scope.violations, name).toEqual([`protected file changed: ${name}`]);
      expect(verdict.verdict, name).toBe("honest-failure");
    }
  }, 90_000);
});

// The user named a folder inside the repository (`a/b`): grade() runs the checks in <checkout>/a/b after
// `mkdir -p`-ing it. The worker's commit may hold `a` as a symlink to any folder, and the engine, outside every
// sandbox, then creates <target>/b there and runs the checks with that folder as their cwd.
describe("a worker started in a sub-folder", () => {
  it("replacing a parent of that folder with a symlink does not make the engine create or read anything outside the checkout", async () => {
    const r = repo({ "a/b/README.md": "# b\n", "a/b/check.txt": "no\n" });
    const victim = mkdtempSync(path.join(os.tmpdir(), "ocw-victim-"));
    writeFileSync(path.join(victim, "marker"), "outside\n");
    try {
      const w = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(path.join(r, "a", "b")), "w-sub", path.join(tmp, "repos", "w-sub.git"));
      rmSync(path.join(w.worktree, "a"), { recursive: true });
      execFileSync("ln", ["-s", victim, path.join(w.worktree, "a")]);
      const verdict = await grade({
        workspace: w,
        checks: [{ file: "README.md" }],
        scope: [],
        protect: [],
        finalText: "OUTCOME: built",
        title: "t",
        checkoutDir: path.join(tmp, "checkout-sub"),
      }).catch((e: Error) => e);
      // The engine made the checks' folder <checkout>/a/b through the worker's symlink: <victim>/b.
      expect(readdirSync(victim)).toEqual(["marker"]);
      if (!(verdict instanceof Error)) expect(verdict.verdict).toBe("honest-failure");
    } finally {
      rmSync(victim, { recursive: true, force: true });
    }
    // The same swap made by the worker's code while a command check runs (the checkout is writable to checks): a later
    // file check then read <checkout>/a/b/out.txt through the new symlink, from the live workspace, where the worker
    // left an out.txt that git ignores and so is in no commit; it was graded built on a file the checkout never had.
    const r2 = repo({ "a/b/README.md": "# b\n", ".gitignore": "out.txt\n" });
    const w2 = await createWorkspace(
      path.join(tmp, "workspaces"),
      await inspectRepo(path.join(r2, "a", "b")),
      "w-sub-swap",
      path.join(tmp, "repos", "w-sub-swap.git"),
    );
    writeFileSync(path.join(w2.worktree, "a", "b", "out.txt"), "ok\n");
    writeFileSync(path.join(w2.worktree, "a", "b", "build.sh"), `cd ../.. && mv a a.real && ln -s '${path.join(w2.worktree, "a")}' a\n`);
    const swapped = await grade({
      workspace: w2,
      checks: [{ run: "sh build.sh" }, { file: "out.txt", equals: "ok" }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(tmp, "checkout-sub-swap"),
    });
    expect(swapped.checks.map((c) => c.passed)).toEqual([true, false]);
    expect(swapped.verdict).toBe("honest-failure");
  }, 60_000);
});

// Command checks run the worker's code in the fresh checkout, which is writable to them; every later check runs in that
// same checkout. (1) File checks read it from the engine's own thread: a FIFO left where one reads (`equals` /
// `matches`) made readFileSync wait forever for a writer that is gone, and the whole engine (every worker, every
// client) hung; run in a child process, since a blocked thread here would hang the test runner too. (2) A protected
// file is protected only in the commit: the worker's build step, run by the first check, rewrote the protected test the
// second check runs, and the work was graded built.
describe("what the worker's code, run by one check, leaves in the checkout for the next", () => {
  it("a FIFO fails the file check without blocking the engine; a protected test rewritten at check time is not graded built", async () => {
    const dir = mkdtempSync(path.join(tmp, "fifo-"));
    const script = `const { createJiti } = require("jiti");
const jiti = createJiti(${JSON.stringify(path.join(process.cwd(), "x.js"))});
jiti.import(${JSON.stringify(path.join(process.cwd(), "engine/grading/checks.ts"))}).then(({ runChecks }) =>
  runChecks([{ run: "mkfifo out.txt" }, { file: "out.txt", equals: "ok" }], ${JSON.stringify(dir)})).then((r) => console.log(JSON.stringify(r)));`;
    let out = "";
    try {
      out = execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 15_000, killSignal: "SIGKILL" });
    } catch (err) {
      out = `the engine's thread was still blocked after 15 s (${(err as Error).message.split("\n")[0]})`;
    }
    expect(out).toMatch(/^\[/);
    const results = JSON.parse(out) as { passed: boolean }[];
    expect(results.map((r) => r.passed)).toEqual([true, false]);

    const r = repo({ "test/check.sh": "exit 1\n", "build.sh": "true\n", "README.md": "# r\n" });
    const ws = await workspace(r, "w-rewrite");
    writeFileSync(path.join(ws.worktree, "build.sh"), "printf 'exit 0\\n' > test/check.sh\n");
    const verdict = await grade({
      workspace: ws,
      checks: [{ run: "sh build.sh" }, { run: "sh test/check.sh" }],
      scope: [],
      protect: ["test/**"],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(tmp, "checkout-rewrite"),
    });
    expect(verdict.scope.changedFiles).toEqual(["build.sh"]);
    expect(verdict.verdict).toBe("honest-failure");
  }, 60_000);
});

describe("a FIFO where git reads the worker's files", () => {
  it("a FIFO named .gitignore, or a nested repository's commondir, holds git for good: the grading's git is stopped at its limit, and says why", async () => {
    const was = process.env.OCW_GIT_READ_SEC;
    process.env.OCW_GIT_READ_SEC = "3";
    try {
      for (const [id, make] of [
        ["w-fifo-gitignore", (w: string) => (mkdirSync(path.join(w, "sub")), execFileSync("mkfifo", [path.join(w, "sub", ".gitignore")]))],
        [
          "w-fifo-commondir",
          (w: string) => (
            execFileSync("git", ["init", "-q", "-b", "main", path.join(w, "nested")]), execFileSync("mkfifo", [path.join(w, "nested", ".git", "commondir")])
          ),
        ],
      ] as const) {
        const ws = await workspace(repo(), id);
        make(ws.worktree);
        writeFileSync(path.join(ws.worktree, "feature.txt"), "feature\n");
        const t = Date.now();
        const graded = await Promise.race([
          commitAndCheckOut(ws, "ocw: t", path.join(tmp, `checkout-${id}`)).then(
            () => "graded",
            (err: Error) => err.message,
          ),
          new Promise<string>((res) => setTimeout(() => res("still waiting after 30 s"), 30_000)),
        ]);
        expect(graded).toMatch(/ran past 3 s: it was stopped \(git waits for good where it reads a FIFO/);
        expect(Date.now() - t).toBeLessThan(25_000);
      }
    } finally {
      if (was === undefined) delete process.env.OCW_GIT_READ_SEC;
      else process.env.OCW_GIT_READ_SEC = was;
    }
  }, 90_000);

  it("a nested repository's gitfile of 64 MiB: 4 KiB of it are read", async () => {
    const ws = await workspace(repo(), "w-big-gitfile");
    mkdirSync(path.join(ws.worktree, "big"));
    writeFileSync(path.join(ws.worktree, "big", ".git"), `gitdir: ${path.join(tmp, "nowhere")}\n${"x".repeat(64 << 20)}`);
    writeFileSync(path.join(ws.worktree, "feature.txt"), "feature\n");
    const graded = await commitAndCheckOut(ws, "ocw: t", path.join(tmp, "checkout-big-gitfile")).then(
      (x) => x.changed.join(","),
      (err: Error) => err.message,
    );
    expect(typeof graded).toBe("string");
  }, 60_000);
});
