import { spawn } from "node:child_process";
import { rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from "@trpc/client";
import { EventSource } from "eventsource";
import { API_PATH, CLIENT_HEADER, type EngineLock } from "../../shared/api";
import { readLock } from "./lock";
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
        false: httpBatchLink({ url, headers, maxItems: 10 }),
      }),
    ],
  });
}

/** The path of the `ocw` bundle this code runs from (dist/ocw.mjs), used to start a detached engine. */
function selfBundle(): string {
  return process.env.OCW_BUNDLE ?? fileURLToPath(import.meta.url);
}

/** Finds the user's engine through its lock file, starting one (detached) when none runs. */
export async function ensureEngine(stateDir: string, opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<EngineLock> {
  const existing = readLock(stateDir);
  if (existing && (await healthy(existing))) return existing;
  // Two clients starting at once must not start two engines: whoever creates the start marker spawns.
  const marker = path.join(stateDir, "engine.starting");
  let spawnIt = false;
  try {
    writeFileSync(marker, String(process.pid), { flag: "wx", mode: 0o600 });
    spawnIt = true;
  } catch {
    // A marker older than any start-up is left by a client that died mid-start.
    const age = Date.now() - (statSync(marker, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > 30_000) {
      rmSync(marker, { force: true });
      return ensureEngine(stateDir, opts);
    }
  }
  if (spawnIt) {
    const child = spawn(process.execPath, [selfBundle(), "serve", "--background"], {
      detached: true,
      stdio: "ignore",
      cwd: stateDir,
      env: { ...process.env, ...opts.env, OCW_STATE_DIR: stateDir },
    });
    child.unref();
  }
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    const lock = readLock(stateDir);
    if (lock && (await healthy(lock))) {
      if (spawnIt) rmSync(marker, { force: true });
      return lock;
    }
  }
  if (spawnIt) rmSync(marker, { force: true });
  throw new Error(`the engine did not start within ${(opts.timeoutMs ?? 20_000) / 1000}s: run \`ocw serve\` in a terminal to see why`);
}

async function healthy(lock: EngineLock): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${lock.port}${API_PATH}/health`, { headers: { authorization: `Bearer ${lock.token}` }, signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}
