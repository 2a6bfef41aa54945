import { existsSync, lstatSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { foldPath } from "./fold";
import type { ChangeFlag } from "../../shared/verdict";
import { InputError } from "../../shared/errors";
import { quoteUntrustedList } from "../../shared/untrusted";
import { runCommand } from "../process";
import { git, gitComplaint, GitError, gitWords, OCW_IDENTITY, userGitEnv } from "./git";
import { objectId } from "./snapshot";

/**
 * Landing work in the person's repository: exactly the graded commit (or a batch's integration commit), with nothing of
 * the worker's able to run on the way.
 *
 * - The merge is computed from objects only (`git merge-tree --write-tree`): a conflict refuses before the checkout is
 *   touched, naming the files.
 * - The checkout is updated only when every file the merge changes is clean there ("commit or stash FILE" otherwise),
 *   with every filter disabled (git-lfs included: a worker's `.gitattributes` + `.lfsconfig` + pointer would otherwise
 *   fetch and write another server's bytes), hooks off, and then verified: each changed file must hold exactly the
 *   blob of the merged tree (mode, symlink target included). A mismatch puts the checkout back and refuses.
 * - Only then is the branch moved (compare-and-swap on its old tip), so a refused merge leaves the branch and the
 *   checkout as they were.
 */

/** git flags that switch off what could run or convert while the engine writes files of a worker's into a checkout. */
async function quietFlags(repo: string): Promise<string[]> {
  const names = new Set(["lfs"]);
  const drivers = new Set<string>();
  const listed = await git(repo, ["config", "--name-only", "--get-regexp", "^(filter|merge)\\."], { allowFail: true });
  for (const line of listed.split("\n")) {
    const f = /^filter\.(.+)\.(clean|smudge|process|required)$/.exec(line);
    if (f) names.add(f[1]!);
    const m = /^merge\.(.+)\.driver$/.exec(line);
    if (m) drivers.add(m[1]!);
  }
  const flags = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "merge.renormalize=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
  ];
  for (const n of names) flags.push("-c", `filter.${n}.smudge=`, "-c", `filter.${n}.clean=`, "-c", `filter.${n}.process=`, "-c", `filter.${n}.required=false`);
  // A merge driver the tree's .gitattributes names would run a command: "false" makes such a file a conflict instead.
  for (const d of drivers) flags.push("-c", `merge.${d}.driver=false`);
  return flags;
}

const quietEnv = () => ({ ...userGitEnv(), GIT_LFS_SKIP_SMUDGE: "1" });

async function q(
  repo: string,
  flags: string[],
  args: string[],
  opts: { allowFail?: boolean; lossless?: boolean; objects?: string } = {},
): Promise<{ code: number | null; out: string; err: string }> {
  // `objects`: the engine's graded store (its alternates reach the person's objects) read and written instead of the
  // person's own object store: a graded commit is there until the person lands it, and nothing computed on the way
  // (a merge's trees, a combined commit) is written into their repository.
  const env = opts.objects ? { ...quietEnv(), GIT_OBJECT_DIRECTORY: opts.objects, GIT_NO_LAZY_FETCH: "1" } : quietEnv();
  const r = await runCommand("git", [...flags, ...args], { cwd: repo, env, lossless: opts.lossless });
  if (r.exitCode !== 0 && !opts.allowFail) throw new GitError(`git ${args[0]} failed in ${repo}: ${gitComplaint(r)}`);
  return { code: r.exitCode, out: r.stdout, err: r.stderr };
}

/** git in the person's repository reading (and writing) the engine's graded store `objects`: trimmed stdout, "" on failure. */
export async function gitWithObjects(repo: string, objects: string, args: string[]): Promise<string> {
  const r = await q(repo, [], args, { allowFail: true, objects });
  return r.code === 0 ? r.out.trim() : "";
}

/** Whether `a` is an ancestor of `b` (or `b` itself), read with the engine's graded store `objects` where given. */
export async function isAncestor(repo: string, a: string, b: string, objects?: string): Promise<boolean> {
  return (await q(repo, [], ["merge-base", "--is-ancestor", a, b], { allowFail: true, objects })).code === 0;
}

