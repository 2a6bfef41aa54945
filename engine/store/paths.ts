import envPaths from "env-paths";
import { chmodSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { config } from "../config";

/** The user's state directory: $OCW_STATE_DIR when set (tests, isolation), else the platform's per-user state dir. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const configured = config(env).OCW_STATE_DIR;
  const dir = configured ? path.resolve(configured) : envPaths("opencode-worker", { suffix: "" }).data;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  private700(dir);
  return dir;
}

/**
 * The state dir is the person's alone: it holds every workspace (their code), the mirrors of their object stores, logs
 * and transcripts, in folders made with the default mode. mkdir's mode applies only to a folder it makes, so a state
 * dir that was already there with group or other access (made by hand, by another tool, `OCW_STATE_DIR` pointed at a
 * plain folder) let every local user read all of it: it is narrowed to 0700 (only a folder of our own; chmod of
 * another's is refused by the kernel anyway).
 */
function private700(dir: string): void {
  try {
    const st = statSync(dir);
    if ((st.mode & 0o077) !== 0 && (typeof process.getuid !== "function" || st.uid === process.getuid())) chmodSync(dir, 0o700);
  } catch {
    /* not ours to change, or a platform without modes: the folder stays as it is */
  }
}
