import { z } from "zod";

export const MAX_ATTEMPTS = 16;

/** What a worker of an attempt group carries: its group, its place in it, and whether every attempt runs to the end. */
export const AttemptRef = z.object({
  groupId: z.string().min(1),
  /** 1-based. */
  index: z.number().int().min(1),
  of: z.number().int().min(1).max(MAX_ATTEMPTS),
  /** The person asked for every attempt to run to its verdict (`--all-attempts`): nothing is stopped. */
  all: z.boolean().default(false),
});
export type AttemptRef = z.infer<typeof AttemptRef>;
