import path from "node:path";
import { Engine } from "../workers/engine";
import { projectRoot } from "../paths";
import { lastLock, readLock, removeLock, writeLock } from "./lock";
import { startApiServer } from "./server";

export const VERSION = "0.1.0";

export interface HostedEngine {
  engine: Engine;
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

/** Runs the engine with its control API and lock file in this process. */
export async function hostEngine(opts: { stateDir: string; port?: number; log?: (l: string) => void; supervisorPid?: number }): Promise<HostedEngine> {
  const engine = new Engine({ stateDir: opts.stateDir, log: opts.log });
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      removeLock(opts.stateDir);
      await api.close();
      await engine.close();
    })());
  const serverOpts = { engine, version: VERSION, rendererDir: path.join(projectRoot(), "out", "renderer"), shutdown: () => void close().then(() => process.exit(0)) };
  // After a crash, take back the dead engine's port and token: its clients (event streams included) reconnect unchanged.
  const dead = opts.port === undefined && !readLock(opts.stateDir) ? lastLock(opts.stateDir) : null;
  const api = dead
    ? await startApiServer({ ...serverOpts, port: dead.port, token: dead.token }).catch(() => startApiServer({ ...serverOpts, token: dead.token }))
    : await startApiServer({ ...serverOpts, port: opts.port });
  writeLock(opts.stateDir, { pid: process.pid, ...(opts.supervisorPid ? { supervisorPid: opts.supervisorPid } : {}), port: api.port, token: api.token, version: VERSION, startedAt: Date.now() });
  return { engine, url: api.url, port: api.port, token: api.token, close };
}
