// Start-up times: `ocw serve` to its URL, and `ocw mcp` to its first tool list with an engine running and cold.
import { connect } from "../engine/api/client";
import { readLock, supervisorOf } from "../engine/api/lock";
import { alive } from "../engine/process/process";
import { cleanup, startEngine, tempDir } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";
import { sleep } from "./stats";

/** Spawn of `ocw serve` (fresh state dir) → the URL printed on its first line. */
export async function engineStartup(): Promise<number> {
  const t0 = performance.now();
  const e = await startEngine();
  const ms = performance.now() - t0;
  await e.kill();
  cleanup(e.stateDir);
  return ms;
}

/** Spawn of `ocw mcp` with the MCP SDK's stdio client → initialize → tools/list answered, on a running engine. */
export async function mcpToolsListWarm(stateDir: string): Promise<number> {
  const t0 = performance.now();
  const mcp = await startMcp(stateDir, "bench-startup");
  await mcp.client.listTools();
  const ms = performance.now() - t0;
  await mcp.close();
  return ms;
}

/**
 * The same with no engine on the state dir. The bridge starts the engine on its first tool call, not for the tool
 * list, so this also times the first call (setup_status) from the spawn, which includes that engine start.
 */
export async function mcpCold(): Promise<{ toolsListMs: number; firstCallMs: number }> {
  const stateDir = tempDir("bench-mcp-cold");
  const t0 = performance.now();
  const mcp = await startMcp(stateDir, "bench-startup-cold");
  try {
    await mcp.client.listTools();
    const toolsListMs = performance.now() - t0;
    await mcp.call("setup_status");
    const firstCallMs = performance.now() - t0;
    return { toolsListMs, firstCallMs };
  } finally {
    await mcp.close();
    await stopDetachedEngine(stateDir);
    cleanup(stateDir);
  }
}

/**
 * The engine the bridge started outlives it by design: shut it down through its API, and wait for its supervisor too
 * (it still writes to the state dir as it lets go of it: removing the folder under it failed with ENOTEMPTY).
 */
async function stopDetachedEngine(stateDir: string) {
  const lock = readLock(stateDir);
  if (!lock) return;
  const procs = [{ pid: lock.pid, startTime: lock.startTime }, supervisorOf(lock)].filter((p): p is NonNullable<typeof p> => !!p);
  await connect(lock).shutdown.mutate().catch(() => undefined);
  const deadline = Date.now() + 15_000;
  while (procs.some((p) => alive(p)) && Date.now() < deadline) await sleep(100);
  for (const p of procs) if (alive(p)) process.kill(p.pid, "SIGKILL");
}
