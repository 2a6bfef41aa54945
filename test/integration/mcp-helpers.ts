// A real MCP client (the SDK's Client over stdio) driving `node dist/ocw.mjs mcp`, as Claude Code would.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { BUNDLE } from "../helpers";

export interface McpHandle {
  client: Client;
  stderr: () => string;
  /** structuredContent of a successful call; throws with the message of an isError result. */
  call<T = any>(
    name: string,
    args?: Record<string, unknown>,
    opts?: { onprogress?: (p: { progress: number; total?: number; message?: string }) => void; timeout?: number },
  ): Promise<T>;
  /** The message of an isError result; throws when the call succeeded. */
  fail(name: string, args?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export async function startMcp(
  stateDir: string,
  name: string,
  opts: {
    elicit?: (req: ElicitRequest) => Promise<ElicitResult> | ElicitResult;
    env?: Record<string, string> /** An executable that runs the bridge (the plugin's bin/ocw); default `node dist/ocw.mjs mcp`. */;
    command?: string;
  } = {},
): Promise<McpHandle> {
  const transport = new StdioClientTransport({
    command: opts.command ?? process.execPath,
    // OCW_BRIDGE_NODE_FLAGS: node flags for the bridge, for an investigation (a CPU profile: --cpu-prof --cpu-prof-dir=D).
    args: opts.command ? ["mcp"] : [...(process.env.OCW_BRIDGE_NODE_FLAGS?.split(" ").filter(Boolean) ?? []), BUNDLE, "mcp"],
    // StdioClientTransport passes only a few variables of its own: give the bridge what the engine needs.
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600", ...opts.env },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (b: Buffer) => (err += b.toString()));
  const client = new Client({ name, version: "1.0.0" }, { capabilities: opts.elicit ? { elicitation: { form: {} } } : {} });
  if (opts.elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => opts.elicit!(req));
  await client.connect(transport);
  const raw = async (tool: string, args: Record<string, unknown> = {}, o: Parameters<McpHandle["call"]>[2] = {}) =>
    client.callTool({ name: tool, arguments: args }, undefined, { timeout: o.timeout ?? 150_000, onprogress: o.onprogress, resetTimeoutOnProgress: true });
  return {
    client,
    stderr: () => err,
    async call(tool, args, o) {
      const r = await raw(tool, args, o);
      if (r.isError) throw new Error(`${tool} failed: ${(r.content as { text: string }[])[0]?.text}`);
      return r.structuredContent as any;
    },
    async fail(tool, args) {
      const r = await raw(tool, args);
      if (!r.isError) throw new Error(`${tool} succeeded unexpectedly: ${JSON.stringify(r.structuredContent)}`);
      return (r.content as { text: string }[])[0]!.text;
    },
    close: () => client.close(),
  };
}

/** Calls wait until `pred` holds on its result (each call is bounded by timeoutSec). */
export async function waitUntil(
  mcp: McpHandle,
  args: Record<string, unknown>,
  pred: (r: any) => boolean | Promise<boolean>,
  rounds = 6,
  opts?: Parameters<McpHandle["call"]>[2],
): Promise<any> {
  let r: any;
  for (let i = 0; i < rounds; i++) {
    r = await mcp.call("wait", { timeoutSec: 30, ...args }, opts);
    if (await pred(r)) return r;
  }
  throw new Error(`wait never satisfied the condition; last: ${JSON.stringify(r)}`);
}

/** Every path (a.b.0.c) in `value` where a string holds `needle`: where a result carries a text it must mark. */
export function pathsOf(value: unknown, needle: string, at = ""): string[] {
  if (typeof value === "string") return value.includes(needle) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => pathsOf(v, needle, `${at}.${i}`));
  if (value && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => pathsOf(v, needle, `${at}.${k}`));
  return [];
}
