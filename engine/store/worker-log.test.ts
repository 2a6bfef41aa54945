import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { WorkerSpec, type WorkerEvent } from "../../shared/worker";
import { WorkerLogStore } from "./worker-log";

const created = {
  workerId: "w1",
  seq: 1,
  ts: 1,
  type: "worker.created",
  spec: WorkerSpec.parse({ task: "t", directory: "/r" }),
  batchId: null,
  targetId: null,
} as WorkerEvent;
const state = (seq: number) => ({ workerId: "w1", seq, ts: seq, type: "worker.state", state: "running" }) as WorkerEvent;

describe("WorkerLogStore", () => {
  it("tolerates a torn last line (kill -9 mid-write) and keeps every whole event", () => {
    const store = new WorkerLogStore(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    store.append(created);
    store.append(state(2));
    appendFileSync(store.file("w1"), '{"workerId":"w1","seq":3,"ts":3,"type":"worker.st');
    const loaded = store.load("w1");
    expect(loaded.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(loaded.skipped).toBe(1);
    expect(store.list()).toEqual(["w1"]);
  });
  it("never glues a new event onto a line a failed write left behind", () => {
    const store = new WorkerLogStore(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    store.append(created);
    appendFileSync(store.file("w1"), '{"torn":');
    // Simulate the store noticing a failed append: the next append starts on a fresh line.
    (store as unknown as { broken: Set<string> }).broken.add(store.file("w1"));
    store.append(state(2));
    expect(readFileSync(store.file("w1"), "utf8").split("\n").filter(Boolean)).toHaveLength(3);
    expect(store.load("w1").events.map((e) => e.seq)).toEqual([1, 2]);
  });
  it("after a crash mid-append, the restarted engine's first append does not glue its event onto the torn line", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "ocw-log-"));
    const before = new WorkerLogStore(root);
    before.append(created);
    before.close();
    // kill -9 in the middle of the next write: half a line, no newline.
    appendFileSync(before.file("w1"), '{"workerId":"w1","seq":2,"ts":2,"type":"worker.st');
    // The engine starts again; the worker resumes and its next event is appended.
    const after = new WorkerLogStore(root);
    after.append(state(3));
    const loaded = after.load("w1");
    expect(loaded.events.map((e) => e.seq)).toEqual([1, 3]);
    expect(loaded.skipped).toBe(1);
  });
  it.skipIf(!existsSync("/dev/full"))("a full disk (writes to /dev/full fail with ENOSPC) → a clear error, and the log stays readable", () => {
    const store = new WorkerLogStore(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    store.append(created);
    const file = store.file("w1");
    renameSync(file, file + ".real");
    symlinkSync("/dev/full", file);
    expect(() => store.append(state(2))).toThrow(/ENOSPC.*disk holding the state dir is full; free space/);
    unlinkSync(file);
    renameSync(file + ".real", file);
    store.append(state(3));
    expect(store.load("w1")).toEqual({ workerId: "w1", events: [created, state(3)], skipped: 0 });
  });
});

/** The files this process holds open under `dir` (Linux: /proc/self/fd). */
function openUnder(dir: string): string[] {
  return readdirSync("/proc/self/fd")
    .map((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return "";
      }
    })
    .filter((f) => f.startsWith(dir + path.sep))
    .sort();
}
const ev = (workerId: string, seq: number) => ({ workerId, seq, ts: seq, type: "worker.state", state: "running" }) as WorkerEvent;

describe.skipIf(process.platform !== "linux")("WorkerLogStore keeps a live worker's log open", () => {
  it("one open file per live worker between appends (not open + close per event); release closes it, the next append opens it again", () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    const store = new WorkerLogStore(root);
    for (let seq = 1; seq <= 5; seq++) store.append(ev("w1", seq));
    store.append(ev("w2", 1));
    expect(openUnder(root)).toEqual([store.file("w1"), store.file("w2")]);
    store.release("w1");
    expect(openUnder(root)).toEqual([store.file("w2")]);
    store.append(ev("w1", 6));
    expect(store.load("w1").events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    store.close();
    expect(openUnder(root)).toEqual([]);
    expect(store.openCount).toBe(0);
  });

  it("an open log is close-on-exec: no process the engine starts inherits it (a worker's command must never hold the engine's state)", () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    const store = new WorkerLogStore(root);
    store.append(ev("w1", 1));
    const fds = readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === store.file("w1");
      } catch {
        return false;
      }
    });
    expect(fds).toHaveLength(1);
    // /proc/<pid>/fdinfo: "flags:" in octal; O_CLOEXEC is 02000000 on Linux
    const flags = Number.parseInt(/^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fds[0]}`, "utf8"))![1]!, 8);
    expect(flags & 0o2000000).toBe(0o2000000);
    store.close();
  });

  it("at most `cap` logs stay open (the least recently appended closes first); every event still lands, in order", () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    const store = new WorkerLogStore(root, 2);
    for (let seq = 1; seq <= 3; seq++) for (const w of ["w1", "w2", "w3"]) store.append(ev(w, seq));
    store.append(ev("w2", 4));
    expect(openUnder(root)).toEqual([store.file("w2"), store.file("w3")]);
    expect(store.openCount).toBe(2);
    for (const w of ["w1", "w3"]) expect(store.load(w)).toEqual({ workerId: w, events: [1, 2, 3].map((s) => ev(w, s)), skipped: 0 });
    expect(store.load("w2").events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    store.close();
  });

  it("a log moved away while open is not written behind the engine's back: the next append goes to the path, as a fresh open would", () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    const store = new WorkerLogStore(root);
    store.append(created);
    store.append(state(2));
    renameSync(store.file("w1"), store.file("w1") + ".old");
    store.append(state(3));
    expect(store.load("w1").events.map((e) => e.seq)).toEqual([3]);
    expect(
      readFileSync(store.file("w1") + ".old", "utf8")
        .trim()
        .split("\n"),
    ).toHaveLength(2);
    expect(openUnder(root)).toEqual([store.file("w1")]);
    store.close();
  });

  it.skipIf(!existsSync("/dev/full"))("a failed append leaves nothing open; the log is whole and a later append opens it again", () => {
    const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "ocw-log-")));
    const store = new WorkerLogStore(root);
    store.append(created);
    const file = store.file("w1");
    renameSync(file, file + ".real");
    symlinkSync("/dev/full", file);
    expect(() => store.append(state(2))).toThrow(/ENOSPC/);
    expect(openUnder(root)).toEqual([]);
    expect(openUnder("/dev")).not.toContain("/dev/full");
    unlinkSync(file);
    renameSync(file + ".real", file);
    store.append(state(3));
    expect(store.load("w1")).toEqual({ workerId: "w1", events: [created, state(3)], skipped: 0 });
    store.close();
  });
});
