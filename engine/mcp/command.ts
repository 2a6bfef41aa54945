// `ocw mcp`: the stdio MCP bridge Claude Code starts. stdout carries the protocol only; every log line goes to stderr.
import type { Command } from "commander";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { stateDir } from "../store/paths";
import { hardwareSummary } from "../hardware/summary";
import { EngineLink } from "./link";
import { createMcpServer } from "./server";

export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("run the MCP bridge on stdio for Claude Code (a client of the engine; starts the engine when none runs)")
    .action(async () => {
      await runMcpBridge();
    });
}

export async function runMcpBridge(): Promise<void> {
  // Nothing but protocol messages may reach stdout.
  const toStderr = (...a: unknown[]) => process.stderr.write(a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ") + "\n");
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  const log = (line: string) => process.stderr.write(`ocw mcp: ${line}\n`);

  let server: ReturnType<typeof createMcpServer> | null = null;
  const link = new EngineLink(stateDir(), () => `mcp:${server?.server.getClientVersion()?.name ?? "mcp-client"}`, log);
  server = createMcpServer({ link, log, hardware: hardwareSummary });
  const transport = new StdioServerTransport();
  let closing = false;
  const shutdown = (why: string) => {
    if (closing) return;
    closing = true;
    log(`closing (${why})`);
    // The engine keeps running for the GUI and other clients; only this bridge ends.
    void server!.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  transport.onclose = () => shutdown("transport closed");
  process.stdin.once("end", () => shutdown("stdin ended"));
  process.stdin.once("close", () => shutdown("stdin closed"));
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  server.server.oninitialized = () => {
    const c = server!.server.getClientVersion();
    log(`connected to ${c?.name ?? "a client"} ${c?.version ?? ""} (state ${link.stateDir})`.trim());
  };
  await server.connect(transport);
}
