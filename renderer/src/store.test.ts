// The renderer's store driven as the engine drives it: a fetched picture, then the event stream (a mocked tRPC client:
// the store's only channel). No DOM needed: the store is plain zustand.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { EngineEvent } from "../../shared/events";
import type { PermissionAsk } from "../../shared/permission";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "../../shared/worker";

const engine = vi.hoisted(() => ({
  workers: [] as unknown[],
  handlers: null as null | Record<string, (...a: unknown[]) => void>,
  cursor: "e:0",
  healthFails: false,
  get: vi.fn(),
  listCalls: 0,
}));

vi.mock("./api", () => ({
  errorText: (e: unknown) => (e instanceof Error ? e.message : String(e)),
  api: {
    health: {
      query: async () => {
        if (engine.healthFails) throw new Error("fetch failed");
        return { cursor: engine.cursor };
      },
    },
    status: { query: async () => ({ slots: 1 }) },
    targets: { list: { query: async () => ({ targets: [] }) } },
    workers: {
      list: {
        query: async () => {
          engine.listCalls++;
          return engine.workers;
        },
      },
      get: { query: (input: { workerId: string }) => engine.get(input) },
      transcript: { query: async () => [] },
      events: { query: async () => [] },
    },
    events: {
      subscribe: (_input: unknown, handlers: Record<string, (...a: unknown[]) => void>) => {
        engine.handlers = handlers;
        return { unsubscribe: () => undefined };
      },
    },
  },
}));

const store = await import("./store");

const spec = WorkerSpec.parse({ task: "Add a flag\nmore", directory: "/repo" });
let seq = 0;
const ev = (workerId: string, body: Record<string, unknown>): WorkerEvent => ({ workerId, seq: ++seq, ts: 1000 + seq, ...body }) as WorkerEvent;
const created = (id: string) => ev(id, { type: "worker.created", spec, batchId: null, targetId: null });
const ask = (id: string, workerId: string, createdAt: number): PermissionAsk => ({
  id,
  workerId,
  sessionId: "s",
  kind: "permission",
  tool: "bash",
  what: "npm test",
  patterns: [],
  always: [],
  createdAt,
  status: "pending",
});
const picture = (...events: WorkerEvent[]): Worker => events.reduce<Worker | null>((w, e) => reduceWorker(w, e), null)!;
const send = (e: EngineEvent) => engine.handlers!.onData!({ data: e });

beforeEach(() => {
  vi.useFakeTimers();
  seq = 0;
  engine.workers = [];
  engine.handlers = null;
  engine.healthFails = false;
  engine.listCalls = 0;
  engine.get.mockReset();
  store.useStore.setState({ workers: {}, transcripts: {}, marks: {}, partSeqs: {}, order: {}, connection: "connecting", offlineSince: null, notices: [] });
});
afterEach(() => vi.useRealTimers());

describe("notices", () => {
  it("the same notice twice is shown once (the newer one); different ones stack; each info notice goes after 8 s", () => {
    store.pushNotice("info", "Opened from a link: click the ask before deciding with a key");
    store.pushNotice("info", "Opened from a link: click the ask before deciding with a key");
    store.pushNotice("info", "approved 3 asks");
    store.pushNotice("error", "approved 3 asks");
    const shown = store.useStore.getState().notices;
    expect(shown.map((n) => [n.level, n.message])).toEqual([
      ["info", "Opened from a link: click the ask before deciding with a key"],
      ["info", "approved 3 asks"],
      ["error", "approved 3 asks"],
    ]);
    vi.advanceTimersByTime(8000);
    expect(store.useStore.getState().notices.map((n) => n.level)).toEqual(["error"]);
  });

  it("a notice shows any control, bidi or invisible character marked, whoever wrote the message; line breaks stay", () => {
    store.pushNotice("error", "push of b_1: refused by the remote's hook\nbranch ocw/a\u202etxt.exe\u001b[2J");
    expect(store.useStore.getState().notices.map((n) => n.message)).toEqual([
      "push of b_1: refused by the remote's hook\nbranch ocw/a⟪U+202E⟫txt.exe⟪U+001B⟫[2J",
    ]);
  });
});

