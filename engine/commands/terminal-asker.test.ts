// The terminal prompt of `ocw run --approve ask`: status lines never land on the prompt's line; while the person is
// being asked, they wait and follow the answer.
import { describe, expect, it } from "vitest";
import { askerRig } from "../../test/fixtures/asker";
import type { PermissionAsk } from "../../shared/permission";
import type { Worker } from "../../shared/worker";
import { settleAnsweredElsewhere } from "./run";

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
    const { input, asker, decided, printed } = askerRig();
    asker.status("ocw: w-1 running");
    asker.enqueue(ask("a1"));
    await new Promise((r) => setImmediate(r));
    expect(printed().endsWith("allow? [y]es once / [a]lways / [n]o: ")).toBe(true);
    asker.status("ocw: w-2 built");
    await new Promise((r) => setImmediate(r));
    // Nothing was written onto the prompt's line.
    expect(printed().endsWith("allow? [y]es once / [a]lways / [n]o: ")).toBe(true);
    input.write("y\n");
    await new Promise((r) => setTimeout(r, 20));
    expect(printed()).toContain("[n]o: \nocw: w-2 built\n");
    expect(decided).toEqual([{ askId: "a1", decision: "once" }]);
    asker.status("ocw: w-3 failed");
    expect(printed().endsWith("ocw: w-3 failed\n")).toBe(true);
    asker.close();
  });

  it("an ask answered elsewhere whose event it missed (a reset stream, an engine restart): the worker's picture settles it, said with the answer", async () => {
    const { asker, decided, printed } = askerRig();
    asker.enqueue(ask("a1"));
    asker.enqueue(ask("a2"));
    await new Promise((r) => setImmediate(r));
    expect(printed()).toContain("[n]o: ");
    const before = printed();
    const picture = (asks: PermissionAsk[]) => new Map([["w-1", { id: "w-1", asks } as unknown as Worker]]);
    // still pending: nothing said, the prompt stays
    settleAnsweredElsewhere(asker, picture([ask("a1"), ask("a2")]));
    await new Promise((r) => setTimeout(r, 20));
    expect(printed()).toBe(before);
    settleAnsweredElsewhere(
      asker,
      picture([
        { ...ask("a1"), status: "decided", decision: "once", by: { kind: "mcp", name: "claude" } },
        { ...ask("a2"), status: "cancelled", by: { kind: "engine", name: "restart" }, message: "the engine restarted" },
      ]),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(printed()).toContain("ocw: w-1's bash ask was answered elsewhere (by mcp claude): once; no answer needed here, going on\n");
    expect(printed()).toContain("ocw: w-1's bash ask was cancelled by engine restart (the engine restarted)\n");
    // the next ask was never put to the terminal, and nothing was answered from here
    expect(printed().match(/allow\?/g)).toHaveLength(1);
    expect(decided).toEqual([]);
    asker.close();
  });
});
