// opencode's events, typed by the SDK's own event union (@opencode-ai/sdk/v2 `Event`, the same version as the
// binary: 1.18.33), turned into the engine's worker events. The stream itself is read by the harness; everything it
// hands on goes through `opencodeEvent` first, so the engine only ever sees the typed union.
import type { Event, Message, Part, PermissionRequest, QuestionRequest } from "@opencode-ai/sdk/v2";
import type { PermissionAsk } from "../../shared/permission";
import type { EngineEvent } from "../../shared/events";
import type { TranscriptPart, Worker, WorkerEventBody } from "../../shared/worker";
import { describeError } from "../serving";

/** The event types the engine acts on; every other type is dropped at the boundary. */
const HANDLED = [
  "session.created",
  "permission.asked",
  "permission.replied",
  "question.asked",
  "question.replied",
  "question.rejected",
  "message.part.updated",
  "message.part.delta",
  "message.updated",
  "session.status",
  "session.error",
  "session.idle",
] as const;
type Handled = (typeof HANDLED)[number];
const handled = new Set<string>(HANDLED);

type WithoutId<E> = E extends unknown ? Omit<E, "id"> : never;
/** One event of opencode's stream, as the SDK types it (its `id` is not used), with the directory it came from. */
export type OpencodeEvent = WithoutId<Extract<Event, { type: Handled }>> & { directory?: string };

/**
 * The head of a `/global/event` data line as opencode writes it: `{"directory":…,"project":…,"payload":{"id":…,"type":"…"`
 * (directory, project and id each optional), strings read with their escapes.
 */
