import { z } from "zod";
import { EnvVarName, Target, TargetCheck } from "./target";

/**
 * Model setup mutations on the engine's API (the wizard, and any client): capture a running server or add an API
 * provider. The engine verifies the endpoint first and saves the target only after that verify — or, when the person
 * chooses it explicitly, saves it as unverified (no checks run, shown as such everywhere).
 */

const Url = z.string().trim().min(1, "a server URL is required, like http://127.0.0.1:8080/v1").url("a server URL like http://127.0.0.1:8080/v1 (http or https)");
const TargetId = z.string().trim().regex(/^[a-z0-9][a-z0-9._-]{0,79}$/, "a target id of lowercase letters, digits, '.', '_' or '-' (at most 80)");

const Common = {
  /** Name of the environment variable (in the engine's environment) that holds the key; never the key itself. */
  apiKeyEnv: EnvVarName.optional(),
  slots: z.number().int().min(1, "slots must be ≥ 1").max(256, "at most 256 slots").optional(),
  /** Target id; default derived from the model and port. */
  id: TargetId.optional(),
  /** Make an underpowered target (reachable, but it failed the coding task or the tool call) active anyway. */
  acceptUnderpowered: z.boolean().default(false),
  /** The person's choice: save (and use) it without running verify. Recorded as unverified. */
  unverified: z.boolean().default(false),
};

export const SetupCaptureInput = z.object({
  url: Url,
  /** The served model to capture (default: the first the server lists). */
  model: z.string().trim().min(1).optional(),
  /** Context each slot must have (checked against what the server reports). */
  ctx: z.number().int().min(1024, "the context per slot must be ≥ 1024 tokens").optional(),
  ...Common,
});
export type SetupCaptureInput = z.input<typeof SetupCaptureInput>;

export const SetupProviderInput = z.object({
  url: Url,
  model: z.string().trim().min(1, "the provider's model id is required"),
  apiKeyEnv: EnvVarName,
  slots: Common.slots,
  id: Common.id,
  acceptUnderpowered: Common.acceptUnderpowered,
  unverified: Common.unverified,
});
export type SetupProviderInput = z.input<typeof SetupProviderInput>;

export const SetupOutcome = z.object({
  /** "unverified": saved by the person's choice without checks. */
  outcome: z.enum(["built", "underpowered", "cannot-build", "unverified"]),
  /** Whether a target was written (cannot-build saves nothing). */
  saved: z.boolean(),
  active: z.boolean(),
  /** The target as saved, or as it would have been (cannot-build). */
  target: Target,
  checks: z.array(TargetCheck),
  summary: z.string(),
  /** What the server itself reported (engine, per-slot context, slots). */
  observed: z.object({ engine: z.string(), totalSlots: z.number().nullable(), perSlotCtx: z.number().nullable() }).nullable(),
  ms: z.number(),
});
export type SetupOutcome = z.infer<typeof SetupOutcome>;
