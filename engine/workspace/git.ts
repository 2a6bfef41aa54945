import { execa } from "execa";

import { OcwError } from "../../shared/errors";

/** git refused: the message is git's own (a conflict, a missing ref, a locked index). */
export class GitError extends OcwError {
  constructor(message: string) {
    super("conflict", message);
    this.name = "GitError";
  }
}

/** Runs git and returns trimmed stdout; throws GitError with git's own message. */
export async function git(cwd: string, args: string[], opts: { allowFail?: boolean } = {}): Promise<string> {
  const r = await execa("git", args, { cwd, reject: false, stripFinalNewline: true, env: { GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" } });
  if (r.exitCode !== 0 && !opts.allowFail) {
    throw new GitError(`git ${args[0]} failed in ${cwd}: ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" ")}`);
  }
  return r.exitCode === 0 ? r.stdout : "";
}

/** The engine commits a worker's changes under its own name, so the user's git identity is never needed. */
export const OCW_IDENTITY = ["-c", "user.name=opencode-worker", "-c", "user.email=opencode-worker@localhost", "-c", "commit.gpgsign=false"];
