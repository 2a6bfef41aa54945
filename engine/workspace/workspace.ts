import { type BigIntStats, existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { copyFile, link, lstat, mkdir, readdir, readFile, realpath, rename, rm, statfs, writeFile } from "node:fs/promises";
import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import { losslessUtf8, runCommand, trimFinalNewline } from "../process";
import { config } from "../config";
import { ENGINE_AUTHOR, git, GitError, gitComplaint, gitScript, OCW_IDENTITY, userGitEnv } from "./git";
import { parseRawChanges, type TreeChange } from "./land";
import { type LinkFn, type MirrorRefresh, type ObjectFormat, mirrorObjects, refreshMirror } from "./mirror";
import { readHead } from "./regular-file";
import { type BaseTree, type KeptStats, NotInProcess, parseBaseTree, readWorktree, writeCheckout, writeSnapshot } from "./snapshot";

import { InputError, OcwError } from "../../shared/errors";
import { quoteUntrusted } from "../../shared/untrusted";
import { counted } from "../../shared/words";

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
    if (!top && (await git(dir, ["rev-parse", "--is-bare-repository"], { allowFail: true })) === "true")
      throw new InputError(`${dir} is a bare repository (it has no files to work on): pass a checkout of it (\`git clone ${dir}\`)`);
    // A repository's .git folder (or a folder in it): its checkout is what to pass, not `git init` there.
    if (!top && (await git(dir, ["rev-parse", "--is-inside-git-dir"], { allowFail: true })) === "true") {
      const gitDir = path.resolve(dir, await git(dir, ["rev-parse", "--absolute-git-dir"], { allowFail: true }));
      throw new InputError(
        `${dir} is inside a repository's .git folder, not its checkout: pass the repository's folder${path.basename(gitDir) === ".git" ? ` (${path.dirname(gitDir)})` : ""}`,
      );
    }
    if (!top) throw new InputError(`${dir} is not a git repository: run \`git init && git add -A && git commit -m init\` there first`);
    throw new InputError(`${top} has no commits yet: commit once (the worker's branch starts from HEAD)`);
  }
  const branch = ref === "HEAD" ? null : ref;
  const subdir = path.relative(await realpath(root), await realpath(path.resolve(dir)));
  // A folder that merely sits inside some repository's work tree (a temp dir, an ignored folder) is not that repo's:
  // the worker's worktree would not even contain it.
  if (subdir && !(await git(root, ["rev-parse", "--verify", "-q", `HEAD:${subdir.split(path.sep).join("/")}`], { allowFail: true }))) {
    throw new InputError(
      `${dir} is inside the repository ${root} but not part of its committed files: pass the repository's root, or a folder committed in it`,
    );
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
   * The engine's own folder for this worker's objects, outside every sandbox (used with the engine's shared git
   * directory): the graded commit is made here from the workspace's files, so nothing the worker did to its own `.git`
   * (config, hooks, fsmonitor, index flags, a `.git` file pointing elsewhere) takes part in grading or merging.
   */
  gitDir: string;
}

/** Workspaces live under the state dir, never inside the user's checkout: `<root>/<repo-name>-<hash>/<workerId>`. */
export function worktreePath(worktreesRoot: string, repoRoot: string, workerId: string): string {
  const tag = createHash("sha256").update(repoRoot).digest("hex").slice(0, 8);
  return path.join(worktreesRoot, `${path.basename(repoRoot)}-${tag}`, workerId);
}

/** The engine's object mirrors (mirror.ts), beside the workspaces unless named: `<state dir>/mirrors`. */
export const mirrorsRootOf = (worktreesRoot: string): string => path.join(path.dirname(worktreesRoot), "mirrors");

/** The mirror a workspace of `repoRoot` borrows its objects from (never the user's own object store). */
export function workspaceMirror(worktreesRoot: string, repoRoot: string, baseCommit: string, mirrorsRoot = mirrorsRootOf(worktreesRoot)): string {
  return mirrorObjects(mirrorsRoot, repoRoot, objectFormat(baseCommit));
}

/**
 * A private repository for the worker: its own repository that borrows the objects of the engine's mirror of the
 * user's store (mirror.ts: hard links, read-only to every sandbox) instead of copying them, with its own config, hooks,
 * refs and index, and no remote. Made by one script (`git init`, the alternate, `git checkout -b`): measured here,
 * starting a process is the engine's costliest step. The mirror is refreshed first when it does not exist yet, and
 * again when the checkout fails (the base is newer than the mirror, or an earlier refresh was cut short); a base the
 * user's store itself cannot give whole is a coded error that says why (a partial clone, an unreadable alternate).
 */
export async function createWorkspace(
  worktreesRoot: string,
  repo: RepoInfo,
  workerId: string,
  gitDir: string,
  opts: { mirrorsRoot?: string; link?: LinkFn; importFrom?: string } = {},
): Promise<Workspace> {
  const branch = `ocw/${workerId}`;
  const worktree = worktreePath(worktreesRoot, repo.root, workerId);
  const ws = { worktree, cwd: path.join(worktree, repo.subdir), branch, baseCommit: repo.head, baseBranch: repo.branch, repo: repo.root, gitDir };
  const mirror = workspaceMirror(worktreesRoot, repo.root, repo.head, opts.mirrorsRoot);
  const refresh = async () => refreshMirror(await objectsOf(repo.root), mirror, { link: opts.link });
  if (existsSync(worktree)) {
    await moveOntoMirror(worktreesRoot, ws, opts);
    return ws; // a resumed worker keeps its workspace
  }
  mkdirSync(path.dirname(worktree), { recursive: true });
  const env = { ...userGitEnv(), ...workspaceGitEnv(path.dirname(gitDir)) };
  const make = async () => {
    // Its real path: the sandboxes bind the mirrors there.
    const objects = await realMirror(mirror);
    // Its own opencode project (see opencodeProjectId).
    const projectId = opencodeProjectId();
    if (!opts.importFrom) return newWorkspace(worktree, env, { objects, projectId, branch, base: repo.head, engineDir: path.dirname(gitDir) });
    await gitScript(NEW_WORKSPACE, {
      cwd: path.dirname(worktree),
      env: {
        ...env,
        OCW_WORKTREE: worktree,
        OCW_OBJECTS: objects,
        OCW_BRANCH: branch,
        OCW_BASE: repo.head,
        OCW_OBJECT_FORMAT: objectFormat(repo.head),
        OCW_PROJECT_ID: projectId,
        // A task after others starts from their graded commits, which the user's repository does not hold: exactly the
        // objects of that base it lacks are copied into the workspace's own object store from the engine's (importFrom).
        OCW_IMPORT_FROM: opts.importFrom,
        OCW_REPO: repo.root,
      },
    });
  };
  let last: MirrorRefresh | null = existsSync(mirror) ? null : await refresh();
  try {
    await make();
  } catch (first) {
    // Half made: removed, so that it is never taken for a resumed worker's workspace.
    await rm(worktree, { recursive: true, force: true });
    if (last) throw mirrorFailure(repo, last, first as Error);
    last = await refresh();
    try {
      await make();
    } catch (again) {
      await rm(worktree, { recursive: true, force: true });
      throw mirrorFailure(repo, last, again as Error);
    }
  }
  // Before the worker is handed its workspace: the stat data of the checkout, which grading starts from.
  await keepCheckoutIndex(ws);
  return ws;
}

/** A mirror's real path (asked once per mirror: it does not move). */
const realMirrors = new Map<string, Promise<string>>();
function realMirror(mirror: string): Promise<string> {
  let p = realMirrors.get(mirror);
  if (!p) {
    if (realMirrors.size >= 256) realMirrors.delete(realMirrors.keys().next().value!);
    p = realpath(mirror);
    realMirrors.set(mirror, p);
    p.catch(() => realMirrors.get(mirror) === p && realMirrors.delete(mirror));
  }
  return p;
}

/**
 * What `git init --template=` makes (its folders, then its files: config and HEAD), read once per object format from a
 * repository git made in the engine's folder of worker repositories (`engineDir`: outside every sandbox, so nothing of a
 * worker's can write into it while it is read; beside the workspaces in the state dir, so on their file system): the
 * config git writes depends on what it probed of the file system (file modes, symlinks, case), so it is git's own, not
 * the engine's guess.
 */
interface RepoSkeleton {
  /** The folders no other folder is in. */
  leaves: string[];
  files: [string, Buffer][];
}
const skeletons = new Map<string, Promise<RepoSkeleton>>();
function repoSkeleton(parent: string, format: ObjectFormat, env: Record<string, string | undefined>): Promise<RepoSkeleton> {
  const key = `${parent}\0${format}`;
  let p = skeletons.get(key);
  if (!p) {
    if (skeletons.size >= 64) skeletons.delete(skeletons.keys().next().value!);
    p = (async () => {
      const tmp = path.join(parent, `.ocw-init-${process.pid}-${randomBytes(4).toString("hex")}`);
      await mkdir(parent, { recursive: true });
      try {
        const r = await runCommand("git", ["init", "-q", "--template=", ...(format === "sha256" ? ["--object-format=sha256"] : []), tmp], { cwd: parent, env });
        if (r.exitCode !== 0) throw new GitError(`git init failed in ${parent}: ${gitComplaint(r)}`);
        const dirs: string[] = [".git"];
        const files: [string, Buffer][] = [];
        const walk = async (rel: string): Promise<void> => {
          for (const e of await readdir(path.join(tmp, rel), { withFileTypes: true })) {
            const name = path.join(rel, e.name);
            if (e.isDirectory()) {
              dirs.push(name);
              await walk(name);
            } else if (e.isFile()) files.push([name, await readFile(path.join(tmp, name))]);
            else throw new GitError(`git init made ${name}, which is neither a file nor a folder`);
          }
        };
        await walk(".git");
        return { leaves: dirs.filter((d) => !dirs.some((x) => x.startsWith(d + path.sep))), files };
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
    })();
    skeletons.set(key, p);
    p.catch(() => skeletons.get(key) === p && skeletons.delete(key));
  }
  return p;
}

/**
 * A new private repository (NEW_WORKSPACE without an import) with one process: git's own `init` layout written from
 * its skeleton, the alternate and the opencode id beside it, then `git checkout -b` of the base. Checked as the script
 * checks it: a checkout that could not read an object says so but exits 0, leaving the file out: a failure here.
 */
async function newWorkspace(
  worktree: string,
  env: Record<string, string | undefined>,
  o: { objects: string; projectId: string; branch: string; base: string; engineDir: string },
): Promise<void> {
  const skeleton = await repoSkeleton(o.engineDir, objectFormat(o.base), env);
  const dotGit = path.join(worktree, ".git");
  // Every folder (the innermost ones, their parents with them), then the files, each new: off the engine's thread (the
  // same written directly held it ~3 ms a worker under load).
  await Promise.all(skeleton.leaves.map((d) => mkdir(path.join(worktree, d), { recursive: true })));
  await Promise.all([
    ...skeleton.files.map(([name, bytes]) => writeFile(path.join(worktree, name), bytes, { flag: "wx" })),
    writeFile(path.join(dotGit, "objects", "info", "alternates"), `${o.objects}\n`, { flag: "wx" }),
    writeFile(path.join(dotGit, "opencode"), `${o.projectId}\n`, { flag: "wx" }),
  ]);
  // No hook or fsmonitor of anyone's runs (the new repository has none; the flags make sure of it).
  const r = await runCommand("git", ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "checkout", "-q", "-b", o.branch, o.base], {
    cwd: worktree,
    env,
  });
  const out = `${r.stdout}${r.stderr}`;
  if (r.exitCode !== 0 || /unable to read|invalid object/.test(out)) throw new GitError(`git failed in ${worktree}: ${gitComplaint(r)}`);
}

/**
 * A resumed worker's workspace: its mirror is made again when it is gone, and a workspace made before the mirrors
 * existed (its alternate the user's own object store, which no sandbox shows any more) is moved onto its mirror.
 */
