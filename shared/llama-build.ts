// "Build one": a llama-server built on the engine's machine by scripts/build-llama-server.sh, run by the engine as a
// job whose progress streams as `llama-build` events. One job at a time; the last one stays readable.
import { z } from "zod";

export const LlamaBuildJob = z.object({
  jobId: z.string(),
  state: z.enum(["running", "done", "failed", "cancelled"]),
  /** "cuda" when nvcc is on the engine's machine (GGML_CUDA=1), else a CPU build. */
  variant: z.enum(["cpu", "cuda"]),
  startedAt: z.number(),
  /** Milliseconds it ran, once ended. */
  ms: z.number().nullable(),
  /** The build's own last lines (its log, untrusted only in the sense of being a program's output), newest last. */
  lines: z.array(z.string()),
  /** Compile steps done and in all, when the build tool says (`[12/345]`). */
  progress: z.object({ done: z.number(), total: z.number() }).nullable(),
  /** The built llama-server (checked: it runs `--version`), once done. */
  path: z.string().nullable(),
  /** Why it failed, as the build said it (its `error:` line), and what to do. */
  failure: z.object({ cause: z.string(), remedy: z.string() }).nullable(),
});
export type LlamaBuildJob = z.infer<typeof LlamaBuildJob>;
