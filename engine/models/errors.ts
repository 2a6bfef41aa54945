/**
 * Model setup's errors, coded once (issue 27): every error setup raises is a SetupError with a `kind` (which part
 * refused) and typed `data` (the figures or names behind it), on top of the engine's error code (shared/errors.ts),
 * so the API maps it to a status, the CLI to an exit code and the MCP bridge to a result without matching messages.
 */
import { type ErrorCode, OcwError } from "../../shared/errors";

export type SetupErrorKind =
  | "input" // a flag or field is wrong
  | "model-source" // the model file / repo / URL cannot be read
  | "metadata" // the GGUF metadata is not a model we can size
  | "estimate" // the estimator was asked for something impossible
  | "gguf" // the GGUF reader met a damaged file
  | "download" // a download failed (network, checksum, size)
  | "runtime" // the runtime binary cannot be found, installed or run
  | "parallel" // a vLLM / SGLang plan's input is wrong
  | "k8s" // a Kubernetes plan's input is wrong
  | "serving"; // a serving record / capture request is wrong

export type SetupErrorData = Record<string, string | number | boolean | null>;

export class SetupError extends OcwError {
  constructor(
    readonly kind: SetupErrorKind,
    message: string,
    readonly data: SetupErrorData = {},
    code: ErrorCode = "bad-input",
  ) {
    super(code, message);
    this.name = "SetupError";
  }
}

/** Whether a thrown value is a setup error of one of these kinds (all kinds when none given). */
export function isSetupError(e: unknown, ...kinds: SetupErrorKind[]): e is SetupError {
  return e instanceof SetupError && (!kinds.length || kinds.includes(e.kind));
}
