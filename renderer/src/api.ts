// The renderer's only channel to the engine: the engine's one API client, same-origin, the token in a header.
// No cookie: a browser sends cookies for 127.0.0.1 to every port, so a dev server a worker starts would get it.
// The page takes the token once (the Electron preload, or the URL `ocw serve` printed: `/?token=…` or `#token=…`),
// removes it from the address bar, keeps it in this tab's session storage (a reload keeps working; no other origin,
// port included, can read it) and sends it as `authorization` on every call and on the event stream, which is read
// with fetch (the `eventsource` package with a custom fetch), since the browser's EventSource cannot send headers.
import { connect, type EngineClient } from "../../engine/api/client";
import { takeToken } from "./token";

export type Client = EngineClient;
export { takeToken };

/** The engine's one client (engine/api/client.ts), on the page's own origin; no caller name: the page counts as a person. */
export const api: Client = connect({ origin: "", token: takeToken() }, undefined);

/** The message a person can act on, from a tRPC error (the engine formats it) or anything else. */
export function errorText(err: unknown): string {
  if (err && typeof err === "object" && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
