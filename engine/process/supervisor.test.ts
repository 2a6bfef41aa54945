/**
 * The one supervisor of long-running children (llama-server, vLLM, SGLang): a crash is restarted after the backoff, too
 * many crashes in the window give up and say why, a stop is never followed by a restart.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { pidAlive } from "./process";
import { type Launched, Supervisor } from "./supervisor";

/** A child that lives `ms` then exits with `code` (0 ms: until stopped). */
function child(ms: number, code = 1): Promise<Launched> {
  const c = spawn(process.execPath, ["-e", ms ? `setTimeout(() => process.exit(${code}), ${ms})` : "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  return new Promise((resolve, reject) => {
    c.once("spawn", () => resolve({ pid: c.pid!, child: c, readyMs: 0 }));
    c.once("error", reject);
  });
}

const until = async (what: string, f: () => boolean) => {
  for (let i = 0; i < 400 && !f(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!f()) throw new Error(`timed out waiting for ${what}`);
};

describe("Supervisor", () => {
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
});
