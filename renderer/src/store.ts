// The UI's state: one zustand store fed by the engine's event stream (events over polling; `reset` → refetch).
import { useMemo } from "react";
import { create } from "zustand";
import type { EngineEvent } from "../../shared/events";
import type { DecidedBy, DecisionKind, PermissionAsk } from "../../shared/permission";
import type { Target } from "../../shared/target";
import { showUntrusted } from "../../shared/untrusted";
import { isAtRest, reduceWorker, type TranscriptPart, transcriptPlace, type Worker, type WorkerEvent } from "../../shared/worker";
import { api, errorText } from "./api";
import { freezeClock } from "./format";

export type Status = Awaited<ReturnType<typeof api.status.query>>;
/** A row of the transcript that is not the model's: a steer sent, an ask opened, an ask answered (or cancelled). */
export type TranscriptMark =
  | { type: "steer"; seq: number; ts: number; text: string; by: DecidedBy }
  | { type: "ask"; seq: number; ts: number; askId: string; ask: PermissionAsk }
  | {
      type: "decision";
      seq: number;
      ts: number;
      askId: string;
      status: "decided" | "cancelled";
      decision?: DecisionKind;
      by?: DecidedBy;
      message?: string;
      /** The ask it answers, when its opening is known. */
      ask?: PermissionAsk;
    };

/** The mark a worker event makes in the transcript, if any (`asks`: the asks opened so far, to name what a decision answers). */
export function markOf(e: WorkerEvent, asks: ReadonlyMap<string, PermissionAsk> | PermissionAsk[]): TranscriptMark | null {
  if (e.type === "steer.sent") return { type: "steer", seq: e.seq, ts: e.ts, text: e.text, by: e.by };
  if (e.type === "ask.opened") return { type: "ask", seq: e.seq, ts: e.ts, askId: e.ask.id, ask: e.ask };
  if (e.type === "ask.resolved") {
    const ask = Array.isArray(asks) ? asks.find((a) => a.id === e.askId) : asks.get(e.askId);
    return { type: "decision", seq: e.seq, ts: e.ts, askId: e.askId, status: e.status, decision: e.decision, by: e.by, message: e.message, ask };
  }
  return null;
}

export type Connection = "connecting" | "live" | "reconnecting" | "offline";
/** Why the engine cannot be reached, once a probe has told: gone (nothing answers) or refused (another engine, new token). */
type EngineLoss = "gone" | "refused" | null;

interface Notice {
  id: number;
  level: "info" | "warn" | "error";
  message: string;
  /** The message is the GUI's and the engine's own words (an error the engine answered): its `code spans` show as code. */
  engineWords?: boolean;
  ts: number;
}

interface State {
  connection: Connection;
  connectionError: string | null;
  /** When the engine was last seen (live stream or an answered request); null before the first contact. */
  lastContact: number | null;
  /** Since when the stream is down (null while live). */
  offlineSince: number | null;
  engineLoss: EngineLoss;
  /** Submission order: the place each worker had when first seen (engine list order, then event order). */
  order: Record<string, number>;
  workers: Record<string, Worker>;
  status: Status | null;
  targets: Target[];
  /** Each target's opencode server as its events last said (starting, ready, down). */
  opencode: Record<string, { status: string; message?: string; ts: number }>;
  /** Transcripts of the workers whose detail was opened: the latest version of each part, in order. */
  transcripts: Record<string, TranscriptPart[]>;
  /** Of the same workers: what the person, Claude or the engine did between the parts (steers, asks and their decisions), by log order. */
  marks: Record<string, TranscriptMark[]>;
  /** Of the same workers: where each logged part first appeared in the worker's log (its event `seq`). */
  partSeqs: Record<string, Record<string, number>>;
  /** Output tokens per second, one bucket a second, last 30 s (estimated from streamed characters). */
  rates: Record<string, number[]>;
  /**
   * Characters of model text streamed since the worker's last usage report (updated once a second): the live token
   * estimate on top of the reported tokens (shared/metrics.ts), so the count moves while the model writes.
   */
  streamed: Record<string, number>;
  /** Batch names by batch id (workers.batchNames; a `batch` event refreshes them). */
  batchNames: Record<string, string>;
  notices: Notice[];
  retries: Record<string, { attempt: number; message: string; ts: number }>;
  /** Bumped on every worker-changing event (e.g. for the diff view to refresh). */
  tick: number;
}

