// A storm of malformed or hostile MCP requests against the real `ocw mcp` bridge and the engine it starts: every
// tool call, fuzzed with fast-check, ends in a success or an error with a message; raw junk on stdin is answered
// with JSON-RPC errors; nothing hangs, nothing crashes, memory stays bounded.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../../engine/api/client";
import { readLock } from "../../engine/api/lock";
import { BUNDLE, cleanup, stopDetachedEngine, tempDir } from "../helpers";
import { startMcp, type McpHandle } from "./mcp-helpers";

const stateDir = tempDir("mcp-fuzz");
const scratch = tempDir("mcp-fuzz-canary");
// A fuzzed check writes here if it ever runs: it must not, since no fuzzed call may start a worker.
const canary = path.join(scratch, "pwned");
let mcp: McpHandle;
let tools: Tool[];

// Directories a hostile caller might name. None is a git repository, so the engine refuses them all; and the engine
// has no active target in this state dir, so no worker could start even on a real repository.
const HOSTILE_DIRS = [
  "../../../../etc",
  "../../../../etc/passwd",
  "/etc",
  "/",
  "/etc/passwd",
  "/proc/self",
  "/dev/null",
  "..",
  ".",
  "~",
  "C:\\Windows",
  "\\\\host\\share",
  "file:///etc",
  "/nonexistent/ocw",
];

const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const bridgePid = () => (mcp.client.transport as StdioClientTransport).pid!;

beforeAll(async () => {
  for (const d of HOSTILE_DIRS.filter((d) => path.isAbsolute(d) && existsSync(d))) {
    const inRepo = (() => {
      try {
        execFileSync("git", ["-C", d, "rev-parse", "--show-toplevel"], { stdio: "pipe" });
        return true;
      } catch {
        return false;
      }
    })();
    expect(inRepo, `${d} must not be a git work tree on this machine`).toBe(false);
  }
  mcp = await startMcp(stateDir, "mcp-fuzz");
  const status = await mcp.call("setup_status");
  expect(status.activeTarget).toBeNull();
  tools = (await mcp.client.listTools()).tools;
});

afterAll(async () => {
  await mcp?.close().catch(() => undefined);
  await stopDetachedEngine(stateDir);
  cleanup(stateDir, scratch);
});

// ---------- generators ----------

const huge = fc.string({ minLength: 10_000, maxLength: 20_000 });
const dirs = fc.constantFrom(...HOSTILE_DIRS);
const unknownIds = fc.oneof(fc.constantFrom("w-0000000000", "b-0000000000", "a-0000000000", "w-../../../etc", " ", "\u0000", "null"), fc.uuid());
const poison = fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as unknown);
const hostile: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 200 }),
  huge,
  dirs,
  unknownIds,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 5 }),
  fc.jsonValue({ maxDepth: 4 }),
  poison,
);
const checks = fc.oneof(
  fc.array(fc.record({ run: fc.oneof(fc.constant(`echo pwned > ${canary}`), hostile), expectExit: hostile, timeoutSec: hostile }, { requiredKeys: [] }), {
    maxLength: 3,
  }),
  fc.array(fc.record({ file: fc.oneof(dirs, hostile), exists: hostile, equals: hostile, matches: hostile }, { requiredKeys: [] }), { maxLength: 3 }),
  hostile,
);
const task = fc.record(
  {
    task: fc.oneof(fc.constant("write pwned.txt"), hostile),
    directory: fc.oneof(dirs, hostile),
    checks,
    scope: hostile,
    protect: hostile,
    budget: hostile,
    title: hostile,
  },
  { requiredKeys: [] },
);
/** Values for the properties the tools advertise; any other property gets `hostile`. */
const byKey: Record<string, fc.Arbitrary<unknown>> = {
  directory: fc.oneof(dirs, hostile),
  task: fc.oneof(fc.constant("write pwned.txt"), hostile),
  checks,
  tasks: fc.oneof(fc.array(task, { maxLength: 4 }), hostile),
  workerId: fc.oneof(unknownIds, hostile),
  batchId: fc.oneof(unknownIds, hostile),
  askId: fc.oneof(unknownIds, hostile),
  decision: fc.oneof(fc.constantFrom("once", "always", "reject", "ONCE", "maybe"), hostile),
  // No worker exists in this engine, so `wait` answers at once whatever timeoutSec says (unknown workerId/batchId);
  // the per-call timeout below would catch a wait that blocked anyway.
  timeoutSec: fc.oneof(fc.constantFrom(-1, 0, 1e-9, 0.5, 1, 100, 1e12), fc.double(), hostile),
};
const notAnObject = fc.oneof(fc.array(hostile, { maxLength: 3 }), fc.string({ maxLength: 50 }), fc.integer(), fc.constant(null));