const ENVELOPE_HEAD = /^\{(?:"directory":"(?:[^"\\]|\\.)*",)?(?:"project":"(?:[^"\\]|\\.)*",)?"payload":\{(?:"id":"(?:[^"\\]|\\.)*",)?"type":"([^"\\]*)"/;

/**
 * Whether a raw `/global/event` data line may matter to the engine, told before parsing it: false only when its head
 * names a type that `opencodeEvent` drops (the `sync` duplicates, `plugin.added`, `session.updated`, …, three quarters
 * of the stream) and is not `server.connected` (the stream's own). A line that begins any other way is parsed.
 */
export function mayHandle(data: string): boolean {
  const m = ENVELOPE_HEAD.exec(data);
  return !m || m[1] === "server.connected" || handled.has(m[1]!);
}

/**
 * The typed adapter: a raw payload from the stream (or a fake) becomes an OpencodeEvent when its type is one the
 * engine handles and it carries a properties object; anything else is null. Field access stays defensive below: the
 * SDK's types describe what opencode sends, and a test double sends the fields the engine reads.
 */
export function opencodeEvent(raw: unknown, directory?: string): OpencodeEvent | null {
  const p = raw as { type?: unknown; properties?: unknown } | null;
  if (!p || typeof p.type !== "string" || !handled.has(p.type)) return null;
  if (!p.properties || typeof p.properties !== "object") return null;
  return { ...(directory ? { directory } : {}), type: p.type, properties: p.properties } as OpencodeEvent;
}

/** The opencode session an event belongs to. */
function sessionOf(e: OpencodeEvent): string | undefined {
  switch (e.type) {
    case "message.part.updated":
      return e.properties.sessionID ?? e.properties.part?.sessionID;
    case "message.updated":
      return e.properties.sessionID ?? e.properties.info?.sessionID;
    case "session.created":
      return e.properties.sessionID ?? e.properties.info?.id;
    default:
      return e.properties.sessionID;
  }
}

/** The tool call an ask holds (opencode's callID), kept when it is a plain id. */
const callOf = (p: PermissionRequest | QuestionRequest): { callId?: string } => {
  const id = p.tool?.callID;
  return typeof id === "string" && id.length <= 200 ? { callId: id } : {};
};

export function permissionAsk(workerId: string, p: PermissionRequest): PermissionAsk {
  const md = (p.metadata ?? {}) as Record<string, unknown>;
  // A search names its root (absent: the worker's own folder); the glob or regex itself is in `patterns`.
  const search = p.permission === "glob" || p.permission === "grep";
  const what = search ? String(md.path ?? ".") : String(md.command ?? md.filepath ?? md.url ?? (p.patterns ?? []).join(" ") ?? p.permission);
  return {
    id: p.id,
    workerId,
    sessionId: p.sessionID,
    kind: "permission",
    tool: String(p.permission),
    what,
    ...callOf(p),
    ...(typeof md.diff === "string" ? { diff: md.diff.slice(0, 100_000) } : {}),
    ...(p.permission === "edit" ? editPaths(md, p.patterns ?? []) : {}),
    patterns: p.patterns ?? [],
    always: p.always ?? [],
    createdAt: Date.now(),
    status: "pending",
  };
}

/**
 * The files of an edit ask that names several (opencode's apply_patch: `metadata.files[]` with each `filePath` and a
 * move's `movePath`, absolute — its `patterns`, relative to opencode's worktree, leave the move's target out): all of
 * them, so the engine inspects each by real path. Absent for an ask of one file (edit, write), whose `filepath` is `what`.
 */
function editPaths(md: Record<string, unknown>, patterns: string[]): { paths?: string[] } {
  const paths = new Set<string>();
  for (const f of Array.isArray(md.files) ? md.files : []) {
    const file = (f ?? {}) as Record<string, unknown>;
    for (const k of ["filePath", "movePath"]) if (typeof file[k] === "string" && file[k]) paths.add(file[k] as string);
  }
  // The absolute paths when opencode gave them; else its patterns (relative to the workspace), when there are several.
  if (!paths.size && patterns.length > 1) for (const p of patterns) paths.add(p);
  return paths.size ? { paths: [...paths] } : {};
}

export function questionAsk(workerId: string, p: QuestionRequest): PermissionAsk {
  const questions = (p.questions ?? []).map((q) => ({
    question: String(q.question ?? ""),
    header: q.header,
    options: (q.options ?? []).map((o) => ({ label: String(o.label), description: o.description })),
    multiple: q.multiple,
  }));
  return {
    id: p.id,
    workerId,
    sessionId: p.sessionID,
    kind: "question",
    tool: "question",
    what: questions.map((q) => q.question).join(" / "),
    ...callOf(p),
    patterns: [],
    always: [],
    questions,
    createdAt: Date.now(),
    status: "pending",
  };
}

/** Characters of one tool call's output kept in the worker's log: its head and its tail, the length cut between recorded. */
const TOOL_OUTPUT_KEEP = 20_000;
/** Characters kept of each string in a tool call's input (a written file's content, a long command). */
const TOOL_INPUT_STRING_KEEP = 20_000;
/** Characters kept of one finished text or reasoning part. */
const TEXT_KEEP = 200_000;

/** `s` within `keep` characters: its head (60 %) and tail, with the number of characters cut between them; never half a surrogate pair. */
function headTail(s: string, keep: number): { text: string; cut: number } {
  if (s.length <= keep) return { text: s, cut: 0 };
  let head = Math.ceil(keep * 0.6);
  if (/[\ud800-\udbff]/.test(s[head - 1] ?? "")) head--;
  let tail = s.length - (keep - head);
  if (/[\udc00-\udfff]/.test(s[tail] ?? "")) tail++;
  const cut = tail - head;
  return { text: `${s.slice(0, head)}\n…[${cut} characters cut]…\n${s.slice(tail)}`, cut };
}

function keptOutput(output: string): { output: string; outputCut?: number } {
  const { text, cut } = headTail(output, TOOL_OUTPUT_KEEP);
  return cut ? { output: text, outputCut: cut } : { output: text };
}

/** A tool call's input with every long string kept as head and tail (objects and arrays walked, 8 levels deep at most). */
function capStrings(v: unknown, keep: number, depth = 0): unknown {
  if (typeof v === "string") return headTail(v, keep).text;
  if (depth >= 8 || !v || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.slice(0, 1000).map((x) => capStrings(x, keep, depth + 1));
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, capStrings(x, keep, depth + 1)]));
}

/**
 * What a finished part adds to the worker's log: the transcript part, and a failed tool call (an unknown tool or
 * unparsable arguments come back as opencode's "invalid" tool). Streaming text is not persisted until it ends.
 */
export function translatePart(part: Part): { part: TranscriptPart | null; toolFailed?: { tool: string; error: string } } {
  if (!part?.id || !part.type) return { part: null };
  if (part.type === "text" || part.type === "reasoning") {
    if (!part.time?.end) return { part: null }; // partial text arrives as deltas; persist the finished part once
    return { part: { partId: part.id, messageId: part.messageID, kind: part.type, text: headTail(String(part.text ?? ""), TEXT_KEEP).text } };
  }
  if (part.type !== "tool") return { part: null };
  const st = (part.state ?? {}) as { status?: string; input?: Record<string, unknown>; output?: unknown; error?: unknown };
  if (st.status === "pending") return { part: null };
  const t: TranscriptPart = {
    partId: part.id,
    messageId: part.messageID,
    kind: "tool",
    tool: part.tool,
    ...(typeof part.callID === "string" && part.callID.length <= 200 ? { callId: part.callID } : {}),
    status: st.status as "running" | "completed" | "error",
    input: capStrings(st.input, TOOL_INPUT_STRING_KEEP) as Record<string, unknown> | undefined,
    ...(st.output !== undefined ? keptOutput(String(st.output)) : {}),
    ...(st.error !== undefined ? { error: String(st.error).slice(0, 4000) } : {}),
  };
  // A call its session's stop ended ("Tool execution aborted", notes/opencode.md) did not fail: the worker was stopped.
  const stopped = st.status === "error" && st.error === "Tool execution aborted";
  const failed = (st.status === "error" && !stopped) || (part.tool === "invalid" && st.status === "completed");
  return failed
    ? { part: t, toolFailed: { tool: String(st.input?.tool ?? part.tool), error: String(st.error ?? st.output ?? "").slice(0, 1000) } }
    : { part: t };
}

/** An assistant message's usage, or null for a user message or one without token counts yet. */
function usageOf(info: Message): { id: string; usage: { input: number; output: number; reasoning: number; cost: number } } | null {
  if (info?.role !== "assistant" || !info.tokens) return null;
  return {
    id: info.id,
    usage: { input: info.tokens.input ?? 0, output: info.tokens.output ?? 0, reasoning: info.tokens.reasoning ?? 0, cost: info.cost ?? 0 },
  };
}

/** A streamed piece of a part's text, published (not logged) to clients. */
interface Delta {
  workerId: string;
  partId: string;
  field: string;
  delta: string;
}

/**
 * Streaming text is coalesced per part and published every `everyMs` (50 ms): a model streams a token per event, and
 * 16 workers at once would otherwise push ~800 events a second to every subscriber (the dashboard's frame rate pays).
 */
export class DeltaCoalescer {
  private readonly pending = new Map<string, Delta>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly publish: (d: Delta) => void,
    private readonly everyMs = 50,
  ) {}

  add(d: Delta): void {
    const key = `${d.partId}\u0000${d.field}`;
    const pending = this.pending.get(key);
    if (pending) pending.delta += d.delta;
    else this.pending.set(key, { ...d });
    this.timer ??= setTimeout(() => this.flush(), this.everyMs);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Publishes what is buffered now (a finished part is persisted after its deltas, never before). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = [...this.pending.values()];
    this.pending.clear();
    for (const d of batch) this.publish(d);
  }
}