/** `git merge-tree --write-tree A B` (merge base found by git): the tree, or the conflicting files. */
export async function mergeTrees(repo: string, a: string, b: string, flags?: string[], objects?: string): Promise<{ tree: string } | { conflict: string[] }> {
  const f = flags ?? (await quietFlags(repo));
  const r = await q(repo, f, ["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", a, b], { allowFail: true, objects });
  const parts = r.out.split("\0");
  if (r.code === 0) return { tree: parts[0]!.trim() };
  if (r.code === 1) {
    const files: string[] = [];
    for (const p of parts.slice(1)) {
      if (!p) break;
      if (!files.includes(p)) files.push(p);
    }
    return { conflict: files };
  }
  throw new GitError(`git merge-tree failed in ${repo}: ${gitWords(r.err || r.out, -2)}`);
}

async function commitTree(repo: string, tree: string, parents: string[], message: string, objects?: string): Promise<string> {
  const r = await q(repo, OCW_IDENTITY, ["commit-tree", tree, ...parents.flatMap((p) => ["-p", p]), "-m", message], { objects });
  return r.out.trim();
}

/**
 * Combines commits in order on `base`: each merged into the result so far (git's merge base decides, so a commit made on
 * top of another of the list adds only its own change). The result is one commit whose parent is `base`, holding the
 * combined tree. From objects only: no checkout, no ref, no filter; with `objects` (the engine's graded store, where the
 * workers' graded commits are) nothing is written to the person's object store.
 */
export async function combineCommits(
  repo: string,
  base: string,
  commits: { id: string; commit: string }[],
  message: string,
  objects?: string,
): Promise<{ commit: string; tree: string } | { conflict: { id: string; files: string[] } }> {
  const flags = await quietFlags(repo);
  let at = base;
  let tree = (await q(repo, [], ["rev-parse", `${base}^{tree}`], { objects })).out.trim();
  for (const c of commits) {
    const m = await mergeTrees(repo, at, c.commit, flags, objects);
    if ("conflict" in m) return { conflict: { id: c.id, files: m.conflict } };
    tree = m.tree;
    at = await commitTree(repo, tree, [at, c.commit], `ocw: combine ${c.id}`, objects);
  }
  if (at === base) return { commit: base, tree };
  return { commit: await commitTree(repo, tree, [base], message, objects), tree };
}

export interface TreeChange {
  path: string;
  /** The new mode and blob, or null when the path is deleted. */
  mode: string | null;
  oid: string | null;
  oldMode: string | null;
}

/** What differs between two commits, NUL-separated, names exactly as they are. */
export async function treeChanges(repo: string, from: string, to: string, opts: { lossless?: boolean; objects?: string } = {}): Promise<TreeChange[]> {
  return parseRawChanges(
    (await q(repo, [], ["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", from, to], { lossless: opts.lossless, objects: opts.objects })).out,
  ).changes;
}

/**
 * Reads git's raw diff records (`-z --raw --no-abbrev --no-renames`: `:oldmode newmode oldoid newoid status NUL path
 * NUL` each) from the start of `out`; `rest` is what follows them (another format's output in the same diff).
 */
export function parseRawChanges(out: string): { changes: TreeChange[]; rest: string } {
  const changes: TreeChange[] = [];
  let at = 0;
  while (out.startsWith(":", at)) {
    const metaEnd = out.indexOf("\0", at);
    const pathEnd = metaEnd < 0 ? -1 : out.indexOf("\0", metaEnd + 1);
    if (pathEnd < 0) break;
    const [oldMode, newMode, , newOid, status] = out.slice(at + 1, metaEnd).split(" ");
    const deleted = status === "D";
    changes.push({
      path: out.slice(metaEnd + 1, pathEnd),
      mode: deleted ? null : newMode!,
      oid: deleted ? null : newOid!,
      oldMode: oldMode === "000000" ? null : oldMode!,
    });
    at = pathEnd + 1;
  }
  return { changes, rest: out.slice(at) };
}

