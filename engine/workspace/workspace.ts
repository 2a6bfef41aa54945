import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { runCommand, trimFinalNewline } from "../process/run";
import { git, gitComplaint, GitError, OCW_IDENTITY } from "./git";

export { InputError } from "../../shared/errors";
import { InputError } from "../../shared/errors";

export interface RepoInfo {
  /** The repository's top level. */
  root: string;
  /** The directory the user named, relative to the root ("" when it is the root). */
  subdir: string;
  head: string;
  branch: string | null;
}

/** Checks that `dir` is an existing git repository with at least one commit; says what to do when not. */
export async function inspectRepo(dir: string): Promise<RepoInfo> {
  if (!path.isAbsolute(dir)) throw new InputError(`directory must be absolute: got "${dir}"`);
  if (!existsSync(dir)) throw new InputError(`directory ${dir} does not exist: pass an existing git repository`);
  if (!statSync(dir).isDirectory()) throw new InputError(`${dir} is a file, not a directory: pass a git repository's folder`);
  // One git call in the usual case; the slow path only finds the right message for what is wrong.
  const [root, head, ref] = (await git(dir, ["rev-parse", "--show-toplevel", "HEAD", "--abbrev-ref", "HEAD"], { allowFail: true })).split("\n");
  if (!root || !head || !ref) {
    const top = await git(dir, ["rev-parse", "--show-toplevel"], { allowFail: true });
    if (!top) throw new InputError(`${dir} is not a git repository: run \`git init && git add -A && git commit -m init\` there first`);
    throw new InputError(`${top} has no commits yet: commit once (the worker's branch starts from HEAD)`);
  }
  const branch = ref === "HEAD" ? null : ref;
  const subdir = path.relative(await realpath(root), await realpath(path.resolve(dir)));
  // A folder that merely sits inside some repository's work tree (a temp dir, an ignored folder) is not that repo's:
  // the worker's worktree would not even contain it.
  if (subdir && !(await git(root, ["rev-parse", "--verify", "-q", `HEAD:${subdir.split(path.sep).join("/")}`], { allowFail: true }))) {
    throw new InputError(`${dir} is inside the repository ${root} but not part of its committed files: pass the repository's root, or a folder committed in it`);
  }
  return { root, subdir, head, branch };
}

export interface Workspace {
  /** The worker's private repository (its own clone; nothing in it can change the user's `.git`). */
  worktree: string;
  /** Where the worker runs: the workspace, or the same subfolder of it the user named. */
  cwd: string;
  branch: string;
  baseCommit: string;
  baseBranch: string | null;
  repo: string;
  /**
   * The engine's own bare repository for this worker, outside every sandbox: the graded commit is made here from the
   * workspace's files, so nothing the worker did to its own `.git` (config, hooks, fsmonitor, index flags, a `.git`
   * file pointing elsewhere) takes part in grading or merging.
   */
  gitDir: string;
}

/** Workspaces live under the state dir, never inside the user's checkout: `<root>/<repo-name>-<hash>/<workerId>`. */
export function worktreePath(worktreesRoot: string, repoRoot: string, workerId: string): string {
  const tag = createHash("sha256").update(repoRoot).digest("hex").slice(0, 8);
  return path.join(worktreesRoot, `${path.basename(repoRoot)}-${tag}`, workerId);
}

/**
 * A private repository for the worker: a clone that borrows the user's objects (read-only to the sandbox) instead of
 * copying them, with its own config, hooks, refs and index, and no remote. Measured here: about as fast as
 * `git worktree add` and a few KB of git metadata beyond the checked-out files.
 */
export async function createWorkspace(worktreesRoot: string, repo: RepoInfo, workerId: string, gitDir: string): Promise<Workspace> {
  const branch = `ocw/${workerId}`;
  const worktree = worktreePath(worktreesRoot, repo.root, workerId);
  const ws = { worktree, cwd: path.join(worktree, repo.subdir), branch, baseCommit: repo.head, baseBranch: repo.branch, repo: repo.root, gitDir };
  await ensureEngineRepo(ws);
  if (existsSync(worktree)) return ws; // a resumed worker keeps its workspace
  mkdirSync(path.dirname(worktree), { recursive: true });
  await git(repo.root, ["clone", "-q", "--shared", "--no-checkout", "--template=", repo.root, worktree]);
  await git(worktree, ["remote", "remove", "origin"], { allowFail: true });
  await git(worktree, ["checkout", "-q", "-b", branch, repo.head]);
  writeOpencodeProjectId(worktree);
  return ws;
}

/**
 * Makes the private repository its own opencode project. opencode names a project by its origin remote, else by the id
 * in `<git dir>/opencode`, else by its root commit: every clone of one user repository would be the same project, and
 * each session's instance boot then runs `git worktree list` (plus three `git rev-parse`) in every existing workspace
 * of that project ("project copy refresh"), so N workers at once cost O(N²) git processes, and each new worker the
 * workspaces of all finished ones (measured with 32 at once: 4,736 git processes and 94 s of their CPU; with an id of
 * its own: 608 and 12 s; bench/report.md). The id is random, so a worker that reads its own cannot name a sibling's.
 */
