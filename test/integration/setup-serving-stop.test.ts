/**
 * `ocw serving stop` with a record left by a failed start (`pid: 0`, no supervisor) must not signal anything:
 * kill(0, SIGTERM) is the caller's own process group (it used to kill the user's shell siblings and ocw itself).
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLE, pidAlive, stopDetachedEngine } from "../helpers";

describe("ocw serving stop", () => {
  it("a pid-0 record is dropped without signalling the process group", async () => {
    const state = mkdtempSync(path.join(os.tmpdir(), "ocw-stop-"));
    mkdirSync(state, { recursive: true });
    writeFileSync(
      path.join(state, "serving.json"),
      JSON.stringify([
        {
          targetId: "llamacpp-failed",
          pid: 0,
          supervisorPid: null,
          port: 1,
          bin: "/nope/llama-server",
          args: [],
          logFile: path.join(state, "x.log"),
          keyFile: null,
          startedAt: new Date().toISOString(),
        },
      ]),
    );
    // a shell in its own process group: a sibling `sleep`, then ocw; the sibling must outlive ocw
    const sh = spawn("sh", ["-c", `sleep 60 & echo $! ; "${process.execPath}" "${BUNDLE}" serving stop; echo "rc=$?"; wait`], {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, OCW_STATE_DIR: state },
    });
    let out = "";
    sh.stdout!.on("data", (b) => (out += b.toString()));
    const t0 = Date.now();
    while (!/rc=\d+/.test(out) && Date.now() - t0 < 30_000 && sh.exitCode === null && sh.signalCode === null) await new Promise((r) => setTimeout(r, 50));
    const sleeper = Number(out.split("\n")[0]);
    try {
      expect(out).toMatch(/rc=0/);
      expect(out).toMatch(/was not running/);
      expect(pidAlive(sleeper)).toBe(true);
      expect(sh.signalCode).toBeNull();
      expect(JSON.parse(readFileSync(path.join(state, "serving.json"), "utf8"))).toEqual([]);
    } finally {
      try {
        process.kill(-sh.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
      // `ocw serving stop` asked the engine it started in this state dir.
      await stopDetachedEngine(state);
    }
  });
});
