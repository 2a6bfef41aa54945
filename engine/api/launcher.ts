// Finding the user's engine, or starting one: what every client does before it connects (client.ts). The CLI and the
// MCP bridge start the bundle they run from; Electron's main process gives its own Node (itself, as Node) and bundle.
import { config } from "../config";
import { spawn } from "node:child_process";
import { existsSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { EngineLock } from "../../shared/api";
import { engineIsOlder, engineVersionText } from "../../shared/engine-build";
import { AT_REST_STATES, type WorkerState } from "../../shared/worker";
import { releaseOf } from "./build-info";
import { connect, engineHealth, healthy } from "./client";
import { alive, currentOwner, lastLock, readLock, recordUpgrade, supervisorOf } from "./lock";

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
/** The release of an `ocw` bundle (or its launcher): what a client compares with the engine's /health build (build-info.ts). */
export { releaseOf } from "./build-info";

interface EnsureOptions {
  timeoutMs?: number;
  /** What the engine's environment adds to this process's (e.g. a key variable named on the command line). */
  env?: NodeJS.ProcessEnv;
  /** Defaults to `selfCommand()`. */
  command?: EngineCommand;
  /**
   * Called when the running engine is older than this client but kept, as workers are at work on it (default: said
   * once per engine on stderr). The client says so; a later ensureEngine replaces it once they are all at rest.
   */
  onOlderKept?: (older: OlderEngine) => void;
}

/** A running engine older than the client, kept because workers are at work on it. */
export interface OlderEngine {
  pid: number;
  instanceId: string;
  /** The engine's release ("0.1.22", or "0.1.22 or older" for an engine from before the handshake) and the client's. */
  engine: string;
  client: string;
  /** Its workers not at rest (running, starting, waiting on an approval, being graded, queued); null: it did not say. */
  atWork: number | null;
}

/** What a client says when it keeps an older engine: the versions, and when it is replaced. `self`: "this bridge", "this ocw". */
export function olderEngineText(o: OlderEngine, self: string): string {
  const work = o.atWork === null ? "its workers could not be counted" : `${o.atWork} worker${o.atWork === 1 ? " is" : "s are"} at work on it`;
  return `the running engine is ${o.engine}, ${self} ${o.client} (${work}): it is replaced once no worker is at work, or now with \`ocw stop\` (running workers become interrupted, resumable)`;
}

const saidOlder = new Set<string>();
/** The default of onOlderKept: once per engine and process, on stderr (the CLI's; stdout may carry MCP or JSON). */
function sayOlderOnce(o: OlderEngine): void {
  if (saidOlder.has(o.instanceId)) return;
  saidOlder.add(o.instanceId);
  process.stderr.write(`ocw: ${olderEngineText(o, "this ocw")}\n`);
}

/** How many of an engine's workers are not at rest (its status's counts by state); null when it does not answer. */
async function workersAtWork(lock: EngineLock): Promise<number | null> {
  try {
    const st = await connect(lock, "cli:ocw upgrade").status.query();
    const counts = (st as { workers?: Record<string, number> }).workers ?? {};
    return Object.entries(counts).reduce((n, [state, k]) => (AT_REST_STATES.includes(state as WorkerState) ? n : n + k), 0);
  } catch {
    return null;
  }
}

/**
 * Stops an older engine for the client's own, as `ocw stop` does (its shutdown, then until it let go of the state
 * dir), having recorded first that this is a replacement (recordUpgrade): a call the stop cuts then finds the new
 * engine, not "the engine was stopped".
 */
async function stopForUpgrade(stateDir: string, lock: EngineLock, from: string, to: string): Promise<void> {
  recordUpgrade(stateDir, { at: Date.now(), pid: lock.pid, from, to });
  await connect(lock, "cli:ocw upgrade")
    .shutdown.mutate()
    .catch(() => undefined);
  const holding = () => readLock(stateDir)?.instanceId === lock.instanceId || currentOwner(stateDir)?.instanceId === lock.instanceId;
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && holding()) await new Promise((r) => setTimeout(r, 50));
}

/**
 * Finds the user's engine through its lock file, starting one (detached, under a supervisor) when none runs. An engine
 * older than this client's bundle (its /health build: shared/engine-build.ts) is replaced by it when no worker is at
 * work on it, and otherwise kept (onOlderKept) until a later call finds them all at rest.
 */
export async function ensureEngine(stateDir: string, opts: EnsureOptions = {}): Promise<EngineLock> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const command = opts.command ?? selfCommand();
  let existing = readLock(stateDir);
  const health = existing ? await engineHealth(existing) : null;
  if (existing && health) {
    // Only the release is compared (no hash of the bundle on every call): the same version of another build is used as is.
    const mine = { version: releaseOf(command.bundle) };
    if (!engineIsOlder(health.build, mine.version)) return existing;
    const atWork = await workersAtWork(existing);
    const older: OlderEngine = {
      pid: existing.pid,
      instanceId: existing.instanceId,
      engine: engineVersionText(health.build),
      client: mine.version ?? "",
      atWork,
    };
    if (atWork !== 0) {
      (opts.onOlderKept ?? sayOlderOnce)(older);
      return existing;
    }
    await stopForUpgrade(stateDir, existing, older.engine, older.client);
    process.stderr.write(`ocw: replacing the running engine ${older.engine} (pid ${older.pid}, no worker at work) with ${older.client}\n`);
    existing = readLock(stateDir);
    // It did not stop in time (or another client already started the new one): the steps below wait for it.
  }
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
