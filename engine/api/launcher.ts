// Finding the user's engine, or starting one: what every client does before it connects (client.ts). The CLI and the
// MCP bridge start the bundle they run from; Electron's main process gives its own Node (itself, as Node) and bundle.
import { config } from "../config";
import { spawn } from "node:child_process";
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { EngineLock } from "../../shared/api";
import { healthy } from "./client";
import { alive, currentOwner, lastLock, readLock, supervisorOf } from "./lock";

/** How to run `ocw`: a Node executable and the bundle (dist/ocw.mjs), plus what the child's environment adds. */
interface EngineCommand {
  node: string;
  bundle: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The `ocw` this process runs from: $OCW_BUNDLE, else the main module (dist/ocw.mjs, or bin/ocw.mjs that loads it).
 * (No import.meta here: this module is also loaded by CommonJS hosts, Electron's main process and Playwright.)
 */
export function selfCommand(): EngineCommand {
  return { node: process.execPath, bundle: config().OCW_BUNDLE ?? path.resolve(process.argv[1] ?? "ocw.mjs") };
}

/**
 * The user's state directory, where the engine's lock and token live: what a client needs to find (or start) the
 * engine, given here so the clients import the API's surface and never engine/store/.
 */
export { stateDir } from "../store";
/** The OCW_* settings (engine/config.ts), for the few a client reads itself (OCW_DEBUG: a stack with an error). */
export { config } from "../config";

interface EnsureOptions {
  timeoutMs?: number;
  /** What the engine's environment adds to this process's (e.g. a key variable named on the command line). */
  env?: NodeJS.ProcessEnv;
  /** Defaults to `selfCommand()`. */
  command?: EngineCommand;
}

/** Finds the user's engine through its lock file, starting one (detached, under a supervisor) when none runs. */
export async function ensureEngine(stateDir: string, opts: EnsureOptions = {}): Promise<EngineLock> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const existing = readLock(stateDir);
  if (existing && (await healthy(existing))) return existing;
  // An engine that owns the state dir but does not answer yet (starting), or a supervisor restarting a dead one:
  // that one will answer; starting another would only lose the claim to it.
  // An engine that owns the state dir is waited for as long as it holds it: it answers (starting), or lets go (closing
  // after `ocw stop`: a start before it let go would lose the claim to it and end, which is how a call right after a stop
  // used to fail after 10 s on a busy machine). A supervisor with no engine is waited for up to 10 s.
  const supervisor = supervisorOf(lastLock(stateDir));
  const restarting = () => !existing && supervisor !== null && alive(supervisor);
  if (currentOwner(stateDir) || restarting()) {
    const t0 = Date.now();
    const lock = await waitForEngine(stateDir, timeoutMs, () => !currentOwner(stateDir) && !(restarting() && Date.now() - t0 < 10_000));
    if (lock) return lock;
    const owner = currentOwner(stateDir);
    if (owner)
      throw new Error(
        `the engine (pid ${owner.pid}) holds ${stateDir} but did not answer within ${timeoutMs / 1000}s: stop it (\`ocw stop\`, or kill ${owner.pid}) and try again`,
      );
  }
  const command = opts.command ?? selfCommand();
  if (!existsSync(command.bundle)) throw new Error(`${command.bundle} is missing: run \`npm run build\` in the opencode-worker checkout`);
  const started = await startExclusive(stateDir, timeoutMs, () => {
    const child = spawn(command.node, [command.bundle, "serve", "--background"], {
      detached: true,
      stdio: "ignore",
      cwd: stateDir,
      env: { ...process.env, ...command.env, ...opts.env, OCW_STATE_DIR: stateDir },
      windowsHide: true,
    });
    child.unref();
  });
  if (started) return started.lock;
  throw new Error(`the engine did not start within ${timeoutMs / 1000}s: run \`ocw serve\` in a terminal to see why`);
}

/**
 * Starts an engine with `spawnEngine` unless another client is starting one (whoever creates the start marker
 * spawns), then waits for a healthy engine. Null when none came up in time. The marker only saves needless spawns:
 * that one engine runs per state dir is the engine's own claim (lock.ts), which a second engine loses.
 */
export async function startExclusive(stateDir: string, timeoutMs: number, spawnEngine: () => void): Promise<{ lock: EngineLock; spawned: boolean } | null> {
  const marker = path.join(stateDir, "engine.starting");
  let spawned = false;
  try {
    writeFileSync(marker, String(process.pid), { flag: "wx", mode: 0o600 });
    spawned = true;
  } catch {
    // A marker older than any start-up is left by a client that died mid-start.
    const age = Date.now() - (statSync(marker, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > 30_000) {
      rmSync(marker, { force: true });
      return startExclusive(stateDir, timeoutMs, spawnEngine);
    }
  }
  try {
    if (spawned) spawnEngine();
    const lock = await waitForEngine(stateDir, timeoutMs);
    return lock ? { lock, spawned } : null;
  } finally {
    if (spawned) rmSync(marker, { force: true });
  }
}

/** Waits until the lock names a live engine that answers as itself; null when the time is up, or once `giveUp` says so. */
export async function waitForEngine(stateDir: string, timeoutMs: number, giveUp: () => boolean = () => false): Promise<EngineLock | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const lock = readLock(stateDir);
    if (lock && (await healthy(lock))) return lock;
    if (giveUp()) return null;
    await new Promise((r) => setTimeout(r, 50));
  }
  return null;
}
