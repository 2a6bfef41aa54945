// The terminal prompt of `ocw run --approve ask`: status lines never land on the prompt's line; while the person is
// being asked, they wait and follow the answer.
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { PermissionAsk } from "../../shared/permission";
import { TerminalAsker } from "./run";

const ask = (id: string): PermissionAsk => ({
  id,
  workerId: "w-1",
  sessionId: "s",
  kind: "permission",
  tool: "bash",
  what: "npm test",
  patterns: [],
  always: [],
  createdAt: 0,
  status: "pending",
});

describe("TerminalAsker", () => {
  it("holds status lines while a prompt waits, and prints them on their own lines after the answer", async () => {
    const input = new PassThrough();
    const out = new PassThrough();
    let text = "";
    out.on("data", (b) => (text += b));
    const decided: unknown[] = [];
    const asker = new TerminalAsker({ approvals: { decide: { mutate: async (d: unknown) => (decided.push(d), d) } } } as never, input, out);
    asker.status("ocw: w-1 running");
    asker.enqueue(ask("a1"));
    await new Promise((r) => setImmediate(r));
    expect(text.endsWith("allow? [y]es once / [a]lways / [n]o: ")).toBe(true);
    asker.status("ocw: w-2 built");
    await new Promise((r) => setImmediate(r));
    // Nothing was written onto the prompt's line.
    expect(text.endsWith("allow? [y]es once / [a]lways / [n]o: ")).toBe(true);
    input.write("y\n");
    await new Promise((r) => setTimeout(r, 20));
    expect(text).toContain("[n]o: \nocw: w-2 built\n");
    expect(decided).toEqual([{ askId: "a1", decision: "once" }]);
    asker.status("ocw: w-3 failed");
    expect(text.endsWith("ocw: w-3 failed\n")).toBe(true);
    asker.close();
  });
});
