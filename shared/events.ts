import { z } from "zod";
import { LlamaBuildJob } from "./llama-build";
import { SetupJob } from "./setup";
import { WorkerEvent } from "./worker";

/** Events that are not part of any worker's log: streaming text, the health of opencode servers and model servers, engine notices. */
export const TransientEvent = z.discriminatedUnion("type", [
  // `at`: where this piece starts in the part's streamed text, so a client that also read the transcript (which holds
  // the text streamed so far) applies each piece once.
  z.object({
    type: z.literal("delta"),
    workerId: z.string(),
    partId: z.string(),
    field: z.string(),
    delta: z.string(),
    at: z.number().int().nonnegative().optional(),
    ts: z.number(),
  }),
  z.object({ type: z.literal("retry"), workerId: z.string(), attempt: z.number(), message: z.string(), ts: z.number() }),
  /** A target's opencode server (`opencode serve`, the workers' harness; not the model server) starting, ready or down. */
  z.object({
    type: z.literal("opencode"),
    targetId: z.string(),
    status: z.enum(["starting", "ready", "down", "stopped"]),
    message: z.string().optional(),
    ts: z.number(),
  }),
  /** The model server of a target answered (healthy) or stopped answering; sent when it changes. */
  z.object({ type: z.literal("model"), targetId: z.string(), healthy: z.boolean(), message: z.string().optional(), ts: z.number() }),
  z.object({
    type: z.literal("notice"),
    level: z.enum(["info", "warn", "error"]),
    message: z.string(),
    /**
     * The message is the engine's own words (its code spans, "`ocw resume w-1`", are shown as code): any text from
     * elsewhere in it is JSON-quoted (shared/untrusted.ts). Absent: it may hold a worker's, a model's or a platform's words.
     */
    engineWords: z.literal(true).optional(),
    ts: z.number(),
  }),
  /** A model start on the engine's machine (setup.start): the whole job after each change (phases, progress, checks). */
  z.object({ type: z.literal("setup"), job: SetupJob, ts: z.number() }),
  /** A llama-server build on the engine's machine (setup.buildLlama): the whole job after each change. */
  z.object({ type: z.literal("llama-build"), job: LlamaBuildJob, ts: z.number() }),
  /** A batch changed beside its workers' events: a task started after its dependencies, was skipped, or the integration ran. */
  z.object({ type: z.literal("batch"), batchId: z.string(), ts: z.number() }),
  /** The cursor a client resumed from can no longer be replayed (engine restarted, or too old): refetch state. */
  z.object({ type: z.literal("reset"), ts: z.number() }),
]);
export type TransientEvent = z.infer<typeof TransientEvent>;

export const EngineEvent = z.union([WorkerEvent, TransientEvent]);
export type EngineEvent = z.infer<typeof EngineEvent>;

/** An event as delivered to subscribers: `cursor` is `<engine epoch>:<sequence>`; pass the last one back to resume. */
export interface Delivered {
  cursor: string;
  event: EngineEvent;
}
