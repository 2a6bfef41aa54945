import { describe, expect, it } from "vitest";
import { deepLinkFromArgv, deepLinkHash, noteFor, PendingAsks, trayText, windowTitle } from "./desktop";
import type { EngineEvent } from "./events";
import type { PermissionAsk } from "./permission";
import type { Verdict } from "./verdict";

const ask = (id: string, workerId: string, over: Partial<PermissionAsk> = {}): PermissionAsk => ({
  id,
  workerId,
  sessionId: "s",
  kind: "permission",
  tool: "bash",
  what: "npm test",
  patterns: [],
  always: [],
  createdAt: 1,
  status: "pending",
  ...over,
});
const base = (workerId: string) => ({ workerId, seq: 1, ts: 1 });
const opened = (id: string, w: string, over: Partial<PermissionAsk> = {}) => ({ ...base(w), type: "ask.opened", ask: ask(id, w, over) }) as EngineEvent;
const resolved = (id: string, w: string) => ({ ...base(w), type: "ask.resolved", askId: id, status: "decided", decision: "once" }) as EngineEvent;
const state = (w: string, s: string) => ({ ...base(w), type: "worker.state", state: s }) as EngineEvent;
const verdict = (w: string, over: Partial<Verdict>) =>
  ({
    ...base(w),
    type: "verdict",
    verdict: {
      verdict: "built",
      claim: "built",
      claimReason: null,
      honest: true,
      checks: [
        { name: "npm test", passed: true, exitCode: 0, output: "" },
        { name: "lint", passed: false, exitCode: 1, output: "" },
      ],
      scope: { passed: true, violations: [], changedFiles: [] },
      gradedAt: 1,
      branch: null,
      worktree: null,
      commit: null,
      diffStat: "",
      mergeHint: null,
      ...over,
    },
  }) as unknown as EngineEvent;

describe("desktop: pending count in the title and on the tray", () => {
  it("puts the count first in the title, and says it in words on the tray", () => {
    expect(windowTitle(0)).toBe("opencode-worker");
    expect(windowTitle(3)).toBe("(3) opencode-worker");
    expect(windowTitle(2, "Add a --verbose flag")).toBe("(2) Add a --verbose flag — opencode-worker");
    expect(windowTitle(0, "x".repeat(100))).toBe(`${"x".repeat(79)}… — opencode-worker`);
    expect(trayText(0)).toEqual({ tooltip: "opencode-worker — nothing waiting for you", menuLabel: "No pending approvals", badge: "" });
    expect(trayText(1)).toEqual({ tooltip: "opencode-worker — 1 pending approval", menuLabel: "1 pending approval…", badge: "1" });
    expect(trayText(250).badge).toBe("99+");
    expect(trayText(2).tooltip).toBe("opencode-worker — 2 pending approvals");
  });

  it("counts asks from the event stream: opened, resolved, cancelled with their worker, emptied by a reset", () => {
    const p = new PendingAsks();
    p.seed([{ id: "a0", workerId: "w0" }]);
    expect(p.count).toBe(1);
    expect(p.apply(opened("a1", "w1"))).toBe(true);
    expect(p.apply(opened("a2", "w1"))).toBe(true);
    expect(p.apply(opened("a3", "w2"))).toBe(true);
    // An ask the engine answered at once (a grant, a read inside the workspace) never counts.
    expect(p.apply(opened("a4", "w2", { status: "decided" }))).toBe(false);
    expect(p.count).toBe(4);
    expect(p.apply(resolved("a3", "w2"))).toBe(true);
    expect(p.apply(resolved("a3", "w2"))).toBe(false);
    expect(p.apply(state("w1", "running"))).toBe(false);
    expect(p.count).toBe(3);
    // w1 stopped: its two asks went with it.
    expect(p.apply(state("w1", "stopped"))).toBe(true);
    expect(p.count).toBe(1);
    expect(p.apply({ type: "reset", ts: 1 } as EngineEvent)).toBe(true);
    expect(p.count).toBe(0);
  });
});

