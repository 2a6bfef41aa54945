import { existsSync, statSync } from "node:fs";
import { realpath } from "node:fs/promises";
import { createHash } from "node:crypto";
import path from "node:path";
import { git, GitError, OCW_IDENTITY } from "./git";

export class InputError extends Error {}

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
  worktree: string;
  /** Where the worker runs: the worktree, or the same subfolder of it the user named. */
  cwd: string;
  branch: string;
  baseCommit: string;
  baseBranch: string | null;
  repo: string;
}

/** Worktrees live under the state dir, never inside the user's checkout: `<root>/<repo-name>-<hash>/<workerId>`. */
export function worktreePath(worktreesRoot: string, repoRoot: string, workerId: string): string {
  const tag = createHash("sha256").update(repoRoot).digest("hex").slice(0, 8);
  return path.join(worktreesRoot, `${path.basename(repoRoot)}-${tag}`, workerId);
}

/**
 * `git worktree add` reads every other worktree's metadata, which a concurrent add may have half-written: workers of
 * one batch failed with "failed to read .git/worktrees/<other>/commondir" (bench: 3 of 144 workers). Worktree
 * additions and removals of one repository therefore run one at a time (each takes tens of ms).
 */
const worktreeQueues = new Map<string, Promise<unknown>>();
function oneAtATime<T>(repoRoot: string, job: () => Promise<T>): Promise<T> {
  const run = (worktreeQueues.get(repoRoot) ?? Promise.resolve()).then(job, job);
  const tail = run.catch(() => undefined);
  worktreeQueues.set(repoRoot, tail);
  void tail.then(() => worktreeQueues.get(repoRoot) === tail && worktreeQueues.delete(repoRoot));
  return run;
}

export async function createWorkspace(worktreesRoot: string, repo: RepoInfo, workerId: string): Promise<Workspace> {
  const branch = `ocw/${workerId}`;
  const worktree = worktreePath(worktreesRoot, repo.root, workerId);
  if (existsSync(worktree)) {
    // A resumed worker keeps its worktree.
    return { worktree, cwd: path.join(worktree, repo.subdir), branch, baseCommit: repo.head, baseBranch: repo.branch, repo: repo.root };
  }
  await oneAtATime(repo.root, () => git(repo.root, ["worktree", "add", "-q", "-b", branch, worktree, repo.head]));
  return { worktree, cwd: path.join(worktree, repo.subdir), branch, baseCommit: repo.head, baseBranch: repo.branch, repo: repo.root };
}

/** Commits whatever the worker changed onto its branch; returns the commit, or null when nothing changed. */
export async function commitWork(worktree: string, message: string): Promise<string | null> {
  await git(worktree, ["add", "-A"]);
  const staged = await git(worktree, ["diff", "--cached", "--name-only"]);
  if (!staged) return null;
  await git(worktree, [...OCW_IDENTITY, "commit", "-q", "--no-verify", "-m", message]);
  return git(worktree, ["rev-parse", "HEAD"]);
}

/** Files the worker's branch changed since its base (committed) plus anything still uncommitted. */
export async function changedFiles(worktree: string, baseCommit: string): Promise<string[]> {
  const committed = (await git(worktree, ["diff", "--name-only", "--no-renames", baseCommit, "HEAD"])).split("\n");
  const pending = (await git(worktree, ["status", "--porcelain", "--untracked-files=all", "--no-renames"]))
    .split("\n")
    .map((l) => l.slice(3));
  return [...new Set([...committed, ...pending].filter(Boolean))].sort();
}

export async function diffStat(worktree: string, baseCommit: string): Promise<string> {
  return git(worktree, ["diff", "--stat", baseCommit, "HEAD"], { allowFail: true });
}

export async function fullDiff(worktree: string, baseCommit: string, maxBytes = 200_000): Promise<string> {
  const d = await git(worktree, ["diff", baseCommit, "HEAD"], { allowFail: true });
  return d.length > maxBytes ? d.slice(0, maxBytes) + `\n… diff truncated at ${maxBytes} bytes` : d;
}

export function mergeHint(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">): string {
  const into = ws.baseBranch ?? "your branch";
  return `cd ${ws.repo} && git checkout ${into} && git merge --no-ff ${ws.branch}`;
}

/** Merges a worker's branch into its base branch in the user's checkout; refuses (and leaves nothing half-merged) on conflict. */
export async function mergeBranch(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">, message: string): Promise<string> {
  if (!ws.baseBranch) throw new InputError("the worker started from a detached HEAD: merge its branch by hand (" + ws.branch + ")");
  const current = (await git(ws.repo, ["symbolic-ref", "--short", "-q", "HEAD"], { allowFail: true })) || null;
  if (current !== ws.baseBranch) {
    throw new InputError(`your checkout ${ws.repo} is on ${current ?? "a detached HEAD"}, not ${ws.baseBranch}: check out ${ws.baseBranch} first`);
  }
  try {
    await git(ws.repo, [...OCW_IDENTITY, "merge", "--no-ff", "-m", message, ws.branch]);
  } catch (err) {
    await git(ws.repo, ["merge", "--abort"], { allowFail: true });
    throw new InputError(`merging ${ws.branch} into ${ws.baseBranch} conflicts or was refused; nothing was changed. ${(err as GitError).message}`);
  }
  return git(ws.repo, ["rev-parse", "HEAD"]);
}

/** Removes a worktree only when its branch holds no work beyond what its base branch already has. */
export async function removeWorkspace(ws: Workspace): Promise<void> {
  const unmerged = await git(ws.repo, ["rev-list", "--count", `${ws.baseBranch ?? ws.baseCommit}..${ws.branch}`], { allowFail: true });
  if (unmerged && unmerged !== "0") throw new InputError(`${ws.branch} has ${unmerged} unmerged commit(s): merge it or delete the branch yourself`);
  await oneAtATime(ws.repo, () => git(ws.repo, ["worktree", "remove", "--force", ws.worktree]));
  await git(ws.repo, ["branch", "-D", ws.branch], { allowFail: true });
}