const STREAMING_CAP = 256 * 1024;

/**
 * What the translator needs of the worker registry (`engine/registry/registry.ts` satisfies it structurally, so the
 * harness never imports the workers' module: workers → harness, one way).
 */
interface TranslateRegistry {
  readonly workers: ReadonlyMap<string, Worker>;
  readonly sessions: Map<string, string>;
  rt(id: string): { heard(): void; sessionError(message: string): void; replies?: { part(part: Part): void; message(info: Message): void } };
  transient(event: EngineEvent): void;
  safeRecord(workerId: string, body: WorkerEventBody): void;
}

/** Where translated events go: the worker registry and the services that act on them. */
interface TranslateSinks {
  registry: TranslateRegistry;
  ask: (workerId: string, ask: PermissionAsk) => void;
  askGone: (workerId: string, askId: string, reply: string) => void;
  usage: (workerId: string, messageId: string, usage: { input: number; output: number; reasoning: number; cost: number }) => void;
  /**
   * opencode retries a failed model call (the engine checks whether the model server is gone); `next` is when it will
   * try again (epoch ms: a provider's Retry-After, which opencode honours however long).
   */
  retry: (workerId: string, message: string, next: number | null) => void;
  /** The worker's root session went idle. */
  idle: (workerId: string) => void;
}