export const useStore = create<State>(() => ({
  connection: "connecting",
  connectionError: null,
  lastContact: null,
  offlineSince: null,
  engineLoss: null,
  order: {},
  workers: {},
  status: null,
  targets: [],
  opencode: {},
  transcripts: {},
  marks: {},
  partSeqs: {},
  rates: {},
  streamed: {},
  batchNames: {},
  notices: [],
  retries: {},
  tick: 0,
}));

const set = useStore.setState;
const get = useStore.getState;

// ---------- derived ----------

export function pendingOf(workers: Record<string, Worker>): PermissionAsk[] {
  const out: PermissionAsk[] = [];
  for (const w of Object.values(workers)) for (const a of w.asks) if (a.status === "pending") out.push(a);
  return out.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}

/** Every pending ask across workers, oldest first. */
export function usePending(): PermissionAsk[] {
  const workers = useStore((s) => s.workers);
  return useMemo(() => pendingOf(workers), [workers]);
}

/**
 * Submission order. Workers of one batch share a creation millisecond and their ids are random after it, so ties
 * are settled by the order the engine announced them in (its list, then its `worker.created` events).
 */
export function sortedWorkers(workers: Record<string, Worker>, order: Record<string, number> = get().order): Worker[] {
  const rank = (id: string) => order[id] ?? Number.MAX_SAFE_INTEGER;
  return Object.values(workers).sort((a, b) => a.createdAt - b.createdAt || rank(a.id) - rank(b.id) || a.id.localeCompare(b.id));
}

let orderSeq = 0;
function ranked(order: Record<string, number>, ids: string[]): Record<string, number> {
  const fresh = ids.filter((id) => order[id] === undefined);
  if (!fresh.length) return order;
  const next = { ...order };
  for (const id of fresh) next[id] = ++orderSeq;
  return next;
}

// ---------- loading ----------

let statusTimer: ReturnType<typeof setTimeout> | null = null;
function refreshStatusSoon(delay = 250) {
  if (statusTimer) return;
  statusTimer = setTimeout(() => {
    statusTimer = null;
    void api.status.query().then(
      (status) => set({ status }),
      () => undefined,
    );
  }, delay);
}

export async function refreshTargets(): Promise<void> {
  const { targets } = await api.targets.list.query();
  set({ targets });
  refreshStatusSoon(0);
}

/** Full refetch: at start and after `reset`. */
async function loadAll(): Promise<string> {
  const health = await api.health.query();
  const [workers, status, targets, batchNames] = await Promise.all([
    api.workers.list.query(),
    api.status.query(),
    api.targets.list.query(),
    // An engine from before batch names answers none.
    Promise.resolve()
      .then(() => api.workers.batchNames.query())
      .catch(() => get().batchNames),
  ]);
  const map: Record<string, Worker> = {};
  for (const w of workers) map[w.id] = w;
  set((s) => ({
    workers: map,
    status,
    targets: targets.targets,
    batchNames,
    order: ranked(
      s.order,
      workers.map((w) => w.id),
    ),
    lastContact: Date.now(),
  }));
  // Reload any open transcript.
  for (const id of Object.keys(get().transcripts)) void loadTranscript(id);
  return health.cursor;
}

/** Streamed pieces that arrived while a transcript was being read: applied (once each) on top of what it returns. */
const loading = new Map<string, DeltaEvent[]>();
/** Worker events (parts, steers, asks) that arrived while a transcript and its log were being read. */
const loadingEvents = new Map<string, WorkerEvent[]>();

