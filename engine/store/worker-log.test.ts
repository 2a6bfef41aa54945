import { appendFileSync, existsSync, mkdtempSync, readFileSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
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
