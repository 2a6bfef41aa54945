// The renderer's only channel to the engine: the shared tRPC contract, same-origin, the token in a header. The one
// client factory (shared/api-client.ts, also behind engine/api/client.ts): the sandboxed page bundles nothing from
// engine/ (e2e/security.spec.ts), and it names itself "gui", so its decisions count as a person's.
// No cookie: a browser sends cookies for 127.0.0.1 to every port, so a dev server a worker starts would get it.
// The page takes the token once (the Electron preload, or the URL `ocw serve` printed: `/?token=…` or `#token=…`),
// removes it from the address bar, keeps it in this tab's session storage (a reload keeps working; no other origin,
// port included, can read it) and sends it as `authorization` on every call and on the event stream, which is read
// with fetch (the `eventsource` package with a custom fetch), since the browser's EventSource cannot send headers.
import type { TRPCClient } from "@trpc/client";
import { createEngineClient } from "../../shared/api-client";
import { engineErrorText } from "../../shared/words";
import type { AppRouter } from "../../engine/api/router";
import { takeToken } from "./token";

type Client = TRPCClient<AppRouter>;
export { takeToken };

/** Same origin (""), the page's token, and "gui": the engine records this page's decisions as a person's. */
export const api: Client = createEngineClient<AppRouter>({ origin: "", token: takeToken() }, "gui");

/**
 * The message a person can act on, from a tRPC error (the engine formats it) or anything else; a request that got no
 * answer ("Failed to fetch") says the engine did not answer and what to do.
 */
export function errorText(err: unknown): string {
  if (err && typeof err === "object" && "message" in err) return engineErrorText(String((err as { message: unknown }).message));
  return engineErrorText(String(err));
}
