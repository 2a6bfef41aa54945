// The one client of the engine's API, used by every process that talks to it: the CLI, the MCP bridge, Electron's
// main process, the e2e and bench harnesses (the renderer keeps its own createTRPCClient: it bundles nothing from engine/). Pure: it reads nothing from disk and starts no process (finding or
// starting the engine is launcher.ts). Node and browsers alike: `fetch` for calls, a fetch-based event stream
// (the `eventsource` package with a custom fetch) for subscriptions, the token always in a header, never a cookie (no
// request sends one: a browser sends cookies for 127.0.0.1 to every port).
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from "@trpc/client";
import { EventSource } from "eventsource";
import { API_PATH, CLIENT_HEADER, EngineHealth, HEALTH_PATH, type EngineLock } from "../../shared/api";
import type { AppRouter } from "./router";

export type EngineClient = TRPCClient<AppRouter>;

/** Where an engine listens and how to prove we may talk to it: what a lock file holds, or what a page was given. */
export interface EngineAddress {
  /** `http://127.0.0.1:PORT`; "" for the page's own origin (the browser UI). */
  origin: string;
  token: string;
}

export function addressOf(lock: Pick<EngineLock, "port" | "token">): EngineAddress {
  return { origin: `http://127.0.0.1:${lock.port}`, token: lock.token };
}

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
/** fetch that never sends cookies. */
const noCookies: FetchLike = (input, init) => globalThis.fetch(input, { ...init, credentials: "omit" });

/** `fetch` with the engine's token (and the caller's name) added to every request's headers. */
export function authedFetch(address: EngineAddress, client?: string, base: FetchLike = noCookies): FetchLike {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${address.token}`);
    if (client) headers.set(CLIENT_HEADER, client);
    return base(input, { ...init, headers });
  };
}

/**
 * A typed client of a running engine; `client` names the caller (e.g. "cli", "mcp:claude-code") for decisions it
 * makes (the browser UI leaves it out and counts as a person).
 */
export function connect(target: Pick<EngineLock, "port" | "token"> | EngineAddress, client: string | undefined = "cli"): EngineClient {
  const address = "origin" in target ? target : addressOf(target);
  const url = `${address.origin}${API_PATH}`;
  const headers = { authorization: `Bearer ${address.token}`, ...(client ? { [CLIENT_HEADER]: client } : {}) };
  const withToken = authedFetch(address, client);
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({ url, EventSource, eventSourceOptions: { fetch: withToken } }),
        false: httpBatchLink({ url, headers, maxItems: 10, methodOverride: "POST", fetch: noCookies }),
      }),
    ],
  });
}

/**
 * True when the engine a lock names answers on its port as that very engine: the token is accepted and /health
 * gives the lock's pid and instance id (so neither a reused pid nor another process on the port passes).
 */
export async function healthy(lock: Pick<EngineLock, "port" | "token" | "pid" | "instanceId">, timeoutMs = 2000): Promise<boolean> {
  try {
    const res = await fetch(`${addressOf(lock).origin}${HEALTH_PATH}`, {
      headers: { authorization: `Bearer ${lock.token}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return false;
    const h = EngineHealth.safeParse(await res.json());
    return h.success && h.data.pid === lock.pid && h.data.instanceId === lock.instanceId;
  } catch {
    return false;
  }
}
