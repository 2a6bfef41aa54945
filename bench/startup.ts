// Start-up times: `ocw serve` to its URL, and `ocw mcp` to its first tool list with an engine running and cold.
import { cleanup, startEngine, stopDetachedEngine, tempDir } from "../test/helpers";
import { startMcp } from "../test/integration/mcp-helpers";

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

/** What Claude Code sends the model of the bridge on every request: each tool's name, description and input schema. */
export async function mcpDefinitions(stateDir: string): Promise<{ tools: number; definitionChars: number; instructionsChars: number }> {
  const mcp = await startMcp(stateDir, "bench-definitions");
  try {
    const { tools } = await mcp.client.listTools();
    const sent = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
    return { tools: tools.length, definitionChars: JSON.stringify(sent).length, instructionsChars: (mcp.client.getInstructions() ?? "").length };
  } finally {
    await mcp.close();
  }
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
