// Finding or starting the user's engine, from the Electron main process. No `electron` import here, so this runs
// (and can be tested) in plain Node. The engine is the business; this file only reads its lock file and spawns it.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface EngineInfo {
  pid: number;
  port: number;
  token: string;
  url: string;
}

/** The same directory as the engine's `stateDir()` (env-paths "opencode-worker" data dir, or $OCW_STATE_DIR). */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OCW_STATE_DIR) return path.resolve(env.OCW_STATE_DIR);
  const home = os.homedir();
  if (process.platform === "darwin") return path.join(home, "Library", "Application Support", "opencode-worker");
  if (process.platform === "win32") return path.join(env.LOCALAPPDATA ?? path.join(home, "AppData", "Local"), "opencode-worker", "Data");
  return path.join(env.XDG_DATA_HOME ?? path.join(home, ".local", "share"), "opencode-worker");
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function readLock(dir = stateDir()): EngineInfo | null {
  const file = path.join(dir, "engine.json");
  if (!existsSync(file)) return null;
  try {
    const l = JSON.parse(readFileSync(file, "utf8")) as { pid: number; port: number; token: string };
    if (typeof l.port !== "number" || typeof l.token !== "string" || !alive(l.pid)) return null;
    return { pid: l.pid, port: l.port, token: l.token, url: `http://127.0.0.1:${l.port}` };
  } catch {
    return null;
  }
}

export async function healthy(e: EngineInfo): Promise<boolean> {
  try {
    const r = await fetch(`${e.url}/trpc/health`, { headers: { authorization: `Bearer ${e.token}` }, signal: AbortSignal.timeout(2000) });
    return r.ok;
  } catch {
    return false;
  }
}

/**
 * Attach to the running engine, or start `ocw serve --background` and wait for its lock file.
 * `node` is the executable to run the bundle with: in Electron, process.execPath with ELECTRON_RUN_AS_NODE=1.
 */
export async function ensureEngine(opts: { root: string; node: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<EngineInfo> {
  const dir = stateDir(opts.env ?? process.env);
  const existing = readLock(dir);
  if (existing && (await healthy(existing))) return existing;
  const bundle = path.join(opts.root, "dist", "ocw.mjs");
  if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` in ${opts.root}`);
  const child = spawn(opts.node, [bundle, "serve", "--background"], {
    detached: true,
    stdio: "ignore",
    env: { ...process.env, ...opts.env },
    windowsHide: true,
  });
  child.unref();
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 150));
    const lock = readLock(dir);
    if (lock && (await healthy(lock))) return lock;
  }
  throw new Error(`the engine did not start within ${(opts.timeoutMs ?? 30_000) / 1000} s: run \`node ${bundle} serve\` in a terminal to see why`);
}

/** Minimal reader of the engine's tRPC SSE event stream (Electron's Node has fetch but no EventSource). */
export async function followEvents(e: EngineInfo, onEvent: (ev: Record<string, unknown>) => void, signal: AbortSignal): Promise<void> {
  let lastEventId: string | null = null;
  while (!signal.aborted) {
    try {
      const input = encodeURIComponent(JSON.stringify({ lastEventId }));
      const res = await fetch(`${e.url}/trpc/events?input=${input}`, { headers: { authorization: `Bearer ${e.token}`, accept: "text/event-stream", "x-ocw-client": "gui:desktop" }, signal });
      if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "message";
          let data = "";
          let id: string | null = null;
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data += line.slice(5).trim();
            else if (line.startsWith("id:")) id = line.slice(3).trim();
          }
          if (id) lastEventId = id;
          if (event !== "message" || !data) continue;
          try {
            const parsed = JSON.parse(data) as Record<string, unknown>;
            if (parsed && typeof parsed === "object" && "type" in parsed) onEvent(parsed);
          } catch {
            /* not an event */
          }
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
}
