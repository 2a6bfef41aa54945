// Attack routes against "objects reach the person's repository only when the work is landed" (issue 25): a hostile
// worker's commit and a careless person's repository, driven through the real grading path (grade()) and the real
// publish (publishBranch → the fixed copy script). Each test fails where its route is open.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Worker } from "../../shared/worker";
import { committedRepo } from "../../test/fixtures/git-repo";
import { testRegistry } from "../../test/fixtures/registry";
import { grade } from "../grading/grade";
import { commitAndCheckOut, createWorkspace, gradedObjectsDir, inspectRepo, publishBranch, type Workspace } from "../workspace/workspace";
import { Batches, type BatchRecord } from "./batches";
import type { Engine } from "./engine";
import { pruneBranches } from "./housekeeping";
import { WorkspaceLifecycle } from "./lifecycle";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-pub-attack-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const g = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();

let n = 0;
/** A worker on `repo` (or a fresh one) whose change `change` makes, graded built for real. */
async function built(change: (ws: Workspace) => unknown, repo?: string) {
  const root = mkdtempSync(path.join(tmp, "w-"));
  repo ??= committedRepo(path.join(root, "repo"), { "README.md": "# r\n" });
  const id = `w-att${++n}`;
  const reposDir = path.join(root, "state", "repos");
  const ws = await createWorkspace(path.join(root, "state", "workspaces"), await inspectRepo(repo), id, path.join(reposDir, id));
  await change(ws);
  const verdict = await grade({
    workspace: ws,
    checks: [{ run: "true" }],
    scope: [],
    protect: [],
    finalText: "OUTCOME: built",
    title: "t",
    checkoutDir: path.join(root, "grading"),
  });
  expect(verdict.verdict).toBe("built");
  return { repo, ws, commit: verdict.commit!, verdict };
}

/** The worker's second round graded (its files as they are now), after round 1's commit. */
function gradeRound2(w: Awaited<ReturnType<typeof built>>) {
  return grade({
    workspace: w.ws,
    checks: [{ run: "true" }],
    scope: [],
    protect: [],
    finalText: "OUTCOME: built",
    title: "round 2",
    checkoutDir: path.join(path.dirname(w.ws.worktree), "grading2"),
    previousCommit: w.commit,
  });
}

describe("publish under attack: the ref it moves", () => {
  it("ocw/<id> made a symbolic ref to a branch of the person's: publish refuses and the person's branch stays where it was", async () => {
    const w = await built((ws) => writeFileSync(path.join(ws.worktree, "a.txt"), "a\n"));
    const main = g(w.repo, "rev-parse", "refs/heads/main");
    // The person's branch `keep` is at the base; ocw/<id> points at it (a symbolic ref).
    g(w.repo, "branch", "keep", main);
    g(w.repo, "symbolic-ref", `refs/heads/${w.ws.branch}`, "refs/heads/keep");
    // Even were the base among the worker's earlier rounds, the branch behind the symbolic ref is the person's.
    await expect(publishBranch(w.ws, w.commit, [main])).rejects.toThrow(/symbolic ref/);
    expect(g(w.repo, "rev-parse", "refs/heads/keep")).toBe(main);
    expect(g(w.repo, "symbolic-ref", `refs/heads/${w.ws.branch}`)).toBe("refs/heads/keep");
  }, 30_000);
});

