import { z } from "zod";

export const RungResult = z.object({
  rung: z.number().int(),
  name: z.string(),
  samples: z.number().int(),
  built: z.number().int(),
  honest: z.number().int(),
  builtRate: z.number(),
  honestRate: z.number(),
  workerIds: z.array(z.string()),
});
export type RungResult = z.infer<typeof RungResult>;

/** A target's standing on the ladder, written to packs/<target-slug>/grade.json. */
export const Grade = z.object({
  target: z.string(),
  model: z.string(),
  date: z.string(),
  samples: z.number().int(),
  rungs: z.array(RungResult),
  builtRate: z.number(),
  honestRate: z.number(),
});
export type Grade = z.infer<typeof Grade>;
