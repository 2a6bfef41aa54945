// approve {batchId}: the batch's in-scope edits are answered at once, not one after another. Each answer waits on
// opencode's HTTP reply to the engine: answered in turn, one slow reply held up every later ask of the batch.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { describe, expect, it } from "vitest";
import type { EngineClient } from "../api/client";
import type { EngineLink } from "./link";
import { createMcpServer } from "./server";

const edit = (id: string, workerId: string) => ({
  id,
  workerId,
  sessionId: "s",
  kind: "permission",
  tool: "edit",
  what: `src/${id}.ts`,
  patterns: [],
  always: [],
  createdAt: 0,
  status: "pending",
});

describe("approve {batchId}", () => {
  it("sends every in-scope answer without waiting for the one before it to be taken", async () => {
    const workers = ["w1", "w2", "w3"].map((id) => ({ id, spec: { scope: ["src/**"] }, asks: [edit(`a-${id}`, id)] }));
    const sent: string[] = [];
    // The engine takes an answer only once all three are on their way (as opencode's replies come back together);
    // a bridge that waits for each reply before sending the next never gets past the first.
    let release!: () => void;
    const all = new Promise<void>((r) => (release = r));
    const client = {
      workers: { list: { query: async () => workers } },
      approvals: {
        decide: {
          mutate: async ({ askId }: { askId: string }) => {
            sent.push(askId);
            if (sent.length === 3) release();
            await Promise.race([all, new Promise((_, no) => setTimeout(() => no(new Error("not all sent")), 2000))]);
            return { id: askId };
          },
        },
      },
    } as unknown as EngineClient;
    const link = {
      stateDir: "/nonexistent",
      call: <T>(fn: (c: EngineClient) => Promise<T>) => fn(client),
      client: async () => client,
    } as unknown as EngineLink;
    const server = createMcpServer({ link });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const mcp = new Client({ name: "t", version: "1" });
    await Promise.all([server.connect(a), mcp.connect(b)]);
    const r = (await mcp.callTool({ name: "approve", arguments: { batchId: "b1", decision: "once" } })) as unknown as {
      structuredContent: { answered: string[]; left: unknown[] };
    };
    expect(r.structuredContent.left).toEqual([]);
    expect(r.structuredContent.answered).toEqual(["a-w1", "a-w2", "a-w3"]);
    await mcp.close();
  });
});