describe("desktop: notifications", () => {
  it("a new pending ask opens that ask; a question says so", () => {
    expect(noteFor(opened("a1", "w1"), { title: "Fix the parser" })).toEqual({
      kind: "ask",
      title: "Approval waiting: bash",
      body: "Fix the parser\nnpm test",
      hash: "#/approvals/a1",
    });
    expect(noteFor(opened("a2", "w1", { kind: "question", tool: "question", what: "Which colour?" }), { title: "T" })!.title).toBe(
      "Approval waiting: question",
    );
    expect(noteFor(opened("a3", "w1", { status: "decided" }), { title: "T" })).toBeNull();
    expect(noteFor(opened("a4", "w1", { what: "x".repeat(1000) }), { title: "T" })!.body.length).toBe(240);
  });

  it("a verdict says built or failed and, apart from it, whether the claim was honest; it opens the worker", () => {
    expect(noteFor(verdict("w1", {}), { title: "Fix" })).toEqual({
      kind: "verdict",
      title: "Built: Fix",
      body: "1/2 checks · claim honest",
      hash: "#/workers/w1",
    });
    expect(noteFor(verdict("w1", { verdict: "honest-failure", claim: "built", honest: false }), { title: "Fix" })).toMatchObject({
      title: "Failed: Fix",
      body: "1/2 checks · claim false",
    });
    expect(noteFor(verdict("w1", { verdict: "honest-failure", claim: null, honest: false }), { title: "Fix" })!.body).toBe("1/2 checks · no claim");
    // A task given no checks: "no checks", not "0/0 checks".
    expect(noteFor(verdict("w1", { checks: [] }), { title: "Fix" })!.body).toBe("no checks · claim honest");
  });

  it("a stalled worker notifies once, not again while it stays stalled; other events do not notify", () => {
    const e = { ...base("w1"), type: "stalled", idleSec: 120 } as EngineEvent;
    expect(noteFor(e, { title: "Fix" })).toEqual({ kind: "stalled", title: "Stalled: Fix", body: "No activity for 120s (w1)", hash: "#/workers/w1" });
    expect(noteFor(e, { title: "Fix", wasStalled: true })).toBeNull();
    expect(noteFor(state("w1", "built"), { title: "Fix" })).toBeNull();
    expect(noteFor(resolved("a1", "w1"), { title: "Fix" })).toBeNull();
  });
});

describe("desktop: deep links", () => {
  it("ocw:// links open an ask, a worker or a screen; anything else is refused", () => {
    expect(deepLinkHash("ocw://ask/ask_123")).toBe("#/approvals/ask_123");
    expect(deepLinkHash("ocw:///ask/ask_123")).toBe("#/approvals/ask_123");
    expect(deepLinkHash("ocw://worker/w-mx7x0uq49122be")).toBe("#/workers/w-mx7x0uq49122be");
    expect(deepLinkHash("ocw://approvals")).toBe("#/approvals");
    expect(deepLinkHash("ocw://new/")).toBe("#/new");
    expect(deepLinkHash("ocw://dashboard")).toBe("#/");
    for (const bad of [
      "https://ask/a1",
      "ocw://ask/",
      "ocw://ask/a1/extra",
      "ocw://ask/..%2F..%2Fx",
      "ocw://ask/%E0%A4%A",
      "ocw://ask/a b",
      "ocw://settings/x",
      "ocw://ask/javascript:alert(1)",
      "not a url",
      "",
    ]) {
      expect(deepLinkHash(bad), bad).toBeNull();
    }
  });

  it("a command line carries a link as ocw://… or --ask/--worker ID; the last one wins", () => {
    expect(deepLinkFromArgv(["/opt/ocw/opencode-worker", "--no-sandbox", "ocw://ask/a1"])).toBe("#/approvals/a1");
    expect(deepLinkFromArgv(["electron", "main.js", "--ask", "a2"])).toBe("#/approvals/a2");
    expect(deepLinkFromArgv(["electron", "--ask=a3"])).toBe("#/approvals/a3");
    expect(deepLinkFromArgv(["electron", "--worker", "w1", "ocw://ask/a4"])).toBe("#/approvals/a4");
    expect(deepLinkFromArgv(["electron", "--ask"])).toBeNull();
    expect(deepLinkFromArgv(["electron", "--ask", "../../etc"])).toBeNull();
    expect(deepLinkFromArgv(["electron", "main.js"])).toBeNull();
  });
});
