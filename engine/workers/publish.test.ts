// Containment (issue 25, "objects reach the user's repository only at merge"): grading a worker puts nothing into the
// person's repository — no object, no ref — however large the worker's change; the graded commit waits in the engine's
// store. Only the person's landing brings it: merge, push, pull request, or "publish the branch"; each brings exactly
// the graded commit (ocw/<id> names it) and exactly the objects it adds, nothing an earlier snapshot of the workspace saw.
// Real git, the real grading path (grade()), the real lifecycle on a registry of real logs, a fake gh (as in push.test.ts).
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Verdict } from "../../shared/verdict";
import { committedRepo } from "../../test/fixtures/git-repo";
import { testRegistry } from "../../test/fixtures/registry";
import { grade } from "../grading/grade";
import { combineCommits } from "../workspace/land";
import { createWorkspace, fullDiff, gradedObjectsDir, gradedStore, inspectRepo, publishBranch, type Workspace } from "../workspace/workspace";
import { Batches } from "./batches";
import type { Engine } from "./engine";
import { WorkspaceLifecycle } from "./lifecycle";
import { pushWork } from "./push";

const tmp = mkdtempSync(path.join(os.tmpdir(), "ocw-publish-"));
const PATH = process.env.PATH;
let ghLog = "";
beforeAll(() => {
  const bin = path.join(tmp, "bin");
  ghLog = path.join(tmp, "gh.log");
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    path.join(bin, "gh"),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a" >> "${ghLog}"; done\nprintf -- '----\\n' >> "${ghLog}"\nif [ "$1" = auth ]; then exit 0; fi\necho "https://github.example/acme/app/pull/1"\n`,
  );
  chmodSync(path.join(bin, "gh"), 0o755);
  process.env.PATH = `${bin}:${PATH}`;
});
afterAll(() => {
  process.env.PATH = PATH;
  rmSync(tmp, { recursive: true, force: true });
});

