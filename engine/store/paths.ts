import envPaths from "env-paths";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { config } from "../config";

/** The user's state directory: $OCW_STATE_DIR when set (tests, isolation), else the platform's per-user state dir. */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const configured = config(env).OCW_STATE_DIR;
  const dir = configured ? path.resolve(configured) : envPaths("opencode-worker", { suffix: "" }).data;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}