const TOOL_CONFIG: [RegExp, string][] = [
  [/(^|\/)\.npmrc$/, "npm configuration (can set script-shell, registries, lifecycle scripts)"],
  [/(^|\/)\.yarnrc(\.yml)?$/, "yarn configuration"],
  [/(^|\/)\.pnpmfile\.cjs$/, "pnpm hook file (runs at install)"],
  [/(^|\/)\.envrc$/, "direnv file (runs on cd)"],
  [/(^|\/)\.pre-commit-config\.ya?ml$/, "pre-commit hooks"],
  [/(^|\/)(\.husky|\.githooks|hooks)\//, "a hooks folder"],
  [/^\.github\/workflows\//, "a CI workflow"],
  [/^\.gitlab-ci\.yml$|^\.circleci\/|^azure-pipelines\.yml$|^Jenkinsfile$/, "CI configuration"],
  [/(^|\/)\.vscode\/(tasks|settings|launch)\.json$/, "editor tasks/settings (can run commands)"],
  [/(^|\/)\.vscode\/mcp\.json$/, "VS Code MCP servers (programs it starts)"],
  [/\.code-workspace$/, "a VS Code workspace file (its tasks can run when the folder opens, its settings name programs)"],
  [/(^|\/)\.zed\//, "Zed editor configuration (its tasks and language servers are programs it starts)"],
  [/(^|\/)\.helix\//, "Helix editor configuration (language servers it starts on opening a file)"],
  [/(^|\/)(\.nvim\.lua|\.nvimrc|\.exrc|\.lazy\.lua)$/, "an editor's project startup file (runs in the editor)"],
  [/(^|\/)\.cargo\/config(\.toml)?$/, "cargo configuration (build wrappers and runners it starts)"],
  [/(^|\/)\.?mise(\.local)?\.toml$|(^|\/)\.mise\//, "mise configuration (its hooks, tasks and environment)"],
  [/(^|\/)\.idea\//, "editor configuration"],
  [/(^|\/)\.devcontainer\//, "dev container configuration"],
  // What the coding agents in the person's checkout read as the project's own: Claude Code (which drives ocw) runs the
  // hooks of `.claude/settings*.json` and the MCP servers of `.mcp.json`, and reads CLAUDE.md as instructions; opencode
  // (later workers, on the merged base) reads AGENTS.md and its own config the same way.
  [/(^|\/)\.claude\//, "Claude Code configuration (hooks run commands; commands, agents and settings steer Claude)"],
  [/(^|\/)\.mcp\.json$/, "Claude Code MCP servers (programs it starts)"],
  [/(^|\/)claude(\.local)?\.md$/, "instructions Claude Code reads as the project's own"],
  [/(^|\/)(agents|gemini)\.md$|(^|\/)\.cursorrules$|^\.github\/copilot-instructions\.md$/, "instructions coding agents read as the project's own"],
  [/(^|\/)\.(cursor|gemini|opencode|codex)\/|(^|\/)opencode\.jsonc?$/, "a coding agent's configuration"],
  [/(^|\/)\.(windsurf|continue|roo|clinerules|amazonq|kiro)(\/|$)|(^|\/)\.(windsurfrules|aider\.conf\.ya?ml)$/, "a coding agent's configuration"],
];

/**
 * The changes from `base` to `commit` that do more than their diff shows (see ChangeFlag). Read from the engine's graded
 * store `objects` (a graded commit is not in the person's repository before it is landed or published), else from the
 * person's repository.
 */
export async function flaggedChanges(
  repo: string,
  base: string,
  commit: string,
  objects?: string,
  /**
   * What grading already read of the commit, so no git starts here for it: the change records of its own diff, and
   * (made in the engine) every name of its tree.
   */
  known?: { changes: TreeChange[]; names?: string[] },
  /** Other commits whose names a checkout will hold beside the commit's (at a merge: the person's branch). */
  beside: string[] = [],
  /**
   * Why a changed path is test runner configuration (grading's runnerConfigReason), or null: such a file in the person's
   * repository is in the base of every later task, whose checks run with it and whose grading compares with that base.
   */
  checkConfig?: (path: string) => string | null,
): Promise<ChangeFlag[]> {
  if (base === commit) return [];
  const flags: ChangeFlag[] = [];
  // Names shown losslessly (an invalid UTF-8 byte as \xNN): they are shown, never opened.
  const changes = known?.changes ?? (await treeChanges(repo, base, commit, { lossless: true, objects }));
  const listed = new Map(known?.names ? [[commit, known.names]] : []);
  flags.push(...(await nameCollisions(repo, [commit, ...beside], changes, objects, listed)));
  flags.push(...(await plainWhereLfs(repo, changes, objects)));
  for (const c of changes) {
    // Matched as a case-insensitive, normalising file system opens the name (macOS, Windows): `.GitAttributes` and
    // `.GITHUB/Workflows/ci.yml` are `.gitattributes` and a CI workflow there.
    const folded = foldPath(c.path);
    const name = path.posix.basename(folded);
    if (name === ".gitattributes") flags.push({ path: c.path, kind: "git-config", detail: "git attributes (filters, merge drivers, eol conversion)" });
    else if (name === ".lfsconfig") flags.push({ path: c.path, kind: "git-config", detail: "git-lfs configuration (its own LFS server)" });
    else if (name === ".gitmodules") flags.push({ path: c.path, kind: "git-config", detail: "submodule configuration" });
    if (!c.mode) continue;
    if (c.mode === "120000") {
      const target = (await q(repo, [], ["cat-file", "blob", c.oid!], { allowFail: true, objects })).out;
      flags.push({ path: c.path, kind: "symlink", detail: `a symlink to ${JSON.stringify(target.slice(0, 200))}` });
    } else if (c.mode === "160000") flags.push({ path: c.path, kind: "submodule", detail: `a submodule at ${c.oid!.slice(0, 12)}` });
    else if (c.mode === "100755" && c.oldMode !== "100755")
      flags.push({ path: c.path, kind: "executable", detail: c.oldMode ? "made executable" : "a new executable file" });
    const tool = TOOL_CONFIG.find(([re]) => re.test(folded));
    if (tool) flags.push({ path: c.path, kind: "tool-config", detail: tool[1] });
    const config = tool ? null : checkConfig?.(c.path);
    if (config)
      flags.push({ path: c.path, kind: "tool-config", detail: `test runner configuration: later checks of this repository would run it (${config})` });
    if (name === "package.json") {
      const before = await scriptsOf(repo, `${base}:${c.path}`, objects);
      const after = await scriptsOf(repo, `${commit}:${c.path}`, objects);
      if (before !== after) flags.push({ path: c.path, kind: "tool-config", detail: "package.json scripts changed (npm runs them)" });
    }
  }
  return flags;
}

/**
 * The changed paths whose name (or one of its folders') another name of the tree spells apart only in case or in Unicode
 * normalisation (`Tests/x.py` and `tests/x.py`, NFC and NFD `é`, a trailing dot): git keeps both, but a checkout on a
 * case-insensitive or normalising file system (macOS, Windows) has one of them only, and which depends on the order of
 * writing. Each such changed path is flagged once, naming the first other spelling.
 */
async function nameCollisions(
  repo: string,
  commits: string[],
  changes: TreeChange[],
  objects?: string,
  /** A commit's names already known (grading's own commit), by commit. */
  listed = new Map<string, string[]>(),
): Promise<ChangeFlag[]> {
  const written = changes.filter((c) => c.mode);
  if (!written.length) return [];
  // Each folded name (a path and each of its folders) with the spellings the trees hold of it.
  const spellings = new Map<string, Set<string>>();
  const add = (p: string) => {
    const parts = p.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const spelled = parts.slice(0, i).join("/");
      const key = foldPath(spelled);
      let set = spellings.get(key);
      if (!set) spellings.set(key, (set = new Set()));
      if (set.size < 4) set.add(spelled);
    }
  };
  for (const commit of [...new Set(commits)]) {
    const known = listed.get(commit);
    if (known) {
      for (const p of known) add(p);
      continue;
    }
    const r = await q(repo, [], ["ls-tree", "-r", "-z", "--name-only", "--full-tree", commit], { allowFail: true, lossless: true, objects });
    if (r.code !== 0) continue;
    for (const p of r.out.split("\0")) if (p) add(p);
  }
  const flags: ChangeFlag[] = [];
  for (const c of written) {
    const parts = c.path.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const spelled = parts.slice(0, i).join("/");
      const other = [...(spellings.get(foldPath(spelled)) ?? [])].find((s) => s !== spelled);
      if (other === undefined) continue;
      const what = i === parts.length ? "its name" : `its folder ${JSON.stringify(spelled)}`;
      flags.push({
        path: c.path,
        kind: "name-collision",
        detail: `${what} and ${JSON.stringify(other)} differ only in case or Unicode normalisation: one file on macOS or Windows, where a checkout keeps one of them`,
      });
      break;
    }
  }
  return flags;
}

// A repository's git folder, asked once per repository (not at every grading); asked again where it is gone (the
// repository made again at the same path, a linked worktree added again under another name).
const gitDirs = new Map<string, Promise<string>>();
async function absoluteGitDir(repo: string): Promise<string> {
  const known = await gitDirs.get(repo);
  if (known && existsSync(known)) return known;
  if (gitDirs.size >= 256) gitDirs.delete(gitDirs.keys().next().value!);
  const p = q(repo, [], ["rev-parse", "--absolute-git-dir"], { allowFail: true }).then((r) => (r.code === 0 ? r.out.trim() : ""));
  gitDirs.set(repo, p);
  const dir = await p;
  // A failed answer is not kept: the next grading asks again.
  if (!dir && gitDirs.get(repo) === p) gitDirs.delete(repo);
  return dir;
}

const LFS_POINTER = "version https://git-lfs.github.com/spec/v1\n";

/**
 * Files the change writes as plain content where the person's attributes store them through git-lfs (a worker's
 * checkout holds the pointer, and no filter runs there): landed as they are, their bytes go into git itself, not LFS,
 * and the person's git shows them changed until they are added again. Read from the person's attributes (the top-level
 * `.gitattributes` of their checkout and `.git/info/attributes`); nothing is asked of git where neither names a filter.
 */
async function plainWhereLfs(repo: string, changes: TreeChange[], objects?: string): Promise<ChangeFlag[]> {
  const files = changes.filter((c) => c.mode === "100644" || c.mode === "100755");
  if (!files.length) return [];
  const gitDir = await absoluteGitDir(repo);
  const read = (f: string) => {
    try {
      return readFileSync(f, "utf8");
    } catch {
      return "";
    }
  };
  if (!/filter=lfs/.test(read(path.join(repo, ".gitattributes")) + (gitDir ? read(path.join(gitDir, "info", "attributes")) : ""))) return [];
  const lfs = (
    await filteredAmong(
      repo,
      files.map((c) => c.path),
    )
  )
    .filter((x) => x.filter === "lfs")
    .map((x) => x.path);
  const flags: ChangeFlag[] = [];
  for (const c of files) {
    if (!lfs.includes(c.path)) continue;
    // A pointer is a few lines: a larger blob is content (never read whole here).
    const size = Number((await q(repo, [], ["cat-file", "-s", c.oid!], { allowFail: true, objects })).out.trim());
    const head =
      size > 0 && size <= 1024 ? (await q(repo, [], ["cat-file", "blob", c.oid!], { allowFail: true, objects })).out.slice(0, LFS_POINTER.length) : "";
    if (head !== LFS_POINTER)
      flags.push({
        path: c.path,
        kind: "git-config",
        detail:
          "written as plain content where your .gitattributes stores it through git-lfs: landed, its bytes go into git itself, not LFS, and your git shows it changed until you add it again",
      });
  }
  return flags;
}

async function scriptsOf(repo: string, spec: string, objects?: string): Promise<string> {
  const r = await q(repo, [], ["cat-file", "blob", spec], { allowFail: true, objects });
  if (r.code !== 0) return "";
  try {
    const j = JSON.parse(r.out) as { scripts?: unknown; config?: unknown };
    return JSON.stringify([j.scripts ?? null, j.config ?? null]);
  } catch {
    return r.out; // not JSON: any change counts
  }
}

/** Flagged files in an engine message: the paths (and a symlink's target) are the worker's, so listed quoted and labelled. */
export function describeFlags(flags: ChangeFlag[]): string {
  return quoteUntrustedList(
    flags.map((f) => `${f.path} (${f.detail})`),
    "files of the worker's change, with why each is flagged",
  );
}

/** Conflicting files in an engine message: names from a worker's change, quoted and labelled (none: git's silence said). */
function conflictFiles(files: readonly string[], label = "file names from the worker's change"): string {
  return files.length ? quoteUntrustedList(files, label) : "(git named none)";
}

/** git's blob id of some bytes (sha1 or sha256, by the length of the id it is compared with). */
const blobId = (bytes: Buffer, like: string): string => objectId("blob", bytes, like.length === 64 ? "sha256" : "sha1");

/** Each changed path of the checkout against the tree's entry: the same bytes, mode and symlink target, or why not. */
function verifyCheckout(repo: string, changes: TreeChange[]): string[] {
  const wrong: string[] = [];
  for (const c of changes) {
    const file = path.join(repo, c.path);
    const st = lstatSync(file, { throwIfNoEntry: false });
    if (!c.mode) {
      if (st && !st.isDirectory()) wrong.push(`${c.path} (should be gone)`);
      continue;
    }
    if (c.mode === "160000") continue; // a submodule's folder: git leaves it empty
    if (!st) {
      wrong.push(`${c.path} (missing)`);
      continue;
    }
    if (c.mode === "120000") {
      if (!st.isSymbolicLink() || blobId(Buffer.from(readlinkSync(file, { encoding: "buffer" })), c.oid!) !== c.oid) wrong.push(`${c.path} (symlink differs)`);
      continue;
    }
    if (!st.isFile()) {
      wrong.push(`${c.path} (not a file)`);
      continue;
    }
    if (blobId(readFileSync(file), c.oid!) !== c.oid) wrong.push(`${c.path} (content differs from the graded blob)`);
    else if ((c.mode === "100755") !== !!(st.mode & 0o100)) wrong.push(`${c.path} (mode differs)`);
  }
  return wrong;
}

/** The files of the checkout, among `paths`, that are not clean (modified, staged, untracked or ignored in the way). */
async function dirtyAmong(repo: string, paths: string[]): Promise<{ changed: string[]; untracked: string[] }> {
  const changed: string[] = [];
  const untracked: string[] = [];
  // In chunks: git 2.39's status takes no --pathspec-from-file, and a command line has a limit.
  for (let i = 0; i < paths.length; i += 200) {
    const chunk = paths.slice(i, i + 200);
    const r = await runCommand(
      "git",
      ["--literal-pathspecs", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--", ...chunk],
      { cwd: repo, env: userGitEnv() },
    );
    if (r.exitCode !== 0) throw new GitError(`git status failed in ${repo}: ${gitComplaint(r)}`);
    for (const x of r.stdout.split("\0")) {
      if (x.length <= 3) continue;
      (x.startsWith("??") || x.startsWith("!!") ? untracked : changed).push(x.slice(3));
    }
  }
  return { changed, untracked };
}

/** Of `paths`, those the checkout's attributes give a filter (`filter=lfs`…), with its name. */
async function filteredAmong(repo: string, paths: string[]): Promise<{ path: string; filter: string }[]> {
  const r = await runCommand("git", ["check-attr", "-z", "filter", "--", ...paths.slice(0, 200)], { cwd: repo, env: userGitEnv() });
  if (r.exitCode !== 0) return [];
  const parts = r.stdout.split("\0");
  const out: { path: string; filter: string }[] = [];
  for (let i = 0; i + 2 < parts.length; i += 3) {
    const value = parts[i + 2]!;
    if (value !== "unspecified" && value !== "unset") out.push({ path: parts[i]!, filter: value });
  }
  return out;
}

/** Files of the checkout that this merge changes: their names come from a worker's change, so quoted and labelled. */
const listed = (files: string[]) => quoteUntrustedList(files, "files this merge changes, named by a worker's change", { shown: 5 });

interface LandOptions {
  repo: string;
  /** The branch that must be checked out, and is moved. */
  branch: string;
  /** What lands: merged (--no-ff) into the branch, or fast-forwarded when `fastForward` and the branch is its parent. */
  commit: string;
  message: string;
  fastForward?: boolean;
  /** What the conflict message offers as the way on. */
  onConflict?: (files: string[]) => string;
  /** Another way on when the checkout is on another branch (after "check out BRANCH first, or …"). */
  elsewhere?: string;
  /**
   * The engine's graded store, where `commit` is: the merge is computed there, and the result's objects reach the
   * person's repository (`publish`) only once the merge is known to apply (no conflict, a clean checkout).
   */
  objects?: string;
  publish?: (next: string) => Promise<unknown>;
}

/**
 * Lands `commit` on `branch` in the person's checkout (see the top of this file); returns the branch's new tip. Every
 * refusal leaves the branch, the index and the checkout as they were.
 */
export async function landCommit(o: LandOptions): Promise<string> {
  const { repo, branch } = o;
  const current = (await git(repo, ["symbolic-ref", "--short", "-q", "HEAD"], { allowFail: true })) || null;
  if (current !== branch)
    throw new InputError(
      `your checkout ${repo} is on ${current ?? "a detached HEAD"}, not ${branch}: check out ${branch} first${o.elsewhere ? `, or ${o.elsewhere}` : ""} (nothing was changed)`,
      "conflict",
    );
  const head = await git(repo, ["rev-parse", "--verify", `refs/heads/${branch}`]);
  const flags = await quietFlags(repo);
  let next: string;
  const objects = o.objects;
  const parent = (await q(repo, [], ["rev-parse", "-q", "--verify", `${o.commit}^1`], { allowFail: true, objects })).out.trim();
  if (o.fastForward && parent === head) next = o.commit;
  else {
    const m = await mergeTrees(repo, head, o.commit, flags, objects);
    if ("conflict" in m) {
      const files = conflictFiles(m.conflict);
      throw new InputError(
        `merging into ${branch} conflicts in ${files}; nothing was changed.${o.onConflict ? " " + o.onConflict(m.conflict) : ""}`,
        "conflict",
      );
    }
    next = await commitTree(repo, m.tree, [head, o.commit], o.message, objects);
  }
  await applyToCheckout(repo, branch, head, next, flags, o.message, { objects, publish: o.publish, elsewhere: o.elsewhere });
  return next;
}

/** Moves the checkout and `branch` from `head` to `next` safely (dirty check, filters off, verification, CAS update). */
async function applyToCheckout(
  repo: string,
  branch: string,
  head: string,
  next: string,
  flags: string[] | null,
  reflog: string,
  from: { objects?: string; publish?: (next: string) => Promise<unknown>; elsewhere?: string } = {},
): Promise<void> {
  // Where the engine cannot write the merge as graded (a filter or an attribute of the person's in the way), their own
  // git can: the way on.
  const byHand = from.elsewhere ? ` To land it with your own git instead (your filters and attributes apply there): ${from.elsewhere}.` : "";
  const f = flags ?? (await quietFlags(repo));
  const changes = await treeChanges(repo, head, next, { objects: from.objects });
  const dirty = await dirtyAmong(
    repo,
    changes.map((c) => c.path),
  );
  if (dirty.changed.length)
    throw new InputError(
      `your checkout has local changes to files this merge changes: commit or stash ${listed(dirty.changed)} first, then merge again (nothing was changed)`,
      "conflict",
    );
  if (dirty.untracked.length)
    throw new InputError(
      `your checkout has untracked files where this merge writes: move or remove ${listed(dirty.untracked)} first, then merge again (nothing was changed)`,
      "conflict",
    );
  // Index and files to `next`, with HEAD still at `head`: read-tree refuses, changing nothing, when a file is in the way.
  // With the engine's store (`objects`), the files are read from there: nothing is written to the person's object
  // store before the checkout is known to hold exactly the graded blobs.
  const objects = from.objects;
  const r = await q(repo, f, ["read-tree", "-m", "-u", head, next], { allowFail: true, objects });
  if (r.code !== 0) {
    // A file the person's own filter stores (git-lfs: a pointer in git, the content in the checkout) reads as changed
    // with every filter off, though it is clean to them (the dirty check above ran their git as they do): nothing of
    // theirs to commit or stash.
    const stale = [...`${r.err}\n${r.out}`.matchAll(/^error: Entry '(.+)' not uptodate\. Cannot merge\.$/gm)].map((m) => m[1]!);
    const filtered = stale.length ? await filteredAmong(repo, stale) : [];
    if (filtered.length)
      throw new InputError(
        `${quoteUntrustedList(
          filtered.map((x) => `${x.path} (filter=${x.filter})`),
          "files this merge changes",
          { shown: 5 },
        )} ${filtered.length === 1 ? "is" : "are"} stored in your checkout through a filter of yours (.gitattributes; filter=lfs is git-lfs), which the engine never runs, so it cannot write this merge there; nothing was changed.${byHand}`,
        "conflict",
      );
    // git's words name the files in the way, and those are the worker's (an invalid path, a file of its change).
    const what = gitWords(r.err || r.out, 0, 3);
    throw new InputError(
      `the merge could not be written to your checkout ${what}: commit or stash the files named, then merge again (nothing was changed)`,
      "conflict",
    );
  }
  const wrong = verifyCheckout(repo, changes);
  if (wrong.length) {
    await q(repo, f, ["read-tree", "-m", "-u", next, head], { allowFail: true, objects });
    throw new InputError(
      `the files written to your checkout are not the graded ones ${quoteUntrustedList(wrong, "files of the worker's change, with what differs", { shown: 5 })}: an attribute of your checkout converts them (eol, a filter); the merge was undone and refused (nothing was changed).${byHand}`,
      "conflict",
    );
  }
  // The merge applied as graded: exactly the objects of `next` the person's repository lacks come from the engine's store.
  if (from.publish) {
    try {
      await from.publish(next);
    } catch (err) {
      await q(repo, f, ["read-tree", "-m", "-u", next, head], { allowFail: true, objects });
      throw err;
    }
  }
  const u = await q(repo, [], ["update-ref", "-m", `opencode-worker: ${reflog.split("\n")[0]!.slice(0, 100)}`, `refs/heads/${branch}`, next, head], {
    allowFail: true,
  });
  if (u.code !== 0) {
    await q(repo, f, ["read-tree", "-m", "-u", next, head], { allowFail: true, objects });
    throw new InputError(`${branch} moved while merging; nothing was changed: merge again`, "conflict");
  }
}

/**
 * The commit that undoes `merge` (a merge the engine made: its first parent is where the branch was) on top of the
 * branch's tip as it is now: a three-way merge whose base is `merge` and whose other side is its first parent's tree.
 */
export async function revertCommit(repo: string, branch: string, merge: string, message: string): Promise<string> {
  const current = (await git(repo, ["symbolic-ref", "--short", "-q", "HEAD"], { allowFail: true })) || null;
  if (current !== branch)
    throw new InputError(`your checkout ${repo} is on ${current ?? "a detached HEAD"}, not ${branch}: check out ${branch} first`, "conflict");
  const head = await git(repo, ["rev-parse", "--verify", `refs/heads/${branch}`]);
  const isAncestor = await runCommand("git", ["merge-base", "--is-ancestor", merge, head], { cwd: repo, env: userGitEnv() });
  if (isAncestor.exitCode !== 0) throw new InputError(`${merge.slice(0, 12)} is not on ${branch} any more: nothing to revert`, "conflict");
  const flags = await quietFlags(repo);
  const firstParentTree = (await q(repo, [], ["rev-parse", `${merge}^1^{tree}`])).out.trim();
  // "theirs": the tree before the merge, as a child of the merge, so git's merge base is the merge itself.
  const undo = await commitTree(repo, firstParentTree, [merge], "ocw: undo");
  const m = await mergeTrees(repo, head, undo, flags);
  if ("conflict" in m)
    throw new InputError(
      `reverting ${merge.slice(0, 12)} conflicts with later changes in ${conflictFiles(m.conflict, "file names from the merged change")}; nothing was changed: revert it by hand (git revert -m 1 ${merge.slice(0, 12)})`,
      "conflict",
    );
  const next = await commitTree(repo, m.tree, [head], message);
  await applyToCheckout(repo, branch, head, next, flags, message);
  return next;
}
