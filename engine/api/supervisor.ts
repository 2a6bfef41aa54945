import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { selfCommand, startExclusive } from "./launcher";
import { alive, Backoff } from "../process";
import { lastLock, readLock, supervisorOf } from "./lock";

const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;
/** What the supervisor sends a standby engine to make it take over. */
export const ACTIVATE = "ocw:activate";

/**
 * Keeps a client-started engine up: `ocw serve --background` runs this, which runs the engine itself as a child
 * (`serve --background --supervised`) and, when it dies by a signal or a crash, starts another at once on the same
 * port and token, so clients and their event streams reconnect as they are. The next engine already waits loaded
 * (`--standby`): taking over skips Node's start-up and the bundle's load, which on a busy machine take seconds.
 * A clean exit (`ocw stop`, the shutdown call, SIGTERM) ends the supervisor too; so do 5 crashes within a minute.
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
  let active: ChildProcess = start(false);
  let standby: ChildProcess | null = null;
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    active.kill(signal);
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  // Loaded after the first engine is up, so the two do not compete for the CPU while a client waits.
  const spare = setTimeout(() => (standby = start(true)), 3000);
  const takeOver = () => {
    const ready = standby && standby.exitCode === null && standby.signalCode === null && standby.connected ? standby : null;
    standby = null;
    if (ready) {
      ready.send(ACTIVATE);
      active = ready;
    } else active = start(false);
    standby = start(true);
  };
  // The first crash of a minute restarts at once; then 250 ms, 500 ms, …; more than 5 within a minute gives up.
  const backoff = new Backoff({ baseMs: 250, windowMs: CRASH_WINDOW_MS, max: MAX_CRASHES, firstImmediate: true });
  try {
    for (;;) {
      const [code, signal] = (await once(active, "exit")) as [number | null, NodeJS.Signals | null];
      if (stopping || code === 0) return 0;
      const delay = backoff.crashed();
      log(`the engine died (${signal ?? `exit ${code}`}); ${delay === null ? "giving up" : "starting it again"}`);
      if (delay === null) return 1;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      // A client that saw the engine die first may be starting one itself: then that one (with its own supervisor) wins.
      if (readLock(stateDir)) return 0;
      const started = await startExclusive(stateDir, 20_000, takeOver);
      if (!started) {
        log("the engine did not come back within 20 s; giving up");
        active.kill("SIGKILL");
        return 1;
      }
      if (!started.spawned) return 0;
    }
  } finally {
    clearTimeout(spare);
    (standby as ChildProcess | null)?.kill("SIGTERM");
  }
}
