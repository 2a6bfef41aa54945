// The real Claude Code CLI for tests: the npm package @anthropic-ai/claude-code at a pinned version, installed once into
// .cache/claude-code (gitignored) when it is not there yet. Each test runs it with its own HOME, so nothing of the
// user's Claude Code configuration is read or written.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../helpers";

export const CLAUDE_CODE_VERSION = "2.1.332";
const cacheDir = path.join(ROOT, ".cache", "claude-code");
const bin = path.join(cacheDir, "node_modules", ".bin", "claude");

/** The `claude` executable, installing it when missing; or the reason it cannot be had (the test then skips). */
export function claudeCode(): { bin: string } | { skip: string } {
  if (process.env.OCW_CLAUDE_BIN) return { bin: process.env.OCW_CLAUDE_BIN };
  const version = () => {
    try {
      return execFileSync(bin, ["--version"], { encoding: "utf8", env: { ...process.env, HOME: path.join(cacheDir, "home") }, timeout: 30_000 }).trim();
    } catch {
      return "";
    }
  };
  if (existsSync(bin) && version().startsWith(CLAUDE_CODE_VERSION)) return { bin };
  mkdirSync(cacheDir, { recursive: true });
  // Test files run in parallel workers: one installs, the others wait for it (a lock older than 5 minutes is stale).
  const lock = path.join(cacheDir, ".install.lock");
  for (const until = Date.now() + 300_000; ; ) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      try {
        if (Date.now() - statSync(lock).mtimeMs > 300_000) rmSync(lock, { recursive: true, force: true });
      } catch {}
      if (Date.now() > until) return { skip: `another test has held ${lock} for 5 minutes installing Claude Code` };
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    if (existsSync(bin) && version().startsWith(CLAUDE_CODE_VERSION)) return { bin };
    if (!existsSync(path.join(cacheDir, "package.json"))) writeFileSync(path.join(cacheDir, "package.json"), '{"private":true}\n');
    execFileSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", `@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}`], {
      cwd: cacheDir,
      stdio: "pipe",
      timeout: 240_000,
    });
  } catch (err) {
    return {
      skip: `could not install @anthropic-ai/claude-code@${CLAUDE_CODE_VERSION} from the npm registry into ${cacheDir}: ${String(
        (err as { stderr?: Buffer }).stderr ?? (err as Error).message,
      )
        .trim()
        .split("\n")
        .slice(-2)
        .join(" ")}`,
    };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
  const v = version();
  if (!v.startsWith(CLAUDE_CODE_VERSION)) return { skip: `${bin} --version printed "${v}" after installing ${CLAUDE_CODE_VERSION}` };
  return { bin };
}

export interface ClaudeRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `claude args…` with `env` (HOME among them), never throwing on a non-zero exit. */
export async function runClaude(claudeBin: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number }): Promise<ClaudeRun> {
  try {
    const r = await promisify(execFile)(claudeBin, args, { env: opts.env, cwd: opts.cwd, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof e.code === "number" ? e.code : 1,
      stdout: e.stdout ?? "",
      stderr: `${e.stderr ?? ""}${typeof e.code === "number" ? "" : ` (${e.message})`}`,
    };
  }
}