/**
 * Turns opencode's typed events into worker events: finished parts and failed tool calls into the log, streamed text
 * into coalesced deltas, asks and their answers to the approvals queue, usage to the budgets, retries and idles to the
 * engine. Sub-agent sessions count as their parent's worker.
 */
export class Translator {
  readonly deltas: DeltaCoalescer;
  /**
   * Text of parts still streaming, per worker (a finished part is logged and leaves this): a transcript read
   * mid-stream (a page opened or reloaded while a worker writes) shows the text so far, not only what comes next.
   * The tail of a part is kept past STREAMING_CAP characters.
   */
  readonly streaming = new Map<string, Map<string, { part: TranscriptPart; length: number }>>();

  /**
   * Where each streamed part began (its `after`), by worker and part, until the part is logged: it outlives the text so
   * far, which an idle drops, because a stopped session's last part is finished after its idle. Bounded (oldest out).
   */
  private readonly began = new Map<string, number>();

  /** The `workdir` of bash calls in flight, by call id (an ask names its call, not its arguments; "" when none). */
  private readonly workdirs = new Map<string, string>();
  /**
   * Bash asks that came before their call's arguments (opencode publishes the running part and the ask concurrently):
   * held until the arguments arrive, so the ask shows the command's folder, 500 ms at most.
   */
  private readonly held = new Map<string, { workerId: string; ask: PermissionAsk; callID: string; timer: NodeJS.Timeout }>();

  constructor(private readonly sinks: TranslateSinks) {
    // The text so far grows as pieces are published (not as they arrive), so it and the stream never overlap.
    this.deltas = new DeltaCoalescer((d) => {
      const sp = this.streaming.get(d.workerId)?.get(d.partId) ?? this.streamingPart(d.workerId, d.partId, "", "text", "");
      const at = sp.length;
      sp.length += d.delta.length;
      const text = (sp.part.text ?? "") + d.delta;
      sp.part.text = text.length > STREAMING_CAP ? "…" + text.slice(text.length - STREAMING_CAP) : text;
      sinks.registry.transient({ type: "delta", ...d, at, ts: Date.now() });
    });
  }

  /** Remembers a running bash call's workdir (a bounded map), and lets its held ask go with it. */
  private noteWorkdir(part: Extract<Part, { type: "tool" }>): void {
    const st = part.state as { status?: string; input?: Record<string, unknown> };
    if (st.status === "completed" || st.status === "error") {
      this.workdirs.delete(part.callID);
      for (const [id, h] of this.held) if (h.callID === part.callID) this.release(id);
      return;
    }
    if (part.tool !== "bash" || st.status !== "running") return;
    const wd = st.input?.workdir;
    if (this.workdirs.size >= 1000) this.workdirs.delete(this.workdirs.keys().next().value!);
    this.workdirs.set(part.callID, typeof wd === "string" ? wd : "");
    for (const [id, h] of this.held) if (h.callID === part.callID) this.release(id);
  }

  /** A held ask goes to the approvals queue, with its command's folder when known by now. */
  private release(askId: string): void {
    const h = this.held.get(askId);
    if (!h) return;
    this.held.delete(askId);
    clearTimeout(h.timer);
    const workdir = this.workdirs.get(h.callID);
    this.sinks.ask(h.workerId, workdir ? { ...h.ask, workdir } : h.ask);
  }

  /** A part that begins streaming, placed after the worker's latest logged event (a steer sent from now on comes after it). */
  private streamingPart(workerId: string, partId: string, messageId: string | undefined, kind: "text" | "reasoning", text: string) {
    let parts = this.streaming.get(workerId);
    if (!parts) this.streaming.set(workerId, (parts = new Map()));
    const key = `${workerId}\0${partId}`;
    const after = this.began.get(key) ?? this.sinks.registry.workers.get(workerId)?.lastSeq;
    if (after !== undefined && !this.began.has(key)) {
      if (this.began.size >= 4096) this.began.delete(this.began.keys().next().value!);
      this.began.set(key, after);
    }
    const sp = {
      part: { partId, messageId: messageId ?? "", kind, text, ...(after !== undefined ? { after } : {}) } satisfies TranscriptPart,
      length: text.length,
    };
    parts.set(partId, sp);
    return sp;
  }

