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

/**
 * Which part refused, for errors a client acts on by kind rather than by code (issue 27): model setup's errors (each
 * setup error class has one) and the few conditions a client answers itself (`no-target`: the MCP bridge points to
 * setup_status). Sent beside the code as `ocwKind`, with the typed figures as `ocwData`; clients never match messages.
 */
export const ErrorKind = z.enum([
  "input", // a flag or field is wrong
  "model-source", // the model file / repo / URL cannot be read
  "metadata", // the GGUF metadata is not a model we can size
  "estimate", // the estimator was asked for something impossible
  "gguf", // the GGUF reader met a damaged file
  "download", // a download failed (network, checksum, size)
  "runtime", // the runtime binary cannot be found, installed or run
  "parallel", // a vLLM / SGLang plan's input is wrong
  "k8s", // a Kubernetes plan's input is wrong
  "serving", // a serving record / capture request is wrong
  "start", // a model start failed (data.failure: its classification, data.phase)
  "no-target", // no active target, and none was named
  "attempt-merged", // another attempt of the worker's task was merged: the task is done (data.workerId, data.merged, data.into, data.commit)
  "merges-cleanly", // a continue on the new base of a worker whose change merges as the base is now (data.workerId, data.into)
]);
export type ErrorKind = z.infer<typeof ErrorKind>;

/** An error's typed figures and names (no nested objects: every client can show them). */
export const ErrorData = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
export type ErrorData = z.infer<typeof ErrorData>;

/** An error with a code; its message says what is wrong and what to do. `detail`: its kind and typed data, when it has them. */
export class OcwError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly detail?: { kind: ErrorKind; data: ErrorData },
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

/** The kind and data of any thrown value (an OcwError that has them), else null. */
export function detailOf(err: unknown): { kind: ErrorKind; data: ErrorData } | null {
  return err instanceof OcwError && err.detail ? err.detail : null;
}

/** The code of any thrown value: an OcwError's own, else "internal". */
export function codeOf(err: unknown): ErrorCode {
  return err instanceof OcwError ? err.code : "internal";
}
