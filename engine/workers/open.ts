// The one path a client may open on the person's desktop for a worker (its folder, an editor, a terminal): the
// worker's own workspace, as the engine made it. A client names a worker, never a path; the engine answers with the
// workspace's real path only when it still exists and lies, symlinks resolved, exactly at <workspaces>/<repo>/<id>.
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import path from "node:path";
import { InputError } from "../../shared/errors";
import type { Worker } from "../../shared/worker";

/**
 * The settings of the workspace's git repository that are known not to run anything (what `git init` writes, and the
 * identity and branch settings a worker's own git may add). Lower case, as `git config --list` names them.
 */
const QUIET_GIT_KEYS = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath)$/,
  /^extensions\.objectformat$/,
  /^user\.(name|email)$/,
  /^init\.defaultbranch$/,
  /^branch\.[^\n]*\.(remote|merge|rebase)$/,
  /^(advice|color|i18n|column|status)\.[^\n]*$/,
];

/** How many entries of a workspace are looked at for nested repositories, at most (a node_modules may hold many). */
const NESTED_SCAN_MAX = 20_000;

/** The first 12 names, quoted, and how many more. */
const quotedSome = (names: string[]) =>
  names
    .slice(0, 12)
    .map((n) => JSON.stringify(n))
    .join(", ") + (names.length > 12 ? ` and ${names.length - 12} more` : "");

/**
 * What in a worker's workspace a person's git would run as them, outside every sandbox, on reading it: the workspace
 * is the worker's, and its `.git` too (config, hooks), which the worker's commands may change at will. An editor opened
 * there (VS Code's git runs `git status`) or a terminal (a prompt that shows git's status) would run a
 * `core.fsmonitor`, a filter, a textconv, a hook… the worker planted. Each entry says what and where (the worker's
 * names, as data); empty when there is none of them.
 */
export function gitRunsIn(worktree: string): string[] {
  const found: string[] = [];
  const repo = (dir: string, rel: string) => {
    const dotGit = path.join(dir, ".git");
    let st;
    try {
      st = lstatSync(dotGit);
    } catch {
      return;
    }
    const at = rel ? `${JSON.stringify(rel)}: ` : "";
    if (!st.isDirectory()) {
      found.push(`${at}.git is ${st.isSymbolicLink() ? "a symlink" : "a file"} naming another repository, whose settings git would use`);
      return;
    }
    for (const f of ["commondir", "config.worktree"]) if (existsSync(path.join(dotGit, f))) found.push(`${at}.git/${f} (git reads settings through it)`);
    let keys: string[] = [];
    const config = path.join(dotGit, "config");
    let configKind: "file" | "none" | "other" = "none";
    try {
      configKind = lstatSync(config).isFile() ? "file" : "other";
    } catch {
      /* no config */
    }
    if (configKind === "other") found.push(`${at}.git/config is not a plain file`);
    if (configKind === "file")
      try {
        // --file without --includes: the file's own settings, none of the files it includes read, nothing run.
        const out = execFileSync("git", ["config", "--file", config, "--list", "--name-only", "-z"], {
          encoding: "utf8",
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", HOME: "/nonexistent" },
          stdio: ["ignore", "pipe", "pipe"],
          timeout: 10_000,
        });
        keys = [
          ...new Set(
            out
              .split("\0")
              .filter(Boolean)
              .map((k) => k.toLowerCase()),
          ),
        ];
      } catch {
        found.push(`${at}.git/config cannot be read as git settings`);
      }
    const loud = keys.filter((k) => !QUIET_GIT_KEYS.some((re) => re.test(k)));
    if (loud.length) found.push(`${at}.git/config sets ${quotedSome(loud)}`);
    let hooks: string[] = [];
    try {
      hooks = readdirSync(path.join(dotGit, "hooks"));
    } catch {
      /* none */
    }
    if (hooks.length) found.push(`${at}.git/hooks holds ${quotedSome(hooks)}`);
  };
  repo(worktree, "");
  // Nested repositories (an editor finds and reads them too), a bounded walk that follows no symlink.
  let seen = 0;
  const walk = (dir: string, rel: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (++seen > NESTED_SCAN_MAX) return;
      if (e.name === ".git") {
        if (rel) repo(dir, rel);
        continue;
      }
      if (e.isDirectory()) walk(path.join(dir, e.name), rel ? `${rel}/${e.name}` : e.name);
    }
  };
  walk(worktree, "");
  return found;
}

export function workspaceToOpen(
  w: Pick<Worker, "id" | "worktree" | "discarded">,
  workspacesRoot: string,
): { workerId: string; path: string; gitRuns: string[] } {
  if (w.discarded) throw new InputError(`worker ${w.id} was discarded: its workspace is gone`, "conflict");
  if (!w.worktree) throw new InputError(`worker ${w.id} has no workspace yet: wait until it starts`, "conflict");
  let real: string;
  let root: string;
  try {
    real = realpathSync(w.worktree);
    root = realpathSync(workspacesRoot);
  } catch {
    throw new InputError(`worker ${w.id}'s workspace is gone from disk (pruned or removed)`, "conflict");
  }
  const rel = path.relative(root, real);
  const parts = rel.split(path.sep);
  // Exactly <root>/<repository folder>/<worker id>: nothing above, beside or below it.
  if (path.isAbsolute(rel) || parts.length !== 2 || parts[0] === ".." || parts[0] === "" || parts[1] !== w.id)
    throw new InputError(`worker ${w.id}'s workspace is not where the engine keeps workspaces: refused`, "conflict");
  if (!statSync(real).isDirectory()) throw new InputError(`worker ${w.id}'s workspace is not a folder: refused`, "conflict");
  return { workerId: w.id, path: real, gitRuns: gitRunsIn(real) };
}