  handle(e: OpencodeEvent): void {
    const reg = this.sinks.registry;
    if (e.type === "session.created") {
      const parent = e.properties.info?.parentID;
      if (parent && reg.sessions.has(parent)) reg.sessions.set(e.properties.info.id, reg.sessions.get(parent)!);
      return;
    }
    const sid = sessionOf(e);
    const workerId = sid ? reg.sessions.get(sid) : undefined;
    const w = workerId ? reg.workers.get(workerId) : undefined;
    if (!workerId || !w) return;
    const isRoot = sid === w.sessionId;
    reg.rt(workerId).heard();
    switch (e.type) {
      case "permission.asked": {
        const ask = permissionAsk(workerId, e.properties);
        const callID = e.properties.tool?.callID;
        if (!callID || ask.tool !== "bash") return this.sinks.ask(workerId, ask);
        const workdir = this.workdirs.get(callID);
        if (workdir !== undefined) return this.sinks.ask(workerId, workdir ? { ...ask, workdir } : ask);
        const timer = setTimeout(() => this.release(ask.id), 500);
        timer.unref?.();
        this.held.set(ask.id, { workerId, ask, callID, timer });
        return;
      }
      case "question.asked":
        return this.sinks.ask(workerId, questionAsk(workerId, e.properties));
      case "permission.replied":
        this.release(e.properties.requestID);
        return this.sinks.askGone(workerId, e.properties.requestID, e.properties.reply);
      case "question.replied":
        return this.sinks.askGone(workerId, e.properties.requestID, "once");
      case "question.rejected":
        return this.sinks.askGone(workerId, e.properties.requestID, "reject");
      case "message.part.updated": {
        const part = e.properties.part;
        if (part?.type === "tool") this.noteWorkdir(part);
        if (this.deltas.size && (part as { time?: { end?: number } })?.time?.end) this.deltas.flush();
        const { part: t, toolFailed } = translatePart(part);
        if (t) {
          // A streamed part keeps its place: where it began, not where it ended (a steer sent meanwhile comes after it).
          const key = `${workerId}\0${t.partId}`;
          const began = this.began.get(key);
          if (began !== undefined && t.kind !== "tool") t.after = began;
          this.began.delete(key);
          this.streaming.get(workerId)?.delete(t.partId);
        }
        // Text comes as deltas (a user's text part never does); a reasoning part is named here before its deltas.
        else if (part?.type === "reasoning" && part.id && !this.streaming.get(workerId)?.has(part.id))
          this.streamingPart(workerId, part.id, part.messageID, "reasoning", "");
        if (isRoot) reg.rt(workerId).replies?.part(part);
        if (toolFailed) reg.safeRecord(workerId, { type: "tool.failed", ...toolFailed });
        if (t) reg.safeRecord(workerId, { type: "part", part: t });
        return;
      }
      case "message.part.delta": {
        const p = e.properties;
        if (typeof p.delta === "string") this.deltas.add({ workerId, partId: p.partID, field: p.field, delta: p.delta });
        return;
      }
      case "message.updated": {
        if (isRoot) reg.rt(workerId).replies?.message(e.properties.info);
        const u = usageOf(e.properties.info);
        if (u) this.sinks.usage(workerId, u.id, u.usage);
        return;
      }
      case "session.status": {
        const st = e.properties.status;
        if (st?.type === "retry") {
          const message = String(st.message ?? "");
          reg.transient({ type: "retry", workerId, attempt: st.attempt ?? 0, message, ts: Date.now() });
          this.sinks.retry(workerId, message, typeof st.next === "number" && Number.isFinite(st.next) ? st.next : null);
        }
        return;
      }
      case "session.error": {
        if (!isRoot) return;
        const err = e.properties.error;
        // Aborts come from stop/budget/shutdown, and their events can trail a resume: never an error of the new turn.
        if (err?.name === "MessageAbortedError") return;
        reg.rt(workerId).sessionError(describeError(err, w?.targetId));
        return;
      }
      case "session.idle":
        if (!isRoot) return;
        this.streaming.delete(workerId);
        this.sinks.idle(workerId);
        return;
    }
  }
}
