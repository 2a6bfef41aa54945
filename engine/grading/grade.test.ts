// Grading's own folders: the fresh checkout and the checks' private HOME/TMPDIR. A check can leave anything there (a
// cache, a marker that makes the next run pass); a regrade must start from nothing, and nothing may pile up per worker.
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, vi } from "vitest";
import { committedRepo, gitStartsDuring } from "../../test/fixtures/git-repo";
import { checkOutCommit, commitAndCheckOut, createWorkspace, gradedStoreOf, inspectRepo, partialHolds } from "../workspace/workspace";
import { discard, sweepDiscarded } from "./folders";
import { baselineChecks, baselineInFreshWorkspace, grade, type GradeInput } from "./grade";
import { flaggedChanges } from "../workspace/land";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-grade-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("grading's folders", () => {
  it("a check's HOME and TMPDIR start empty at every grading, and no folder of a grading is left after it", async () => {
    const repo = committedRepo(path.join(tmp, "repo"), { "README.md": "# r\n" });
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), "w-1", path.join(tmp, "objects", "w-1.git"));
    writeFileSync(path.join(ws.worktree, "change.txt"), "a change\n"); // a no-op is never built
    const stateDir = path.join(tmp, "state");
    const gradingDir = path.join(stateDir, "grading");
    mkdirSync(gradingDir, { recursive: true });
    const input: GradeInput = {
      workspace: ws,
      // Passes only where nothing of an earlier run is left, then leaves something behind.
      checks: [{ run: 'test ! -e "$HOME/marker" && test ! -e "$TMPDIR/left" && touch "$HOME/marker" "$TMPDIR/left"' }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(gradingDir, "w-1"),
      // "none": the same folders as in bubblewrap, without needing it on this machine.
      sandbox: { kind: "none", stateDir, tmpDir: path.join(gradingDir, "w-1.tmp") },
    };
    const first = await grade(input);
    expect(first.checks[0]!.output).toBe("");
    expect(first.verdict).toBe("built");
    // A regrade (an engine restarted mid-grading grades the worker again) runs the same check on the same folders.
    const again = await grade(input);
    expect(again.checks[0]).toMatchObject({ passed: true });
    expect(existsSync(input.checkoutDir)).toBe(false);
    expect(existsSync(input.sandbox!.tmpDir)).toBe(false);
    await vi.waitFor(() => expect(readdirSync(gradingDir)).toEqual([]), { timeout: 5000 });
  }, 30_000);

  // rm cannot delete inside a read-only folder unless it is root: the tree is made as, and deleted by, a user who is not
  // (nobody, when the tests run as root).
  it("a read-only tree a check left (Go's module cache) is deleted too, and nothing outside it changes mode", () => {
    const script = `
const { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } = require("node:fs");
const os = require("node:os"), path = require("node:path");
const { createJiti } = require("jiti");
const jiti = createJiti(${JSON.stringify(path.join(process.cwd(), "x.js"))});
jiti.import(${JSON.stringify(path.join(process.cwd(), "engine/grading/folders.ts"))}).then(async ({ discard, sweepDiscarded }) => {
  const grading = mkdtempSync(path.join(os.tmpdir(), "ocw-ro-"));
  const outside = mkdtempSync(path.join(os.tmpdir(), "ocw-ro-outside-"));
  chmodSync(outside, 0o500);
  const cache = (root) => {
    const mod = path.join(root, "home", "go", "pkg", "mod", "example.com", "m@v1");
    mkdirSync(mod, { recursive: true });
    writeFileSync(path.join(mod, "go.mod"), "module m\\n");
    symlinkSync(outside, path.join(mod, "out"));
    for (const d of [mod, path.dirname(mod), path.dirname(path.dirname(mod))]) chmodSync(d, 0o555);
  };
  cache(path.join(grading, "w-1.tmp"));
  cache(path.join(grading, "w-2.tmp.discarded-00000000"));
  discard(path.join(grading, "w-1.tmp"));
  await sweepDiscarded(grading);
  for (let i = 0; i < 50 && readdirSync(grading).length; i++) await new Promise((r) => setTimeout(r, 100));
  console.log(JSON.stringify({ left: readdirSync(grading), outsideMode: (statSync(outside).mode & 0o777).toString(8), uid: process.getuid() }));
});`;
    const asRoot = process.getuid?.() === 0;
    const out = execFileSync(process.execPath, ["-e", script], { encoding: "utf8", timeout: 30_000, ...(asRoot ? { uid: 65534, gid: 65534 } : {}) });
    const r = JSON.parse(out) as { left: string[]; outsideMode: string; uid: number };
    expect(r.uid).not.toBe(0);
    expect(r.left).toEqual([]);
    expect(r.outsideMode).toBe("500");
  }, 60_000);

  it("a no-op is never built: no change → honest-failure with the reason, whatever the checks say", async () => {
    const repo = committedRepo(path.join(tmp, "repo-noop"), { "README.md": "# r\n" });
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), "w-noop", path.join(tmp, "objects", "w-noop.git"));
    const base: GradeInput = {
      workspace: ws,
      checks: [{ run: "true", name: "passes" }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: honest-failure — nothing to do",
      title: "t",
      checkoutDir: path.join(tmp, "grading", "w-noop"),
    };
    const v = await grade({ ...base, baseline: { passedOnBase: ["passes"] } });
    expect(v).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true, weakEvidence: false, commit: ws.baseCommit });
    expect(v.reason).toMatch(/no change: the worker changed no file, so nothing was shown to work/);
    // With no checks at all, the same.
    expect((await grade({ ...base, checks: [] })).verdict).toBe("honest-failure");
    // A change whose every check already passed on the base: built, weak evidence; a check that failed there: evidence.
    writeFileSync(path.join(ws.worktree, "x.txt"), "x\n");
    expect(await grade({ ...base, baseline: { passedOnBase: ["passes"] } })).toMatchObject({ verdict: "built", weakEvidence: true, reason: null });
    expect(await grade({ ...base, baseline: { passedOnBase: [] } })).toMatchObject({ verdict: "built", weakEvidence: false });
    // No baseline (the base run failed): not flagged, since nothing is known.
    expect(await grade({ ...base, baseline: null })).toMatchObject({ verdict: "built", weakEvidence: false });
  }, 30_000);

  it("a built verdict's flags come from the graded commit's own diff, the same as read with git from the graded store, with no git started for them", async () => {
    const repo = committedRepo(path.join(tmp, "repo-flags"), { "README.md": "# r\n", "package.json": '{"scripts":{"test":"vitest"}}\n', "gone.txt": "g\n" });
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(repo), "w-flags", path.join(tmp, "objects", "w-flags.git"));
    writeFileSync(path.join(ws.worktree, ".gitattributes"), "*.bin filter=lfs\n");
    writeFileSync(path.join(ws.worktree, "package.json"), '{"scripts":{"test":"true"}}\n');
    writeFileSync(path.join(ws.worktree, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    symlinkSync("../outside", path.join(ws.worktree, "link"));
    // A name that is not UTF-8 (shown losslessly as \xff either way).
    writeFileSync(Buffer.concat([Buffer.from(path.join(ws.worktree, "bad-")), Buffer.from([0xff]), Buffer.from(".txt")]), "x\n");
    rmSync(path.join(ws.worktree, "gone.txt"));
    mkdirSync(path.join(ws.worktree, ".github", "workflows"), { recursive: true });
    writeFileSync(path.join(ws.worktree, ".github", "workflows", "ci.yml"), "on: push\n");
    // A `git` first on PATH logs each start's subcommand.
    let v: Awaited<ReturnType<typeof grade>> | undefined;
    const starts = await gitStartsDuring(path.join(tmp, "flags-bin"), async () => {
      v = await grade({
        workspace: ws,
        checks: [{ file: "run.sh" }],
        scope: [],
        protect: [],
        finalText: "OUTCOME: built",
        title: "t",
        checkoutDir: path.join(tmp, "grading", "w-flags"),
      });
    });
    if (!v) throw new Error("not graded");
    expect(v.verdict).toBe("built");
    expect(starts).not.toContain("diff-tree");
    // The same flags as read with git from the engine's graded store, where the graded commit is kept.
    expect(v.flags).toEqual(await flaggedChanges(repo, ws.baseCommit, v.commit!, await gradedStoreOf(ws)));
    expect(v.flags!.map((f) => f.kind).sort()).toEqual(["executable", "git-config", "symlink", "tool-config", "tool-config"]);
  });

  it("a name that is one file on macOS beside the base's is flagged from the engine's own commit: no git lists the tree, and the repository's git folder is asked once", async () => {
    const repo = committedRepo(path.join(tmp, "repo-names"), { "tests/x.py": "a\n", "caf\u00e9.txt": "c\n", "README.md": "# r\n" });
    const info = await inspectRepo(repo);
    const gradeOne = async (id: string, files: Record<string, string>) => {
      const ws = await createWorkspace(path.join(tmp, "workspaces"), info, id, path.join(tmp, "objects", `${id}.git`));
      for (const [f, text] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(ws.worktree, f)), { recursive: true });
        writeFileSync(path.join(ws.worktree, f), text);
      }
      let v: Awaited<ReturnType<typeof grade>> | undefined;
      const starts = await gitStartsDuring(path.join(tmp, `${id}-bin`), async () => {
        v = await grade({
          workspace: ws,
          checks: [{ file: "README.md" }],
          scope: [],
          protect: [],
          finalText: "OUTCOME: built",
          title: "t",
          checkoutDir: path.join(tmp, "grading", id),
        });
      });
      if (!v) throw new Error("not graded");
      return { ws, v, starts };
    };
    const first = await gradeOne("w-names-1", { "Tests/x.py": "b\n", "cafe\u0301.txt": "d\n" });
    expect(first.v.verdict).toBe("built");
    // The same flags as git's listing of the graded commit gives (read from the graded store).
    expect(first.v.flags).toEqual(await flaggedChanges(repo, first.ws.baseCommit, first.v.commit!, await gradedStoreOf(first.ws)));
    expect(
      first.v
        .flags!.filter((f) => f.kind === "name-collision")
        .map((f) => f.path)
        .sort(),
    ).toEqual(["Tests/x.py", "cafe\u0301.txt"].sort());
    // One listing: the base's (shared by the repository's workers), none of the graded commit.
    expect(first.starts.filter((c) => c === "ls-tree")).toHaveLength(1);
    // A second worker of the same repository: its grading starts no rev-parse for the git folder either.
    const second = await gradeOne("w-names-2", { "notes.md": "n\n" });
    expect(second.v.verdict).toBe("built");
    expect(second.v.flags).toEqual([]);
    expect(second.starts).not.toContain("ls-tree");
    expect(second.starts).not.toContain("rev-parse");
  }, 30_000);

  it("file checks on the base are read in the workspace just made, as a fresh checkout of the base shows them; a command check or a checks' folder that is not a folder there leaves it to baselineChecks", async () => {
    const repo = committedRepo(path.join(tmp, "repo-fresh"), { "README.md": "# r\n", "sub/a.txt": "A\n", "sub/link": "x" });
    execFileSync("sh", ["-c", "rm sub/link && ln -s ../../outside.txt sub/link && git add -A && git -c user.name=t -c user.email=t@t commit -qm link"], {
      cwd: repo,
    });
    const ws = await createWorkspace(
      path.join(tmp, "workspaces"),
      await inspectRepo(path.join(repo, "sub")),
      "w-fresh",
      path.join(tmp, "objects", "w-fresh.git"),
    );
    const checks = [
      { file: "a.txt", equals: "A" },
      { file: "a.txt", matches: "B" },
      { file: "missing.txt" },
      { file: "missing.txt", exists: false },
      { file: "link" },
      { file: "../README.md" },
    ];
    const fresh = await baselineInFreshWorkspace(ws, checks);
    const checkedOut = await baselineChecks({ workspace: ws, checks, checkoutDir: path.join(tmp, "grading", "w-fresh.base") });
    expect(fresh).toEqual(checkedOut);
    expect(fresh!.passedOnBase.length).toBeGreaterThan(0);
    expect(fresh!.passedOnBase.length).toBeLessThan(checks.length);
    // A command check runs sandboxed in a fresh checkout: not here.
    expect(await baselineInFreshWorkspace(ws, [...checks, { run: "true" }])).toBeNull();
    // No checks: nothing passes.
    expect(await baselineInFreshWorkspace(ws, [])).toEqual({ passedOnBase: [] });
    // The checks' folder turned into something else: not here either.
    const moved = { ...ws, cwd: path.join(ws.worktree, "README.md") };
    expect(await baselineInFreshWorkspace(moved, checks)).toBeNull();
  });

  it("the checks on the base commit: which already pass there; an empty base tree (git commit --allow-empty) checks out", async () => {
    const empty = path.join(tmp, "repo-empty");
    execFileSync("git", ["init", "-q", "-b", "main", empty]);
    execFileSync("git", ["-C", empty, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"]);
    const ws = await createWorkspace(path.join(tmp, "workspaces"), await inspectRepo(empty), "w-empty", path.join(tmp, "objects", "w-empty.git"));
    const checks = [{ run: "true", name: "always" }, { file: "a.txt" }, { run: 'test -z "$(ls -A)"', name: "empty checkout" }];
    expect(await baselineChecks({ workspace: ws, checks, checkoutDir: path.join(tmp, "grading", "w-empty.base") })).toEqual({
      passedOnBase: ["always", "empty checkout"],
    });
    // Grading the untouched empty tree does not fail (it did: "pathspec '.' did not match any file(s)").
    const v = await grade({
      workspace: ws,
      checks,
      scope: [],
      protect: [],
      finalText: "OUTCOME: honest-failure — nothing",
      title: "t",
      checkoutDir: path.join(tmp, "grading", "w-empty"),
    });
    expect(v).toMatchObject({ verdict: "honest-failure", claim: "honest-failure", honest: true });
    writeFileSync(path.join(ws.worktree, "a.txt"), "a\n");
    const built = await grade({
      workspace: ws,
      checks: [{ file: "a.txt" }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(tmp, "grading", "w-empty"),
      previousCommit: v.commit,
    });
    expect(built).toMatchObject({ verdict: "built", sincePrevious: ["a.txt"] });
  }, 30_000);

  it("discarded folders are deleted once gradings pause (nothing of a batch's gradings waits on it), at the latest 5 s on", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const dir = path.join(tmp, "later");
      const left = () => readdirSync(dir).filter((d) => d.includes(".discarded-")).length;
      const settle = async () => {
        // Real time (node:timers/promises is not faked): the deletions run on the file system's threads.
        for (let i = 0; i < 100 && left(); i++) await sleep(20);
      };
      for (let i = 0; i < 40; i++) mkdirSync(path.join(dir, `w-${i}`, "deep"), { recursive: true });
      discard(path.join(dir, "w-0"));
      await vi.advanceTimersByTimeAsync(200);
      discard(path.join(dir, "w-1"));
      await vi.advanceTimersByTimeAsync(200);
      // Out of the way at once, deleted only once no grading discarded anything for a while.
      expect(readdirSync(dir).filter((d) => /^w-[01]$/.test(d))).toEqual([]);
      expect(left()).toBe(2);
      await vi.advanceTimersByTimeAsync(150);
      await settle();
      expect(left()).toBe(0);
      // Gradings that never pause: deleted all the same, 5 s after the first.
      for (let i = 2; i < 40; i++) {
        discard(path.join(dir, `w-${i}`));
        await vi.advanceTimersByTimeAsync(200);
      }
      await settle();
      expect(left()).toBeLessThan(20);
      await vi.advanceTimersByTimeAsync(400);
      await settle();
      expect(left()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("what an engine stopped mid-deletion left is swept; other folders are not touched", async () => {
    const gradingDir = path.join(tmp, "sweep");
    for (const d of ["w-2.discarded-0a1b2c3d/deep/er", "w-3.tmp.discarded-0011aabb", "w-4", "w-4.tmp"])
      mkdirSync(path.join(gradingDir, d), { recursive: true });
    await sweepDiscarded(gradingDir);
    expect(readdirSync(gradingDir).sort()).toEqual(["w-4", "w-4.tmp"]);
    await sweepDiscarded(path.join(tmp, "never-made"));
  });
});

describe("file checks read a partial checkout", () => {
  const setup = async (name: string, files: Record<string, string>) => {
    const repo = committedRepo(path.join(tmp, `repo-${name}`), { "README.md": "# r\n", "docs/keep.md": "k\n", ...files });
    const ws = await createWorkspace(path.join(tmp, `ws-${name}`), await inspectRepo(repo), `w-${name}`, path.join(tmp, "objects", `w-${name}.git`));
    return ws;
  };

  it("checks out only the named files, from the snapshot's index; the whole tree without a list", async () => {
    const ws = await setup("only", {});
    writeFileSync(path.join(ws.worktree, "out.txt"), "x\n");
    const part = path.join(tmp, "co-only");
    const g = await commitAndCheckOut(ws, "ocw: t", part, undefined, ["out.txt", "missing.txt"]);
    expect(g).toMatchObject({ changed: ["out.txt"], partial: true });
    // Only the file a check reads is written (the 2 other files of the repository are not).
    expect(readdirSync(part, { recursive: true }).sort()).toEqual(["out.txt"]);
    // A file that came out, and one missing from the commit, are shown as the whole tree shows them.
    expect(partialHolds(part, ["out.txt"])).toBe(true);
    expect(partialHolds(part, ["out.txt", "missing.txt", "no/such/folder.txt"])).toBe(true);
    const whole = path.join(tmp, "co-whole");
    await checkOutCommit(ws, g.commit, whole);
    expect(readdirSync(whole, { recursive: true }).sort()).toEqual(["README.md", "docs", "docs/keep.md", "out.txt"]);
    const all = path.join(tmp, "co-all");
    expect(await commitAndCheckOut(ws, "ocw: t", all)).toMatchObject({ partial: false });
    expect(readdirSync(all, { recursive: true }).sort()).toEqual(["README.md", "docs", "docs/keep.md", "out.txt"]);
    // A name git's --stdin would unquote: the whole tree.
    expect(await commitAndCheckOut(ws, "ocw: t", path.join(tmp, "co-q"), undefined, ['"q.txt'])).toMatchObject({ partial: false });
  });

  it("a symlink on the way to a named path comes out, and then the partial checkout does not hold", async () => {
    const ws = await setup("walk", {});
    symlinkSync("docs", path.join(ws.worktree, "d"));
    symlinkSync("README.md", path.join(ws.worktree, "r.md"));
    const part = path.join(tmp, "co-walk");
    await commitAndCheckOut(ws, "ocw: t", part, undefined, ["d/keep.md", "r.md", "docs/keep.md"]);
    // (readdir follows the symlink d into docs.)
    expect(readdirSync(part, { recursive: true }).sort()).toEqual(["d", "d/keep.md", "docs", "docs/keep.md", "r.md"]);
    expect(lstatSync(path.join(part, "d")).isSymbolicLink()).toBe(true);
    expect(partialHolds(part, ["docs/keep.md"])).toBe(true);
    expect(partialHolds(part, ["d/keep.md"])).toBe(false);
    expect(partialHolds(part, ["r.md"])).toBe(false);
    // A named folder (not a file): the whole tree decides.
    expect(partialHolds(part, ["docs"])).toBe(false);
  });

  it("a verdict is the same as on the whole tree: a symlink, a path through a symlink, a file that must be absent", async () => {
    const ws = await setup("links", {});
    writeFileSync(path.join(ws.worktree, "real.txt"), "hello\n");
    symlinkSync("real.txt", path.join(ws.worktree, "link.txt"));
    symlinkSync("docs", path.join(ws.worktree, "d"));
    symlinkSync("/etc/hostname", path.join(ws.worktree, "out.txt"));
    const input = (checks: GradeInput["checks"]): GradeInput => ({
      workspace: ws,
      checks,
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(tmp, "grading-links"),
    });
    const v = await grade(
      input([
        { file: "real.txt", equals: "hello" },
        { file: "link.txt", equals: "hello" },
        { file: "d/keep.md", equals: "k" },
        { file: "gone.txt", exists: false },
      ]),
    );
    expect(v.checks.map((c) => [c.name, c.passed])).toEqual([
      ["file real.txt", true],
      ["file link.txt", true],
      ["file d/keep.md", true],
      ["file gone.txt", true],
    ]);
    const out = await grade(input([{ file: "out.txt" }]));
    expect(out.checks[0]).toMatchObject({ passed: false, output: "out.txt resolves outside the workspace" });
  });
});

describe("scope and protect of a task in a nested folder", () => {
  it("read a file outside the folder as `cd` reaches it from there: `--protect ../b/**` from packages/a guards packages/b (it read ../packages/b/x.ts and guarded nothing)", async () => {
    const repo = committedRepo(path.join(tmp, "repo-nested"), {
      "README.md": "# r\n",
      "packages/a/src/x.ts": "a\n",
      "packages/b/x.ts": "b\n",
    });
    const ws = await createWorkspace(
      path.join(tmp, "workspaces"),
      await inspectRepo(path.join(repo, "packages/a")),
      "w-nested",
      path.join(tmp, "objects", "w-nested.git"),
    );
    writeFileSync(path.join(ws.worktree, "packages/a/src/x.ts"), "a2\n");
    writeFileSync(path.join(ws.worktree, "packages/b/x.ts"), "b2\n");
    writeFileSync(path.join(ws.worktree, "README.md"), "# r2\n");
    const v = await grade({
      workspace: ws,
      checks: [{ file: "src/x.ts", equals: "a2" }],
      scope: ["src/**", "../../README.md"],
      protect: ["../b/**"],
      finalText: "OUTCOME: built",
      title: "t",
      checkoutDir: path.join(tmp, "grading", "w-nested"),
    });
    expect(v.scope.violations).toEqual(["protected file changed: ../b/x.ts"]);
    expect(v.scope.changedFiles.sort()).toEqual(["../../README.md", "../b/x.ts", "src/x.ts"]);
    expect(v.verdict).toBe("honest-failure");
  }, 30_000);
});
