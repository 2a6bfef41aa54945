import path from "node:path";
import { Engine } from "../workers/engine";
import { projectRoot } from "../paths";
import { removeLock, writeLock } from "./lock";
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
export async function hostEngine(opts: { stateDir: string; port?: number; log?: (l: string) => void }): Promise<HostedEngine> {
  const engine = new Engine({ stateDir: opts.stateDir, log: opts.log });
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      removeLock(opts.stateDir);
      await api.close();
      await engine.close();
    })());
  const api = await startApiServer({
    engine,
    version: VERSION,
    port: opts.port,
    rendererDir: path.join(projectRoot(), "out", "renderer"),
    shutdown: () => void close().then(() => process.exit(0)),
  });
  writeLock(opts.stateDir, { pid: process.pid, port: api.port, token: api.token, version: VERSION, startedAt: Date.now() });
  return { engine, url: api.url, port: api.port, token: api.token, close };
}
