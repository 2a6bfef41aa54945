/**
 * Serving records name their processes by identity (pid + the kernel's start time): a pid the kernel has given to an
 * unrelated process since (a reboot, a long time) is reported gone and never signalled by `ocw serving stop`, and
 * does not count as our running server (its GPU memory ours to replace). Records of an older ocw (no start time) are
 * still read and judged by the pid alone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pidAlive, processStartTime } from "../process/process";
import { listServing, type ServingRecord, servingAlive, stopServing } from "./setup";
import { runningGroups } from "./start";

const LINUX = process.platform === "linux";

let state: string;
let prevState: string | undefined;
const children: ChildProcess[] = [];

/** A live process that is not ours to stop (a stranger that now holds a recorded pid). */
async function stranger(): Promise<number> {
  const c = spawn("sleep", ["30"], { stdio: "ignore" });
  children.push(c);
  await new Promise<void>((res, rej) => {
    c.once("spawn", () => res());
    c.once("error", rej);
  });
  return c.pid!;
}

/** The stranger's start time, wrong by one tick: what a record of an earlier process with the same pid holds. */
const otherStart = (pid: number) => String(Number(processStartTime(pid)) - 1);

const rec = (targetId: string, pid: number, extra: Partial<ServingRecord> = {}): ServingRecord => ({
  targetId,
  pid,
  supervisorPid: null,
  port: 1,
  bin: "llama-server",
  args: [],
  logFile: path.join(state, `${targetId}.log`),
  keyFile: null,
  startedAt: new Date().toISOString(),
  gpuBytes: [{ index: 0, bytes: 2 ** 30 }],
  ...extra,
});

const write = (recs: ServingRecord[]) => writeFileSync(path.join(state, "serving.json"), JSON.stringify(recs));

/** Whether the child has exited (a zombie still answers kill(pid, 0) until Node reaps it: ask Node). */
async function ended(c: ChildProcess, ms = 3000): Promise<boolean> {
  for (const t0 = Date.now(); Date.now() - t0 < ms; await new Promise((r) => setTimeout(r, 20))) if (c.exitCode !== null || c.signalCode !== null) return true;
  return false;
}

beforeEach(() => {
  state = mkdtempSync(path.join(os.tmpdir(), "ocw-serving-id-"));
  prevState = process.env.OCW_STATE_DIR;
  process.env.OCW_STATE_DIR = state;
});

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  if (prevState === undefined) delete process.env.OCW_STATE_DIR;
  else process.env.OCW_STATE_DIR = prevState;
  rmSync(state, { recursive: true, force: true });
});

describe.skipIf(!LINUX)("serving records: identity, not a bare pid", () => {
  it("stopServing: a record whose pid is now another process reports it gone and never signals it", async () => {
    const pid = await stranger();
    const c = children.at(-1)!;
    write([rec("llamacpp-old", pid, { startTime: otherStart(pid) })]);
    const r = await stopServing();
    expect(r.stopped).toEqual([]);
    expect(r.alreadyGone.map((x) => x.targetId)).toEqual(["llamacpp-old"]);
    expect(r.reused.map((x) => x.targetId)).toEqual(["llamacpp-old"]);
    expect(await ended(c, 300)).toBe(false);
    expect(pidAlive(pid)).toBe(true);
    expect(listServing()).toEqual([]); // the stale record is dropped
  });

  it("stopServing: a supervisor pid now held by another process is not signalled either", async () => {
    const sup = await stranger();
    const c = children.at(-1)!;
    write([rec("llamacpp-sup", 0, { supervisorPid: sup, supervisorStartTime: otherStart(sup) })]);
    const r = await stopServing();
    expect(r.stopped).toEqual([]);
    expect(r.alreadyGone.map((x) => x.targetId)).toEqual(["llamacpp-sup"]);
    expect(await ended(c, 300)).toBe(false);
  });

  it("stopServing: the same record with the process's own start time stops it", async () => {
    const pid = await stranger();
    const c = children.at(-1)!;
    write([rec("llamacpp-mine", pid, { startTime: processStartTime(pid) })]);
    const r = await stopServing();
    expect(r.stopped.map((x) => x.targetId)).toEqual(["llamacpp-mine"]);
    expect(r.alreadyGone).toEqual([]);
    expect(await ended(c)).toBe(true);
    expect(c.signalCode).toBe("SIGTERM");
  });

  it("stopServing: a matching supervisor is stopped first, then the matching server", async () => {
    const sup = await stranger();
    const cs = children.at(-1)!;
    const pid = await stranger();
    const c = children.at(-1)!;
    write([rec("llamacpp-sup", pid, { startTime: processStartTime(pid), supervisorPid: sup, supervisorStartTime: processStartTime(sup) })]);
    const r = await stopServing();
    expect(r.stopped.map((x) => x.targetId)).toEqual(["llamacpp-sup"]);
    expect(await ended(cs)).toBe(true);
    expect(await ended(c)).toBe(true);
  });

  it("an old serving.json (no start times) still loads and is judged by the pid alone", async () => {
    const pid = await stranger();
    const c = children.at(-1)!;
    writeFileSync(
      path.join(state, "serving.json"),
      JSON.stringify([
        { targetId: "llamacpp-v1", pid, supervisorPid: null, port: 1, bin: "llama-server", args: [], logFile: "", keyFile: null, startedAt: "" },
      ]),
    );
    expect(listServing()[0]!.startTime).toBeUndefined();
    expect(servingAlive(listServing()[0]!)).toBe(true);
    const r = await stopServing("llamacpp-v1");
    expect(r.stopped.map((x) => x.targetId)).toEqual(["llamacpp-v1"]);
    expect(await ended(c)).toBe(true);
    expect(JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8"))).toEqual([]);
  });

  it("runningGroups ignores a record whose pid is now another process; counts it with the right start time", async () => {
    const pid = await stranger();
    const stale = rec("llamacpp-stale", pid, { startTime: otherStart(pid) });
    const live = rec("llamacpp-live", pid, { startTime: processStartTime(pid) });
    expect(servingAlive(stale)).toBe(false);
    expect(runningGroups([stale])).toEqual([]);
    expect(runningGroups([stale, live]).map((g) => [g.id, g.bytes.get(0)])).toEqual([["llamacpp-live", 2 ** 30]]);
    // from the file too (the default reader)
    write([stale]);
    expect(runningGroups()).toEqual([]);
  });
});