describe("publish: a branch named ocw is in the way", () => {
  it("a branch `ocw` of the person's: publish says git's words (not 'moved while publishing'), and `ocw` stays", async () => {
    const w = await built((ws) => writeFileSync(path.join(ws.worktree, "a.txt"), "a\n"));
    g(w.repo, "branch", "ocw");
    await expect(publishBranch(w.ws, w.commit)).rejects.toMatchObject({
      code: "conflict",
      message: expect.stringMatching(/could not be made \(git's words, which may name the worker's files, untrusted: ".*refs\/heads\/ocw' exists/),
    });
    expect(g(w.repo, "rev-parse", "refs/heads/ocw")).toBe(g(w.repo, "rev-parse", "main"));
  }, 30_000);
});

describe("prune under attack: the ref it deletes", () => {
  it("an ocw/ symbolic ref to a branch of the person's is pruned as a ref of its own: the person's branch stays", async () => {
    const repo = committedRepo(path.join(mkdtempSync(path.join(tmp, "prune-")), "repo"));
    const main = g(repo, "rev-parse", "refs/heads/main");
    g(repo, "branch", "keep", main);
    g(repo, "symbolic-ref", "refs/heads/ocw/current", "refs/heads/keep");
    const out = await pruneBranches({ list: () => [] } as unknown as Engine, repo);
    expect(out.deleted.map((d) => d.branch)).toEqual(["ocw/current"]);
    expect(g(repo, "rev-parse", "refs/heads/keep")).toBe(main);
    expect(g(repo, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/keep\nrefs/heads/main");
  }, 30_000);
});

describe("a branch the person has checked out", () => {
  it("ocw/<id> checked out to review round 1: round 2's publish refuses to move it under the person's files; prune keeps it", async () => {
    const w = await built((ws) => writeFileSync(path.join(ws.worktree, "r1.txt"), "one\n"));
    await publishBranch(w.ws, w.commit);
    g(w.repo, "checkout", "-q", w.ws.branch);
    writeFileSync(path.join(w.ws.worktree, "r2.txt"), "two\n");
    const r2 = await gradeRound2(w);
    await expect(publishBranch(w.ws, r2.commit!, [w.commit])).rejects.toMatchObject({ code: "conflict", message: expect.stringMatching(/is checked out in/) });
    expect(g(w.repo, "rev-parse", "HEAD")).toBe(w.commit);
    expect(g(w.repo, "status", "--porcelain")).toBe("");
    expect(() => g(w.repo, "cat-file", "-e", r2.commit!)).toThrow();
    // Merged into main meanwhile, a prune still keeps the branch that is checked out.
    g(w.repo, "branch", "-f", "main", w.commit);
    const out = await pruneBranches({ list: () => [] } as unknown as Engine, w.repo);
    expect(out.deleted).toEqual([]);
    expect(out.kept).toEqual([expect.objectContaining({ branch: w.ws.branch, reason: expect.stringMatching(/checked out/) })]);
    expect(g(w.repo, "rev-parse", "HEAD")).toBe(w.commit);
  }, 60_000);
});

describe("publish under attack: the person's own local configuration runs nothing of theirs", () => {
  it("a partial clone (promisor remote with an upload-pack program), core.fsmonitor, core.alternateRefsCommand, hooks in core.hooksPath: none runs during publish but the reference-transaction hook of the ref update", async () => {
    const root = mkdtempSync(path.join(tmp, "cfg-"));
    const log = path.join(root, "ran.log");
    const prog = (name: string) => {
      const p = path.join(root, `${name}.sh`);
      writeFileSync(p, `#!/bin/sh\necho ${name} >> "${log}"\n${name === "uploadpack" ? 'exec git-upload-pack "$@"\n' : ""}`);
      chmodSync(p, 0o755);
      return p;
    };
    const origin = committedRepo(path.join(root, "origin"), { "README.md": "# r\n", "lib/a.txt": "a\n" });
    g(origin, "config", "uploadpack.allowFilter", "true");
    const repo = path.join(root, "person");
    execFileSync("git", ["clone", "-q", "--filter=blob:none", `file://${origin}`, repo]);
    expect(g(repo, "config", "remote.origin.promisor")).toBe("true");
    const hooks = path.join(root, "hooks");
    mkdirSync(hooks);
    for (const h of ["reference-transaction", "post-checkout", "post-merge", "pre-auto-gc", "post-index-change", "pre-commit"])
      writeFileSync(path.join(hooks, h), `#!/bin/sh\necho hook-${h} >> "${log}"\n`, { mode: 0o755 });
    g(repo, "config", "remote.origin.uploadpack", prog("uploadpack"));
    g(repo, "config", "core.fsmonitor", prog("fsmonitor"));
    g(repo, "config", "core.alternateRefsCommand", prog("alternaterefs"));
    g(repo, "config", "core.hooksPath", hooks);
    g(repo, "config", "gc.auto", "1");
    g(repo, "config", "gc.autoDetach", "false");
    // Checking fetched objects in a partial clone: the base's missing blobs must not make every publish fail.
    g(repo, "config", "transfer.fsckObjects", "true");
    const w = await built((ws) => {
      for (let i = 0; i < 20; i++) writeFileSync(path.join(ws.worktree, `new${i}.txt`), `${i}\n`);
    }, repo);
    rmSync(log, { force: true });
    const p = await publishBranch(w.ws, w.commit);
    expect(p.objects).toBe(22); // 20 blobs, a tree, the commit
    expect(g(repo, "rev-parse", `refs/heads/${w.ws.branch}`)).toBe(w.commit);
    // Only the person's reference-transaction hook, as any ref update of theirs runs it (prepared, committed).
    const ran = existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];
    expect(ran.filter((r) => r !== "hook-reference-transaction")).toEqual([]);
  }, 60_000);
});

describe("publish under attack: objects a worker's tree can hold", () => {
  it("a nested repository (a gitlink), names with newlines, leading dashes and quotes, a symlink named .git-like, a symlink out of the tree: published whole, the person's store stays consistent, the gitlink's commit is not copied", async () => {
    let inner = "";
    const w = await built((ws) => {
      const sub = path.join(ws.worktree, "sub");
      mkdirSync(sub);
      execFileSync("git", ["init", "-q", sub]);
      writeFileSync(path.join(sub, "secret.txt"), "only in the worker's nested repository\n");
      execFileSync("git", ["-C", sub, "add", "-A"]);
      execFileSync("git", ["-C", sub, "-c", "user.name=w", "-c", "user.email=w@w", "commit", "-q", "-m", "x"]);
      inner = g(sub, "rev-parse", "HEAD");
      // The nested repository's own configuration and hooks: the engine's git must run none of them.
      const marker = path.join(path.dirname(ws.worktree), "nested-ran");
      writeFileSync(path.join(sub, ".git", "hooks", "prog"), `#!/bin/sh\necho ran >> "${marker}"\n`, { mode: 0o755 });
      execFileSync("git", ["-C", sub, "config", "core.fsmonitor", path.join(sub, ".git", "hooks", "prog")]);
      execFileSync("git", ["-C", sub, "config", "core.hooksPath", path.join(sub, ".git", "hooks")]);
      for (const h of ["post-index-change", "reference-transaction", "pre-commit"])
        writeFileSync(path.join(sub, ".git", "hooks", h), `#!/bin/sh\necho ${h} >> "${marker}"\n`, { mode: 0o755 });
      writeFileSync(path.join(ws.worktree, "line\nbreak.txt"), "nl\n");
      writeFileSync(path.join(ws.worktree, "--upload-pack=touch pwned"), "dash\n");
      writeFileSync(path.join(ws.worktree, '"quoted" name'), "q\n");
      symlinkSync(".git/config", path.join(ws.worktree, ".git-config"));
      symlinkSync("/etc/passwd", path.join(ws.worktree, "outside"));
    });
    expect(existsSync(path.join(path.dirname(w.ws.worktree), "nested-ran"))).toBe(false);
    const p = await publishBranch(w.ws, w.commit);
    expect(p.objects).toBeGreaterThan(0);
    const tree = g(w.repo, "ls-tree", "-r", "-z", w.commit).split("\0").filter(Boolean);
    expect(tree).toContain(`160000 commit ${inner}\tsub`);
    expect(tree.some((e) => e.endsWith("\tline\nbreak.txt"))).toBe(true);
    expect(tree.some((e) => e.endsWith("\t--upload-pack=touch pwned"))).toBe(true);
    // The nested repository's commit and its file are the worker's alone: never copied into the person's store.
    expect(() => g(w.repo, "cat-file", "-e", inner)).toThrow();
    g(w.repo, "fsck", "--no-dangling", "--connectivity-only");
    expect(existsSync(path.join(w.repo, "pwned"))).toBe(false);
    expect(existsSync(path.join(path.dirname(w.repo), "pwned"))).toBe(false);
    // The gitlink is flagged for the person (a submodule), as are the symlinks.
    expect(w.verdict.flags).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: "sub", kind: "submodule" }), expect.objectContaining({ path: "outside", kind: "symlink" })]),
    );
  }, 60_000);

  it("a nested .git that is a link or a gitfile to another repository of the host (new, or in the base's submodule): not graded, its commit id nowhere", async () => {
    const root = mkdtempSync(path.join(tmp, "nested-"));
    const other = committedRepo(path.join(root, "other-private"), { "s.txt": "secret\n" });
    const otherHead = g(other, "rev-parse", "HEAD");
    // The person's repository has a submodule `mod` (a gitlink; its folder empty in a checkout).
    const repo = committedRepo(path.join(root, "repo"));
    g(repo, "update-index", "--add", "--cacheinfo", `160000,${g(repo, "rev-parse", "HEAD")},mod`);
    g(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "submodule");
    const cases: [string, (wt: string) => void][] = [
      ["sub/", (wt) => (mkdirSync(path.join(wt, "sub")), symlinkSync(path.join(other, ".git"), path.join(wt, "sub", ".git")))],
      ["sub/", (wt) => (mkdirSync(path.join(wt, "sub")), writeFileSync(path.join(wt, "sub", ".git"), `gitdir: ${path.join(other, ".git")}\n`))],
      ["mod/", (wt) => (mkdirSync(path.join(wt, "mod"), { recursive: true }), symlinkSync(path.join(other, ".git"), path.join(wt, "mod", ".git")))],
      // A real .git folder whose refs are a link to the other repository's refs (HEAD names its branch).
      [
        "sub/",
        (wt) => {
          mkdirSync(path.join(wt, "sub", ".git", "objects"), { recursive: true });
          writeFileSync(path.join(wt, "sub", ".git", "HEAD"), `ref: ${g(other, "symbolic-ref", "HEAD")}\n`);
          symlinkSync(path.join(other, ".git", "refs"), path.join(wt, "sub", ".git", "refs"));
        },
      ],
      // A real .git folder whose commondir names the other repository.
      [
        "sub/",
        (wt) => {
          mkdirSync(path.join(wt, "sub", ".git", "objects"), { recursive: true });
          mkdirSync(path.join(wt, "sub", ".git", "refs"));
          writeFileSync(path.join(wt, "sub", ".git", "HEAD"), `ref: ${g(other, "symbolic-ref", "HEAD")}\n`);
          writeFileSync(path.join(wt, "sub", ".git", "commondir"), `${path.join(other, ".git")}\n`);
        },
      ],
    ];
    for (const [i, [dir, make]] of cases.entries()) {
      const ws = await createWorkspace(path.join(root, "ws"), await inspectRepo(repo), `w-nest${i}`, path.join(root, "repos", `w-nest${i}`));
      make(ws.worktree);
      await expect(commitAndCheckOut(ws, "m", path.join(root, `co${i}`))).rejects.toThrow(
        new RegExp(`untrusted: "${dir}\\.git"\\) names a repository outside the workspace`),
      );
    }
    // A nested repository of the worker's own (its .git a folder of the workspace) is still a gitlink, and flagged.
    const own = await createWorkspace(path.join(root, "ws"), await inspectRepo(repo), "w-nest-own", path.join(root, "repos", "w-nest-own"));
    committedRepo(path.join(own.worktree, "inner"));
    const r = await commitAndCheckOut(own, "m", path.join(root, "co-own"));
    expect(r.changed).toEqual(["inner"]);
    expect(r.diffStat).not.toContain(otherHead.slice(0, 7));
  }, 60_000);

  it("two publishes of two workers of one repository at once, and one worker's twice: each branch names its commit, the store stays consistent", async () => {
    const a = await built((ws) => writeFileSync(path.join(ws.worktree, "a.txt"), "same\n"));
    const b = await built((ws) => writeFileSync(path.join(ws.worktree, "b.txt"), "same\n"), a.repo);
    const [pa, pb, pa2] = await Promise.all([publishBranch(a.ws, a.commit), publishBranch(b.ws, b.commit), publishBranch(a.ws, a.commit)]);
    expect([pa.commit, pb.commit, pa2.commit]).toEqual([a.commit, b.commit, a.commit]);
    expect(g(a.repo, "rev-parse", `refs/heads/${a.ws.branch}`)).toBe(a.commit);
    expect(g(a.repo, "rev-parse", `refs/heads/${b.ws.branch}`)).toBe(b.commit);
    g(a.repo, "fsck", "--no-dangling", "--connectivity-only");
  }, 60_000);
});

