// The desktop shell's link to the user's engine, from the Electron main process. No `electron` import here, so this
// runs (and is tested) in plain Node. Nothing is re-implemented: the lock, the start and the API are the engine's own
// modules (engine/api/launcher.ts finds or starts it, engine/api/client.ts is the typed client every process uses).
import { existsSync } from "node:fs";
import path from "node:path";
import type { EngineEvent } from "../shared/events";
import { connect, type EngineClient } from "../engine/api/client";
import { ensureEngine as findOrStart } from "../engine/api/launcher";

export interface EngineInfo {
  pid: number;
  port: number;
  token: string;
  url: string;
}

/**
 * Attach to the running engine of `stateDir`, or start `ocw serve --background` (the checkout's dist/ocw.mjs) and
 * wait until it answers. `node` runs the bundle: in Electron, process.execPath with ELECTRON_RUN_AS_NODE=1 in `env`.
 */
export async function ensureEngine(opts: { root: string; node: string; stateDir: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<EngineInfo> {
  const bundle = path.join(opts.root, "dist", "ocw.mjs");
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` in ${opts.root}`);
  const lock = await findOrStart(opts.stateDir, { timeoutMs: opts.timeoutMs ?? 30_000, command: { node: opts.node, bundle, env: opts.env } });
  return { pid: lock.pid, port: lock.port, token: lock.token, url: `http://127.0.0.1:${lock.port}` };
}

/** The engine's typed client, named as the desktop shell (its decisions count as a person's). */
export function desktopClient(e: Pick<EngineInfo, "port" | "token">): EngineClient {
  return connect(e, "gui:desktop");
}

/**
 * Follows the engine's event stream until `signal` aborts. The client reconnects by itself after a dropped stream,
 * resuming from the last event it saw; a stream the engine ended (or an error) is opened again 2 s later from there.
 */
export function followEvents(
  e: Pick<EngineInfo, "port" | "token"> & Partial<EngineInfo>,
  onEvent: (ev: EngineEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const client = desktopClient(e);
  let lastEventId: string | null = null;
  let sub: { unsubscribe(): void } | null = null;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const open = () => {
    if (signal.aborted) return;
    sub = client.events.subscribe(
      { lastEventId },
      {
        onData: (tracked) => {
          lastEventId = tracked.id;
          onEvent(tracked.data as EngineEvent);
        },
        onError: () => void (signal.aborted || (retry = setTimeout(open, 2000))),
        onComplete: () => void (signal.aborted || (retry = setTimeout(open, 2000))),
      },
    );
  };
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(retry);
        sub?.unsubscribe();
        resolve();
      },
      { once: true },
    );
    open();
  });
}
