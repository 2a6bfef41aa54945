// The lock: a pid counts as the engine only if it is the same process, and claiming a state dir is exclusive among
// several claimants (races between real processes: test/integration/api-hardening.test.ts).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { alive, claimOwnership, currentOwner, lastLock, processStartTime, readLock, releaseOwnership, writeLock } from "./lock";

const linux = process.platform === "linux";
const dirs: string[] = [];
const procs: ChildProcess[] = [];
const temp = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), "ocw-lock-"));
  dirs.push(d);
  return d;
};
/** An unrelated live process (what a reused pid points at after the engine died). */
const unrelated = () => {
  const p = spawn("sleep", ["60"], { stdio: "ignore" });
  procs.push(p);
  return p.pid!;
};

afterAll(() => {
  for (const p of procs) p.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("process identity", () => {
  it.skipIf(!linux)("reads the kernel's start time, and a pid with another start time is not alive", () => {
    const me = processStartTime(process.pid);
    expect(me).toMatch(/^\d+$/);
    expect(alive({ pid: process.pid, startTime: me })).toBe(true);
    const pid = unrelated();
    expect(alive({ pid, startTime: processStartTime(pid) })).toBe(true);
    expect(alive({ pid, startTime: String(Number(processStartTime(pid)) - 1) })).toBe(false);
    expect(alive({ pid: 2 ** 22 + 7, startTime: null })).toBe(false);
  });

  it.skipIf(!linux)("a lock whose pid now belongs to an unrelated process is stale; the engine's own is not", () => {
    const dir = temp();
    const pid = unrelated();
    const base = { port: 1, token: "t", version: "0", startedAt: Date.now(), instanceId: "dead-engine" };
    writeLock(dir, { ...base, pid, startTime: "1" }); // the dead engine's start time, long before `sleep` started
    expect(lastLock(dir)?.pid).toBe(pid);
    expect(readLock(dir)).toBeNull();
    writeLock(dir, { ...base, pid: process.pid, startTime: processStartTime(process.pid) });
    expect(readLock(dir)?.pid).toBe(process.pid);
  });
});

describe("ownership of a state dir", () => {
  it("one claim stands; a live holder is reported; a released or dead holder is taken over", () => {
    const dir = temp();
    const first = claimOwnership(dir, "a");
    expect(first.owned).toBe(true);
    // Another instance in a live process (this one) cannot claim it.
    const second = claimOwnership(dir, "b");
    expect(second).toMatchObject({ owned: false, holder: { instanceId: "a", pid: process.pid } });
    expect(currentOwner(dir)?.instanceId).toBe("a");
    if (!first.owned) throw new Error("unreachable");
    releaseOwnership(dir, first);
    expect(currentOwner(dir)).toBeNull();
    const third = claimOwnership(dir, "c");
    expect(third.owned).toBe(true);
    // A holder whose process is gone (a pid reused by `sleep`, start time different) is taken over.
    const dir2 = temp();
    const ghost = claimOwnership(dir2, "ghost", { pid: unrelated(), startTime: linux ? "1" : null });
    expect(ghost.owned).toBe(true);
    if (linux) expect(claimOwnership(dir2, "heir").owned).toBe(true);
  });
});
