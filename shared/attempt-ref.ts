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

/** The reason the engine gives an attempt it stops for a winner: words for a person (the winner is `lostTo`, not this text). */
const STOPPED_FOR_WINNER = "another attempt of this task was built";
export const stoppedForWinnerReason = (winnerId: string) => `${STOPPED_FOR_WINNER} (${winnerId}); the others still running were stopped`;

/**
 * The winner a `stopped` state event of an older engine names only in its reason text (before `lostTo` was recorded):
 * read from that text, for logs written by those versions alone; null when the reason is no such stop.
 */
export function lostToFromOldReason(reason: string | null | undefined): string | null {
  if (!reason?.startsWith(STOPPED_FOR_WINNER)) return null;
  return /^ \(([^()\s]+)\)/.exec(reason.slice(STOPPED_FOR_WINNER.length))?.[1] ?? null;
}