describe("engine notices", () => {
  it("a notice the engine marks as its own words shows its code spans as code; any other stays plain", async () => {
    engine.workers = [];
    await store.connect();
    engine.handlers!.onStarted!();
    const own =
      'target t1: the model API asks to wait until 2026-01-01T00:00:00Z (opencode\'s words, untrusted: "slow `down`"): resuming one of them (`ocw resume w-1`) tries now';
    send({ type: "notice", level: "warn", message: own, engineWords: true, ts: 1 });
    send({ type: "notice", level: "warn", message: "could not tidy worker w-2: `rm` failed", ts: 2 });
    vi.advanceTimersByTime(60);
    expect(store.useStore.getState().notices.map((n) => [n.message, n.engineWords ?? false])).toEqual([
      [own, true],
      ["could not tidy worker w-2: `rm` failed", false],
    ]);
  });
});

describe("renderer store", () => {
  it("loads the picture, goes live on the stream, and folds worker events in batches", async () => {
    engine.workers = [picture(created("w-a"))];
    await store.connect();
    expect(Object.keys(store.useStore.getState().workers)).toEqual(["w-a"]);
    engine.handlers!.onStarted!();
    expect(store.useStore.getState().connection).toBe("live");

    send(ev("w-a", { type: "worker.state", state: "running" }));
    send(ev("w-a", { type: "ask.opened", ask: ask("k1", "w-a", 5) }));
    // Nothing is applied until the batch is flushed (one render per batch).
    expect(store.useStore.getState().workers["w-a"]!.state).toBe("queued");
    vi.advanceTimersByTime(60);
    // The state moves only by worker.state events (the engine's transition table); the ask is pending either way.
    expect(store.useStore.getState().workers["w-a"]!.state).toBe("running");
    expect(store.pendingOf(store.useStore.getState().workers).map((x) => x.id)).toEqual(["k1"]);
  });

  it("hands every event of its one stream to onEngineEvent's listeners as it arrives (the setup screen's jobs open no stream of their own)", async () => {
    engine.workers = [];
    await store.connect();
    const seen: string[] = [];
    const stop = store.onEngineEvent((e) => seen.push(e.type === "setup" ? `setup ${e.job.state}` : e.type));
    const job = { jobId: "j1", state: "running" } as unknown;
    send({ type: "setup", job, ts: 1 } as unknown as EngineEvent);
    send({ type: "setup", job: { ...(job as object), state: "done" }, ts: 2 } as unknown as EngineEvent);
    // as they arrive, before the store's batched fold
    expect(seen).toEqual(["setup running", "setup done"]);
    stop();
    send({ type: "setup", job, ts: 3 } as unknown as EngineEvent);
    expect(seen).toHaveLength(2);
    vi.advanceTimersByTime(60); // the store's own fold of them, so none is left for the next test
  });

  it("skips events already in the fetched picture and fetches a worker it has never seen", async () => {
    const running = ev("w-a", { type: "worker.state", state: "running" });
    engine.workers = [picture(created("w-a"), running)];
    engine.get.mockResolvedValue(picture(created("w-b")));
    await store.connect();
    const tick = store.useStore.getState().tick;
    send(running); // replayed by the stream: already applied
    send(ev("w-b", { type: "worker.state", state: "running" })); // a worker created between list and subscribe
    vi.advanceTimersByTime(60);
    await vi.waitFor(() => expect(Object.keys(store.useStore.getState().workers).sort()).toEqual(["w-a", "w-b"]));
    expect(store.useStore.getState().tick).toBe(tick);
    expect(engine.get).toHaveBeenCalledWith({ workerId: "w-b" });
  });

  it("a worker it has never seen, read twice and answered out of order, keeps the newer picture", async () => {
    engine.workers = [];
    const made = created("w-b");
    const started = ev("w-b", { type: "worker.state", state: "running" });
    const asked = ev("w-b", { type: "ask.opened", ask: ask("k1", "w-b", 5) });
    // each event of the unseen worker reads it again; the second read is answered first
    let answerFirst!: (w: Worker) => void;
    engine.get.mockReturnValueOnce(new Promise<Worker>((r) => (answerFirst = r))).mockResolvedValueOnce(picture(made, started, asked));
    await store.connect();
    send(started);
    send(asked);
    vi.advanceTimersByTime(60);
    await vi.waitFor(() => expect(store.useStore.getState().workers["w-b"]?.state).toBe("running"));
    answerFirst(picture(made)); // read before it started: older than what is shown
    await Promise.resolve();
    await Promise.resolve();
    expect(engine.get).toHaveBeenCalledTimes(2);
    expect(store.useStore.getState().workers["w-b"]!.state).toBe("running");
    expect(store.pendingOf(store.useStore.getState().workers).map((x) => x.id)).toEqual(["k1"]);
  });

  it("keeps each target's opencode server as its `opencode` events say (the workers' harness, not the model server)", async () => {
    await store.connect();
    engine.handlers!.onStarted!();
    send({ type: "opencode", targetId: "t1", status: "starting", ts: 1 });
    send({ type: "opencode", targetId: "t1", status: "down", message: "opencode serve exited", ts: 2 });
    vi.advanceTimersByTime(60);
    expect(store.useStore.getState().opencode).toEqual({ t1: { status: "down", message: "opencode serve exited", ts: 2 } });
  });

  it("orders workers of one millisecond by the order the engine announced them", () => {
    const w1 = { ...picture(created("z-first")), createdAt: 7 };
    const w2 = { ...picture(created("a-second")), createdAt: 7 };
    const sorted = store.sortedWorkers({ [w2.id]: w2, [w1.id]: w1 }, { "z-first": 1, "a-second": 2 });
    expect(sorted.map((w) => w.id)).toEqual(["z-first", "a-second"]);
  });

  it("a broken stream says so at once and keeps when it went down; a reset refetches everything", async () => {
    engine.workers = [picture(created("w-a"))];
    await store.connect();
    engine.handlers!.onStarted!();
    engine.healthFails = true;
    engine.handlers!.onError!(new Error("stream closed"));
    const s = store.useStore.getState();
    expect(s.connection).toBe("reconnecting");
    expect(s.connectionError).toBe("stream closed");
    expect(s.offlineSince).not.toBeNull();
    engine.healthFails = false;
    const before = engine.listCalls;
    send({ type: "reset" } as EngineEvent);
    vi.advanceTimersByTime(60);
    await vi.waitFor(() => expect(engine.listCalls).toBeGreaterThan(before));
  });

  it("marks name what a decision answered", () => {
    const opened = ev("w-a", { type: "ask.opened", ask: ask("k1", "w-a", 1) });
    const resolved = ev("w-a", { type: "ask.resolved", askId: "k1", status: "decided", decision: "once", by: { kind: "person", name: "gui" } });
    expect(store.markOf(resolved, [ask("k1", "w-a", 1)])).toMatchObject({ type: "decision", askId: "k1", decision: "once", ask: { what: "npm test" } });
    expect(store.markOf(opened, [])).toMatchObject({ type: "ask", askId: "k1" });
    expect(store.markOf(ev("w-a", { type: "usage", usage: { input: 1, output: 1, reasoning: 0, cost: 0 } }), [])).toBeNull();
  });
});

describe("live tokens: text streamed since the last usage report", () => {
  it("adds up second by second, starts again after a report, and is gone once the worker ends", () => {
    let n = store.nextStreamed(0, 400, false, false);
    expect(n).toBe(400);
    n = store.nextStreamed(n, 200, false, false);
    expect(n).toBe(600);
    // A usage report came: what streamed before it is in the reported tokens now.
    n = store.nextStreamed(n, 80, true, false);
    expect(n).toBe(80);
    expect(store.nextStreamed(n, 0, false, true)).toBe(0);
  });
});