export function writeOpencodeProjectId(worktree: string): void {
  writeFileSync(path.join(worktree, ".git", "opencode"), randomBytes(20).toString("hex") + "\n", { mode: 0o644 });
}

/** The engine's bare repository for a worker, borrowing the user's objects. Idempotent. */
export async function ensureEngineRepo(ws: Pick<Workspace, "gitDir" | "repo">): Promise<void> {
  if (existsSync(path.join(ws.gitDir, "HEAD"))) return;
  mkdirSync(ws.gitDir, { recursive: true, mode: 0o700 });
  const [, objects] = await Promise.all([trustedGit(ws.gitDir, ["init", "-q", "--bare", "--template=", ws.gitDir]), objectsOf(ws.repo)]);
  mkdirSync(path.join(ws.gitDir, "objects", "info"), { recursive: true });
  writeFileSync(path.join(ws.gitDir, "objects", "info", "alternates"), objects + "\n");
}

/**
 * git run by the engine on files a worker wrote: no system or global config (no user excludes, no credential helpers),
 * no hooks, no fsmonitor, no untracked cache, a private index. Work-tree files are read as plain files.
 */
async function trustedGit(gitDir: string, args: string[], opts: { workTree?: string; index?: string; allowFail?: boolean } = {}): Promise<string> {
  const r = await runCommand(
    "git",
    ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.sparseCheckout=false", "-c", "core.symlinks=true", "-c", "commit.gpgsign=false", ...args],
    {
      cwd: gitDir,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        LC_ALL: "C",
        GIT_TERMINAL_PROMPT: "0",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        HOME: gitDir,
        GIT_DIR: gitDir,
        ...(opts.workTree ? { GIT_WORK_TREE: opts.workTree } : {}),
        ...(opts.index ? { GIT_INDEX_FILE: opts.index } : {}),
        GIT_AUTHOR_NAME: "opencode-worker",
        GIT_AUTHOR_EMAIL: "opencode-worker@localhost",
        GIT_COMMITTER_NAME: "opencode-worker",
        GIT_COMMITTER_EMAIL: "opencode-worker@localhost",
      },
    },
  );
  if (r.exitCode !== 0 && !opts.allowFail) throw new GitError(`git ${args[0]} failed for ${gitDir}: ${gitComplaint(r)}`);
  return r.exitCode === 0 ? trimFinalNewline(r.stdout) : "";
}

