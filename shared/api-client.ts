// The one factory of the engine's API client, used by every process that talks to it: the renderer (the sandboxed
// page), the CLI, the MCP bridge, Electron's main process, the e2e and bench harnesses. Here in shared/ so the page
// bundles nothing from engine/: it imports only @trpc/client and the `eventsource` package, no Node module, and it is
// generic over the router (the callers name `AppRouter` as a type). Pure: it reads nothing from disk, starts no
// process and keeps no state beyond the client it returns.
//
// `client` is required: it names the caller to the engine (the `x-ocw-client` header), and the engine records it on
// every decision the caller makes (engine/api/server.ts: "gui…" counts as a person, "cli:…" as the CLI, "mcp:…" as an
// MCP client). There is no default, so a GUI can never be recorded as the CLI by leaving it out.
//
// The token is always in a header, never a cookie (no request sends one: a browser sends cookies for 127.0.0.1 to
// every port, so a dev server a worker starts would get it). Subscriptions use a fetch-based event stream (the
// `eventsource` package with a custom fetch), since the browser's EventSource cannot send headers.
import { createTRPCClient, httpBatchLink, httpLink, httpSubscriptionLink, retryLink, splitLink, type TRPCClient, type TRPCLink } from "@trpc/client";
import type { AnyTRPCRouter, initTRPC } from "@trpc/server";
import { EventSource } from "eventsource";
import { API_PATH, CLIENT_HEADER } from "./api";

/**
 * Who is calling: "gui" or "gui:NAME" (a person at the GUI), "person:NAME" (a person answering elsewhere, e.g. an MCP
 * form), "cli:NAME" (an `ocw` command), "mcp:NAME" (an MCP client).
 */
export type ClientKind = "gui" | `gui:${string}` | `person:${string}` | "cli" | `cli:${string}` | `mcp:${string}`;

/** Where an engine listens and how to prove we may talk to it: what a lock file holds, or what a page was given. */
export interface EngineAddress {
  /** `http://127.0.0.1:PORT`; "" for the page's own origin (the browser UI). */
  origin: string;
  token: string;
}

// Structural fetch types: shared/ compiles without the DOM or Node's types (both provide a matching fetch).
interface HeadersLike {
  set(name: string, value: string): void;
}
interface FetchInit {
  headers?: unknown;
  credentials?: string;
  [k: string]: unknown;
}
interface Globals {
  fetch: (input: unknown, init?: FetchInit) => Promise<unknown>;
  Headers: new (init?: unknown) => HeadersLike;
}
/** A router with the default config (no transformer), as the engine's is. */
type Plain = ReturnType<ReturnType<typeof initTRPC.create>["router"]>;
const g = globalThis as unknown as Globals;

/** fetch that never sends cookies. */
const noCookies = (input: unknown, init?: FetchInit) => g.fetch(input, { ...init, credentials: "omit" });

/** `fetch` with the engine's token and the caller's name added to every request's headers; never a cookie. */
function authedFetch(address: EngineAddress, client: ClientKind) {
  return (input: unknown, init?: FetchInit) => {
    const headers = new g.Headers(init?.headers);
    headers.set("authorization", `Bearer ${address.token}`);
    headers.set(CLIENT_HEADER, client);
    return noCookies(input, { ...init, headers });
  };
}

/**
 * The longest subscription URL sent as it is (a GET, its input in the URL, as tRPC's link writes it); a longer one — an
 * MCP wait on very many workers — goes as a POST with the input in its body (the engine takes subscriptions by POST
 * since it takes method overrides, before it had any wait stream), well below Node's 16 KiB limit on a request's head.
 */
export const SUBSCRIPTION_URL_MAX = 4000;

/**
 * `fetch` for the event stream: a URL over SUBSCRIPTION_URL_MAX has its `input` moved into a JSON POST body (a
 * reconnect does the same: the stream's URL is unchanged). Pure string work: shared/ has no URL type.
 */
export function longInputAsPost(fetch: (input: unknown, init?: FetchInit) => Promise<unknown>) {
  return (input: unknown, init?: FetchInit) => {
    const url = String(input);
    const q = url.indexOf("?");
    if (url.length <= SUBSCRIPTION_URL_MAX || q < 0) return fetch(input, init);
    const params = url.slice(q + 1).split("&");
    const at = params.findIndex((p) => p.startsWith("input="));
    if (at < 0) return fetch(input, init);
    let body: string;
    try {
      body = decodeURIComponent(params[at]!.slice("input=".length).replace(/\+/g, " "));
    } catch {
      return fetch(input, init);
    }
    params.splice(at, 1);
    const headers = new g.Headers(init?.headers);
    headers.set("content-type", "application/json");
    return fetch(url.slice(0, q) + (params.length ? `?${params.join("&")}` : ""), { ...init, method: "POST", headers, body });
  };
}

/** Queries that may take long by design (a bounded wait): each is sent in a request of its own. */
const LONG_QUERIES: ReadonlySet<string> = new Set(["workers.wait"]);

/** A typed client of a running engine, naming its caller on every request. */
export function createEngineClient<R extends AnyTRPCRouter>(address: EngineAddress, client: ClientKind): TRPCClient<R> {
  const url = `${address.origin}${API_PATH}`;
  const headers = { authorization: `Bearer ${address.token}`, [CLIENT_HEADER]: client };
  // the links carry no transformer (the engine's router has none); typed for a router without one, then for R
  const link = splitLink<Plain>({
    condition: (op) => op.type === "subscription",
    true: httpSubscriptionLink<Plain, typeof EventSource>({
      url,
      EventSource,
      eventSourceOptions: { fetch: longInputAsPost(authedFetch(address, client)) as never },
    }),
    // A batch answers when its slowest call does: a query that waits (workers.wait) goes alone, never holding up others.
    false: splitLink<Plain>({
      condition: (op) => LONG_QUERIES.has(op.path),
      true: httpLink<Plain>({ url, headers, methodOverride: "POST", fetch: noCookies as never }),
      false: httpBatchLink<Plain>({ url, headers, maxItems: 10, methodOverride: "POST", fetch: noCookies as never }),
    }),
  });
  // A query whose request got no answer at all (no tRPC error, no response: the keep-alive connection it went out on was
  // one the engine had just closed as it stopped or restarted) is sent once more, on a fresh connection: a query changes
  // nothing, so sending it twice is safe. A mutation is never sent again (the engine may have acted on it); a client
  // that lost the engine (EngineLink) finds it again on a refused connection, which the resent query then gets.
  const resendUnanswered = retryLink<Plain>({
    retry: ({ op, error, attempts }) => op.type === "query" && attempts < 2 && error.data === undefined && error.shape === undefined,
  });
  return createTRPCClient<R>({ links: [resendUnanswered, link] as unknown as TRPCLink<R>[] });
}
