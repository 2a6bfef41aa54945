import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { selfCommand, startExclusive } from "./launcher";
import { alive, GiveUp, type Launched, Supervisor } from "../process";
import { lastLock, readLock, supervisorOf } from "./lock";

const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;
/** How long a restarted engine has to answer before the supervisor gives up. */
const RESTART_TIMEOUT_MS = 20_000;
/** What the supervisor sends a standby engine to make it take over. */
export const ACTIVATE = "ocw:activate";

/**
 * Keeps a client-started engine up: `ocw serve --background` runs this, which runs the engine itself as a child
 * (`serve --background --supervised`) and, when it dies by a signal or a crash, starts another at once on the same
 * port and token, so clients and their event streams reconnect as they are. The next engine already waits loaded
 * (`--standby`): taking over skips Node's start-up and the bundle's load, which on a busy machine take seconds.
 * A clean exit (`ocw stop`, the shutdown call, SIGTERM) ends the supervisor too; so do 5 crashes within a minute.
 * The restart loop is the one supervisor's (engine/process/supervisor.ts); this says how an engine starts and stops.
 */
export async function superviseEngine(stateDir: string, log: (line: string) => void = () => {}): Promise<number> {
  // A client that did not wait for the supervisor already restarting the engine: leave the state dir to that one.
  const other = supervisorOf(lastLock(stateDir));
  if (other && other.pid !== process.pid && alive(other)) {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && alive(other)) {
      if (readLock(stateDir)) return 0;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const self = selfCommand();
  const start = (standby: boolean) =>
    spawn(self.node, [self.bundle, "serve", "--background", "--supervised", ...(standby ? ["--standby"] : [])], {
      stdio: ["ignore", "ignore", "ignore", "ipc"],
      cwd: process.cwd(),
      env: process.env,
    });
  let active: ChildProcess | null = null;
  let standby: ChildProcess | null = null;
  const takeOver = () => {
    const ready = standby && standby.exitCode === null && standby.signalCode === null && standby.connected ? standby : null;
    standby = null;
    if (ready) {
      ready.send(ACTIVATE);
      active = ready;
    } else active = start(false);
    standby = start(true);
  };
  const launched = (child: ChildProcess, t0: number): Launched => ({ pid: child.pid ?? 0, child, readyMs: performance.now() - t0 });
  // The first start is not waited on (a client waits for the engine itself); a restart waits until the engine answers.
  const launch = async (attempt: number): Promise<Launched | null> => {
    const t0 = performance.now();
    if (attempt === 0) return launched((active = start(false)), t0);
    // A client that saw the engine die first may be starting one itself: then that one (with its own supervisor) wins.
    if (readLock(stateDir)) return null;
    const started = await startExclusive(stateDir, RESTART_TIMEOUT_MS, takeOver);
    if (!started) {
      active?.kill("SIGKILL");
      throw new GiveUp(`the engine did not come back within ${RESTART_TIMEOUT_MS / 1000} s; giving up`);
    }
    return started.spawned && active ? launched(active, t0) : null;
  };
  // Ended by SIGTERM or SIGINT: the engine gets the same signal and shuts down cleanly (no restart, no SIGKILL).
  let stopSignal: NodeJS.Signals = "SIGTERM";
  const sup = new Supervisor(
    launch,
    {
      onRestart: (_n, why, _delay) => log(`the engine died (${why}); starting it again`),
      onGiveUp: (why) => log(why.startsWith("the engine") ? why : `the engine died (${why})`),
    },
    {
      // The first crash of a minute restarts at once; then 250 ms, 500 ms, …; more than 5 within a minute gives up.
      baseDelayMs: 250,
      windowMs: CRASH_WINDOW_MS,
      maxRestarts: MAX_CRASHES,
      firstImmediate: true,
      cleanExit: (code) => code === 0,
      end: async (l) => {
        const gone = once(l.child, "exit");
        l.child.kill(stopSignal);
        await gone;
      },
    },
  );
  const stop = (signal: NodeJS.Signals) => {
    stopSignal = signal;
    void sup.stop();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  // Loaded after the first engine is up, so the two do not compete for the CPU while a client waits.
  const spare = setTimeout(() => (standby = start(true)), 3000);
  try {
    await sup.start();
    const end = await sup.done;
    return end.kind === "gave-up" ? 1 : 0;
  } finally {
    clearTimeout(spare);
    (standby as ChildProcess | null)?.kill("SIGTERM");
  }
}