// Asked once per repository / base commit, not per worker: a git command is the engine's costliest step.
const objectDirs = new Map<string, Promise<string>>();
const baseTrees = new Map<string, Promise<string>>();
function remembered(cache: Map<string, Promise<string>>, key: string, load: () => Promise<string>): Promise<string> {
  let p = cache.get(key);
  if (!p) {
    if (cache.size >= 256) cache.delete(cache.keys().next().value!);
    p = load();
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}
const objectsOf = (repo: string) => remembered(objectDirs, repo, async () => path.resolve(repo, await git(repo, ["rev-parse", "--git-path", "objects"])));
const baseTreeOf = (ws: Workspace) => remembered(baseTrees, ws.baseCommit, () => trustedGit(ws.gitDir, ["rev-parse", `${ws.baseCommit}^{tree}`]));

/** The tree of the workspace's files as they are now (a fresh index: index flags in the workspace cannot hide a change). */
async function snapshotTree(ws: Workspace): Promise<string> {
  await ensureEngineRepo(ws);
  const index = path.join(ws.gitDir, `index-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  try {
    await trustedGit(ws.gitDir, ["read-tree", ws.baseCommit], { index });
    await trustedGit(ws.gitDir, ["add", "-A", "--", "."], { workTree: ws.worktree, index });
    return await trustedGit(ws.gitDir, ["write-tree"], { index });
  } finally {
    rmSync(index, { force: true });
  }
}

/**
 * The engine's commit of the worker's files, on top of its base, made in the engine's own repository; the branch
 * `ocw/<id>` there names it. Returns the base itself when nothing changed.
 */
export async function commitWork(ws: Workspace, message: string): Promise<string> {
  await ensureEngineRepo(ws);
  const [tree, baseTree] = await Promise.all([snapshotTree(ws), baseTreeOf(ws)]);
  const commit = tree === baseTree ? ws.baseCommit : await trustedGit(ws.gitDir, ["commit-tree", tree, "-p", ws.baseCommit, "-m", message]);
  await trustedGit(ws.gitDir, ["update-ref", `refs/heads/${ws.branch}`, commit]);
  return commit;
}

/** Files changed between the base and a commit of the engine's repository. */
export async function changedFiles(ws: Workspace, commit: string): Promise<string[]> {
  const out = await trustedGit(ws.gitDir, ["diff", "--name-only", "--no-renames", ws.baseCommit, commit]);
  return out.split("\n").filter(Boolean).sort();
}

export async function diffStat(ws: Workspace, commit: string): Promise<string> {
  return trustedGit(ws.gitDir, ["diff", "--stat", ws.baseCommit, commit], { allowFail: true });
}

/** The diff of a commit (the graded one), or of the workspace's files as they are now (a running worker). */
export async function fullDiff(ws: Workspace, commit?: string, maxBytes = 200_000): Promise<string> {
  const to = commit ?? (existsSync(ws.worktree) ? await snapshotTree(ws) : ws.baseCommit);
  const d = await trustedGit(ws.gitDir, ["diff", ws.baseCommit, to], { allowFail: true });
  return d.length > maxBytes ? d.slice(0, maxBytes) + `\n… diff truncated at ${maxBytes} bytes` : d;
}

/** A fresh checkout of a commit of the engine's repository, for the checks: nothing the worker left behind is in it. */
export async function freshCheckout(ws: Workspace, commit: string, dir: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  await trustedGit(ws.gitDir, ["--work-tree", dir, "checkout", "-q", "-f", commit, "--", "."], { index: path.join(dir, "..", `${path.basename(dir)}.index`) });
  rmSync(path.join(dir, "..", `${path.basename(dir)}.index`), { force: true });
}

/**
 * Puts the graded commit into the user's repository as branch `ocw/<id>` (the engine reads from its own repository;
 * nothing runs from the worker's). The user's branch `ocw/<id>` is only ever set to the commit the verdict names.
 */
export async function publishBranch(ws: Workspace, commit: string): Promise<void> {
  await git(ws.repo, ["fetch", "-q", "--no-tags", "--no-write-fetch-head", ws.gitDir, `+refs/heads/${ws.branch}:refs/heads/${ws.branch}`]);
  const published = await git(ws.repo, ["rev-parse", `refs/heads/${ws.branch}`]);
  if (published !== commit) throw new GitError(`the branch ${ws.branch} in ${ws.repo} is ${published}, not the graded commit ${commit}`);
}

export function mergeHint(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">): string {
  if (!ws.baseBranch) return `cd ${ws.repo} && git merge --no-ff ${ws.branch}   # you started from a detached HEAD: check out the branch to merge into first`;
  return `cd ${ws.repo} && git checkout ${ws.baseBranch} && git merge --no-ff ${ws.branch}`;
}

/** Merges exactly `commit` (the graded one) into the base branch in the user's checkout; refuses, changing nothing, on conflict. */
export async function mergeBranch(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">, message: string, commit?: string): Promise<string> {
  if (!ws.baseBranch) throw new InputError("the worker started from a detached HEAD: merge its branch by hand (" + ws.branch + ")");
  const current = (await git(ws.repo, ["symbolic-ref", "--short", "-q", "HEAD"], { allowFail: true })) || null;
  if (current !== ws.baseBranch) {
    throw new InputError(`your checkout ${ws.repo} is on ${current ?? "a detached HEAD"}, not ${ws.baseBranch}: check out ${ws.baseBranch} first`);
  }
  const what = commit ?? ws.branch;
  if (commit) {
    const tip = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
    if (tip && tip !== commit) throw new InputError(`${ws.branch} was moved to ${tip.slice(0, 12)} after grading; only the graded commit ${commit.slice(0, 12)} is merged — reset the branch or merge it by hand`);
  }
  try {
    await git(ws.repo, [...OCW_IDENTITY, "merge", "--no-ff", "-m", message, what]);
  } catch (err) {
    await git(ws.repo, ["merge", "--abort"], { allowFail: true });
    throw new InputError(`merging ${ws.branch} into ${ws.baseBranch} conflicts or was refused; nothing was changed. ${(err as GitError).message}`, "conflict");
  }
  return git(ws.repo, ["rev-parse", "HEAD"]);
}

/**
 * Removes a worker's workspace, its engine repository and its private tmp. The branch `ocw/<id>` in the user's
 * repository is deleted only when it holds nothing beyond the base branch, or when `force` (an explicit discard).
 */
export async function removeWorkspace(ws: Workspace, opts: { force?: boolean; tmpDir?: string } = {}): Promise<void> {
  const tip = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
  if (tip && !opts.force) {
    const unmerged = await git(ws.repo, ["rev-list", "--count", `${ws.baseBranch ?? ws.baseCommit}..${ws.branch}`], { allowFail: true });
    if (unmerged && unmerged !== "0") throw new InputError(`${ws.branch} has ${unmerged} unmerged commit(s): merge it, or discard the worker to delete it`);
  }
  rmSync(ws.worktree, { recursive: true, force: true });
  rmSync(ws.gitDir, { recursive: true, force: true });
  if (opts.tmpDir) rmSync(opts.tmpDir, { recursive: true, force: true });
  if (tip) await git(ws.repo, ["branch", "-D", ws.branch], { allowFail: true });
}
