// `ocw mcp`: the stdio MCP bridge Claude Code starts. stdout carries the protocol only; every log line goes to stderr.
import { PassThrough, type Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import type { Command } from "commander";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { ErrorCode, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { stateDir } from "../api/launcher";
import { clip } from "./format";
import { EngineLink } from "./link";
import { createMcpServer, toolTimeoutFromEnv } from "./server";

/**
 * Variables of the MCP client that are none of the engine's business: Claude Code's credentials and session state
 * (ANTHROPIC_*, CLAUDE_*, CLAUDECODE). Removed from `env` in place; returns their names.
 * A target whose key lives in one of them must be run from an engine started outside Claude Code (`ocw serve`).
 */
export function dropClientSecrets(env: NodeJS.ProcessEnv): string[] {
  const names = Object.keys(env).filter((k) => /^(ANTHROPIC_|CLAUDE_|CLAUDECODE$|CLAUDE_CODE)/.test(k) || k === "MCP_TOOL_TIMEOUT");
  for (const k of names) delete env[k];
  return names.sort();
}

/** What `ocw mcp` says when its stdin is a terminal: a person started it, not an MCP client. */
export function terminalHint(cli: string): string {
  return `this is the MCP server Claude Code starts; it reads JSON-RPC on stdin, not commands. Add it to Claude Code with \`claude mcp add ocw -- ${cli} mcp\` (or install the plugin: docs/mcp.md); for the dashboard, \`${cli} gui\`. Ctrl-D or Ctrl-C quits.`;
}

export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
    .description("run the MCP bridge on stdio for Claude Code (a client of the engine; starts the engine when none runs)")
    .action(async () => {
      await runMcpBridge();
    });
}

async function runMcpBridge(): Promise<void> {
  // Nothing but protocol messages may reach stdout.
  const toStderr = (...a: unknown[]) => process.stderr.write(a.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ") + "\n");
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  const log = (line: string) => process.stderr.write(`ocw mcp: ${line}\n`);
  // Claude Code starts this bridge with its own environment: its API key and session variables must not travel on to the
  // engine this bridge may start, nor so to opencode and the workers' shells. What the bridge itself needs is read first.
  const baseDir = process.env.CLAUDE_PROJECT_DIR ?? process.cwd();
  const toolTimeoutMs = toolTimeoutFromEnv();
  // The plugin puts `ocw` on the Bash tool's PATH; a bridge added by hand (`claude mcp add … node …/ocw.mjs mcp`) has no
  // such command: the instructions then name the file that runs this bridge.
  const launcher = process.argv[1];
  const cli = process.env.CLAUDE_PLUGIN_ROOT || !launcher ? "ocw" : `node ${/[^\w/.:@+-]/.test(launcher) ? JSON.stringify(launcher) : launcher}`;
  const dropped = dropClientSecrets(process.env);
  if (dropped.length) log(`not passing on ${dropped.join(", ")} to the engine`);
  // Started by hand in a terminal, it waited in silence (it seemed to hang): what it is, and how Claude Code runs it.
  if (process.stdin.isTTY) log(terminalHint(cli));

  let server: ReturnType<typeof createMcpServer> | null = null;
  const link = new EngineLink(stateDir(), () => `mcp:${server?.server.getClientVersion()?.name ?? "mcp-client"}`, log);
  // setup_status's hardware: the engine's machine as the engine detected it (the API's `hardware`, detected once there)
  server = createMcpServer({ link, log, hardware: () => link.call((c) => c.hardware.query()), baseDir, toolTimeoutMs, cli });
  const transport = new StdioServerTransport(answerInvalidLines(process.stdin, (line) => process.stdout.write(line), log));
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

/**
 * `input` for the SDK's stdio transport, less the lines that are not JSON-RPC 2.0 messages. The SDK drops such a line
 * without a reply, so a client that sent one with an id (say `"jsonrpc": "1.0"`) would wait for its answer forever;
 * here each gets the error JSON-RPC asks for: -32700 when it is not JSON, -32600 when it is not a valid message, with
 * its id when it has one, else null.
 */
function answerInvalidLines(input: Readable, write: (line: string) => void, log: (line: string) => void = () => {}): Readable {
  const valid = new PassThrough();
  const onLine = (line: string) => {
    if (!line.trim()) return;
    const reply = (id: unknown, code: ErrorCode, message: string) => {
      log(`${message}: ${clip(line, 120)}`);
      write(`${JSON.stringify({ jsonrpc: "2.0", id: typeof id === "string" || typeof id === "number" ? id : null, error: { code, message } })}\n`);
    };
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch (err) {
      return reply(null, ErrorCode.ParseError, `Parse error: the line is not JSON (${clip((err as Error).message, 100)})`);
    }
    if (JSONRPCMessageSchema.safeParse(msg).success) return void valid.write(`${line}\n`);
    if (typeof msg !== "object" || msg === null || Array.isArray(msg))
      return reply(null, ErrorCode.InvalidRequest, "Invalid Request: a message is one JSON object (batches are not supported)");
    const m = msg as Record<string, unknown>;
    // A malformed response to one of our own requests: there is nobody to answer.
    if (!("method" in m) && ("result" in m || "error" in m)) return log(`dropped an invalid JSON-RPC response: ${clip(line, 120)}`);
    reply(
      m.id,
      ErrorCode.InvalidRequest,
      `Invalid Request: ${m.jsonrpc !== "2.0" ? '"jsonrpc" must be "2.0"' : 'expected {"jsonrpc": "2.0", "method": string, "id"?: string | number, "params"?: object}'}`,
    );
  };
  // Lines end at "\n" (a trailing "\r" dropped), as the SDK reads them.
  const decoder = new StringDecoder("utf8");
  let pending = "";
  input.on("data", (chunk: Buffer) => {
    let from = pending.length;
    pending += decoder.write(chunk);
    for (let nl = pending.indexOf("\n", from); nl >= 0; nl = pending.indexOf("\n", from)) {
      onLine(pending.slice(0, nl).replace(/\r$/, ""));
      pending = pending.slice(nl + 1);
      from = 0;
    }
    // Past the SDK's own limit, hand the unfinished line on: its transport refuses it and closes, as it always has.
    if (pending.length > STDIO_DEFAULT_MAX_BUFFER_SIZE) {
      valid.write(pending);
      pending = "";
    }
  });
  input.on("end", () => valid.end());
  return valid;
}