function argsFor(tool: Tool): fc.Arbitrary<unknown> {
  const keys = Object.keys(tool.inputSchema.properties ?? {});
  const known = fc.record(Object.fromEntries(keys.map((k) => [k, byKey[k] ?? hostile])), { requiredKeys: [] });
  // An own `constructor` key makes the SDK refuse the whole request (zod's record check) with -32603, before the bridge.
  const extra = fc.dictionary(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("__proto__", "constructor", "targetId", "extra")), hostile, {
    maxKeys: 3,
  });
  return fc.oneof(
    { weight: 6, arbitrary: known },
    { weight: 2, arbitrary: fc.tuple(known, extra).map(([a, b]) => ({ ...b, ...a })) },
    { weight: 1, arbitrary: notAnObject },
  );
}

type Outcome = "success" | "isError" | "rpcError";

/** One tool call; asserts it ended in a success with an object, an isError with a message, or a JSON-RPC error with one. */
async function fuzzCall(name: string, args: unknown): Promise<Outcome> {
  let r: Awaited<ReturnType<typeof mcp.client.callTool>>;
  try {
    r = await mcp.client.callTool({ name, arguments: args as Record<string, unknown> }, undefined, { timeout: 20_000 });
  } catch (err) {
    expect(err, String(err)).toBeInstanceOf(McpError);
    const e = err as McpError;
    // A timeout or a closed connection is the bridge hanging or dying, not an answer.
    expect([ErrorCode.RequestTimeout, ErrorCode.ConnectionClosed], `${name}: ${e.message}`).not.toContain(e.code);
    expect(e.message.replace(/^MCP error -?\d+:\s*/, "").trim().length, e.message).toBeGreaterThan(3);
    return "rpcError";
  }
  if (r.isError) {
    const text = (r.content as { type: string; text?: string }[])[0]?.text;
    expect(typeof text, `${name} isError without a text message`).toBe("string");
    expect(text!.trim().length, `${name}: "${text}"`).toBeGreaterThan(3);
    // The bridge's wording for a failure it did not expect (a bug, or the engine's internal error), not an answer.
    expect(text, `${name}(${JSON.stringify(args).slice(0, 200)})`).not.toMatch(/^(\S+ failed: |the engine failed: |the opencode-worker engine is unreachable)/);
    return "isError";
  }
  const sc = r.structuredContent;
  expect(sc !== null && typeof sc === "object" && !Array.isArray(sc), `${name} succeeded without an object: ${JSON.stringify(r).slice(0, 300)}`).toBe(true);
  return "success";
}

