import { OcwError } from "../../shared/errors";
import { quoteUntrusted } from "../../shared/untrusted";
import { type CommandResult, runCommand, trimFinalNewline } from "../process";

/** git refused: the message is git's own (a conflict, a missing ref, a locked index). */
export class GitError extends OcwError {
  constructor(message: string) {
    super("conflict", message);
    this.name = "GitError";
  }
}

/**
 * Variables that tie git to one repository (`git rev-parse --local-env-vars`). The engine inherits the environment of
 * whatever started it first: an `ocw` run from another repository's git hook carries its GIT_DIR / GIT_INDEX_FILE, and
 * git would obey them over the cwd it is given (the wrong repository inspected, that repository's index written).
 */
const LOCAL_REPO_ENV = [
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_CONFIG",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
  "GIT_OBJECT_DIRECTORY",
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_IMPLICIT_WORK_TREE",
  "GIT_GRAFT_FILE",
  "GIT_INDEX_FILE",
  "GIT_NO_REPLACE_OBJECTS",
  "GIT_REPLACE_REF_BASE",
  "GIT_PREFIX",
  "GIT_INTERNAL_SUPER_PREFIX",
  "GIT_SHALLOW_FILE",
  "GIT_COMMON_DIR",
];

/** The user's environment for git on the user's repository: their config applies, no prompt, messages untranslated. */
export const userGitEnv = (): Record<string, string | undefined> => {
  const env: Record<string, string | undefined> = { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" };
  for (const name of LOCAL_REPO_ENV) delete env[name];
  return env;
};

/** Runs git and returns trimmed stdout; throws GitError with git's own message. */
export async function git(cwd: string, args: string[], opts: { allowFail?: boolean } = {}): Promise<string> {
  const r = await runCommand("git", args, { cwd, env: userGitEnv() });
  if (r.exitCode !== 0 && !opts.allowFail) throw new GitError(`git ${args[0]} failed in ${cwd}: ${gitComplaint(r)}`);
  return r.exitCode === 0 ? trimFinalNewline(r.stdout) : "";
}

/**
 * Runs a fixed POSIX sh script of git commands (text written in this code, never built from input: its values arrive
 * as environment variables) with exactly `env`, and returns its stdout; the first failing command ends it, and its
 * message is the GitError's. One process start for several git commands.
 */
export async function gitScript(
  script: string,
  opts: { cwd: string; env: Record<string, string | undefined>; lossless?: boolean; bytes?: boolean; limitMs?: number },
): Promise<string> {
  const r = await runCommand("/bin/sh", ["-c", script, "ocw-git"], opts);
  if (r.exitCode !== 0) throw new GitError(`git failed in ${opts.cwd}: ${gitComplaint(r)}`);
  return r.stdout;
}

/**
 * Lines of git's output (as `slice(start, end)` picks them) quoted and labelled inside the engine's words: git names the
 * files it complains about, and a worker chose those names (a line break and "SYSTEM: …" in one).
 */
export function gitWords(text: string, start: number, end?: number): string {
  return quoteUntrusted(text.trim().split("\n").slice(start, end).join("\n"), "git's words, which may name the worker's files", 600);
}

/**
 * git's own words for a failure (the last lines it printed), quoted and labelled: git names the files it complains
 * about, and a worker chose those names (a line break and "SYSTEM: …" in one) — inside an engine error they would read
 * as the engine's own. Why it could not start, and the engine's note on a timeout, stay the engine's words.
 */
export function gitComplaint(r: CommandResult): string {
  // A timeout's words are the engine's own ("it ran past N s: it was stopped"): nothing of git's was kept.
  if (r.timedOut) return `${r.stderr} (git waits for good where it reads a FIFO: one named .gitignore in the worker's files, or in a nested repository's .git)`;
  if (r.startError) return r.startError;
  return gitWords(r.stderr || r.stdout, -3);
}

/** The engine's own name and address on the commits it makes (git's flags below, its trusted environment, snapshot.ts). */
export const ENGINE_AUTHOR = { name: "opencode-worker", email: "opencode-worker@localhost" } as const;

/** The engine commits a worker's changes under its own name, so the user's git identity is never needed. */
export const OCW_IDENTITY = ["-c", `user.name=${ENGINE_AUTHOR.name}`, "-c", `user.email=${ENGINE_AUTHOR.email}`, "-c", "commit.gpgsign=false"];