describe("publish under attack: timing and the person's fsck", () => {
  it("publish of round 1 while round 2 is being graded: the branch names round 1's commit, whole; round 2's publish then moves it", async () => {
    const w = await built((ws) => writeFileSync(path.join(ws.worktree, "r1.txt"), "one\n"));
    for (let i = 0; i < 200; i++) writeFileSync(path.join(w.ws.worktree, `r2-${i}.txt`), `${i}\n`);
    const round2 = gradeRound2(w);
    const p1 = await publishBranch(w.ws, w.commit);
    const r2 = await round2;
    expect(p1.commit).toBe(w.commit);
    g(w.repo, "fsck", "--no-dangling", "--connectivity-only");
    expect(r2.verdict).toBe("built");
    await publishBranch(w.ws, r2.commit!, [w.commit]);
    expect(g(w.repo, "rev-parse", `refs/heads/${w.ws.branch}`)).toBe(r2.commit);
    g(w.repo, "fsck", "--no-dangling", "--connectivity-only");
  }, 60_000);

  it("a person's repository with transfer.fsckObjects and a worker's .gitmodules whose url is an option: publish refuses with git's words, no ref, no object, as a fetch would", async () => {
    const repo = committedRepo(path.join(mkdtempSync(path.join(tmp, "fsck-")), "repo"));
    g(repo, "config", "transfer.fsckObjects", "true");
    const w = await built((ws) => {
      writeFileSync(path.join(ws.worktree, ".gitmodules"), '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch$IFS/tmp/ocw-pwned\n');
    }, repo);
    const before = g(repo, "count-objects", "-v");
    await expect(publishBranch(w.ws, w.commit)).rejects.toMatchObject({ code: "conflict", message: expect.stringMatching(/gitmodulesUrl/) });
    expect(g(repo, "count-objects", "-v")).toBe(before);
    expect(() => g(repo, "rev-parse", "--verify", `refs/heads/${w.ws.branch}`)).toThrow();
    // Without the setting, the same commit is published (the person's git would take it from a fetch too).
    g(repo, "config", "transfer.fsckObjects", "false");
    expect((await publishBranch(w.ws, w.commit)).commit).toBe(w.commit);
  }, 60_000);
});