export async function loadTranscript(workerId: string): Promise<void> {
  loading.set(workerId, []);
  loadingEvents.set(workerId, []);
  try {
    const [parts, events] = await Promise.all([api.workers.transcript.query({ workerId }), api.workers.events.query({ workerId })]);
    let next = withPartials(workerId, parts);
    for (const d of loading.get(workerId) ?? []) if (d.at !== undefined) next = applyDelta(next, d);
    // Where each part and each steer/ask sits in the worker's log: the transcript shows them in that order. A streamed
    // part sits where it began (shared/worker.ts, transcriptPlace), not where it was logged once it ended.
    const partSeq: Record<string, number> = {};
    const marks: TranscriptMark[] = [];
    const asks = new Map<string, PermissionAsk>();
    let last = 0;
    const take = (e: WorkerEvent) => {
      last = Math.max(last, e.seq);
      if (e.type === "part") {
        partSeq[e.part.partId] ??= transcriptPlace(e.part, e.seq);
        return;
      }
      if (e.type === "ask.opened") asks.set(e.ask.id, e.ask);
      const m = markOf(e, asks);
      if (m) marks.push(m);
    };
    for (const e of events) take(e);
    // Live events the log read did not hold yet.
    for (const e of loadingEvents.get(workerId) ?? []) {
      if (e.seq <= last) continue;
      if (e.type === "part") next = upsertPart(next, e.part);
      take(e);
    }
    // Parts still streaming (not logged yet): where they began.
    for (const p of next) if (partSeq[p.partId] === undefined && p.after !== undefined) partSeq[p.partId] = p.after + 0.5;
    marks.sort((a, b) => a.seq - b.seq);
    set((s) => ({
      transcripts: { ...s.transcripts, [workerId]: next },
      marks: { ...s.marks, [workerId]: marks },
      partSeqs: { ...s.partSeqs, [workerId]: partSeq },
    }));
  } catch (err) {
    pushNotice("error", `transcript of ${workerId}: ${errorText(err)}`, ENGINE_WORDS);
  } finally {
    loading.delete(workerId);
    loadingEvents.delete(workerId);
  }
}

function upsertPart(parts: TranscriptPart[], part: TranscriptPart): TranscriptPart[] {
  const i = parts.findIndex((p) => p.partId === part.partId);
  const next = parts.slice();
  if (i >= 0) next[i] = part;
  else next.push(part);
  return next;
}

type DeltaEvent = Extract<EngineEvent, { type: "delta" }>;

/**
 * A streamed piece added to its part. The transcript the engine returns holds the text streamed until then; a piece
 * carries where it starts (`at`), so one that the transcript already holds is not added twice.
 */
function applyDelta(parts: TranscriptPart[], e: DeltaEvent): TranscriptPart[] {
  const i = parts.findIndex((p) => p.partId === e.partId);
  const next = parts.slice();
  if (i < 0) {
    next.push({ partId: e.partId, messageId: "", kind: "text", text: e.delta });
    return next;
  }
  const p = next[i]!;
  const key = e.field === "reasoning" ? "text" : e.field;
  const prev = (p as Record<string, unknown>)[key];
  const have = typeof prev === "string" ? prev : "";
  let piece = e.delta;
  if (e.at !== undefined && e.at < have.length) piece = e.delta.slice(have.length - e.at);
  if (!piece) return parts;
  next[i] = { ...p, [key]: have + piece };
  return next;
}

export function closeTranscript(workerId: string): void {
  set((s) => {
    const { [workerId]: _gone, ...rest } = s.transcripts;
    const { [workerId]: _marks, ...marks } = s.marks;
    const { [workerId]: _seqs, ...partSeqs } = s.partSeqs;
    return { transcripts: rest, marks, partSeqs };
  });
}

let noticeSeq = 0;
/**
 * pushNotice's option for a notice of the GUI's and the engine's own words alone (an error the engine answered, after
 * the GUI's words and an engine id): its code spans are shown as code. Never for one that holds a name or text a
 * worker, a model or a repository chose (a branch, a command): those show as written. The message is made safe the same.
 */
export const ENGINE_WORDS = { engineWords: true } as const;
/**
 * A notice, shown as a block of text that may hold a worker's or a repository's words (an engine error quoting a path,
 * a branch, a batch's name): line breaks stay, and every control, bidi or invisible character is shown marked whoever
 * made the message, so no caller has to remember it. The engine's own words are plain and show as they are.
 */
export function pushNotice(level: Notice["level"], text: string, o: { engineWords?: boolean } = {}): void {
  const message = showUntrusted(text, { block: true });
  const n: Notice = { id: ++noticeSeq, level, message, ...(o.engineWords ? { engineWords: true } : {}), ts: Date.now() };
  // The same notice again (a key pressed twice) replaces the one shown, fresh: one toast, not a stack of copies.
  set((s) => ({ notices: [...s.notices.filter((o) => o.level !== level || o.message !== message).slice(-19), n] }));
  if (level !== "error") setTimeout(() => dismissNotice(n.id), 8000);
}
export function dismissNotice(id: number): void {
  set((s) => ({ notices: s.notices.filter((n) => n.id !== id) }));
}

