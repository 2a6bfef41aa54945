/**
 * The one supervisor of long-running children (opencode serve, the engine itself, llama-server, vLLM, SGLang): a crash
 * is restarted after the backoff, too many crashes in the window give up and say why, a stop is never followed by a
 * restart; what each user needs of it (a clean exit, a place taken by another owner, a failure for good, a start shared
 * by concurrent callers, a count that starts again after a good start) is an option, tested here on real processes.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { pidAlive } from "./process";
import { GiveUp, type Launched, Supervisor } from "./supervisor";

/** A child that lives `ms` then exits with `code` (0 ms: until stopped). */
function child(ms: number, code = 1): Promise<Launched> {
  const c = spawn(process.execPath, ["-e", ms ? `setTimeout(() => process.exit(${code}), ${ms})` : "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  return new Promise((resolve, reject) => {
    c.once("spawn", () => resolve({ pid: c.pid!, child: c, readyMs: 0 }));
    c.once("error", reject);
  });
}

const until = async (what: string, f: () => boolean) => {
  for (let i = 0; i < 2400 && !f(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
};

// Bounds only against a hang (a loaded machine starts node slowly): no wall-clock figure is asserted.
describe("Supervisor", { timeout: 120_000 }, () => {
  it("restarts a child that crashes, then gives up after max crashes in the window, saying why", async () => {
    const ready: number[] = [];
    const restarts: string[] = [];
    let gaveUp: string | null = null;
    const sup = new Supervisor(
      () => child(50, 3),
      { onReady: (pid) => ready.push(pid), onRestart: (n, why) => restarts.push(`${n}:${why}`), onGiveUp: (why) => (gaveUp = why) },
      { baseDelayMs: 1, maxRestarts: 2, windowMs: 60_000 },
    );
    await sup.start();
    await until("the give-up", () => gaveUp !== null);
    // the first start and two restarts; the third crash gives up
    expect(ready).toHaveLength(3);
    expect(new Set(ready).size).toBe(3);
    expect(restarts).toEqual(["1:exited 3", "2:exited 3"]);
    expect(sup.restarts).toBe(2);
    expect(gaveUp).toMatch(/^exited 3; 3 crashes in 60 s — giving up$/);
  });

  it("a stop is never followed by a restart", async () => {
    const ready: number[] = [];
    const sup = new Supervisor(() => child(0), { onReady: (pid) => ready.push(pid) }, { baseDelayMs: 1 });
    const s = await sup.start();
    await sup.stop(2000);
    expect(pidAlive(s.pid)).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(ready).toEqual([s.pid]);
  });

  it("a first start that fails rejects (nothing is restarted)", async () => {
    let launches = 0;
    const sup = new Supervisor(async () => {
      launches++;
      throw new Error("exited (1) before it was ready");
    });
    await expect(sup.start()).rejects.toThrow(/before it was ready/);
    expect(launches).toBe(1);
  });

  it("a clean exit ends the supervision (the engine's code 0): no restart, `done` says so", async () => {
    const restarts: string[] = [];
    let launches = 0;
    const sup = new Supervisor(
      async () => {
        launches++;
        return child(30, 0);
      },
      { onRestart: (n, why) => restarts.push(`${n}:${why}`) },
      { baseDelayMs: 1, cleanExit: (code) => code === 0 },
    );
    await sup.start();
    expect(await sup.done).toEqual({ kind: "exited", reason: "exited 0" });
    expect(launches).toBe(1);
    expect(restarts).toEqual([]);
  });

  it("a restart whose place another owner took ends as handed over; a launch that fails for good gives up at once", async () => {
    const handed = new Supervisor((attempt) => (attempt === 0 ? child(30) : Promise.resolve(null)), {}, { baseDelayMs: 1 });
    await handed.start();
    expect(await handed.done).toEqual({ kind: "handed-over" });

    let gaveUp: string | null = null;
    let launches = 0;
    const final = new Supervisor(
      async (attempt) => {
        launches++;
        if (attempt === 0) return child(30);
        throw new GiveUp("the engine did not come back within 20 s; giving up");
      },
      { onGiveUp: (why) => (gaveUp = why) },
      { baseDelayMs: 1, maxRestarts: 5 },
    );
    await final.start();
    expect(await final.done).toEqual({ kind: "gave-up", reason: "the engine did not come back within 20 s; giving up" });
    expect(gaveUp).toBe("the engine did not come back within 20 s; giving up");
    expect(launches).toBe(2);
  });

  it("a failed restart is tried again with a longer delay; `down` is said once per exit, not per try (opencode serve)", async () => {
    const downs: string[] = [];
    const restarts: string[] = [];
    let launches = 0;
    const sup = new Supervisor(
      async () => {
        launches++;
        if (launches === 1) return child(30, 7);
        if (launches < 4) throw new Error(`try ${launches} failed`);
        return child(0);
      },
      { onDown: (why, code) => downs.push(`${why}/${code}`), onRestart: (n, why, delay) => restarts.push(`${n}:${why}:${delay}`) },
      { baseDelayMs: 1, maxRestarts: Number.POSITIVE_INFINITY },
    );
    await sup.start();
    await until("the restart", () => sup.restarts === 1);
    expect(downs).toEqual(["exited 7/7"]);
    expect(restarts).toEqual(["1:exited 7:1", "2:try 2 failed:2", "3:try 3 failed:4"]);
    await sup.stop(2000);
  });

  it("with resetOnReady a crash after a good start waits only the first delay again; without it the delay doubles", async () => {
    const delays = async (resetOnReady: boolean) => {
      const seen: number[] = [];
      const sup = new Supervisor(
        () => child(20),
        { onRestart: (_n, _why, d) => seen.push(d) },
        { baseDelayMs: 1, maxRestarts: 3, windowMs: 60_000, resetOnReady },
      );
      await sup.start();
      await until("three restarts", () => sup.restarts === 3);
      await sup.stop(2000);
      return seen;
    };
    expect(await delays(true)).toEqual([1, 1, 1]);
    expect(await delays(false)).toEqual([1, 2, 4]);
  });

  it("concurrent starts share one launch; a start after stop starts anew", async () => {
    let launches = 0;
    const sup = new Supervisor(async () => {
      launches++;
      return child(0);
    });
    const [a, b] = await Promise.all([sup.start(), sup.start()]);
    expect(a.pid).toBe(b.pid);
    expect((await sup.start()).pid).toBe(a.pid);
    expect(launches).toBe(1);
    await sup.stop(2000);
    expect(await sup.done).toEqual({ kind: "stopped" });
    const c = await sup.start();
    expect(c.pid).not.toBe(a.pid);
    expect(launches).toBe(2);
    await sup.stop(2000);
    expect(pidAlive(c.pid)).toBe(false);
  });

  it("a child that exited before the supervisor listened is still seen and restarted", async () => {
    let launches = 0;
    const sup = new Supervisor(
      async () => {
        launches++;
        const l = await child(launches === 1 ? 1 : 0, 4);
        if (launches === 1) await new Promise((r) => l.child.once("exit", r));
        return l;
      },
      {},
      { baseDelayMs: 1 },
    );
    await sup.start();
    await until("the restart", () => sup.restarts === 1);
    expect(launches).toBe(2);
    await sup.stop(2000);
  });

  it("a stop during the restart delay ends the supervision at once, with no launch after it", async () => {
    let launches = 0;
    const sup = new Supervisor(
      async () => {
        launches++;
        return child(20);
      },
      {},
      { baseDelayMs: 60_000 },
    );
    await sup.start();
    await until("the crash", () => sup.running === null);
    await sup.stop(2000);
    expect(await sup.done).toEqual({ kind: "stopped" });
    expect(launches).toBe(1);
  });
});
