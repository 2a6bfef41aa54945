// The process module on real processes: identity by kernel start time (a pid with another start time is not ours),
// pid files old and new, a detached group killed whole, stop with a grace period, and the restart backoff.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { alive, Backoff, childPids, identityOf, killGroup, pidAlive, readPidFile, stopPid, writePidFile } from "./process";

const until = async (pred: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return pred();
};

describe("process identity", () => {
  it("a live process is alive with its own start time and not with another (a reused pid never passes for ours)", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const me = identityOf(child.pid!);
      expect(alive(me)).toBe(true);
      if (me.startTime !== null) expect(alive({ pid: child.pid!, startTime: String(Number(me.startTime) - 1) })).toBe(false);
      expect(childPids(process.pid)).toContain(child.pid);
    } finally {
      child.kill("SIGKILL");
    }
    expect(await until(() => !pidAlive(child.pid!))).toBe(true);
    expect(alive(child.pid!)).toBe(false);
  });

  it("pid files record identity; an older engine's bare pid reads with an unknown start time; junk reads as none", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-pid-"));
    const f = path.join(dir, "x.pid");
    writePidFile(f, process.pid);
    expect(readPidFile(f)).toEqual(identityOf(process.pid));
    writeFileSync(f, "12345\n");
    expect(readPidFile(f)).toEqual({ pid: 12345, startTime: null });
    writeFileSync(f, "{not json");
    expect(readPidFile(f)).toBeNull();
    expect(readPidFile(path.join(dir, "none.pid"))).toBeNull();
  });
});

describe("stopping processes", () => {
  it("killGroup ends a detached command and what it started in the background", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-grp-"));
    const pidFile = path.join(dir, "bg");
    const child = spawn("/bin/sh", ["-c", `sleep 30 & echo $! > ${pidFile}; wait`], { detached: true, stdio: "ignore" });
    expect(await until(() => readPidFile(pidFile) !== null)).toBe(true);
    const bg = readPidFile(pidFile)!.pid;
    killGroup(child.pid!);
    expect(await until(() => !pidAlive(child.pid!) && !pidAlive(bg))).toBe(true);
  });

  it("stopPid: SIGTERM first; SIGKILL after the grace for a process that ignores it", async () => {
    const polite = spawn("sleep", ["30"], { stdio: "ignore" });
    expect(await stopPid(polite.pid!, 2000)).toBe(true);
    const stubborn = spawn("/bin/sh", ["-c", "trap '' TERM; sleep 30 & wait; sleep 30"], { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    expect(await stopPid(stubborn.pid!, 300)).toBe(true);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    expect(await stopPid(1)).toBe(true); // never signals init or a group
  });
});

describe("backoff", () => {
  it("doubles from the base up to the cap; a start that holds resets it", () => {
    const b = new Backoff({ baseMs: 250, capMs: 1000 });
    expect([b.crashed(), b.crashed(), b.crashed(), b.crashed()]).toEqual([250, 500, 1000, 1000]);
    b.reset();
    expect(b.crashed()).toBe(250);
  });

  it("gives up after more than max crashes within the window; older crashes fall out of it", () => {
    const b = new Backoff({ baseMs: 250, windowMs: 60_000, max: 5, firstImmediate: true });
    const t = 1_000_000;
    expect([0, 1, 2, 3, 4].map((i) => b.crashed(t + i))).toEqual([0, 250, 500, 1000, 2000]);
    expect(b.crashed(t + 5)).toBeNull();
    expect(b.crashed(t + 120_000)).toBe(0);
  });
});