const g = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", maxBuffer: 64 << 20 }).trim();
const gOk = (dir: string, ...args: string[]) => {
  try {
    execFileSync("git", ["-C", dir, ...args], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

/** Every file under the repository's .git, as path → sha256 of its bytes: "byte for byte" means this is equal. */
function gitBytes(repo: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(path.relative(repo, p), createHash("sha256").update(readFileSync(p)).digest("hex"));
    }
  };
  walk(path.join(repo, ".git"));
  return out;
}

/** The objects of the person's store (loose and packed), by id. */
function objectIds(repo: string): Set<string> {
  const out = g(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)");
  return new Set(out ? out.split("\n") : []);
}

/** Objects `commit` reaches that `not` does not, read from the person's repository (once it holds them). */
const reaches = (repo: string, commit: string, not: string) =>
  new Set(g(repo, "rev-list", "--objects", "--no-object-names", commit, "--not", not).split("\n").filter(Boolean));

const added = (after: Set<string>, before: Set<string>) => new Set([...after].filter((o) => !before.has(o)));

const blobOf = (bytes: Buffer) => createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");

let n = 0;

/**
 * A person's repository, a worker of a real registry with a real workspace, its change made by `change`, graded for real
 * (a command check), its verdict recorded and the worker built: what the engine does from settle to the verdict.
 */
async function gradedWorker(change: (ws: Workspace) => unknown, files: Record<string, string> = { "README.md": "# r\n" }) {
  const t = testRegistry(mkdtempSync(path.join(tmp, "state-")));
  const repo = committedRepo(path.join(tmp, `repo-${++n}`), files);
  const base = g(repo, "rev-parse", "HEAD");
  const info = await inspectRepo(repo);
  const id = `w-pub${n}`;
  const ws = await createWorkspace(t.registry.workspacesRoot, info, id, t.registry.engineGitDir(id));
  t.registry.record(id, { type: "worker.created", spec: { task: "do it", directory: repo } as never, batchId: null, targetId: "t", sandbox: "none" });
  t.registry.record(id, { type: "worker.workspace", worktree: ws.worktree, branch: ws.branch, baseCommit: base, baseBranch: "main", repo });
  await change(ws);
  const before = { bytes: gitBytes(repo), objects: objectIds(repo), refs: g(repo, "for-each-ref"), count: g(repo, "count-objects", "-v") };
  const gradingDir = path.join(t.stateDir, "grading");
  mkdirSync(gradingDir, { recursive: true });
  const verdict: Verdict = await grade({
    workspace: ws,
    checks: [{ run: "test -s big.bin" }],
    scope: [],
    protect: [],
    finalText: "OUTCOME: built",
    title: "t",
    checkoutDir: path.join(gradingDir, id),
    sandbox: { kind: "none", stateDir: t.stateDir, tmpDir: path.join(gradingDir, `${id}.tmp`) },
  });
  expect(verdict.verdict).toBe("built");
  for (const tr of ["admit", "start", "settle", "grade"] as const) t.registry.fire(id, tr);
  t.registry.record(id, { type: "verdict", verdict });
  t.registry.fire(id, "pass");
  const lifecycle = new WorkspaceLifecycle(t.registry, () => 14);
  const batches = new Batches({
    stateDir: t.stateDir,
    sandbox: { kind: "none" },
    get: (w) => t.registry.workers.get(w),
    create: () => "",
    changed: () => undefined,
    log: () => undefined,
  });
  const engine = {
    get: (w: string) => t.registry.get(w),
    batches,
    publish: (w: string) => lifecycle.publish(w),
  } as unknown as Engine;
  return { t, repo, base, ws, id, verdict, commit: verdict.commit!, before, lifecycle, engine };
}

/** A worker that adds a 3 MiB file of random bytes and a small file (a diff meanwhile saw a file it then removed). */
async function bigChange(ws: Workspace) {
  const big = randomBytes(3 * 1024 * 1024);
  writeFileSync(path.join(ws.worktree, "big.bin"), big);
  writeFileSync(path.join(ws.worktree, "small.txt"), "small\n");
  // A file the worker made and removed again: a diff taken meanwhile snapshots it into the engine's objects.
  writeFileSync(path.join(ws.worktree, "scratch.txt"), "seen by a diff only\n");
  await fullDiff(ws);
  rmSync(path.join(ws.worktree, "scratch.txt"));
  return big;
}

describe("grading publishes nothing; landing brings exactly the graded commit", () => {
  it("a built verdict leaves the person's .git byte for byte as it was: no object (its 3 MiB file nowhere), no ref, no ocw/<id>; flags read from the engine's copy", async () => {
    let big = Buffer.alloc(0);
    const w = await gradedWorker(async (ws) => {
      big = await bigChange(ws);
      writeFileSync(path.join(ws.worktree, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    });
    expect(gitBytes(w.repo)).toEqual(w.before.bytes);
    expect(g(w.repo, "for-each-ref")).toBe(w.before.refs);
    expect(g(w.repo, "count-objects", "-v")).toBe(w.before.count);
    expect(objectIds(w.repo)).toEqual(w.before.objects);
    expect(gOk(w.repo, "cat-file", "-e", blobOf(big))).toBe(false);
    expect(gOk(w.repo, "cat-file", "-e", w.commit)).toBe(false);
    expect(g(w.repo, "branch", "--list", "ocw/*")).toBe("");
    // The flags were read from the engine's store (the person's repository could not have answered).
    expect(w.verdict.flags).toEqual([expect.objectContaining({ path: "run.sh", kind: "executable" })]);
    // The merge hint says how to get the branch first.
    expect(w.verdict.mergeHint).toMatch(new RegExp(`^ocw publish ${w.id} && cd .* && git checkout main && git merge --no-ff ocw/${w.id}$`));
    // The commit stays readable in the engine's copy: the diff of the graded commit shows the change.
    expect(await w.lifecycle.diff(w.id)).toContain("+small");
    // Discarded, the worker's objects leave the engine too: its graded store goes with the last worker of the repository.
    const store = gradedObjectsDir(path.dirname(w.ws.gitDir), w.repo);
    expect(existsSync(store)).toBe(true);
    await w.lifecycle.discard(w.id);
    expect(existsSync(store)).toBe(false);
    expect(existsSync(w.ws.gitDir)).toBe(false);
    expect(gitBytes(w.repo)).toEqual(w.before.bytes);
  }, 60_000);

  it("publish: ocw/<id> names exactly the graded commit and exactly the objects it adds come in (not a snapshot-only file); again is a no-op; a later round's commit moves it; a branch the person moved is refused", async () => {
    const w = await gradedWorker(bigChange);
    const scratch = blobOf(Buffer.from("seen by a diff only\n"));
    const p = await w.lifecycle.publish(w.id);
    expect(p).toMatchObject({ branch: `ocw/${w.id}`, commit: w.commit, repo: w.repo });
    expect(g(w.repo, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.commit);
    const came = added(objectIds(w.repo), w.before.objects);
    expect(came).toEqual(reaches(w.repo, w.commit, w.base));
    expect(p.objects).toBe(came.size);
    expect(came.has(scratch)).toBe(false);
    g(w.repo, "fsck", "--no-dangling", "--connectivity-only");
    // Publishing again copies nothing and leaves the branch.
    expect(await w.lifecycle.publish(w.id)).toMatchObject({ objects: 0, commit: w.commit });
    // A later round's graded commit: the branch published at the earlier round's follows it (that commit stays readable).
    writeFileSync(path.join(w.ws.worktree, "round2.txt"), "two\n");
    const r2 = await grade({
      workspace: w.ws,
      checks: [{ run: "test -s round2.txt" }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "round 2",
      checkoutDir: path.join(w.t.stateDir, "grading", `${w.id}.r2`),
      previousCommit: w.commit,
    });
    expect(r2).toMatchObject({ verdict: "built", sincePrevious: ["round2.txt"] });
    expect(gOk(w.repo, "cat-file", "-e", r2.commit!)).toBe(false);
    await expect(publishBranch(w.ws, r2.commit!)).rejects.toThrow(/already exists at .*not the graded commit/);
    await publishBranch(w.ws, r2.commit!, [w.commit]);
    expect(g(w.repo, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(r2.commit);
    expect(g(w.repo, "show", `ocw/${w.id}:round2.txt`)).toBe("two");
    expect((await w.lifecycle.diff(w.id)).length).toBeGreaterThan(0);
    expect(await fullDiff(w.ws, w.commit)).toContain("+small");
    // A branch the person moved is never overwritten.
    g(w.repo, "update-ref", `refs/heads/ocw/${w.id}`, w.base);
    await expect(publishBranch(w.ws, w.commit, [r2.commit!])).rejects.toThrow(/already exists at .*not the graded commit/);
    await expect(w.lifecycle.publish(w.id)).rejects.toThrow(/already exists at .*not the graded commit/);
    expect(g(w.repo, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.base);
  }, 60_000);

  it("merge: a refused merge (a conflict; files that would not be the graded blobs) brings nothing; the merge brings exactly the graded commit and the merge commit", async () => {
    const w = await gradedWorker(async (ws) => {
      await bigChange(ws);
      writeFileSync(path.join(ws.worktree, "README.md"), "# the worker's\n");
    });
    // The person's branch changes README.md too: the merge conflicts and is refused.
    writeFileSync(path.join(w.repo, "README.md"), "# the person's\n");
    g(w.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "mine");
    const mine = objectIds(w.repo);
    const bytes = gitBytes(w.repo);
    await expect(w.lifecycle.merge(w.id)).rejects.toThrow(
      /conflicts in \(file names from the worker's change, untrusted: \["README\.md"\]\); nothing was changed/,
    );
    expect(gitBytes(w.repo)).toEqual(bytes);
    expect(objectIds(w.repo)).toEqual(mine);
    // Undone; then files that would not be the graded blobs (an eol conversion of the person's): undone and refused,
    // and still no object came in (the checkout was moved reading the engine's store).
    g(w.repo, "reset", "-q", "--hard", w.base);
    writeFileSync(path.join(w.repo, ".git", "info", "attributes"), "*.txt text eol=crlf\n");
    const objectsThen = objectIds(w.repo);
    const refsThen = g(w.repo, "for-each-ref");
    await expect(w.lifecycle.merge(w.id)).rejects.toThrow(/not the graded ones .*small\.txt.*undone and refused/);
    expect(objectIds(w.repo)).toEqual(objectsThen);
    expect(g(w.repo, "for-each-ref")).toBe(refsThen);
    expect(g(w.repo, "status", "--porcelain")).toBe("");
    rmSync(path.join(w.repo, ".git", "info", "attributes"));
    // The merge lands, with exactly the objects of the graded commit and of the merge.
    const head = w.base;
    const before = objectIds(w.repo);
    const m = await w.lifecycle.merge(w.id);
    expect(g(w.repo, "rev-parse", "HEAD")).toBe(m.commit);
    expect(g(w.repo, "rev-parse", "HEAD^2")).toBe(w.commit);
    const came = added(objectIds(w.repo), before);
    expect(came).toEqual(reaches(w.repo, m.commit, head));
    expect(came.has(w.commit)).toBe(true);
    expect(readFileSync(path.join(w.repo, "small.txt"), "utf8")).toBe("small\n");
    g(w.repo, "fsck", "--no-dangling", "--connectivity-only");
    // Merged, the work is the person's: the worker's folders and the repository's graded store are gone.
    expect(existsSync(w.ws.gitDir)).toBe(false);
    expect(existsSync(gradedObjectsDir(path.dirname(w.ws.gitDir), w.repo))).toBe(false);
  }, 60_000);

  it("merge of a worker that started from a detached HEAD is refused, saying how to land it: the branch it names is brought by `ocw publish`", async () => {
    const w = await gradedWorker(bigChange);
    // As the engine records a worker started from a detached HEAD: no base branch.
    w.t.registry.record(w.id, { type: "worker.workspace", worktree: w.ws.worktree, branch: w.ws.branch, baseCommit: w.base, baseBranch: null, repo: w.repo });
    const err = await w.lifecycle.merge(w.id).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg).toContain(`ocw publish ${w.id}`);
    expect(msg).toContain(`git merge --no-ff ${w.ws.branch}`);
    // Nothing is there until published (grading brings nothing); published, the branch the message names merges.
    expect(g(w.repo, "branch", "--list", w.ws.branch)).toBe("");
    await w.lifecycle.publish(w.id);
    g(w.repo, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-ff", "--no-edit", w.ws.branch);
    expect(readFileSync(path.join(w.repo, "small.txt"), "utf8")).toBe("small\n");
  }, 60_000);

  it("push and pull request: the remote and the person's repository get exactly the graded commit (ocw/<id> names it)", async () => {
    const w = await gradedWorker(bigChange);
    const remote = path.join(tmp, `remote-${n}.git`);
    execFileSync("git", ["init", "-q", "--bare", "-b", "main", remote]);
    g(w.repo, "push", "-q", remote, "main");
    writeFileSync(ghLog, "");
    const before = objectIds(w.repo);
    // A hosted-looking URL that leads to the local bare repository.
    g(w.repo, "config", `url.${remote}.insteadOf`, "https://github.example/acme/app.git");
    const r = await pushWork(w.engine, { workerId: w.id, remote: "https://github.example/acme/app.git", pr: true });
    expect(r).toMatchObject({ branch: `ocw/${w.id}`, commit: w.commit, pr: { url: "https://github.example/acme/app/pull/1" } });
    expect(g(remote, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.commit);
    expect(g(w.repo, "rev-parse", `refs/heads/ocw/${w.id}`)).toBe(w.commit);
    expect(added(objectIds(w.repo), before)).toEqual(reaches(w.repo, w.commit, w.base));
    expect(readFileSync(ghLog, "utf8")).toContain(`--head\nocw/${w.id}\n`);
  }, 60_000);

  it("a task after another starts from its graded commit, which the person's repository never holds; publishing it brings both commits exactly", async () => {
    const a = await gradedWorker(bigChange);
    // Two graded commits combined in the engine's store (a task after two others): nothing reaches the person's.
    const graded = await gradedStore(path.dirname(a.ws.gitDir), a.repo);
    const combined = await combineCommits(a.repo, a.base, [{ id: "a", commit: a.commit }], "ocw: base", graded);
    expect("commit" in combined && combined.commit).toBeTruthy();
    expect(gitBytes(a.repo)).toEqual(a.before.bytes);
    // The task after it: its workspace starts from the graded commit (imported into the workspace, not the person's repo).
    const info = { ...(await inspectRepo(a.repo)), head: a.commit };
    const id = "w-after";
    const ws = await createWorkspace(a.t.registry.workspacesRoot, info, id, a.t.registry.engineGitDir(id), { importFrom: graded });
    expect(readFileSync(path.join(ws.worktree, "small.txt"), "utf8")).toBe("small\n");
    expect(statSync(path.join(ws.worktree, "big.bin")).size).toBe(3 * 1024 * 1024);
    writeFileSync(path.join(ws.worktree, "after.txt"), "after\n");
    const gradingDir = path.join(a.t.stateDir, "grading");
    const v = await grade({
      workspace: ws,
      checks: [{ run: "test -s big.bin && test -s after.txt" }],
      scope: [],
      protect: [],
      finalText: "OUTCOME: built",
      title: "after",
      checkoutDir: path.join(gradingDir, id),
      sandbox: { kind: "none", stateDir: a.t.stateDir, tmpDir: path.join(gradingDir, `${id}.tmp`) },
    });
    expect(v.verdict).toBe("built");
    expect(gitBytes(a.repo)).toEqual(a.before.bytes);
    // Published: exactly the objects of both commits (the earlier task's and this one's) come in.
    const p = await publishBranch(ws, v.commit!);
    expect(g(a.repo, "rev-parse", "refs/heads/ocw/w-after")).toBe(v.commit);
    expect(g(a.repo, "rev-parse", `${v.commit}^`)).toBe(a.commit);
    const came = added(objectIds(a.repo), a.before.objects);
    expect(came).toEqual(reaches(a.repo, v.commit!, a.base));
    expect(p.objects).toBe(came.size);
  }, 60_000);
});
