// The renderer's only channel to the engine: the shared tRPC contract, same-origin (the cookie authenticates).
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink, type TRPCClient } from "@trpc/client";
import type { AppRouter } from "../../engine/api/router";

export type Client = TRPCClient<AppRouter>;

export const api: Client = createTRPCClient<AppRouter>({
  links: [
    splitLink({
      condition: (op) => op.type === "subscription",
      true: httpSubscriptionLink({ url: "/trpc" }),
      false: httpBatchLink({ url: "/trpc", maxItems: 10, methodOverride: "POST" }),
    }),
  ],
});

/** The message a person can act on, from a tRPC error (the engine formats it) or anything else. */
export function errorText(err: unknown): string {
  if (err && typeof err === "object" && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