export async function moveOntoMirror(
  worktreesRoot: string,
  ws: Pick<Workspace, "worktree" | "repo" | "baseCommit">,
  opts: { mirrorsRoot?: string; link?: LinkFn } = {},
): Promise<void> {
  const mirror = workspaceMirror(worktreesRoot, ws.repo, ws.baseCommit, opts.mirrorsRoot);
  const alternates = path.join(ws.worktree, ".git", "objects", "info", "alternates");
  const named = existsSync(alternates) ? readFileSync(alternates, "utf8").trim() : null;
  const old = named !== null && named === (await objectsOf(ws.repo).catch(() => null));
  if (!old && existsSync(mirror)) return;
  await refreshMirror(await objectsOf(ws.repo), mirror, { link: opts.link });
  // Written only into the workspace's own folders: its worker may have made .git, objects or info a symlink out (to
  // another worker's repository, say), and the engine writes with more rights than any sandbox.
  if (old && ownFolders(ws.worktree, [".git", "objects", "info"]))
    await writeAlternates(path.join(ws.worktree, ".git", "objects"), realpathSync(mirror) + "\n");
}

/** Whether each of `parts` under `root` (one inside the other) is a real folder, none of them a symlink. */
function ownFolders(root: string, parts: string[]): boolean {
  let dir = root;
  for (const p of parts) {
    dir = path.join(dir, p);
    try {
      if (!lstatSync(dir).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** Why a workspace could not be checked out from the mirror, as a coded error (nothing of the user's was changed). */
function mirrorFailure(repo: RepoInfo, r: MirrorRefresh, err: Error): Error {
  const base = repo.head.slice(0, 12);
  if (r.promisor)
    return new InputError(
      `${repo.root} is a partial clone: objects of ${base} were never fetched, and a worker's workspace cannot fetch them. Fetch them in your repository first (\`git -C ${repo.root} fetch --refetch\`, or \`git checkout ${base}\` there), then start again. Nothing was changed.`,
      "conflict",
    );
  if (r.unreadable.length)
    return new InputError(
      `${repo.root} borrows objects from ${r.unreadable.join(", ")} (objects/info/alternates), which the engine cannot read: ${base} cannot be checked out for the worker. Make it readable, or run \`git repack -a -d\` in your repository to copy those objects in. Nothing was changed.`,
      "conflict",
    );
  return err;
}

/**
 * The id that makes a private repository its own opencode project (NEW_WORKSPACE writes it). opencode names a project by the id in
 * `<git dir>/opencode`, else by its root commit (measured with 1.18.33: two clones of one repository, one origin remote,
 * different ids, were two projects): every clone of one user repository would be the same project, and
 * each session's instance boot then runs `git worktree list` (plus three `git rev-parse`) in every existing workspace
 * of that project ("project copy refresh"), so N workers at once cost O(N²) git processes, and each new worker the
 * workspaces of all finished ones (measured with 32 at once: 4,736 git processes and 94 s of their CPU; with an id of
 * its own: 608 and 12 s; bench/report.md). The id is random, so a worker that reads its own cannot name a sibling's.
 */
const opencodeProjectId = (): string => randomBytes(20).toString("hex");

/**
 * git run by the engine on files a worker wrote: no system or global config (no user excludes, no credential helpers),
 * no hooks, no fsmonitor, no untracked cache, a private index. Work-tree files are read as plain files.
 */
const TRUSTED_FLAGS = [
  "-c",
  "core.quotePath=false",
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "core.untrackedCache=false",
  "-c",
  "core.sparseCheckout=false",
  "-c",
  "core.symlinks=true",
  "-c",
  "commit.gpgsign=false",
  // A file's stat data is trusted only whole (the kept checkout index, keptIndexInto): its ctime, inode and owner too,
  // so a file rewritten and its mtime put back (`touch -d`) is read again.
  "-c",
  "core.trustctime=true",
  "-c",
  "core.checkStat=default",
];

/** The folder of the engine's repository that holds the objects of the worker's latest grading. */
const GRADE_OBJECTS = "grade-objects";

// The scripts below are fixed text: every value reaches them as an environment variable, quoted where it is used, so
// nothing a worker wrote (a file name, a file's content) is ever read as shell. Each saves process starts: one `sh`
// runs the git commands of a step, where the engine would otherwise start each itself (~15 ms a start on this
// 2-core machine, most of a worker's cost to the engine; bench/report.md).

/**
 * Copies into the objects folder OCW_TO exactly the objects of commit OCW_COMMIT that it lacks (its alternates, which reach
 * the user's store, count as having them), read from OCW_FROM (the engine's store of graded objects, whose alternates
 * reach the user's store). Run in the user's repository with no system or global config: its refs bound the walk (`--not
 * --all`: what they reach is the user's already), nothing of it runs (rev-list, cat-file, pack-objects and
 * unpack-objects run no hook, filter or helper), and no lazy fetch. With OCW_STRICT the objects are first unpacked with
 * git's fsck checks into a quarantine folder beside OCW_TMP (nothing reaches OCW_TO when one fails). Then every object the
 * commit needs must resolve from OCW_TO. Prints how many objects were copied. Files under OCW_TMP (a prefix in the engine's folder), removed by the caller.
 */
const COPY_MISSING = `GIT_NO_LAZY_FETCH=1; export GIT_NO_LAZY_FETCH
GIT_OBJECT_DIRECTORY="$OCW_FROM" git rev-list --objects --no-object-names "$OCW_COMMIT" --not --all > "$OCW_TMP.list"
GIT_OBJECT_DIRECTORY="$OCW_TO" git cat-file --batch-check < "$OCW_TMP.list" > "$OCW_TMP.check"
sed -n 's/ missing$//p' "$OCW_TMP.check" > "$OCW_TMP.missing"
if [ -s "$OCW_TMP.missing" ]; then
  GIT_OBJECT_DIRECTORY="$OCW_FROM" git pack-objects -q --stdout < "$OCW_TMP.missing" > "$OCW_TMP.pack"
  if [ -n "\${OCW_STRICT:-}" ]; then
    mkdir -p "$OCW_TMP.q/info" && printf '%s\n' "$OCW_TO" > "$OCW_TMP.q/info/alternates"
    GIT_OBJECT_DIRECTORY="$OCW_TMP.q" git unpack-objects -q --strict < "$OCW_TMP.pack"
  fi
  GIT_OBJECT_DIRECTORY="$OCW_TO" git unpack-objects -q < "$OCW_TMP.pack"
fi
GIT_OBJECT_DIRECTORY="$OCW_TO" git rev-list --objects --no-object-names "$OCW_COMMIT" --not --all > /dev/null
wc -l < "$OCW_TMP.missing"
`;

/**
 * A new private repository: borrows the mirror's objects, checks out the base on the worker's branch. Run without the
 * user's or the system's git config (workspaceGitEnv), so its files are the committed bytes, as grading reads them: a
 * smudge filter of the user's (git-lfs puts every LFS file's content in place of its pointer) would write other bytes,
 * and the engine's snapshot, which runs no filter, would grade every such file as changed. A checkout that could not
 * read an object (a blob the mirror lacks) says so but exits 0, leaving the file out: that is a failure here.
 */
const NEW_WORKSPACE = `set -eu
if [ "$OCW_OBJECT_FORMAT" = sha256 ]; then git init -q --template= --object-format=sha256 "$OCW_WORKTREE"; else git init -q --template= "$OCW_WORKTREE"; fi
printf '%s\n' "$OCW_OBJECTS" > "$OCW_WORKTREE/.git/objects/info/alternates"
printf '%s\n' "$OCW_PROJECT_ID" > "$OCW_WORKTREE/.git/opencode"
if [ -n "\${OCW_IMPORT_FROM:-}" ]; then
  OCW_FROM="$OCW_IMPORT_FROM" OCW_TO="$OCW_WORKTREE/.git/objects" OCW_COMMIT="$OCW_BASE" OCW_TMP="$OCW_WORKTREE/.git/ocw-import"
  (cd "$OCW_REPO"
${COPY_MISSING}) > /dev/null
  rm -f "$OCW_TMP".*
fi
cd "$OCW_WORKTREE"
out=$(git checkout -q -b "$OCW_BRANCH" "$OCW_BASE" 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
case "$out" in *"unable to read"*|*"invalid object"*) printf '%s\n' "$out" >&2; exit 1 ;; esac
`;

/**
 * No config or attributes but the repository's own (which a new private repository does not have): no filters, hooks or
 * eol rules. HOME is the engine's folder of worker objects, which holds no git config: git before 2.32 ignores
 * GIT_CONFIG_GLOBAL, and ~/.config/git/attributes is read whatever the config says.
 */
const workspaceGitEnv = (home: string) => ({ GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: home, XDG_CONFIG_HOME: undefined });

/** The start of every trusted script: git's flags for files a worker wrote. */
const TRUSTED = `set -eu
C="${TRUSTED_FLAGS.join(" ")}"
`;

/** The engine's shared git directory (engineGitDir), made once per object format. */
const INIT_ENGINE_GIT_DIR = `${TRUSTED}if [ "$OCW_OBJECT_FORMAT" = sha256 ]; then git $C init -q --bare --template= --object-format=sha256 "$OCW_DIR"; else git $C init -q --bare --template= "$OCW_DIR"; fi
`;

/**
 * The tree of the workspace's files as they are now: a fresh index from the base (index flags in the workspace cannot
 * hide a change), every file added. Run with the trusted environment.
 */
const SNAPSHOT = `[ -n "\${OCW_INDEX_READY-}" ] || GIT_INDEX_FILE="$OCW_INDEX" git $C read-tree "$OCW_BASE"
GIT_INDEX_FILE="$OCW_INDEX" GIT_WORK_TREE="$OCW_WORKTREE" git $C add -A -- .
tree=$(GIT_INDEX_FILE="$OCW_INDEX" git $C write-tree)
`;

/**
 * The snapshot committed on the base, its new objects written apart (an emptied GRADE_OBJECTS), then what grading reads
 * of it: the commit, the changed files with the diff stat (NUL-separated names, never quoted or escaped), and a fresh
 * checkout of it (nothing the worker left behind is in it).
 */
const COMMIT_AND_CHECK_OUT = `${TRUSTED}export GIT_OBJECT_DIRECTORY="$OCW_GRADE_OBJECTS"
${SNAPSHOT}commit=$(git $C commit-tree "$tree" -p "$OCW_BASE" -m "$OCW_MESSAGE")
printf '%s\n' "$commit"
git $C diff --raw --no-abbrev --numstat --stat -z --no-renames "$OCW_BASE" "$commit"
if [ -n "$OCW_CHECKOUT_ONLY" ]; then
  printf '%s\n' "$OCW_CHECKOUT_ONLY" | GIT_INDEX_FILE="$OCW_INDEX" git $C --work-tree "$OCW_CHECKOUT" checkout-index --stdin -f -q || :
else
  GIT_INDEX_FILE="$OCW_INDEX" git $C --work-tree "$OCW_CHECKOUT" checkout-index -a -f -q
fi
`;

/** A fresh checkout of a commit of the worker's (emptied first): a graded commit whose partial checkout did not do. */
const CHECK_OUT_COMMIT = `${TRUSTED}export GIT_OBJECT_DIRECTORY="$OCW_GRADE_OBJECTS"
GIT_INDEX_FILE="$OCW_CHECKOUT_INDEX" git $C --work-tree "$OCW_CHECKOUT" read-tree "$OCW_COMMIT"
GIT_INDEX_FILE="$OCW_CHECKOUT_INDEX" git $C --work-tree "$OCW_CHECKOUT" checkout-index -a -f -q
`;

/** The environment of the engine's own git: no system or global config, no repository of the worker's, a fixed identity. */
function trustedEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    LC_ALL: "C",
    GIT_TERMINAL_PROMPT: "0",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    HOME: home,
    GIT_AUTHOR_NAME: ENGINE_AUTHOR.name,
    GIT_AUTHOR_EMAIL: ENGINE_AUTHOR.email,
    GIT_COMMITTER_NAME: ENGINE_AUTHOR.name,
    GIT_COMMITTER_EMAIL: ENGINE_AUTHOR.email,
  };
}

/**
 * The engine's git directory, one per object format beside the workers' folders, shared by every worker: a bare
 * repository whose config, HEAD and empty refs are all any of the engine's git commands read from it. A worker's
 * objects live in its own folder (Workspace.gitDir), named to git by GIT_OBJECT_DIRECTORY and chained by alternates
 * files the engine writes there, so no worker costs a `git init` of its own (a process start each: the engine's
 * costliest step; bench/report.md). No command writes to it: no refs are made, and every index is private.
 */
const engineGitDirs = new Map<string, Promise<string>>();
function engineGitDir(workerDir: string, format: ObjectFormat): Promise<string> {
  const dir = path.join(path.dirname(workerDir), `.engine-${format}.git`);
  let made = engineGitDirs.get(dir);
  if (!made) {
    made = (async () => {
      if (existsSync(path.join(dir, "HEAD"))) return dir;
      // Made aside and renamed into place, so a half-made one is never used (and a second engine's is as good).
      const tmp = `${dir}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
      mkdirSync(path.dirname(dir), { recursive: true });
      try {
        await gitScript(INIT_ENGINE_GIT_DIR, { cwd: path.dirname(dir), env: { ...trustedEnv(path.dirname(dir)), OCW_DIR: tmp, OCW_OBJECT_FORMAT: format } });
        await rename(tmp, dir).catch((err: NodeJS.ErrnoException) => {
          if (!existsSync(path.join(dir, "HEAD"))) throw err;
        });
      } finally {
        await rm(tmp, { recursive: true, force: true });
      }
      return dir;
    })();
    engineGitDirs.set(dir, made);
    made.catch(() => engineGitDirs.delete(dir));
  }
  return made;
}

/**
 * The diff from the base to `OCW_TO` (a commit), or to the workspace's files as they are now when it is empty, at most
 * `OCW_MAX` bytes of it: git stops once head has read that much. A worker's diff can be gigabytes, and a command's
 * output is read into one string on the engine's command thread. One script, in the worker's queue of scripts: a diff
 * run beside it raced the grading that empties GRADE_OBJECTS (which the engine repository borrows from) and came back
 * empty.
 */
const DIFF = `${TRUSTED}if [ -z "$OCW_TO" ]; then
${SNAPSHOT}OCW_TO="$tree"
fi
git $C diff "$OCW_BASE" "$OCW_TO" | head -c "$OCW_MAX"
`;

// A worker's scripts run one at a time: a diff asked for as grading starts would otherwise read the worker's objects
// while grading empties GRADE_OBJECTS, which they borrow from.
const scriptsOf = new Map<string, Promise<unknown>>();

/**
 * A trusted script (a fixed sh text), or one git command with the trusted flags, its private index (GIT_INDEX_FILE) and
 * the workspace (or `workTree`) as its work tree: no shell started where one command does. `allowFail`: its exit code
 * is not looked at (a script's `|| :`).
 */
type TrustedRun = string | { git: string[]; workTree?: string; allowFail?: boolean };

/** Runs a trusted script on a worker's objects, with a private index that is removed afterwards. */
function trustedScript(ws: Workspace, script: TrustedRun, inputs: Record<string, string>, opts: TrustedScriptOptions = {}): Promise<string> {
  return inTurn(ws, () => runTrustedScript(ws, script, inputs, opts));
}

/** `fn` after the worker's trusted runs before it (see scriptsOf). */
function inTurn<T>(ws: Workspace, fn: () => Promise<T>): Promise<T> {
  const run = (scriptsOf.get(ws.gitDir) ?? Promise.resolve()).then(fn);
  const done = run.catch(() => undefined);
  scriptsOf.set(ws.gitDir, done);
  void done.then(() => scriptsOf.get(ws.gitDir) === done && scriptsOf.delete(ws.gitDir));
  return run;
}

/**
 * An object folder's alternates, replaced whole (a temporary file renamed into place) and only when they differ: a
 * publish or diff of the worker reading them at that moment sees the old list or the new one, never a half-written one.
 */
async function writeAlternates(objects: string, text: string, opts: { engines?: boolean; absent?: boolean } = {}): Promise<void> {
  const file = path.join(objects, "info", "alternates");
  // In the engine's own folders (`engines`: nobody else writes there; a folder emptied or removed is forgotten,
  // forgetAlternates), once written they are not read again: three scripts a worker read or wrote them each time (~100
  // ms of a 32-task batch's engine CPU). A workspace's own are always read: its worker may have changed them.
  if (opts.engines && alternatesWritten.get(file) === text) return;
  if (opts.absent) {
    // A folder not there yet, which nothing reads before this returns: written in place (two file-system calls, not five).
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
  } else if ((await readFile(file, "utf8").catch(() => null)) !== text) {
    const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
    // Off the engine's thread (written directly, each held the engine's thread ~1 ms under load), with its folder when
    // that is not there yet.
    try {
      await writeFile(tmp, text);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(tmp, text);
    }
    await rename(tmp, file);
  }
  if (!opts.engines) return;
  if (alternatesWritten.size >= 4096) alternatesWritten.delete(alternatesWritten.keys().next().value!);
  alternatesWritten.set(file, text);
}
const alternatesWritten = new Map<string, string>();
/** GRADE_OBJECTS folders made without their alternates (workerObjects), known to be there. */
const gradeFoldersMade = new Set<string>();
/** An object folder emptied or removed: its alternates are written again next time. */
const forgetAlternates = (objects: string) => {
  gradeFoldersMade.delete(objects);
  alternatesWritten.delete(path.join(objects, "info", "alternates"));
};

/**
 * The worker's object folders: its own (snapshots for diffs; it borrows the user's objects and those of its latest
 * grading) and GRADE_OBJECTS (borrowing only the user's, so that `git add` there writes every object the graded commit
 * adds, and publishing copies exactly those).
 */
async function runTrustedScript(ws: Workspace, script: TrustedRun, inputs: Record<string, string>, opts: TrustedScriptOptions): Promise<string> {
  if (opts.baseOnly) {
    const [gitDir, userObjects, graded] = await Promise.all([engineGitDir(ws.gitDir, objectFormat(ws.baseCommit)), objectsOf(ws.repo), gradedStoreOf(ws)]);
    return runOnBase(ws, script, inputs, opts, { gitDir, userObjects, graded });
  }
  const throughGrade = script === COMMIT_AND_CHECK_OUT || script === CHECK_OUT_COMMIT;
  const { gitDir, objects, gradeObjects } = await workerObjects(ws, !!opts.freshGradeObjects, throughGrade);
  const index = opts.index?.path ?? privateIndex(ws);
  try {
    const env = {
      ...trustedEnv(ws.gitDir),
      GIT_DIR: gitDir,
      GIT_OBJECT_DIRECTORY: objects,
      OCW_GRADE_OBJECTS: gradeObjects,
      OCW_INDEX: index,
      // The index already holds the base (read by the caps listing just before): the snapshot does not read it again.
      ...(opts.index?.ready ? { OCW_INDEX_READY: "1" } : {}),
      OCW_BASE: ws.baseCommit,
      OCW_WORKTREE: ws.worktree,
      ...inputs,
    };
    return await runTrusted(ws, script, ws.gitDir, env, index, opts);
  } finally {
    if (!opts.index?.keep) await rm(index, { force: true });
  }
}

/**
 * The engine's git directory and the worker's object folders, ready for a trusted run; with `fresh`, GRADE_OBJECTS
 * emptied for a new grading's objects.
 */
async function workerObjects(ws: Workspace, fresh: boolean, throughGrade = false): Promise<{ gitDir: string; objects: string; gradeObjects: string }> {
  const format = objectFormat(ws.baseCommit);
  const [gitDir, userObjects] = await Promise.all([engineGitDir(ws.gitDir, format), objectsOf(ws.repo)]);
  const objects = path.join(ws.gitDir, "objects");
  const gradeObjects = path.join(ws.gitDir, GRADE_OBJECTS);
  const graded = await gradedStoreOf(ws);
  if (fresh) {
    // The previous grading's objects move to the worker's own folder first: a later round is compared with the commit
    // of the round before (what changed since), and the verdict naming it must stay readable until the worker is
    // removed (nothing of it is in the user's repository before the person lands or publishes it). A failed copy fails
    // this grading rather than lose that commit.
    if (existsSync(gradeObjects)) {
      await copyObjects(gradeObjects, objects);
      await rm(gradeObjects, { recursive: true, force: true });
    }
    forgetAlternates(gradeObjects);
  }
  // The engine's store of graded objects (built verdicts, combined commits) is borrowed too: a task after others starts
  // from commits only it holds. Each folder is made with its alternates (off the engine's thread). GRADE_OBJECTS' own
  // alternates are read only by the scripts that write or check out through it (`throughGrade`: git's way of a
  // grading); every other reader reaches it through the worker's folder, and the engine's own snapshot writes its pack
  // there: for them the folder is made bare (two file-system calls fewer a grading, ~1 ms of kernel time each here).
  const gradeFolder = async () => {
    if (throughGrade || (!fresh && !gradeFoldersMade.has(gradeObjects))) {
      return writeAlternates(gradeObjects, `${userObjects}\n${graded}\n`, { engines: true, absent: fresh });
    }
    if (!fresh) return;
    await mkdir(path.join(gradeObjects, "pack"), { recursive: true });
    if (gradeFoldersMade.size >= 4096) gradeFoldersMade.delete(gradeFoldersMade.values().next().value!);
    gradeFoldersMade.add(gradeObjects);
  };
  await Promise.all([writeAlternates(objects, `${userObjects}\n${graded}\n${gradeObjects}\n`, { engines: true }), gradeFolder()]);
  return { gitDir, objects, gradeObjects };
}

/**
 * A trusted run that reads only the base (its listing, the caps listing, a checkout of it): the user's objects and the
 * engine's graded store named to git directly (a base is in one of them), so the worker's own object folders are not
 * made or written for it.
 */
async function runOnBase(
  ws: Workspace,
  script: TrustedRun,
  inputs: Record<string, string>,
  opts: TrustedScriptOptions,
  at: { gitDir: string; userObjects: string; graded: string },
): Promise<string> {
  const index = opts.index?.path ?? privateIndex(ws);
  const cwd = path.dirname(ws.gitDir);
  try {
    const env = {
      ...trustedEnv(ws.gitDir),
      GIT_DIR: at.gitDir,
      GIT_OBJECT_DIRECTORY: at.userObjects,
      GIT_ALTERNATE_OBJECT_DIRECTORIES: at.graded,
      GIT_NO_LAZY_FETCH: "1",
      OCW_INDEX: index,
      OCW_BASE: ws.baseCommit,
      OCW_WORKTREE: ws.worktree,
      ...inputs,
    };
    return await runTrusted(ws, script, cwd, env, index, opts);
  } finally {
    if (!opts.index?.keep) await rm(index, { force: true });
  }
}

/**
 * A trusted run's one process: the fixed script, or git over the worker's files with the run's private index. Lossless:
 * the names of a worker's files (any bytes but NUL) and its diff show invalid UTF-8 as \xNN, never U+FFFD. Bounded in
 * time (OCW_GIT_READ_SEC): git reads the worker's files, and a FIFO where it reads one (a `.gitignore`, a nested
 * repository's `.git/commondir`) would hold it, and the grading with it, for good.
 */
async function runTrusted(
  ws: Workspace,
  script: TrustedRun,
  cwd: string,
  env: Record<string, string | undefined>,
  index: string,
  opts: TrustedScriptOptions,
): Promise<string> {
  const limitMs = config().OCW_GIT_READ_SEC * 1000;
  if (typeof script === "string") return gitScript(script, { cwd, env, lossless: !opts.bytes, bytes: opts.bytes, limitMs });
  const r = await runCommand("git", [...TRUSTED_FLAGS, ...script.git], {
    cwd,
    env: { ...env, GIT_INDEX_FILE: index, GIT_WORK_TREE: script.workTree ?? ws.worktree },
    lossless: !opts.bytes,
    bytes: opts.bytes,
    limitMs,
  });
  if (r.exitCode !== 0 && !(script.allowFail && r.exitCode !== null)) throw new GitError(`git ${script.git[0]} failed in ${cwd}: ${gitComplaint(r)}`);
  return r.stdout;
}

interface TrustedScriptOptions {
  /** Reads only the base (runOnBase). */
  baseOnly?: boolean;
  freshGradeObjects?: boolean;
  bytes?: boolean;
  /** A private index shared by two scripts in a row (the caps listing, then the commit): kept after the first, read by the second. */
  index?: { path: string; keep?: boolean; ready?: boolean };
}

/** A fresh private index's name beside the worker's objects (no file yet: git makes it). */
const privateIndex = (ws: Workspace) => `${ws.gitDir}.index-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;

/** A sha256 repository's commits are named by 64 hex digits: its workspace and engine repository must be sha256 too. */
const objectFormat = (commit: string): ObjectFormat => (commit.length === 64 ? "sha256" : "sha1");

// Asked once per repository, not per worker.
const objectDirs = new Map<string, Promise<string>>();
function objectsOf(repo: string): Promise<string> {
  let p = objectDirs.get(repo);
  if (!p) {
    if (objectDirs.size >= 256) objectDirs.delete(objectDirs.keys().next().value!);
    p = git(repo, ["rev-parse", "--git-path", "objects"]).then((dir) => path.resolve(repo, dir));
    objectDirs.set(repo, p);
    p.catch(() => objectDirs.delete(repo));
  }
  return p;
}

/** What grading reads of the engine's commit of a worker's files. */
interface GradedCommit {
  /** The engine's commit on top of the base; the base itself when nothing changed. */
  commit: string;
  /** Files changed between the base and the commit (paths relative to the repository's root, as they are). */
  changed: string[];
  diffStat: string;
  /** The changes' raw records (modes, blobs), for flaggedChanges. */
  changes?: TreeChange[];
  /** Every path of the commit's tree (shown losslessly, as `git ls-tree -r` lists them), where the engine made it itself. */
  names?: string[];
  /** How many of the worker's files the engine's own snapshot read, where it made the commit (or found no change). */
  filesRead?: number;
}

/**
 * The engine's commit of the worker's files on top of its base, made in the engine's own repository, and a fresh
 * checkout of it in `checkoutDir` (emptied first) for the checks: every file, or with `only` (paths from the
 * repository's root) just those, from the snapshot's own index (no second read of the tree). A partial checkout is
 * good only where each named path came out a regular file: the caller checks with `partialHolds` and else calls
 * `checkOutCommit` for the whole tree. A name git's `--stdin` would read otherwise (a newline, a leading quote) means
 * the whole tree at once.
 */
export async function commitAndCheckOut(
  ws: Workspace,
  message: string,
  checkoutDir: string,
  caps: SnapshotCaps = snapshotCaps(),
  only?: string[],
  how: "any" | "git" = "any",
): Promise<GradedCommit & { partial: boolean }> {
  // Caps first: a worker's 100k files or a 2 GiB file never reach the engine's memory, its objects or the person's repository.
  // git's way has a private index: a copy of the base's (a `git read-tree` less per grading), the files added to it.
  const index = privateIndex(ws);
  let indexMade = false;
  const partial = plainNames(only);
  let out: string;
  try {
    const listing = await capsListing(ws, caps);
    if (listing.over) throw new SnapshotTooLarge(listing.over);
    const emptied = async () => {
      if (existsSync(checkoutDir)) await rm(checkoutDir, { recursive: true, force: true });
      mkdirSync(checkoutDir, { recursive: true });
    };
    await emptied();
    // The usual case made inside the engine (snapshot.ts); whatever it does not take, or any failure of it, git's way.
    const tree = listing.base?.tree;
    if (how === "any" && tree && !config().OCW_SNAPSHOT_GIT) {
      // A checkout of some files only (file checks) reads no other file the checkout's stat data shows unchanged.
      const kept = partial ? await keptStats(ws, listing) : null;
      const made = await commitInProcess(ws, tree, listing.fresh, message, checkoutDir, partial ? only : undefined, kept).catch(() => null);
      if (made) return made;
      await emptied();
    }
    indexMade = true;
    // The checkout's own stat data where it holds (only the files changed since are read again), else the base's index.
    if (!(await keptIndexInto(ws, index, listing).catch(() => null))) await baseIndexInto(ws, index);
    out = await trustedScript(
      ws,
      COMMIT_AND_CHECK_OUT,
      { OCW_MESSAGE: message, OCW_CHECKOUT: checkoutDir, OCW_CHECKOUT_ONLY: partial ? checkoutList(only) : "" },
      { freshGradeObjects: true, index: { path: index, ready: existsSync(index) } },
    );
  } finally {
    if (indexMade) await rm(index, { force: true });
  }
  const eol = out.indexOf("\n");
  // The raw records first (what flaggedChanges reads: modes and blobs), then the numstat records and the stat.
  const raw = parseRawChanges(out.slice(eol + 1));
  const { changed, stat } = parseNumstatAndStat(raw.rest);
  // Nothing changed: the base is the commit (the engine's commit object of the same tree is left unused).
  return changed.length
    ? { commit: out.slice(0, eol), changed, diffStat: stat, partial, changes: raw.changes }
    : { commit: ws.baseCommit, changed, diffStat: "", partial, changes: [] };
}

/**
 * The engine's commit of the worker's files made in its own process (snapshot.ts: the tree `git add -A` would make,
 * read against the base's listing), its objects in GRADE_OBJECTS as git's script writes them, and its checkout from
 * the bytes it hashed; the diff is git's, of that commit. Throws where git's path must take over, and when git's diff
 * does not show exactly the changes read here.
 */
async function commitInProcess(
  ws: Workspace,
  base: BaseTree,
  fresh: string[],
  message: string,
  checkoutDir: string,
  only?: string[],
  kept?: KeptStats | null,
): Promise<GradedCommit & { partial: boolean }> {
  if (!(await trustsFileSystem(await engineGitDir(ws.gitDir, base.format)))) throw new NotInProcess("git does not trust the file system's modes or names");
  const wanted = only
    ? checkoutList(only)
        .split("\n")
        .map((p) => Buffer.from(p).toString("latin1"))
    : undefined;
  const snap = await readWorktree(ws.worktree, base, fresh, kept && wanted ? { kept, wanted: new Set(wanted) } : {});
  const commit = await inTurn(ws, async () => writeSnapshot((await workerObjects(ws, true)).gradeObjects, base, snap, ws.baseCommit, message));
  await writeCheckout(checkoutDir, snap, wanted);
  const partial = !!only;
  if (!commit) return { commit: ws.baseCommit, changed: [], diffStat: "", partial, changes: [], filesRead: snap.read };
  const out = await trustedScript(ws, { git: ["diff", "--raw", "--no-abbrev", "--numstat", "--stat", "-z", "--no-renames", ws.baseCommit, commit] }, {});
  const raw = parseRawChanges(out);
  const read = new Map([...snap.changed].map((p) => [losslessUtf8(Buffer.from(p, "latin1")), snap.files.get(p)]));
  const same =
    raw.changes.length === read.size &&
    raw.changes.every((c) => read.has(c.path) && (c.mode === null ? !read.get(c.path) : read.get(c.path)?.oid === c.oid && read.get(c.path)?.mode === c.mode));
  if (!same) throw new Error("the in-process snapshot and git's diff of it differ");
  const { changed, stat } = parseNumstatAndStat(raw.rest);
  // The tree's names as git lists them: flaggedChanges reads them instead of a `git ls-tree -r` of the commit.
  const names = [...snap.files.keys()].map((p) => losslessUtf8(Buffer.from(p, "latin1")));
  return { commit, changed, diffStat: stat, partial, changes: raw.changes, names, filesRead: snap.read };
}

/**
 * Whether the engine's git reads modes and names as the in-process snapshot does: `git init` probed its file system and
 * wrote nothing but core.filemode true, and no case-folding (core.ignorecase) or Unicode-composing
 * (core.precomposeunicode) names. Else git's add keeps the index's modes or matches names otherwise: git's way.
 */
const trusted = new Map<string, Promise<boolean>>();
function trustsFileSystem(gitDir: string): Promise<boolean> {
  let p = trusted.get(gitDir);
  if (!p) {
    p = readFile(path.join(gitDir, "config"), "utf8").then(
      (text) => {
        const values = (key: string) => [...text.matchAll(new RegExp(`^\\s*${key}\\s*=\\s*(\\S*)\\s*$`, "gim"))].map((m) => m[1]!.toLowerCase());
        return (
          values("filemode").every((v) => v === "true") &&
          values("ignorecase").every((v) => v === "false") &&
          values("precomposeunicode").every((v) => v === "false")
        );
      },
      () => false,
    );
    trusted.set(gitDir, p);
  }
  return p;
}

/**
 * Whether a partial checkout (the named paths and every folder above them, see `checkoutList`) shows the named paths
 * as the whole tree would. git writes an entry of the tree only: a folder above a path that is a symlink or a file in
 * the commit comes out as that symlink or file (then the whole tree is needed: a check would follow it), and one that
 * is a folder comes out only where a named file lies below it. So a path is shown truly when every part of it that came
 * out is a real folder and the path itself is a regular file or missing (missing from the whole tree too: nothing of
 * the tree could have led to it).
 */
export function partialHolds(checkoutDir: string, only: string[]): boolean {
  return only.every((p) => {
    const parts = p.split("/").filter(Boolean);
    let at = checkoutDir;
    for (const [i, part] of parts.entries()) {
      at = path.join(at, part);
      let st;
      try {
        st = lstatSync(at);
      } catch {
        return true; // missing here and in the whole tree
      }
      if (i === parts.length - 1) return st.isFile();
      if (!st.isDirectory() || st.isSymbolicLink()) return false;
    }
    return false;
  });
}

/** The paths to check out for `only`: each one and every folder above it (to see a symlink or file standing there). */
function checkoutList(only: string[]): string {
  const all = new Set<string>();
  for (const p of only) {
    const parts = p.split("/").filter(Boolean);
    for (let i = 1; i <= parts.length; i++) all.add(parts.slice(0, i).join("/"));
  }
  return [...all].join("\n");
}

/** A list `git checkout-index --stdin` reads as written: no empty name, no newline, no leading quote (it unquotes those). */
const plainNames = (only?: string[]): only is string[] =>
  !!only?.length && only.every((p) => p.length > 0 && !p.includes("\n") && !p.startsWith('"') && !p.includes('/"'));

/** A fresh checkout of one of the worker's commits (the graded one, emptied first): the whole tree. */
export async function checkOutCommit(ws: Workspace, commit: string, checkoutDir: string): Promise<void> {
  if (existsSync(checkoutDir)) await rm(checkoutDir, { recursive: true, force: true });
  mkdirSync(checkoutDir, { recursive: true });
  const checkoutIndex = `${checkoutDir}.index`;
  try {
    await trustedScript(ws, CHECK_OUT_COMMIT, { OCW_CHECKOUT: checkoutDir, OCW_CHECKOUT_INDEX: checkoutIndex, OCW_COMMIT: commit });
  } finally {
    await rm(checkoutIndex, { force: true });
  }
}

/** The most a worker's snapshot may add: new files (not ignored), bytes added in all, bytes of one file. */
interface SnapshotCaps {
  files: number;
  bytes: number;
  fileBytes: number;
}

export function snapshotCaps(env: NodeJS.ProcessEnv = process.env): SnapshotCaps {
  const c = config(env);
  const MiB = 1024 * 1024;
  return { files: c.OCW_SNAPSHOT_MAX_FILES, bytes: c.OCW_SNAPSHOT_MAX_MB * MiB, fileBytes: c.OCW_SNAPSHOT_FILE_MAX_MB * MiB };
}

/** A worker's files over the snapshot caps: nothing of them is committed, graded or published; the verdict says why. */
export class SnapshotTooLarge extends OcwError {
  constructor(message: string) {
    super("conflict", message);
    this.name = "SnapshotTooLarge";
  }
}

/**
 * What every grading of a base commit reads of it, made once per base (not per worker): an index of its tree (as `git
 * read-tree` writes it: no stat data, so `git add -A` on a copy of it hashes every file of the workspace again, as a
 * fresh `read-tree` per grading did), the base's files with their sizes, and its trees (`ls-tree -r -t -l`: what the
 * in-process snapshot reads, snapshot.ts), after its root tree's id. Exact bytes (latin1): the
 * names are opened. Run with the trusted environment; the index is written to OCW_INDEX (a temporary name, renamed
 * into place by the engine).
 */
const BASE_LISTING = `${TRUSTED}GIT_INDEX_FILE="$OCW_INDEX" git $C read-tree "$OCW_BASE"
git $C rev-parse "$OCW_BASE^{tree}"
git $C ls-tree -r -t -l -z --full-tree "$OCW_BASE"
`;

/** A base commit as grading reads it (BASE_LISTING): its index file (the engine's, never written after), its files. */
interface BaseListing {
  index: string;
  /** The base's blobs: name (latin1) and size. */
  blobs: [string, number][];
  /** The base's submodules (gitlinks), each named with a trailing slash. */
  submodules: string[];
  /** The base as the in-process snapshot reads it; null where that snapshot would not make the base's own tree. */
  tree: BaseTree | null;
  /** Caps listings reading `index` in place now: an evicted listing's index is removed when the last one ends. */
  readers: number;
  evicted?: boolean;
}

/**
 * The engine's base listings, one per folder of worker repositories and base commit, made by whichever grading (or
 * diff) of that base comes first; the others wait for it. A handful are kept; an older one's index file is removed.
 */
const baseListings = new Map<string, Promise<BaseListing>>();
const BASE_LISTINGS_KEPT = 8;
/** Folders of base indexes already cleared of what an earlier engine left there. */
const baseIndexDirs = new Map<string, Promise<void>>();

/**
 * What grading reads of a worker's base (its listing), made ahead: at a worker's start, not when a batch's workers all
 * finish together and each grading would wait for it. Never fails (grading makes it again, and says what went wrong).
 */
export function prepareGrading(ws: Workspace): void {
  baseListing(ws).catch(() => undefined);
}

function baseListing(ws: Workspace): Promise<BaseListing> {
  const dir = path.join(path.dirname(ws.gitDir), ".base-index");
  const index = path.join(dir, `${ws.baseCommit}-${process.pid}`);
  let p = baseListings.get(index);
  if (p) {
    // Most recently used last.
    baseListings.delete(index);
    baseListings.set(index, p);
    return p;
  }
  p = (async () => {
    let cleared = baseIndexDirs.get(dir);
    if (!cleared) {
      // What an engine of another process left (it ended before removing its own): never read, removed once.
      cleared = readdir(dir)
        .then((names) => Promise.all(names.filter((n) => !n.endsWith(`-${process.pid}`)).map((n) => rm(path.join(dir, n), { force: true }))))
        .catch(() => undefined)
        .then(() => mkdir(dir, { recursive: true }))
        .then(() => undefined);
      baseIndexDirs.set(dir, cleared);
      cleared.catch(() => baseIndexDirs.delete(dir));
    }
    await cleared;
    const tmp = `${index}.tmp-${randomBytes(4).toString("hex")}`;
    try {
      const out = await trustedScript(ws, BASE_LISTING, { OCW_INDEX: tmp }, { bytes: true, baseOnly: true, index: { path: tmp, keep: true } });
      await rename(tmp, index);
      const blobs: [string, number][] = [];
      const submodules: string[] = [];
      // The root tree's id on the first line, then the listing.
      for (const rec of out.slice(out.indexOf("\n") + 1).split("\0")) {
        const m = /^\d+ blob [0-9a-f]+ +(\d+)\t([\s\S]+)$/.exec(rec);
        if (m) blobs.push([m[2]!, Number(m[1])]);
        const sub = /^160000 commit [0-9a-f]+ +-\t([\s\S]+)$/.exec(rec);
        if (sub) submodules.push(`${sub[1]}/`);
      }
      return { index, blobs, submodules, tree: parseBaseTree(out, objectFormat(ws.baseCommit)), readers: 0 };
    } finally {
      await rm(tmp, { force: true });
    }
  })();
  baseListings.set(index, p);
  p.catch(() => baseListings.get(index) === p && baseListings.delete(index));
  while (baseListings.size > BASE_LISTINGS_KEPT) {
    const [oldest, old] = baseListings.entries().next().value!;
    baseListings.delete(oldest);
    void old
      .then((l) => {
        l.evicted = true;
        if (!l.readers) return rm(oldest, { force: true });
      })
      .catch(() => undefined);
  }
  return p;
}

/**
 * A private index holding the base (a copy of its listing's index: no `git read-tree` per grading), for the caps
 * listing and then the snapshot. Returns the base's listing. A listing whose index file is gone (removed meanwhile) is
 * made again.
 */
async function baseIndexInto(ws: Workspace, index: string): Promise<BaseListing> {
  for (let tries = 0; ; tries++) {
    const listing = await baseListing(ws);
    try {
      await copyFile(listing.index, index);
      return listing;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT" || tries) throw err;
      if (baseListings.get(listing.index)) baseListings.delete(listing.index);
    }
  }
}

/**
 * The checkout's index, kept by the engine (keepCheckoutIndex): a copy of the workspace's `.git/index` taken as its
 * checkout ends, before the worker runs, in the engine's folder of the worker (outside every sandbox: the worker can
 * write its own `.git/index`, never this copy), with what it was taken from (KeptIndexMeta).
 */
const KEPT_INDEX = "checkout-index";
const KEPT_META = "checkout-index.json";

interface KeptIndexMeta {
  /** The commit checked out. */
  base: string;
  /**
   * A file-system time (nanoseconds) after git wrote the index and before the worker ran: an entry whose ctime and mtime
   * are before it and that the file still has is the base's file, unchanged.
   */
  fence: string;
  /** The index's own checksum (its last bytes): the copy is the file described here. */
  checksum: string;
}

/** Below this many files in its checkout, a workspace keeps no checkout index (keepCheckoutIndex). */
const KEEP_INDEX_MIN_FILES = 16;

/**
 * Keeps the workspace's checkout index (see KEPT_INDEX). Never fails: without it grading reads every file (today's way).
 */
async function keepCheckoutIndex(ws: Workspace): Promise<void> {
  const meta = path.join(ws.gitDir, KEPT_META);
  const tmp = `${path.join(ws.gitDir, KEPT_INDEX)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    const src = path.join(ws.worktree, ".git", "index");
    const st = await lstat(src, { bigint: true });
    if (!st.isFile()) return;
    const bytes = await readFile(src);
    const hashSize = objectFormat(ws.baseCommit) === "sha256" ? 32 : 20;
    // A handful of files is read at grading for less than keeping their stat data costs a worker's start (~1 ms of the
    // engine's CPU against ~0.1 ms a file read): none is kept, unless git's way is the only one (it reads the kept index).
    if (bytes.length < 12 + hashSize || (bytes.readUInt32BE(8) < KEEP_INDEX_MIN_FILES && !config().OCW_SNAPSHOT_GIT)) return;
    await mkdir(ws.gitDir, { recursive: true });
    await rm(meta, { force: true });
    await writeFile(tmp, bytes);
    await rename(tmp, path.join(ws.gitDir, KEPT_INDEX));
    // A moment of the workspace's file-system clock after the checkout, before the worker runs: the ctime of a file made
    // (and removed) in the workspace's .git. Whatever the worker changes later gets a ctime from then on, so an entry
    // whose times are before it shows any change. Taken again a millisecond later (a few times) while it is the index's
    // own tick (a small checkout's files and index can share one): an entry of that tick could not be told from a change.
    let fence = st.mtimeNs;
    for (let i = 0; i < 8 && fence <= st.mtimeNs; i++) {
      if (i) await new Promise((r) => setTimeout(r, 1));
      const stamp = path.join(ws.worktree, ".git", `ocw-fence-${randomBytes(4).toString("hex")}`);
      await writeFile(stamp, "", { flag: "wx" });
      try {
        fence = (await lstat(stamp, { bigint: true })).ctimeNs;
      } finally {
        await rm(stamp, { force: true });
      }
    }
    const kept: KeptIndexMeta = { base: ws.baseCommit, fence: fence.toString(), checksum: bytes.subarray(bytes.length - hashSize).toString("hex") };
    await writeFile(`${meta}.tmp`, JSON.stringify(kept));
    await rename(`${meta}.tmp`, meta);
  } catch {
    await rm(meta, { force: true }).catch(() => undefined);
  } finally {
    await rm(tmp, { force: true }).catch(() => undefined);
  }
}

/**
 * The entries of a git index (versions 2 and 3) up to `end` (its checksum): where each starts (40 bytes of stat data and
 * mode, the object id, 16 bits of flags), its flags, its name's bytes (`name` to `nul`), and where the entries end (the
 * extensions begin). Null when an entry runs past `end`.
 */
function indexEntries(
  buf: Buffer,
  hashSize: number,
  end: number,
): { entries: { at: number; flags: number; name: number; nul: number }[]; after: number } | null {
  const count = buf.readUInt32BE(8);
  const entries: { at: number; flags: number; name: number; nul: number }[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    if (at + 40 + hashSize + 2 > end) return null;
    const flags = buf.readUInt16BE(at + 40 + hashSize);
    const name = at + 40 + hashSize + 2;
    const len = flags & 0xfff;
    const nul = len < 0xfff ? name + len : buf.indexOf(0, name);
    if (nul < 0 || nul >= end || buf[nul] !== 0) return null;
    entries.push({ at, flags, name, nul });
    // The name's NULs pad the entry to a multiple of 8.
    at += (nul - at + 8) & ~7;
  }
  return { entries, after: at };
}

/**
 * What git's way of grading would start from now (keptIndexInto on the caps listing), without grading: for tests and
 * measurements. Null: the base's index (every file read).
 */
export async function keptIndexUseOf(ws: Workspace, caps: SnapshotCaps = snapshotCaps()): Promise<KeptIndexUse | null> {
  const index = privateIndex(ws);
  try {
    return await keptIndexInto(ws, index, await capsListing(ws, caps)).catch(() => null);
  } finally {
    await rm(index, { force: true });
  }
}

/** The index extensions a kept index may carry (git's cache tree, resolve-undo, its offset tables): none changes what an entry means. */
const KEPT_EXTENSIONS = new Set(["TREE", "REUC", "EOIE", "IEOT"]);
const isAttributes = (p: string) => p === ".gitattributes" || p.endsWith("/.gitattributes");

/**
 * What keptIndexInto made: entries left with their stat data (git reads such a file again only where its stat data
 * changed), and entries smudged (read again whatever their stat data).
 */
interface KeptIndexUse {
  kept: number;
  reread: number;
}

/**
 * A private index for git's way of grading made from the kept checkout index (KEPT_INDEX), or null (then the base's
 * index, as before): only where it makes exactly the commit a fresh index of the base makes. git's add (core.trustctime,
 * core.checkStat default) reads a file again where its mtime or ctime (to the second), inode, owner, size, type or
 * executable bit differ from its entry; any write, chmod, rename or `touch -d` moves the ctime to the present. So an
 * entry whose times are of a second before the kept fence's (KeptIndexMeta: after the checkout, before the worker ran)
 * is left as it is: a change made since differs from it to the second. An entry of the fence's own second (git's
 * racy-clean case, which git here compares only to the second) is kept only where the file is still, to the
 * nanosecond, what the checkout left, before the fence and of an earlier second than now (a change after this look
 * still differs to the second); every other is smudged as git smudges one (size 0: read again). Null when the kept
 * index is missing, unreadable, of another base or not exactly the base's files, when it carries what this reading does
 * not know, or when `.gitattributes` could apply (in the base, new, or any, ignored too, in a folder of the base's
 * files): git's add would convert a file it reads, and a file it trusts is not read.
 */
async function keptIndexInto(ws: Workspace, index: string, listing: { base: BaseListing | null; fresh: string[] }): Promise<KeptIndexUse | null> {
  const kept = await keptIndexRead(ws, listing);
  if (!kept) return null;
  const { buf, end, entries, fence, format } = kept;
  // The folders of the base's files, where a .gitattributes (an ignored one too: git reads it) would apply to what git
  // reads.
  const dirs = new Set<string>([""]);
  let lastDir = "";
  for (const e of entries) {
    const dir = e.name.toString("latin1", 0, e.name.lastIndexOf(0x2f) + 1);
    if (dir !== lastDir) {
      lastDir = dir;
      for (let j = dir.indexOf("/"); j >= 0; j = dir.indexOf("/", j + 1)) dirs.add(dir.slice(0, j + 1));
    }
  }
  const root = Buffer.from(ws.worktree + path.sep);
  const at0 = (rel: Buffer) => Buffer.concat([root, rel]);
  let looked = 0;
  for (const dir of dirs) {
    if (++looked % 256 === 0) await new Promise((r) => setImmediate(r));
    let st;
    try {
      st = lstatSync(at0(Buffer.from(`${dir}.gitattributes`, "latin1")), { throwIfNoEntry: false });
    } catch {
      st = undefined; // a folder on the way is a file now
    }
    if (st) return null;
  }
  const fenceSec = Number(fence / 1_000_000_000n);
  // Seconds: a file changed after this look has a ctime of this second or later (the file system's clock runs a tick
  // behind the system's: 100 ms allowed), which git's add, comparing seconds, tells from an entry of an earlier one.
  const before = Math.floor((Date.now() - 100) / 1000);
  const use: KeptIndexUse = { kept: 0, reread: 0 };
  let looks = 0;
  for (const e of entries) {
    if ((e.mode & 0o170000) === 0o160000) continue; // a gitlink: git reads the submodule's HEAD whatever its stat data
    const o = e.at;
    const csec = buf.readUInt32BE(o);
    const msec = buf.readUInt32BE(o + 8);
    // Of a second before the fence's: any change since has a ctime of the fence's second or later, which git's own
    // comparison (to the second) sees. Nothing to look at here.
    if (csec < fenceSec && msec < fenceSec) {
      use.kept++;
      continue;
    }
    // Of the fence's second: kept only where the file is still, to the nanosecond, what the checkout left, and of an
    // earlier second than now (a change after this look still differs to the second).
    if (++looks % 256 === 0) await new Promise((r) => setImmediate(r));
    let st;
    try {
      st = lstatSync(at0(e.name), { bigint: true, throwIfNoEntry: false });
    } catch {
      st = undefined;
    }
    if (st && csec < before && msec < before && keptStatHolds(buf, e, fence, st)) use.kept++;
    else {
      use.reread++;
      buf.writeUInt32BE(0, o + 36);
    }
  }
  if (use.reread) createHash(format).update(buf.subarray(0, end)).digest().copy(buf, end);
  // Whole or not at all: a failure leaves what was there (the caller's index of the base, or nothing).
  const tmp = `${index}.tmp-${randomBytes(4).toString("hex")}`;
  try {
    await writeFile(tmp, buf);
    await rename(tmp, index);
  } finally {
    await rm(tmp, { force: true });
  }
  return use;
}

/**
 * File systems whose ctime the kernel stamps on every change of a file, which no process can set (statfs magic numbers):
 * ext4 (ext2/3 too), xfs, btrfs, tmpfs, overlayfs, zfs, f2fs. On others (a FUSE or network file system, where the times
 * are what the server or the file system's process says: some report the ctime as the mtime, which `touch -d` sets) a
 * worker's change could keep the checkout's stat data, so it is not trusted there: every file is read, as before.
 */
const KERNEL_CTIME_FS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1, 0xf2f52010]);
export async function kernelStampsCtime(dir: string): Promise<boolean> {
  // Elsewhere (macOS) statfs's type is no magic number to read: git's own stat check is trusted there as it always was.
  if (process.platform !== "linux") return true;
  const fs = await statfs(dir).catch(() => null);
  return !!fs && KERNEL_CTIME_FS.has(Number(fs.type));
}

/** A kept checkout index read and checked whole (keptIndexRead): its bytes, its entries in the base's order, its fence. */
interface KeptIndex {
  buf: Buffer;
  /** Where its checksum starts. */
  end: number;
  entries: { at: number; name: Buffer; mode: number }[];
  /** KeptIndexMeta's fence (nanoseconds). */
  fence: bigint;
  format: ObjectFormat;
}

/**
 * The workspace's kept checkout index (KEPT_INDEX), or null where it is missing, unreadable, of another base or not
 * exactly the base's files (each entry a plain checkout's, in the base's order), or carries what this reading does not
 * know, or where a `.gitattributes` is in the base or new (git's add would convert what it reads).
 */
async function keptIndexRead(ws: Workspace, listing: { base: BaseListing | null; fresh: string[] }): Promise<KeptIndex | null> {
  const base = listing.base;
  if (!base || !(await kernelStampsCtime(ws.worktree))) return null;
  const meta = JSON.parse(await readFile(path.join(ws.gitDir, KEPT_META), "utf8")) as KeptIndexMeta;
  if (meta.base !== ws.baseCommit || !/^\d+$/.test(meta.fence)) return null;
  if (base.blobs.some(([name]) => isAttributes(name)) || listing.fresh.some(isAttributes)) return null;
  const format = objectFormat(ws.baseCommit);
  const hs = format === "sha256" ? 32 : 20;
  const buf = await readFile(path.join(ws.gitDir, KEPT_INDEX));
  const end = buf.length - hs;
  if (end < 12 || buf.subarray(end).toString("hex") !== meta.checksum) return null;
  if (!createHash(format).update(buf.subarray(0, end)).digest().equals(buf.subarray(end))) return null;
  const version = buf.readUInt32BE(4);
  if (buf.toString("latin1", 0, 4) !== "DIRC" || (version !== 2 && version !== 3)) return null;
  const count = buf.readUInt32BE(8);
  if (count !== base.blobs.length + base.submodules.length) return null;
  // The entries, in the base's order (the index's and ls-tree's are git's one order): 40 bytes of stat data and mode,
  // the object id, 16 bits of flags, the name, NULs to a multiple of 8.
  const submodules = new Set(base.submodules.map((s) => s.slice(0, -1)));
  const walked = indexEntries(buf, hs, end);
  if (!walked) return null;
  const entries: KeptIndex["entries"] = [];
  let blob = 0;
  for (const e of walked.entries) {
    // Assume-valid, extended flags (skip-worktree, intent-to-add) or a stage: not a plain checkout's entry.
    if (e.flags & 0xf000) return null;
    const name = buf.toString("latin1", e.name, e.nul);
    const mode = buf.readUInt32BE(e.at + 24);
    if ((mode & 0o170000) === 0o160000 ? !submodules.has(name) : base.blobs[blob++]?.[0] !== name) return null;
    entries.push({ at: e.at, name: buf.subarray(e.name, e.nul), mode });
  }
  if (blob !== base.blobs.length) return null;
  let at = walked.after;
  // What follows the entries: known extensions only.
  while (at < end) {
    if (at + 8 > end || !KEPT_EXTENSIONS.has(buf.toString("latin1", at, at + 4))) return null;
    at += 8 + buf.readUInt32BE(at + 4);
  }
  if (at !== end) return null;
  return { buf, end, entries, fence: BigInt(meta.fence), format };
}

/**
 * Whether a file is still, to the nanosecond, what the checkout left as its kept entry says: its ctime and mtime both
 * before the fence (taken after the checkout, before the worker ran) and the same now, and its inode, device, owner,
 * size, type and executable bit. Any write, chmod, rename or `touch -d` since moves the ctime past the fence, which no
 * process can set back; a file put in its place is another inode.
 */
function keptStatHolds(buf: Buffer, e: KeptIndex["entries"][number], fence: bigint, st: BigIntStats): boolean {
  const o = e.at;
  const ns = (at: number) => BigInt(buf.readUInt32BE(at)) * 1_000_000_000n + BigInt(buf.readUInt32BE(at + 4));
  const u32 = (n: bigint) => Number(n & 0xffffffffn);
  const type = e.mode & 0o170000;
  const kind = type === 0o120000 ? st.isSymbolicLink() : type === 0o100000 && st.isFile() && ((Number(st.mode) ^ e.mode) & 0o100) === 0;
  const cns = ns(o);
  const mns = ns(o + 8);
  return (
    kind &&
    cns < fence &&
    mns < fence &&
    st.ctimeNs === cns &&
    st.mtimeNs === mns &&
    u32(st.dev) === buf.readUInt32BE(o + 16) &&
    u32(st.ino) === buf.readUInt32BE(o + 20) &&
    u32(st.uid) === buf.readUInt32BE(o + 28) &&
    u32(st.gid) === buf.readUInt32BE(o + 32) &&
    u32(st.size) === buf.readUInt32BE(o + 36)
  );
}

/**
 * For the in-process snapshot: which of the base's files are unchanged since the checkout, by the kept checkout index's
 * stat data (keptStatHolds), so that it need not read them. Null without a kept index that holds (keptIndexRead).
 */
async function keptStats(ws: Workspace, listing: { base: BaseListing | null; fresh: string[] }): Promise<KeptStats | null> {
  const kept = await keptIndexRead(ws, listing).catch(() => null);
  if (!kept) return null;
  const byName = new Map(kept.entries.map((e) => [e.name.toString("latin1"), e]));
  return {
    unchanged: (name, st) => {
      const e = byName.get(name);
      return !!e && (e.mode & 0o170000) !== 0o160000 && keptStatHolds(kept.buf, e, kept.fence, st);
    },
  };
}

/**
 * The new files a snapshot would add (untracked, not ignored: what `git add -A` takes), read against a private index
 * holding the base (baseIndexInto). One git, no shell. Exact bytes (latin1): the names are opened.
 */
const LIST_NEW_FILES = ["ls-files", "-z", "-o", "--exclude-standard", "--"];

/** The caps check (capsListing) and what it read: the new files' names (latin1) and the base's listing. */
interface CapsListing {
  /**
   * Why the worker's files are over the caps, or null: more new files than `caps.files`, more bytes added (new files,
   * and what tracked files grew by) than `caps.bytes`, or one file larger than `caps.fileBytes` (and larger than at the
   * base). Sizes from lstat (a symlink is its target's name); names as bytes, shown losslessly.
   */
  over: string | null;
  fresh: string[];
  base: BaseListing | null;
}

async function capsListing(ws: Workspace, caps: SnapshotCaps, keepIndex?: string): Promise<CapsListing> {
  const under = (over: string | null, base: BaseListing | null = null): CapsListing => ({ over, fresh: [], base });
  if (!existsSync(ws.worktree)) return under(null);
  // Into the caller's index (kept for its snapshot); else the base listing's own index is read in place (`ls-files`
  // writes no index; the listing's is never written after it is made): no copy and no removal per grading. A listing
  // whose index went meanwhile (a ninth base in use) is read from a private copy instead.
  let fresh: string;
  let base: BaseListing;
  const list = (index: string, keep: boolean) =>
    trustedScript(ws, { git: [...LIST_NEW_FILES, ws.worktree] }, {}, { bytes: true, baseOnly: true, index: { path: index, keep } });
  let copy: string | null = keepIndex ?? null;
  try {
    if (copy) {
      base = await baseIndexInto(ws, copy);
      fresh = await list(copy, true);
    } else {
      // Read in place, held against its removal (an evicted listing's index goes when its last reader ends). A listing
      // evicted before this reader came is read from a private copy (git would read a missing index as an empty one).
      const held = await baseListing(ws);
      if (held.evicted) {
        copy = privateIndex(ws);
        base = await baseIndexInto(ws, copy);
        fresh = await list(copy, false);
      } else {
        base = held;
        held.readers++;
        try {
          fresh = await list(held.index, true);
        } finally {
          if (!--held.readers && held.evicted) await rm(held.index, { force: true });
        }
      }
    }
  } catch (err) {
    if (copy && !keepIndex) await rm(copy, { force: true });
    // The listing itself passed the output cap (tens of MiB of names): far over any file cap.
    if (/output passed/.test((err as Error).message))
      return under(`the workspace holds more than ${caps.files.toLocaleString("en-US")} new files (the snapshot cap)`);
    throw err;
  }
  const names = fresh ? fresh.split("\0").filter(Boolean) : [];
  const size = (n: number) => (n < 1024 * 1024 ? `${n.toLocaleString("en-US")} bytes` : `${Math.round(n / 1024 / 1024).toLocaleString("en-US")} MiB`);
  if (names.length > caps.files)
    return under(
      `the worker made ${names.length.toLocaleString("en-US")} new files, over the snapshot cap of ${caps.files.toLocaleString("en-US")}: nothing was graded (remove generated files, or add them to .gitignore)`,
    );
  const root = Buffer.from(ws.worktree + path.sep);
  const at = (name: string) => Buffer.concat([root, Buffer.from(name, "latin1")]);
  const shown = (name: string) => losslessUtf8(Buffer.from(name, "latin1"));
  let total = 0;
  const sizes = await sizesOf(names.map(at));
  // Nested repositories: new ones (`ls-files -o` names them with a trailing slash) and the base's submodules.
  const nested = [...names.filter((n) => n.endsWith("/")), ...base.submodules];
  const grow: [string, number, number][] = base.blobs.map(([name, before]) => [name, before, 0]);
  const outside = await nestedGitOutside(ws.worktree, nested, at);
  if (outside)
    return under(
      `${quoteUntrusted(`${shown(outside)}.git`, "a path in the worker's files")} names a repository outside the workspace (a link or a gitfile, or refs linked out): nothing was graded (remove it; a nested repository's .git must be a folder of the workspace)`,
    );
  for (const [i, now] of (await sizesOf(grow.map((g) => at(g[0])))).entries()) grow[i]![2] = now;
  for (const [i, n] of names.entries()) {
    total += sizes[i]!;
    if (sizes[i]! > caps.fileBytes)
      return under(
        `${quoteUntrusted(shown(n), "a file the worker made")} is ${size(sizes[i]!)}, over the snapshot cap of ${size(caps.fileBytes)} for one file: nothing was graded`,
      );
  }
  for (const [n, before, now] of grow) {
    if (now <= before) continue;
    total += now - before;
    // A tracked file's name is the base's: the person's, or an earlier worker's where a batch task starts from its work
    // (then its text, which reaches Claude in the verdict's reason). A plain name as it is; any other quoted as data.
    const name = shown(n);
    const named = PLAIN_PATH.test(name) ? name : quoteUntrusted(name, "a file of the task's base");
    if (now > caps.fileBytes) return under(`${named} is ${size(now)}, over the snapshot cap of ${size(caps.fileBytes)} for one file: nothing was graded`);
  }
  if (total > caps.bytes) return under(`the worker's files add ${size(total)}, over the snapshot cap of ${size(caps.bytes)}: nothing was graded`);
  return { over: null, fresh: names, base };
}

/** A path of plain characters only: no space, quote, colon, control or bidi character a sentence could be forged with. */
const PLAIN_PATH = /^[\w./@+-]+$/;

/**
 * Each path's size as lstat gives it (a regular file's bytes, a symlink's target name; 0 for anything else or nothing
 * there). lstat on the engine's thread, a few hundred paths at a time with a turn of the event loop between: a promise
 * per path cost more of the engine's CPU than the call itself (a local file system's lstat takes microseconds).
 */
async function sizesOf(paths: Buffer[]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < paths.length; i++) {
    if (i && i % 256 === 0) await new Promise((r) => setImmediate(r));
    let st;
    try {
      st = lstatSync(paths[i]!, { throwIfNoEntry: false });
    } catch {
      st = undefined; // a part of the path is not a folder (ENOTDIR), or not readable
    }
    out.push(st && (st.isFile() || st.isSymbolicLink()) ? st.size : 0);
  }
  return out;
}

/**
 * The first nested repository (a folder named with its trailing slash) whose `.git` is a link or a gitfile that leads
 * outside the workspace, or null. git's snapshot (run by the engine, outside the sandbox) reads the HEAD of whatever
 * repository a nested `.git` names and records it as a gitlink: a worker's link to another repository of the host would
 * put that repository's commit id in the graded commit, and tell the worker whether a repository is there.
 */
async function nestedGitOutside(worktree: string, dirs: string[], at: (name: string) => Buffer): Promise<string | null> {
  if (!dirs.length) return null;
  // Bytes throughout: a name that is not valid UTF-8 must resolve as the file system has it.
  const sep = Buffer.from(path.sep);
  const root = Buffer.concat([await realpath(worktree, { encoding: "buffer" }), sep]);
  const real = (p: Buffer) => realpath(p, { encoding: "buffer" }).catch(() => null);
  const inside = (p: Buffer) => Buffer.concat([p, sep]).subarray(0, root.length).equals(root);
  const join = (dir: Buffer, name: string | Buffer) => Buffer.concat([dir, sep, typeof name === "string" ? Buffer.from(name) : name]);
  // Where git reads a repository's HEAD from: HEAD, packed-refs, every loose ref, and the common folder `commondir`
  // names (once). Any of them a link out of the workspace, or more than 10,000 refs: outside (git would read there).
  const readsOutside = async (gitDir: Buffer, hops = 1): Promise<boolean> => {
    let seen = 0;
    const walk = async (p: Buffer): Promise<boolean> => {
      if (++seen > 10_000) return true;
      const st = await lstat(p).catch(() => null);
      if (!st) return false;
      if (st.isSymbolicLink()) {
        const t = await real(p);
        if (t && !inside(t)) return true;
      }
      if (!st.isDirectory()) return false;
      for (const e of await readdir(p, { encoding: "buffer" }).catch(() => [] as Buffer[])) if (await walk(join(p, e))) return true;
      return false;
    };
    for (const name of ["HEAD", "packed-refs", "refs"]) if (await walk(join(gitDir, name))) return true;
    const common = readHead(join(gitDir, "commondir"), 4096);
    if (!common.length) return false;
    const named = common.toString("latin1").trim();
    const t = await real(named.startsWith("/") ? Buffer.from(named, "latin1") : join(gitDir, Buffer.from(named, "latin1")));
    return !!t && (!inside(t) || hops <= 0 || (await readsOutside(t, hops - 1)));
  };
  for (const dir of dirs) {
    const dotGit = at(`${dir}.git`);
    const st = await lstat(dotGit).catch(() => null);
    if (!st) continue;
    let target: Buffer | null = null;
    if (st.isDirectory() && !st.isSymbolicLink()) target = await real(dotGit);
    else if (st.isSymbolicLink()) target = await real(dotGit);
    else if (st.isFile()) {
      // Its first 4 KiB only: the worker wrote it, of any size.
      const m = /^gitdir: *(.+?)\s*$/m.exec(readHead(dotGit, 4096).toString("latin1"));
      const named = m ? Buffer.from(m[1]!, "latin1") : null;
      if (named) target = await real(named[0] === 0x2f ? named : Buffer.concat([at(dir), named]));
    }
    // A link or gitfile that leads nowhere names no repository: git reads nothing through it.
    if (target !== null && (!inside(target) || (await readsOutside(target)))) return dir;
  }
  return null;
}

/**
 * A fresh checkout of the worker's base commit in `checkoutDir` (emptied first), for the checks' run on the base: the
 * whole tree, or with `only` just those paths (as commitAndCheckOut; whether it did is returned, check with partialHolds).
 */
export async function checkOutBase(ws: Workspace, checkoutDir: string, only?: string[]): Promise<{ partial: boolean }> {
  if (existsSync(checkoutDir)) await rm(checkoutDir, { recursive: true, force: true });
  mkdirSync(checkoutDir, { recursive: true });
  const checkoutIndex = `${checkoutDir}.index`;
  const partial = plainNames(only);
  try {
    // The base's own index (a copy of its listing's: no read-tree), checked out by one git, no shell. A named path the
    // index does not hold (a folder above a file, a missing file) is git's complaint only: partialHolds decides.
    await baseIndexInto(ws, checkoutIndex);
    const args = partial ? ["checkout-index", "-f", "-q", "--", ...checkoutList(only).split("\n")] : ["checkout-index", "-a", "-f", "-q"];
    await trustedScript(ws, { git: args, workTree: checkoutDir, allowFail: partial }, {}, { baseOnly: true, index: { path: checkoutIndex, keep: true } });
  } finally {
    await rm(checkoutIndex, { force: true });
  }
  return { partial };
}

/** The files that differ between two of the worker's graded commits (a round and the one before). */
export async function changedBetween(ws: Workspace, from: string, to: string): Promise<string[]> {
  if (from === to) return [];
  return parseNumstatAndStat(await trustedScript(ws, { git: ["diff", "--numstat", "-z", "--no-renames", from, to] }, {})).changed;
}

/**
 * Splits `git diff --numstat --stat -z` output: one `added<TAB>deleted<TAB>path<NUL>` record per file (a path may hold
 * any byte but NUL), then the stat text, whose lines begin with a space.
 */
export function parseNumstatAndStat(out: string): { changed: string[]; stat: string } {
  const record = /(?:\d+|-)\t(?:\d+|-)\t([^\0]*)\0/y;
  const changed: string[] = [];
  let at = 0;
  for (let m = record.exec(out); m; m = record.exec(out)) {
    changed.push(m[1]!);
    at = record.lastIndex;
  }
  return { changed: changed.sort(), stat: trimFinalNewline(out.slice(at)) };
}

/** The diff of a commit (the graded one), or of the workspace's files as they are now (a running worker). */
export async function fullDiff(ws: Workspace, commit?: string, maxBytes = 200_000): Promise<string> {
  if (!commit && !existsSync(ws.worktree)) return ""; // no files left: the base against itself
  // A running worker's files are snapshotted for its diff: over the caps, nothing of them is hashed or read. The caps
  // listing's index (the base) is the snapshot's too.
  const index = commit ? null : privateIndex(ws);
  let d: string;
  try {
    const listing = index ? await capsListing(ws, snapshotCaps(), index) : null;
    const over = listing?.over ?? null;
    if (over) return `… diff not shown: ${over.replace(/: nothing was graded.*$/, "")}`;
    // The checkout's kept stat data in place of the base's index where it holds (as grading): only files changed are read.
    if (index && listing) await keptIndexInto(ws, index, listing).catch(() => null);
    const ready = !!index && existsSync(index);
    d = trimFinalNewline(
      await trustedScript(ws, DIFF, { OCW_TO: commit ?? "", OCW_MAX: String(maxBytes + 1) }, index ? { index: { path: index, ready } } : {}),
    );
  } finally {
    if (index) await rm(index, { force: true });
  }
  return Buffer.byteLength(d) > maxBytes ? d.slice(0, maxBytes) + `\n… diff truncated at ${maxBytes} bytes` : d;
}

/**
 * The engine's store of graded objects for one repository (`<repos>/graded/<name>-<hash>`), outside every sandbox and
 * outside the user's repository: a built verdict's commit and the objects it adds, the commits a batch combines. Its
 * alternates reach the user's objects, so git reads any graded commit whole from it. Nothing of it reaches the user's
 * repository until the person lands (merge, push, pull request) or publishes the work (copyCommitObjects).
 */
export function gradedObjectsDir(reposDir: string, repoRoot: string): string {
  const tag = createHash("sha256").update(repoRoot).digest("hex").slice(0, 8);
  return path.join(reposDir, "graded", `${path.basename(repoRoot)}-${tag}`);
}

/** The engine's store of graded objects for `repoRoot` (made on first use), as gradedObjectsDir names it. */
export async function gradedStore(reposDir: string, repoRoot: string): Promise<string> {
  const dir = gradedObjectsDir(reposDir, repoRoot);
  const want = `${await objectsOf(repoRoot)}\n`;
  // Made once: asked for by every script of every worker, its alternates are read (not written) only the first time.
  let made = gradedStores.get(dir);
  if (!made) {
    if (gradedStores.size >= 256) gradedStores.delete(gradedStores.keys().next().value!);
    made = (async () => {
      if (!existsSync(path.join(dir, "info", "alternates"))) await writeAlternates(dir, want);
    })();
    gradedStores.set(dir, made);
    made.catch(() => gradedStores.get(dir) === made && gradedStores.delete(dir));
  }
  await made;
  return dir;
}
const gradedStores = new Map<string, Promise<void>>();

/** Removes the graded store of `repoRoot`; the next gradedStore() makes it again, its alternates included. */
export function dropGradedStore(reposDir: string, repoRoot: string): void {
  const dir = gradedObjectsDir(reposDir, repoRoot);
  gradedStores.delete(dir);
  forgetAlternates(dir);
  rmSync(dir, { recursive: true, force: true });
}

/** The graded store of a worker's repository (beside the engine's folders of its workers). */
export const gradedStoreOf = (ws: Pick<Workspace, "gitDir" | "repo">): Promise<string> => gradedStore(path.dirname(ws.gitDir), ws.repo);

/**
 * Keeps a built verdict's commit in the engine's graded store: the objects its grading wrote (GRADE_OBJECTS: exactly
 * the commit's objects that neither the user's repository nor the store held) are copied there, each file whole or not
 * at all. Nothing is written to the user's repository. In the worker's queue of scripts: a grading empties GRADE_OBJECTS.
 */
export async function keepGraded(ws: Workspace, commit: string): Promise<void> {
  if (commit === ws.baseCommit) return;
  const graded = await gradedStoreOf(ws);
  const run = (scriptsOf.get(ws.gitDir) ?? Promise.resolve()).then(() => copyObjects(path.join(ws.gitDir, GRADE_OBJECTS), graded));
  const done = run.catch(() => undefined);
  scriptsOf.set(ws.gitDir, done);
  void done.then(() => scriptsOf.get(ws.gitDir) === done && scriptsOf.delete(ws.gitDir));
  await run;
}

/**
 * Copies into `to` (the user's object store, or one whose alternates reach it) exactly the objects of `commit` that it
 * lacks, read from the engine's graded store `from`; returns how many were copied (COPY_MISSING). Refuses, with git's
 * words, when the engine does not hold the whole commit.
 */
async function copyCommitObjects(repo: string, from: string, to: string, commit: string, opts: { strict?: boolean } = {}): Promise<number> {
  const tmp = path.join(path.dirname(from), `.copy-${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    const out = await gitScript(`set -eu\n${COPY_MISSING}`, {
      cwd: repo,
      env: { ...trustedEnv(path.dirname(from)), OCW_FROM: from, OCW_TO: to, OCW_COMMIT: commit, OCW_TMP: tmp, OCW_STRICT: opts.strict ? "1" : "" },
    });
    return Number(out.trim()) || 0;
  } finally {
    await Promise.all([".list", ".check", ".missing", ".pack", ".q"].map((ext) => rm(tmp + ext, { force: true, recursive: true })));
  }
}

/**
 * Brings exactly `commit`'s missing objects from the engine's graded store into the user's repository (landing it). A
 * person who has git check the objects a fetch brings in (fetch.fsckObjects, else transfer.fsckObjects, their global
 * config included) has these checked too: a worker's objects are objects from outside.
 */
export async function landObjects(repo: string, graded: string, commit: string): Promise<number> {
  // Not in a partial clone: its base's blobs may be missing by design, and git's strict check would refuse every copy.
  const listed = await git(repo, ["config", "--get-regexp", "^((fetch|transfer)\\.fsckobjects|extensions\\.partialclone)$"], { allowFail: true });
  const set = new Map(
    listed
      .split("\n")
      .filter(Boolean)
      .map((l) => (l.includes(" ") ? [l.slice(0, l.indexOf(" ")), l.slice(l.indexOf(" ") + 1)] : [l, "true"])),
  );
  const on = (v: string | undefined) => v !== undefined && (/^(true|yes|on)$/i.test(v) || /^-?[1-9][0-9]*$/.test(v));
  const strict = !set.has("extensions.partialclone") && on(set.get("fetch.fsckobjects") ?? set.get("transfer.fsckobjects"));
  return copyCommitObjects(repo, graded, await objectsOf(repo), commit, { strict });
}

/**
 * Publishes the graded commit in the user's repository as branch `ocw/<id>`, when the person asks (a merge, a push, a
 * pull request, or "publish the branch" to review it with their own git tools): exactly the commit's objects the user's
 * repository lacks are copied from the engine's graded store, then the branch is set to exactly that commit. Grading
 * publishes nothing. A branch already there is left alone when it names that commit, moved when it names one of
 * `earlier` (the worker's earlier rounds' graded commits, published before a follow-up), and refused when it names
 * another (the person's commits on it are never overwritten).
 */
export async function publishBranch(ws: Workspace, commit: string, earlier: string[] = []): Promise<PublishedBranch> {
  // Read through the worker's own object folder while it is there (it borrows the graded store and its latest grading),
  // else from the graded store: either way only objects the commit reaches are copied.
  const own = path.join(ws.gitDir, "objects");
  const from = existsSync(path.join(own, "info", "alternates")) ? own : await gradedStoreOf(ws);
  // A symbolic ref named ocw/<id> (to a branch of the person's) is never followed: moving it would move their branch.
  const symbolic = await git(ws.repo, ["symbolic-ref", "-q", `refs/heads/${ws.branch}`], { allowFail: true });
  if (symbolic)
    throw new InputError(
      `${ws.branch} is a symbolic ref to ${symbolic}, not a branch of the engine's: delete it (git symbolic-ref --delete refs/heads/${ws.branch}), then publish again`,
      "conflict",
    );
  const tip = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
  if (tip && tip !== commit && !earlier.includes(tip))
    throw new InputError(
      `${ws.branch} already exists at ${tip.slice(0, 12)}, not the graded commit ${commit.slice(0, 12)}: delete or rename that branch, then publish again`,
      "conflict",
    );
  if (tip && tip !== commit) {
    // A branch checked out (here or in a linked worktree) is not moved under the person's files: git branch -f refuses too.
    const at = await git(ws.repo, ["for-each-ref", "--format=%(worktreepath)", `refs/heads/${ws.branch}`], { allowFail: true });
    if (at)
      throw new InputError(
        `${ws.branch} is checked out in ${at}: switch that checkout to another branch, then publish again (nothing was changed)`,
        "conflict",
      );
  }
  // Refusals first: the objects are copied only for a branch that will name them.
  const objects = await landObjects(ws.repo, from, commit);
  if (tip !== commit) {
    // Compare-and-swap: still absent (""), or still at the earlier round's commit.
    // --no-deref: a symbolic ref made meanwhile is replaced, never followed to the person's branch.
    const r = await runCommand("git", ["update-ref", "--no-deref", "-m", "opencode-worker: graded commit", `refs/heads/${ws.branch}`, commit, tip], {
      cwd: ws.repo,
      env: userGitEnv(),
    });
    // A publish of the same commit at once (a second click, the GUI and MCP) set it first: that is this publish done.
    const now = r.exitCode === 0 ? commit : await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
    // Still absent: git could not make it (a branch named like its folder, `ocw`, is in the way): git's words.
    if (!now) throw new InputError(`${ws.branch} could not be made ${gitComplaint(r)}; no branch was set`, "conflict");
    if (now !== commit) throw new InputError(`${ws.branch} moved while publishing; nothing was changed: publish again`, "conflict");
  }
  return { repo: ws.repo, branch: ws.branch, commit, objects };
}

/** A published branch: where, which commit, and how many objects were copied into the person's repository for it. */
export interface PublishedBranch {
  repo: string;
  branch: string;
  commit: string;
  objects: number;
}

async function copyObjects(from: string, to: string): Promise<void> {
  const fanout = (await readdir(from)).filter((d) => /^[0-9a-f]{2}$/.test(d));
  await Promise.all([
    ...fanout.map(async (d) => {
      // Only files named as objects: not a temporary file of a git still writing one.
      const names = (await readdir(path.join(from, d))).filter((f) => /^[0-9a-f]{38}(?:[0-9a-f]{24})?$/.test(f));
      if (!names.length) return;
      for (const [i, name] of names.entries()) {
        const place = () => copyWhole(path.join(from, d, name), path.join(to, d, name));
        // The folder is made only when it is not there yet (most of the store's folders are, after a few gradings).
        if (i) await place();
        else
          await place().catch(async (err: NodeJS.ErrnoException) => {
            if (err.code !== "ENOENT" || !existsSync(path.join(from, d, name))) throw err;
            await mkdir(path.join(to, d), { recursive: true });
            await place();
          });
      }
    }),
    copyPacks(path.join(from, "pack"), path.join(to, "pack")),
  ]);
}

/**
 * The engine's own snapshot writes its objects as one pack (snapshot.ts writePack), and `git add` streams a file over
 * core.bigFileThreshold (512 MiB) into a pack of its own instead of a loose object: those packs are copied too, the
 * pack (and its reverse index) before its .idx, since git sees a pack only once its .idx is there.
 */
async function copyPacks(from: string, to: string): Promise<void> {
  const names = await readdir(from).catch(() => [] as string[]);
  const packs = names.filter((f) => /^pack-[0-9a-f]+\.idx$/.test(f)).map((f) => f.slice(0, -".idx".length));
  if (!packs.length) return;
  await mkdir(to, { recursive: true });
  for (const pack of packs) {
    for (const ext of [".pack", ".rev", ".idx"]) if (names.includes(pack + ext)) await copyWhole(path.join(from, pack + ext), path.join(to, pack + ext));
  }
}

/** Places a file of git's (named by its content) whole or not at all: linked, else copied to a temporary name beside it, then linked. */
async function copyWhole(src: string, dest: string): Promise<void> {
  // A hard link where the file system allows it (the engine's folders: no bytes copied, whole at once); git's object
  // files are named by their content and never written in place, so the two names never differ.
  try {
    await link(src, dest);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return;
    // EXDEV (another file system), EPERM (links refused), EMLINK: copied instead.
    if (code !== "EXDEV" && code !== "EPERM" && code !== "EMLINK") throw err;
  }
  const tmp = path.join(path.dirname(dest), `tmp_ocw_${process.pid}_${randomBytes(6).toString("hex")}`);
  try {
    await copyFile(src, tmp);
    await link(tmp, dest).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * How to merge a built worker's work: `ocw merge <id>`, or by hand once the branch is published (grading publishes
 * nothing into the user's repository: `ocw publish <id>` brings exactly the graded commit as branch `ocw/<id>`).
 */
export function mergeHint(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">): string {
  // The worker's branch is the engine's own name (ocw/<worker id>); a worker names nothing here. The repository's path
  // and the base branch are the person's.
  const id = /^ocw\/([\w.-]+)$/.exec(ws.branch)?.[1];
  if (!id) throw new Error(`${JSON.stringify(ws.branch)} is not a worker branch (ocw/<worker id>)`);
  // Printed to be pasted into a shell: a path with spaces or quotes (or a branch name with `$`) is quoted.
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  if (!ws.baseBranch)
    return `ocw publish ${id} && cd ${q(ws.repo)} && git merge --no-ff ${q(ws.branch)}   # you started from a detached HEAD: check out the branch to merge into first`;
  // A base branch that begins with a dash would be read as an option by checkout (which has no `--` for a branch).
  const to = ws.baseBranch.startsWith("-") ? `git switch -- ${q(ws.baseBranch)}` : `git checkout ${q(ws.baseBranch)}`;
  return `ocw publish ${id} && cd ${q(ws.repo)} && ${to} && git merge --no-ff ${q(ws.branch)}`;
}

/** Merges exactly `commit` (the graded one) into the base branch in the user's checkout; refuses, changing nothing, on conflict. */
export async function mergeBranch(ws: Pick<Workspace, "repo" | "branch" | "baseBranch">, message: string, commit?: string): Promise<string> {
  if (!ws.baseBranch)
    throw new InputError(
      `the worker started from a detached HEAD, so there is no branch to merge it into: check out the branch you want it on and run \`git merge --no-ff ${ws.branch}\` (after \`ocw publish\` brought it in)`,
    );
  const current = (await git(ws.repo, ["symbolic-ref", "--short", "-q", "HEAD"], { allowFail: true })) || null;
  if (current !== ws.baseBranch) {
    throw new InputError(`your checkout ${ws.repo} is on ${current ?? "a detached HEAD"}, not ${ws.baseBranch}: check out ${ws.baseBranch} first`);
  }
  const what = commit ?? ws.branch;
  if (commit) {
    const tip = await git(ws.repo, ["rev-parse", "-q", "--verify", `refs/heads/${ws.branch}`], { allowFail: true });
    if (tip && tip !== commit)
      throw new InputError(
        `${ws.branch} was moved to ${tip.slice(0, 12)} after grading; only the graded commit ${commit.slice(0, 12)} is merged — reset the branch or merge it by hand`,
      );
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
    if (unmerged && unmerged !== "0")
      throw new InputError(`${ws.branch} has ${counted(Number(unmerged), "unmerged commit")}: merge it, or discard the worker to delete it`);
  }
  rmSync(ws.worktree, { recursive: true, force: true });
  rmSync(ws.gitDir, { recursive: true, force: true });
  forgetAlternates(path.join(ws.gitDir, "objects"));
  forgetAlternates(path.join(ws.gitDir, GRADE_OBJECTS));
  if (opts.tmpDir) rmSync(opts.tmpDir, { recursive: true, force: true });
  if (tip) await git(ws.repo, ["branch", "-D", ws.branch], { allowFail: true });
}