describe("ocw mcp under hostile input", () => {
  it("1,000+ malformed or hostile tool calls → each a success or an error with a message; bridge and engine stay up, memory bounded", {
    timeout: 150_000,
  }, async () => {
    expect(tools.length).toBeGreaterThan(0);
    const lock = readLock(stateDir)!;
    const call = fc.oneof(
      { weight: 30, arbitrary: fc.constantFrom(...tools).chain((t) => fc.tuple(fc.constant(t.name), argsFor(t))) },
      {
        weight: 1,
        arbitrary: fc.tuple(
          fc.oneof(fc.string({ maxLength: 50 }), fc.constantFrom("../../etc/passwd", "", "delegate ", "DELEGATE"), huge),
          fc.jsonValue({ maxDepth: 2 }),
        ),
      },
    );
    const tally: Record<Outcome, number> = { success: 0, isError: 0, rpcError: 0 };
    const perTool = new Map<string, number>();
    const engineBefore = rssMiB(lock.pid);
    const bridgeBefore = rssMiB(bridgePid());
    const t0 = Date.now();

    const longId = `w-${"x".repeat(20_000)}`;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(call, async ([name, args]) => {
        runs++;
        perTool.set(name, (perTool.get(name) ?? 0) + 1);
        tally[await fuzzCall(name, args)]++;
      }),
      {
        numRuns: 1000,
        // Report the first failure as it came: shrinking 20k-character strings through real calls outlasts the test.
        endOnFailure: true,
        // Ids that do not fit in the engine's query URL (its HTTP server answers such a request with a 431 in words).
        examples: [
          [["worker_status", { workerId: longId }]],
          [["pending_approvals", { batchId: longId }]],
          [["wait", { batchId: longId }]],
          [["workers", { batchId: longId }]],
        ],
      },
    );
    // Then 100 more, ten at a time in parallel, as a client firing calls concurrently would.
    for (let wave = 0; wave < 10; wave++) for (const o of await Promise.all(fc.sample(call, 10).map(([name, args]) => fuzzCall(name, args)))) tally[o]++;
    const seconds = (Date.now() - t0) / 1000;

    const calls = tally.success + tally.isError + tally.rpcError;
    expect(runs).toBeGreaterThanOrEqual(1000);
    expect(calls).toBe(runs + 100);
    for (const t of tools) expect(perTool.get(t.name) ?? 0, `${t.name} was fuzzed`).toBeGreaterThan(20);

    // Still up: the engine answers, the bridge lists the same tools, and nothing was started or run.
    expect((await connect(readLock(stateDir)!, "cli:test").health.query()).ok).toBe(true);
    // The same engine process: not one its supervisor brought back after a crash.
    expect(readLock(stateDir)!.pid).toBe(lock.pid);
    expect((await mcp.client.listTools()).tools.map((t) => t.name)).toEqual(tools.map((t) => t.name));
    expect((await mcp.call("workers", {})).total).toBe(0);
    expect(existsSync(canary)).toBe(false);

    const engineAfter = rssMiB(lock.pid);
    const bridgeAfter = rssMiB(bridgePid());
    console.log(
      `mcp fuzz: ${calls} calls in ${seconds.toFixed(1)} s — ${tally.success} success, ${tally.isError} isError, ${tally.rpcError} JSON-RPC errors; ` +
        `engine RSS ${engineBefore.toFixed(0)} → ${engineAfter.toFixed(0)} MiB, bridge RSS ${bridgeBefore.toFixed(0)} → ${bridgeAfter.toFixed(0)} MiB`,
    );
    expect(engineAfter - engineBefore).toBeLessThan(150);
    expect(bridgeAfter - bridgeBefore).toBeLessThan(150);
  });

  it("raw junk on stdin → JSON-RPC errors where a reply is due; the bridge then still initializes and lists its tools", { timeout: 90_000 }, async () => {
    const child = spawn(process.execPath, [BUNDLE, "mcp"], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", OCW_STATE_DIR: stateDir, OCW_STALL_SEC: "600" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const replies: any[] = [];
    const notProtocol: string[] = [];
    let out = "";
    child.stdout.on("data", (b: Buffer) => {
      out += b.toString();
      let i: number;
      while ((i = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, i);
        out = out.slice(i + 1);
        try {
          replies.push(JSON.parse(line));
        } catch {
          notProtocol.push(line);
        }
      }
    });
    const send = (msg: string | object) => child.stdin.write(`${typeof msg === "string" ? msg : JSON.stringify(msg)}\n`);
    const reply = async (id: string, ms = 20_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const r = replies.find((x) => x.id === id);
        if (r) return r;
        if (Date.now() > deadline) throw new Error(`no reply to ${id} in ${ms} ms; stderr: ${stderr.slice(-2000)}`);
        if (child.exitCode !== null) throw new Error(`the bridge exited (${child.exitCode}) before replying to ${id}; stderr: ${stderr.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const errorMessage = (r: any) => {
      expect(r.error, JSON.stringify(r).slice(0, 300)).toBeTruthy();
      expect(typeof r.error.message).toBe("string");
      expect(r.error.message.trim().length).toBeGreaterThan(3);
      return r.error as { code: number; message: string };
    };
    /** A reply to a tools/call: a JSON-RPC error or an isError result, with its message. */
    const callFailure = (r: any): string => {
      if (r.error) return errorMessage(r).message;
      expect(r.result?.isError, JSON.stringify(r).slice(0, 300)).toBe(true);
      const text = r.result.content[0].text as string;
      expect(text.trim().length).toBeGreaterThan(3);
      return text;
    };

    try {
      // Everything before initialize, as a confused or hostile client would.
      send("this is not json {");
      send({ jsonrpc: "1.0", id: "bad-version", method: "tools/list" });
      send({ jsonrpc: "2.0", id: "unknown-method", method: "no/such/method", params: {} });
      send({ jsonrpc: "2.0", id: "early-call", method: "tools/call", params: { name: "worker_status", arguments: { workerId: "w-0000000000" } } });
      send({ jsonrpc: "2.0", id: "unknown-tool", method: "tools/call", params: { name: "no_such_tool", arguments: {} } });
      send({ jsonrpc: "2.0", id: "params-not-object", method: "tools/call", params: "not an object" });
      send({ jsonrpc: "2.0", id: "no-tool-name", method: "tools/call", params: { arguments: {} } });
      send("x".repeat(1024 * 1024));
      // A CR is JSON whitespace, and a line may end in CRLF: neither splits a message.
      send('{"jsonrpc": "2.0",\r"id": "cr-ping", "method": "ping"}\r');
      send({
        jsonrpc: "2.0",
        id: "big-call",
        method: "tools/call",
        params: { name: "steer", arguments: { workerId: "w-0000000000", text: "y".repeat(1024 * 1024) } },
      });

      expect(errorMessage(await reply("bad-version")).code).toBe(ErrorCode.InvalidRequest);
      expect(errorMessage(await reply("unknown-method")).code).toBe(ErrorCode.MethodNotFound);
      expect(callFailure(await reply("early-call"))).toMatch(/w-0000000000/);
      expect(callFailure(await reply("unknown-tool"))).toMatch(/no_such_tool/);
      expect(errorMessage(await reply("params-not-object")).code).toBe(ErrorCode.InvalidRequest);
      // The SDK answers a request that fails its params schema with -32603 and the schema's issues (not -32602).
      expect(errorMessage(await reply("no-tool-name")).message).toMatch(/"name"/);
      expect((await reply("cr-ping")).result).toEqual({});
      expect(callFailure(await reply("big-call"))).toMatch(/text.*20000/);
      // A line that is not JSON has no id to answer: JSON-RPC asks for a parse error with id null.
      const parseErrors = replies.filter((r) => r.id === null);
      expect(parseErrors.map((r) => errorMessage(r).code)).toEqual([ErrorCode.ParseError, ErrorCode.ParseError]);

      send({
        jsonrpc: "2.0",
        id: "init",
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw-fuzz", version: "1.0.0" } },
      });
      expect((await reply("init")).result.serverInfo.name).toBe("ocw");
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
      expect((await reply("list")).result.tools.map((t: Tool) => t.name)).toEqual(tools.map((t) => t.name));
      expect(child.exitCode).toBeNull();
      expect(notProtocol).toEqual([]);

      // It ends cleanly when its client goes away.
      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.stdin.end();
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    expect((await connect(readLock(stateDir)!, "cli:test").health.query()).ok).toBe(true);
  });
});
