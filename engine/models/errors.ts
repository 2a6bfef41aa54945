/**
 * Model setup's errors, coded once (issue 27): every error setup raises is a SetupError with a `kind` (which part
 * refused) and typed `data` (the figures or names behind it), on top of the engine's error code (shared/errors.ts),
 * so the API maps it to a status, the CLI to an exit code and the MCP bridge to a result without matching messages.
 */
import { type ErrorCode, type ErrorData, type ErrorKind, OcwError } from "../../shared/errors";

/** The kinds of shared/errors.ts (ErrorKind): which part of setup refused. */
type SetupErrorKind = ErrorKind;
export type SetupErrorData = ErrorData;

export class SetupError extends OcwError {
  constructor(
    readonly kind: SetupErrorKind,
    message: string,
    readonly data: SetupErrorData = {},
    code: ErrorCode = "bad-input",
  ) {
    // the kind and data travel with the code (the API sends them as ocwKind / ocwData)
    super(code, message, { kind, data });
    this.name = "SetupError";
  }
}

/** Whether a thrown value is a setup error of one of these kinds (all kinds when none given). */
export function isSetupError(e: unknown, ...kinds: SetupErrorKind[]): e is SetupError {
  return e instanceof SetupError && (!kinds.length || kinds.includes(e.kind));
}