// ---------- events ----------

const queue: EngineEvent[] = [];
/**
 * Streaming text of parts not finished yet, for every live worker: the engine persists a text part only once it is
 * complete, so a transcript opened mid-stream starts from here. Bounded per part (the tail is kept).
 */
const partials = new Map<string, Map<string, string>>();
const PARTIAL_CAP = 256 * 1024;
function appendPartial(workerId: string, partId: string, delta: string) {
  let m = partials.get(workerId);
  if (!m) partials.set(workerId, (m = new Map()));
  let text = (m.get(partId) ?? "") + delta;
  if (text.length > PARTIAL_CAP) text = "…" + text.slice(text.length - PARTIAL_CAP);
  m.set(partId, text);
}
function withPartials(workerId: string, parts: TranscriptPart[]): TranscriptPart[] {
  const m = partials.get(workerId);
  if (!m?.size) return parts;
  const known = new Set(parts.map((p) => p.partId));
  const extra = [...m.entries()].filter(([id]) => !known.has(id)).map(([partId, text]): TranscriptPart => ({ partId, messageId: "", kind: "text", text }));
  return extra.length ? [...parts, ...extra] : parts;
}
let _flushTimer: ReturnType<typeof setTimeout> | null = null;
const charCounts = new Map<string, number>();
/** Workers with a usage report since the last tick: their streamed count starts again from there. */
const reported = new Set<string>();

let namesTimer: ReturnType<typeof setTimeout> | null = null;
function refreshBatchNamesSoon() {
  if (namesTimer) return;
  namesTimer = setTimeout(() => {
    namesTimer = null;
    void api.workers.batchNames.query().then(
      (batchNames) => set({ batchNames }),
      () => undefined,
    );
  }, 100);
}
const listeners = new Set<(e: EngineEvent, before: Worker | undefined, after: Worker | undefined) => void>();

