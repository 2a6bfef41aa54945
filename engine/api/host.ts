import { Engine } from "../workers";
import { useCommandHelper } from "../process";
import { browserUi } from "../paths";
import {
  claimOwnership,
  lastEndpoint,
  lastLock,
  newInstanceId,
  processStartTime,
  readLock,
  recordStop,
  releaseOwnership,
  removeLock,
  selfIdentity,
  writeEndpoint,
  writeLock,
  type OwnerRecord,
} from "./lock";
import { startApiServer } from "./server";
import { buildOf } from "./build-info";
import { fileURLToPath } from "node:url";

import { VERSION } from "../../shared/api";
import type { DecidedBy } from "../../shared/permission";

export { VERSION };

/** Who asked the engine to stop, in words for the stop record (recordStop). */
function stopRequester(by: DecidedBy): string {
  if (by.kind === "cli") return by.name === "ocw stop" ? "`ocw stop`" : "a stop request from another ocw command";
  if (by.kind === "mcp") return "a stop request from an MCP client";
  return "a stop request from the dashboard or the desktop app";
}

/** A model server's supervisor (`ocw serving supervise`, a process the engine starts): hosted by the CLI like the engine. */
export { superviseServing } from "../serving";

export interface HostedEngine {
  engine: Engine;
  url: string;
  port: number;
  token: string;
  instanceId: string;
  /** Closes the engine; `by` (in words: `ocw stop`, Ctrl-C) is recorded as a deliberate stop (recordStop). */
  close(by?: string): Promise<void>;
}

/** Another live process owns the state dir: its engine is (or is about to be) the one to use. */
export class StateDirTaken extends Error {
  constructor(
    readonly stateDir: string,
    readonly holder: OwnerRecord,
  ) {
    super(`another engine (pid ${holder.pid}) owns ${stateDir}: attach to it (ocw serve prints its URL) or stop it with \`ocw stop\``);
  }
}

/**
 * Runs the engine with its control API and lock file in this process. Claims the state dir first: when another live
 * engine owns it, throws StateDirTaken before anything is started, so one state dir never has two engines.
 */
export async function hostEngine(opts: {
  stateDir: string;
  port?: number;
  log?: (l: string) => void;
  supervisorPid?: number;
  /** Called once the engine closed on another client's stop request (`ocw stop`), just before the process exits. */
  onStopped?: (by: DecidedBy) => void;
}): Promise<HostedEngine> {
  const instanceId = newInstanceId();
  const me = selfIdentity();
  const claim = claimOwnership(opts.stateDir, instanceId, me);
  if (!claim.owned) throw new StateDirTaken(opts.stateDir, claim.holder);
  // The engine's git and scripts start from a small helper process: a start from the engine itself costs it ~5 ms of CPU.
  useCommandHelper();
  let engine: Engine;
  try {
    engine = new Engine({ stateDir: opts.stateDir, log: opts.log });
  } catch (err) {
    releaseOwnership(opts.stateDir, claim);
    throw err;
  }
  let closing: Promise<void> | null = null;
  const close = (by?: string) =>
    (closing ??= (async () => {
      if (by) recordStop(opts.stateDir, by);
      removeLock(opts.stateDir);
      await api.close();
      await engine.close();
      releaseOwnership(opts.stateDir, claim);
    })());
  // This very bundle's release and hash (host.ts runs only in the bundle: dist/ocw.mjs)
  const build = buildOf(fileURLToPath(import.meta.url));
  const serverOpts = {
    engine,
    // The release where the install names one (what `ocw --version` and setup_status say), else the package's.
    version: build.version ?? VERSION,
    instanceId,
    build,
    browserUi: () => browserUi(),
    shutdown: (by: DecidedBy) =>
      void close(stopRequester(by)).then(() => {
        opts.onStopped?.(by);
        process.exit(0);
      }),
  };
  // After a crash, take back the dead engine's port and token: its clients (event streams included) reconnect unchanged.
  // After a clean stop (engine.json removed) the same from engine.endpoint.json, so `ocw stop` + `npm start` (or a
  // reboot) keeps open tabs working too. An explicit --port is a new address, with a new token. When the dead port is
  // taken, the token is new too: whatever holds that port now (another local user's server squatting it) is sent the
  // old token by every client still pointed there (an open tab's requests and its reconnecting event stream, the page's
  // own session storage on that origin), so the old token must open nothing any more.
  const dead = opts.port === undefined && !readLock(opts.stateDir) ? (lastLock(opts.stateDir) ?? lastEndpoint(opts.stateDir)) : null;
  const api = await (dead
    ? startApiServer({ ...serverOpts, port: dead.port, token: dead.token }).catch(() => startApiServer(serverOpts))
    : startApiServer({ ...serverOpts, port: opts.port })
  ).catch(async (err) => {
    await engine.close();
    releaseOwnership(opts.stateDir, claim);
    throw err;
  });
  writeEndpoint(opts.stateDir, { port: api.port, token: api.token });
  writeLock(opts.stateDir, {
    pid: me.pid,
    startTime: me.startTime,
    instanceId,
    ...(opts.supervisorPid ? { supervisorPid: opts.supervisorPid, supervisorStartTime: processStartTime(opts.supervisorPid) } : {}),
    port: api.port,
    token: api.token,
    version: serverOpts.version,
    startedAt: Date.now(),
  });
  return { engine, url: api.url, port: api.port, token: api.token, instanceId, close };
}
