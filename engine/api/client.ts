// The engine's API client for Node processes (the CLI, the MCP bridge, Electron's main process, the e2e and bench
// harnesses): the one factory in shared/api-client.ts (the renderer uses the same one), typed with this engine's
// router, plus the health check that tells a lock's engine from another process. Pure: it reads nothing from disk and
// starts no process (finding or starting the engine is launcher.ts).
import type { TRPCClient } from "@trpc/client";
import type { inferRouterOutputs } from "@trpc/server";
import { EngineHealth, HEALTH_PATH, type EngineLock } from "../../shared/api";
import { type ClientKind, createEngineClient, type EngineAddress } from "../../shared/api-client";
import type { AppRouter } from "./router";

export type EngineClient = TRPCClient<AppRouter>;
/** What each procedure answers and takes, as a client sees it (e.g. `ApiOutputs["setup"]["doctor"]`). */
export type ApiOutputs = inferRouterOutputs<AppRouter>;
export type { ClientKind, EngineAddress };

function addressOf(lock: Pick<EngineLock, "port" | "token">): EngineAddress {
  return { origin: `http://127.0.0.1:${lock.port}`, token: lock.token };
}

/**
 * A typed client of a running engine; `client` names the caller (e.g. "cli:ocw run", "mcp:claude-code", "gui:desktop")
 * for the decisions it makes: required, so no caller is ever recorded as another kind by leaving it out.
 */
export function connect(target: Pick<EngineLock, "port" | "token"> | EngineAddress, client: ClientKind): EngineClient {
  return createEngineClient<AppRouter>("origin" in target ? target : addressOf(target), client);
}

/**
 * The engine a lock names, as it answers on its port: its /health when the token is accepted and it gives the lock's
 * pid and instance id (so neither a reused pid nor another process on the port passes); null otherwise.
 */
export async function engineHealth(lock: Pick<EngineLock, "port" | "token" | "pid" | "instanceId">, timeoutMs = 2000): Promise<EngineHealth | null> {
  try {
    const res = await fetch(`${addressOf(lock).origin}${HEALTH_PATH}`, {
      headers: { authorization: `Bearer ${lock.token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return null;
    const h = EngineHealth.safeParse(await res.json());
    return h.success && h.data.pid === lock.pid && h.data.instanceId === lock.instanceId ? h.data : null;
  } catch {
    return null;
  }
}

/** True when the engine a lock names answers on its port as that very engine (engineHealth). */
export async function healthy(lock: Pick<EngineLock, "port" | "token" | "pid" | "instanceId">, timeoutMs = 2000): Promise<boolean> {
  return (await engineHealth(lock, timeoutMs)) !== null;
}
