// `ocw logs` reads a worker's log whole: a tool call that waited for a person must read in the order things happened —
// asked, decided, then what it did — as `ocw logs --follow` prints it live, never as if it ran before it was allowed.
import { describe, expect, it } from "vitest";
import type { WorkerEvent } from "../../shared/worker";
import { LogPrinter } from "./workers";

const W = "w-logs";
let seq = 0;
const ev = (ts: number, e: Record<string, unknown>) => ({ workerId: W, seq: ++seq, ts, ...e }) as unknown as WorkerEvent;
const tool = (status: string, output?: string) => ({
  partId: "prt_1",
  messageId: "msg_1",
  kind: "tool",
  tool: "bash",
  status,
  input: { command: "npm test" },
  ...(output ? { output } : {}),
});
const ask = {
  id: "per_1",
  workerId: W,
  sessionId: "ses_1",
  kind: "permission",
  tool: "bash",
  what: "npm test",
  patterns: [],
  always: [],
  createdAt: 0,
  status: "pending",
};
const events = [
  ev(Date.UTC(2026, 0, 1, 10, 0, 0), { type: "part", part: tool("pending") }),
  ev(Date.UTC(2026, 0, 1, 10, 0, 0), { type: "ask.opened", ask }),
  ev(Date.UTC(2026, 0, 1, 10, 0, 9), { type: "ask.resolved", askId: "per_1", status: "decided", decision: "once", by: { kind: "cli", name: "ocw run" } }),
  ev(Date.UTC(2026, 0, 1, 10, 0, 9), { type: "part", part: tool("running") }),
  ev(Date.UTC(2026, 0, 1, 10, 0, 12), { type: "part", part: tool("completed", "1 passing") }),
];

describe("ocw logs: a tool call that waited for an answer", () => {
  it("read whole, it is printed after the ask and its decision, at the time it ended, as --follow prints it live", () => {
    const whole: string[] = [];
    new LogPrinter((l) => whole.push(l)).replay(events);
    const live: string[] = [];
    const p = new LogPrinter((l) => live.push(l));
    for (const e of events) p.event(e, true);
    p.flushParts();
    const order = (lines: string[]) =>
      lines.map((l) => (/ ask per_1/.test(l) ? "ask" : /decision on per_1/.test(l) ? "decision" : /tool bash completed/.test(l) ? "tool" : l));
    expect(order(whole)).toEqual(["ask", "decision", "tool"]);
    expect(order(live)).toEqual(order(whole));
    expect(whole[2]).toMatch(/^\[10:00:12\] tool bash completed/);
    expect(whole[2]).toContain("│ 1 passing");
  });
});

describe("ocw logs: an ask's path in the worker's workspace", () => {
  it("is shown relative to it, as `ocw run` and `ocw asks` show it (it was the engine's private folder)", () => {
    const ws = "/state/workspaces/repo-1/w-logs";
    const lines: string[] = [];
    new LogPrinter((l) => lines.push(l)).replay([
      ev(Date.UTC(2026, 0, 1, 10, 0, 0), { type: "worker.workspace", worktree: ws, branch: "ocw/w-logs", baseCommit: "c0", baseBranch: "main", repo: "/r" }),
      ev(Date.UTC(2026, 0, 1, 10, 0, 1), { type: "ask.opened", ask: { ...ask, id: "per_2", tool: "edit", what: `${ws}/src/a.ts` } }),
    ]);
    expect(lines).toEqual(['[10:00:01] ask per_2: edit (what the worker asks, untrusted: "src/a.ts")']);
  });
});
