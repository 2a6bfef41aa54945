import { spawn } from "node:child_process";
import { rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from "@trpc/client";
import { EventSource } from "eventsource";
import { API_PATH, CLIENT_HEADER, type EngineLock } from "../../shared/api";
import { alive, lastLock, readLock } from "./lock";
import type { AppRouter } from "./router";

export type EngineClient = TRPCClient<AppRouter>;

/** A typed client of a running engine; `client` names the caller (e.g. "cli", "mcp:claude-code") for decisions it makes. */
export function connect(lock: Pick<EngineLock, "port" | "token">, client = "cli"): EngineClient {
  const url = `http://127.0.0.1:${lock.port}${API_PATH}`;
  const headers = { authorization: `Bearer ${lock.token}`, [CLIENT_HEADER]: client };
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({
          url,
          EventSource,
          eventSourceOptions: { fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
        }),
        false: httpBatchLink({ url, headers, maxItems: 10, methodOverride: "POST" }),
      }),
    ],
  });
}

/** The path of the `ocw` bundle this code runs from (dist/ocw.mjs), used to start a detached engine. */
export function selfBundle(): string {
  return process.env.OCW_BUNDLE ?? fileURLToPath(import.meta.url);
}

/** Finds the user's engine through its lock file, starting one (detached, under a supervisor) when none runs. */
export async function ensureEngine(stateDir: string, opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<EngineLock> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const existing = readLock(stateDir);
  if (existing && (await healthy(existing))) return existing;
  // The engine died but its supervisor lives: it is starting it again already.
  const supervisor = lastLock(stateDir)?.supervisorPid;
  if (!existing && supervisor && alive(supervisor)) {
    const lock = await waitForEngine(stateDir, Math.min(timeoutMs, 10_000));
    if (lock) return lock;
  }
  const started = await startExclusive(stateDir, timeoutMs, () => {
    const child = spawn(process.execPath, [selfBundle(), "serve", "--background"], {
      detached: true,
      stdio: "ignore",
      cwd: stateDir,
      env: { ...process.env, ...opts.env, OCW_STATE_DIR: stateDir },
    });
    child.unref();
  });
  if (started) return started.lock;
  throw new Error(`the engine did not start within ${timeoutMs / 1000}s: run \`ocw serve\` in a terminal to see why`);
}

/**
 * Starts an engine with `spawnEngine` unless someone else is starting one (whoever creates the start marker spawns),
 * then waits for a healthy engine. Null when none came up in time.
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

async function waitForEngine(stateDir: string, timeoutMs: number): Promise<EngineLock | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    const lock = readLock(stateDir);
    if (lock && (await healthy(lock))) return lock;
  }
  return null;
}

async function healthy(lock: EngineLock): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${lock.port}${API_PATH}/health`, { headers: { authorization: `Bearer ${lock.token}` }, signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}
