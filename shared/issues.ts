import type { z } from "zod";

/** The first problem of a failed parse, as one line a person can act on: `path: message`. */
export function firstIssue(error: z.ZodError, prefix = ""): string {
  const i = error.issues[0]!;
  const field = i.path.join(".");
  if (i.code === "invalid_type" && /received undefined$/.test(i.message) && field)
    return `${prefix}${field} is required (${i.message.replace(/^Invalid input: /, "")})`;
  return `${prefix}${field ? `${field}: ` : ""}${i.message}`;
}
