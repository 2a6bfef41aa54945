import { z } from "zod";

/**
 * The engine's error model: every error a person or a client can act on carries one of these codes, mapped once to
 * an HTTP/tRPC status (the API), an MCP `isError` result with the message (the bridge) and a CLI exit code.
 */
export const ErrorCode = z.enum([
  "bad-input", // the request is wrong: fix it as the message says
  "not-found", // an unknown worker, ask, grant, target or batch id
  "conflict", // the state forbids it now (merge conflict, not pending, not finished)
  "unavailable", // something the engine needs is down (a model server, opencode, the sandbox)
  "internal", // a bug: the message and the engine log say more
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ERROR_MAP: Record<
  ErrorCode,
  { trpc: "BAD_REQUEST" | "NOT_FOUND" | "CONFLICT" | "PRECONDITION_FAILED" | "INTERNAL_SERVER_ERROR"; http: number; exit: number }
> = {
  "bad-input": { trpc: "BAD_REQUEST", http: 400, exit: 2 },
  "not-found": { trpc: "NOT_FOUND", http: 404, exit: 2 },
  conflict: { trpc: "CONFLICT", http: 409, exit: 1 },
  unavailable: { trpc: "PRECONDITION_FAILED", http: 412, exit: 3 },
  internal: { trpc: "INTERNAL_SERVER_ERROR", http: 500, exit: 1 },
};

/** An error with a code; its message says what is wrong and what to do. */
export class OcwError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "OcwError";
  }
}

/** Bad input, an unknown id, or a state that forbids the request: the message says what to do. */
export class InputError extends OcwError {
  constructor(message: string, code: ErrorCode = "bad-input") {
    super(code, message);
    this.name = "InputError";
  }
}

/** The code of any thrown value: an OcwError's own, else "internal". */
export function codeOf(err: unknown): ErrorCode {
  return err instanceof OcwError ? err.code : "internal";
}
