import type { PermissionRequest, QuestionRequest } from "@opencode-ai/sdk/v2";

/**
 * The engine's typed port to opencode: every call the engine makes of a running `opencode serve`, each returning a
 * value or a typed failure (never throwing). The real one is `httpPort` (http-port.ts, the only module that calls
 * opencode's HTTP API); the unit tests' fake (test/fixtures/fake-harness.ts) implements this same interface. opencode's event
 * stream is the server's `event` emitter (harness.ts), typed by translate.ts.
 */
export interface OpencodePort {
  /** A new session whose tools work in `directory`. */
  createSession(a: { directory: string; title: string }): Promise<PortResult<{ id: string; projectID: string }>>;
  /** Sends a prompt without waiting for the turn (a busy session stores it and injects it at its next step). */
  prompt(a: { sessionID: string; directory?: string; agent: string; model?: PortModel; text: string }): Promise<PortResult<void>>;
  /** Aborts the session's turn (its bash children end with it). */
  abort(a: { sessionID: string; directory?: string }): Promise<PortResult<void>>;
  /** The status of every session with a turn under way in `directory`, by session id (an idle one may be absent). */
  sessionStatus(a: { directory?: string }): Promise<PortResult<Record<string, { type: string }>>>;
  /** The session's messages, oldest first. */
  messages(a: { sessionID: string; directory?: string }): Promise<PortResult<TurnMessage[]>>;
  /** Answers a permission ask; `signal` bounds the call (no limit of its own). */
  replyPermission(a: { requestID: string; directory?: string; reply: "once" | "reject"; message?: string }, o?: CallOptions): Promise<PortResult<void>>;
  /** Answers a question: one array of chosen labels or free text per question. */
  replyQuestion(a: { requestID: string; directory?: string; answers: string[][] }, o?: CallOptions): Promise<PortResult<void>>;
  rejectQuestion(a: { requestID: string; directory?: string }, o?: CallOptions): Promise<PortResult<void>>;
  /** The permission asks opencode holds open in `directory`. */
  permissions(a: { directory?: string }): Promise<PortResult<PermissionRequest[]>>;
  /** The questions opencode holds open in `directory`. */
  questions(a: { directory?: string }): Promise<PortResult<QuestionRequest[]>>;
  /** Deletes the session and all opencode stored of it (its messages, parts and events in opencode's database). */
  deleteSession(a: { sessionID: string; directory?: string }): Promise<PortResult<void>>;
  /** Disposes opencode's instance for `directory` (project state, LSP, tools); the session stays on disk. */
  dispose(a: { directory: string }): Promise<PortResult<void>>;
}

interface CallOptions {
  signal?: AbortSignal;
}

/** A pool endpoint's provider and model (servers.ts modelFor); absent: the target's one provider. */
interface PortModel {
  providerID: string;
  modelID: string;
}

/** An assistant (or user) message of a session and its parts, as the engine reads it. */
export interface TurnMessage {
  info: { role: string; time?: { completed?: number }; error?: { name?: string; data?: { message?: string } } };
  parts: { type: string; text?: string }[];
}

/**
 * Why a call failed. `no-answer`: no HTTP answer at all (opencode down, hung, past the call's limit, or an answer whose
 * body could not be read): opencode may or may not have acted on it. `status`: opencode answered with an error status.
 */
type PortFailure = { kind: "no-answer"; error: unknown } | { kind: "status"; status: number };

export type PortResult<T> = { ok: true; value: T } | ({ ok: false } & PortFailure);

/** A failure in words, for a message to a person. */
export function failureText(f: PortFailure): string {
  return f.kind === "status" ? `HTTP ${f.status}` : noAnswer(f.error);
}

/** What a call that got no HTTP answer failed with. */
export function noAnswer(error: unknown): string {
  const e = error as { name?: string; message?: string; cause?: { message?: string; code?: string } } | undefined;
  if (e?.name === "TimeoutError") return "no answer within the time limit";
  return [e?.message ?? (e ? String(e) : "connection failed"), e?.cause?.code ?? e?.cause?.message].filter(Boolean).join(": ");
}

/** The value of a call, or undefined when it failed (for callers where a failure means "nothing known"). */
export const okValue = <T>(r: PortResult<T>): T | undefined => (r.ok ? r.value : undefined);