/** Observers of worker events (Electron notifications, tests). */
export function onWorkerEvent(fn: (e: EngineEvent, before: Worker | undefined, after: Worker | undefined) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function enqueue(e: EngineEvent) {
  queue.push(e);
  // Streaming text arrives many times a second per worker: fold events in batches, one render per batch.
  _flushTimer ??= setTimeout(flush, 50);
}

function isWorkerEvent(e: EngineEvent): e is WorkerEvent {
  return "seq" in e && "workerId" in e;
}

/**
 * Listeners of every event on the store's one event stream, as it arrives (a setup job's or a llama-server build's
 * progress): a component that follows one kind opens no stream of its own. Each open stream holds one of the six
 * connections a browser keeps to a host, and the setup screen's three had left the page's own requests two.
 */
const eventListeners = new Set<(e: EngineEvent) => void>();
export function onEngineEvent(fn: (e: EngineEvent) => void): () => void {
  eventListeners.add(fn);
  return () => {
    eventListeners.delete(fn);
  };
}

/** Listeners of a batch's own events (a task started after others, one skipped, the integration ran). */
const batchListeners = new Set<(batchId: string) => void>();
export function onBatchEvent(fn: (batchId: string) => void): () => void {
  batchListeners.add(fn);
  return () => batchListeners.delete(fn);
}

function flush() {
  _flushTimer = null;
  const events = queue.splice(0);
  if (!events.length) return;
  const s = get();
  let workers = s.workers;
  let transcripts = s.transcripts;
  let marks = s.marks;
  let partSeqs = s.partSeqs;
  let opencode = s.opencode;
  let retries = s.retries;
  let order = s.order;
  let touched = false;
  let statusChanged = false;
  const observed: [EngineEvent, Worker | undefined, Worker | undefined][] = [];
  for (const e of events) {
    if (e.type === "reset") {
      void resync();
      continue;
    }
    if (e.type === "delta") {
      charCounts.set(e.workerId, (charCounts.get(e.workerId) ?? 0) + e.delta.length);
      appendPartial(e.workerId, e.partId, e.delta);
      loading.get(e.workerId)?.push(e);
      const parts = transcripts[e.workerId];
      if (parts) {
        const next = applyDelta(parts, e);
        if (next !== parts) transcripts = { ...transcripts, [e.workerId]: next };
      }
      // A part's first piece: it began after every event of its worker seen so far (a steer sent from now on comes after it).
      const seqs = partSeqs[e.workerId];
      if (seqs && seqs[e.partId] === undefined) partSeqs = { ...partSeqs, [e.workerId]: { ...seqs, [e.partId]: (workers[e.workerId]?.lastSeq ?? 0) + 0.5 } };
      continue;
    }
    if (e.type === "opencode") {
      opencode = { ...opencode, [e.targetId]: { status: e.status, message: e.message, ts: e.ts } };
      statusChanged = true;
      continue;
    }
    if (e.type === "notice") {
      // Only a notice the engine says is its own words alone shows its code spans as code.
      pushNotice(e.level, e.message, e.engineWords ? ENGINE_WORDS : {});
      continue;
    }
    if (e.type === "batch") {
      refreshBatchNamesSoon();
      for (const l of batchListeners) l(e.batchId);
      continue;
    }
    if (e.type === "retry") {
      retries = { ...retries, [e.workerId]: { attempt: e.attempt, message: e.message, ts: e.ts } };
      continue;
    }
    if (!isWorkerEvent(e)) continue;
    const before = workers[e.workerId];
    if (before && e.type !== "worker.created" && e.seq <= before.lastSeq) continue; // already in the fetched picture
    if (!before && e.type !== "worker.created") {
      // An event for a worker we have not seen (e.g. created between list and subscribe): fetch it.
      // Each of its events asks again, and the answers can come back in any order: an older picture never replaces a
      // newer one (the events between them were skipped here, and would be lost).
      void api.workers.get.query({ workerId: e.workerId }).then(
        (w) => set((st) => (st.workers[w.id] && st.workers[w.id]!.lastSeq >= w.lastSeq ? {} : { workers: { ...st.workers, [w.id]: w } })),
        () => undefined,
      );
      continue;
    }
    if (before && e.type === "worker.created") continue;
    let after: Worker;
    try {
      after = reduceWorker(before ?? null, e);
    } catch {
      continue;
    }
    workers = { ...workers, [e.workerId]: after };
    if (e.type === "worker.created") order = ranked(order, [e.workerId]);
    // A new batch may have been named at its start (no batch event then): read the names again.
    if (e.type === "worker.created" && e.batchId && !(e.batchId in s.batchNames) && !before) refreshBatchNamesSoon();
    touched = true;
    if (e.type === "worker.created" || e.type === "worker.state" || e.type === "ask.opened" || e.type === "ask.resolved") statusChanged = true;
    if (e.type === "part") partials.get(e.workerId)?.delete(e.part.partId);
    if (e.type === "usage") reported.add(e.workerId);
    if (e.type === "worker.state" && (isAtRest(e.state) || e.state === "queued")) partials.delete(e.workerId);
    if (e.type === "part" || e.type === "steer.sent" || e.type === "ask.opened" || e.type === "ask.resolved") loadingEvents.get(e.workerId)?.push(e);
    if (e.type === "part" && transcripts[e.workerId]) {
      transcripts = { ...transcripts, [e.workerId]: upsertPart(transcripts[e.workerId]!, e.part) };
      const seqs = partSeqs[e.workerId];
      if (seqs && seqs[e.part.partId] === undefined) partSeqs = { ...partSeqs, [e.workerId]: { ...seqs, [e.part.partId]: transcriptPlace(e.part, e.seq) } };
    }
    if (transcripts[e.workerId] && marks[e.workerId]) {
      const m = markOf(e, after.asks);
      if (m) marks = { ...marks, [e.workerId]: [...marks[e.workerId]!, m] };
    }
    observed.push([e, before, after]);
  }
  // Only what changed, so subscribers of untouched slices are not even asked.
  const patch: Partial<State> = {};
  if (workers !== s.workers) patch.workers = workers;
  if (transcripts !== s.transcripts) patch.transcripts = transcripts;
  if (marks !== s.marks) patch.marks = marks;
  if (partSeqs !== s.partSeqs) patch.partSeqs = partSeqs;
  if (opencode !== s.opencode) patch.opencode = opencode;
  if (retries !== s.retries) patch.retries = retries;
  if (order !== s.order) patch.order = order;
  if (touched) patch.tick = s.tick + 1;
  if (Object.keys(patch).length) set(patch);
  if (statusChanged) refreshStatusSoon();
  for (const [e, b, a] of observed) for (const fn of listeners) fn(e, b, a);
}

// Tokens/s buckets: one per second for live workers; and the characters streamed since each one's last usage report.
setInterval(() => {
  const s = get();
  const rates: Record<string, number[]> = {};
  let changed = false;
  let streamed = s.streamed;
  for (const w of Object.values(s.workers)) {
    const prev = s.rates[w.id] ?? [];
    const chars = charCounts.get(w.id) ?? 0;
    const since = nextStreamed(s.streamed[w.id] ?? 0, chars, reported.has(w.id), isAtRest(w.state));
    if (since !== (s.streamed[w.id] ?? 0)) {
      if (streamed === s.streamed) streamed = { ...s.streamed };
      if (since) streamed[w.id] = since;
      else delete streamed[w.id];
    }
    if (!chars && (isAtRest(w.state) || prev.length === 0)) {
      if (prev.length) rates[w.id] = prev;
      continue;
    }
    rates[w.id] = [...prev.slice(-29), Math.round(chars / 4)];
    changed = true;
  }
  charCounts.clear();
  reported.clear();
  const patch: Partial<State> = {};
  if (changed) patch.rates = rates;
  if (streamed !== s.streamed) patch.streamed = streamed;
  if (Object.keys(patch).length) set(patch);
}, 1000);

/**
 * Characters streamed since the last usage report, after one more second: a report (or the worker's end) starts the
 * count again from what streamed after it (its text is in the report now); otherwise this second's characters add up.
 */
export function nextStreamed(before: number, chars: number, reportedSince: boolean, final: boolean): number {
  if (final) return 0;
  return (reportedSince ? 0 : before) + chars;
}

let unsubscribe: (() => void) | null = null;
let resyncing = false;

async function resync() {
  if (resyncing) return;
  resyncing = true;
  try {
    await loadAll();
  } catch (err) {
    lost(errorText(err));
  } finally {
    resyncing = false;
  }
}

function live() {
  set({ connection: "live", connectionError: null, offlineSince: null, engineLoss: null, lastContact: Date.now() });
  freezeClock(null);
  stopProbe();
}

/** The stream broke: say so at once, and probe the engine to tell the person what happened and what to do. */
function lost(message: string, state: Connection = "offline") {
  const s = get();
  set({ connection: state, connectionError: message, offlineSince: s.offlineSince ?? Date.now() });
  freezeClock(get().offlineSince);
  startProbe();
}

let probeTimer: ReturnType<typeof setInterval> | null = null;
function startProbe() {
  if (probeTimer) return;
  const probe = async () => {
    try {
      await api.health.query();
      // The same engine (or its supervised restart on the same port and token) answers again: reload the picture.
      set({ engineLoss: null, lastContact: Date.now() });
      if (get().connection !== "live") void connect();
    } catch (err) {
      const e = err as { meta?: { response?: { status?: number } }; data?: { httpStatus?: number } };
      const status = e?.meta?.response?.status ?? e?.data?.httpStatus;
      set({ engineLoss: status === 401 || status === 403 ? "refused" : "gone" });
    }
  };
  void probe();
  probeTimer = setInterval(() => void probe(), 3000);
}
function stopProbe() {
  if (probeTimer) clearInterval(probeTimer);
  probeTimer = null;
}

/** Loads everything, then follows the event stream from the cursor of that picture. */
export async function connect(): Promise<void> {
  unsubscribe?.();
  set({ connection: "connecting" });
  let cursor: string;
  try {
    cursor = await loadAll();
  } catch (err) {
    lost(errorText(err));
    return;
  }
  const sub = api.events.subscribe(
    { lastEventId: cursor },
    {
      onStarted: () => live(),
      onData: (d) => {
        if (get().connection !== "live") live();
        const e = d.data as EngineEvent;
        for (const fn of eventListeners) fn(e);
        enqueue(e);
      },
      onError: (err) => lost(errorText(err), "reconnecting"),
      onConnectionStateChange: (st) => {
        if (st.state === "connecting" && st.error) lost(errorText(st.error), "reconnecting");
        if (st.state === "pending") live();
      },
    },
  );
  unsubscribe = () => sub.unsubscribe();
}