describe("the graded store's name", () => {
  it("two repositories with one basename, and names made of dots or slashes, never share a store or leave <repos>/graded", () => {
    const reposDir = path.join(tmp, "repos");
    const graded = path.join(reposDir, "graded");
    const a = gradedObjectsDir(reposDir, "/home/p/one/app");
    const b = gradedObjectsDir(reposDir, "/home/p/two/app");
    expect(a).not.toBe(b);
    for (const root of ["/home/p/app/..", "/", "/home/p/..app", "/home/p/a\nb", "/home/p/ app "])
      expect(path.dirname(gradedObjectsDir(reposDir, root))).toBe(graded);
  });
});

describe("dependent tasks under attack", () => {
  it("a task after two others, one of them built then discarded while the other ran: it does not start from the discarded work", async () => {
    const root = mkdtempSync(path.join(tmp, "dep-"));
    const repo = committedRepo(path.join(root, "repo"), { "a.txt": "a\n", "c.txt": "c\n" });
    const base = g(repo, "rev-parse", "HEAD");
    const commitOf = (file: string) => {
      writeFileSync(path.join(repo, file), "changed\n");
      g(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", file);
      const c = g(repo, "rev-parse", "HEAD");
      g(repo, "reset", "-q", "--hard", base);
      return c;
    };
    const [ca, cc] = [commitOf("a.txt"), commitOf("c.txt")];
    const worker = (id: string, commit: string, discarded: boolean) =>
      ({ id, state: "built", batchId: "b-dep", verdict: { commit }, discarded }) as unknown as Worker;
    const workers = new Map([
      ["wa", worker("wa", ca, true)],
      ["wc", worker("wc", cc, false)],
    ]);
    const created: string[] = [];
    const batches = new Batches({
      stateDir: path.join(root, "state"),
      sandbox: { kind: "none" },
      get: (id) => workers.get(id),
      create: (_spec, r) => {
        created.push(r.head);
        return "wb";
      },
      changed: () => undefined,
      log: () => undefined,
    });
    const spec = { task: "t", directory: repo } as never;
    const record: BatchRecord = {
      id: "b-dep",
      createdAt: 0,
      repo,
      base,
      branch: "main",
      subdir: "",
      tasks: [
        { id: "a", after: [], spec, workerId: "wa", skipped: null },
        { id: "c", after: [], spec, workerId: "wc", skipped: null },
        { id: "b", after: ["a", "c"], spec, workerId: null, skipped: null },
      ],
      integration: null,
    };
    batches.add(record);
    batches.onAtRest("wc");
    await batches.settled("b-dep");
    expect(created).toEqual([]);
    expect(batches.get("b-dep")!.tasks[2]!.skipped).toMatch(/comes after a, which was not built \(discarded\)/);
  }, 30_000);
});

describe("publish by a crafted id (MCP merge {publish:true}, workers.publish)", () => {
  it("ids that read as paths, options, refs or object keys: a not-found error each, nothing written anywhere", async () => {
    const t = testRegistry(mkdtempSync(path.join(tmp, "ids-")));
    const lifecycle = new WorkspaceLifecycle(t.registry, () => 14);
    for (const id of ["../../etc", "--upload-pack=touch pwned", "main", "refs/heads/main", "__proto__", "constructor", "w-1\nw-2", " "])
      await expect(lifecycle.publish(id)).rejects.toMatchObject({ code: "not-found" });
    expect(existsSync(path.join(t.stateDir, "repos"))).toBe(false);
  });
});
