import { z } from "zod";
import { Decision } from "./permission";
import { WorkerSpec } from "./worker";

/** Inputs of the engine's control API, shared by every client (GUI, CLI, MCP bridge). */
export const WorkerRef = z.object({ workerId: z.string().min(1, "workerId is required") });
export const BatchRef = z.object({ batchId: z.string().min(1, "batchId is required") });
export const StartInput = WorkerSpec;
export const StartBatchInput = z.object({ tasks: z.array(WorkerSpec).min(1, "give at least one task").max(64, "at most 64 tasks per batch") });
export const SteerInput = WorkerRef.extend({ text: z.string().min(1, "the steer text is empty").max(20_000) });
export const StopInput = WorkerRef.extend({ reason: z.string().max(500).optional() });
export const ResumeInput = WorkerRef.extend({ message: z.string().max(20_000).optional() });
export const DecideInput = Decision;
export const EventsInput = z.object({ lastEventId: z.string().nullish() });
export const ListInput = z.object({ batchId: z.string().optional() }).optional();

/** The header a client names itself with; it becomes the `by` of its decisions. */
export const CLIENT_HEADER = "x-ocw-client";
export const API_PATH = "/trpc";
/** The engine's identity check (token required): answers `EngineHealth`. Clients compare it with the lock file. */
export const HEALTH_PATH = "/health";
export const EngineHealth = z.object({ ok: z.literal(true), pid: z.number().int(), instanceId: z.string() });
export type EngineHealth = z.infer<typeof EngineHealth>;

/** The lock file every client finds the engine through. */
export const EngineLock = z.object({
  pid: z.number().int(),
  /** The kernel's start time of `pid` (null where the OS gives none): a reused pid is not the engine. */
  startTime: z.string().nullable(),
  /** Random per engine process; its /health answers the same one. */
  instanceId: z.string().min(1),
  /** The process that restarts the engine when it dies (engines started by a client run under one). */
  supervisorPid: z.number().int().optional(),
  supervisorStartTime: z.string().nullable().optional(),
  port: z.number().int(),
  token: z.string(),
  version: z.string(),
  startedAt: z.number(),
});
export type EngineLock = z.infer<typeof EngineLock>;
