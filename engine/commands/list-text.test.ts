// `ocw list`: its columns are named, and the time is said as how long ago the worker was created (it read as a bare "5m").
import { describe, expect, it } from "vitest";
import { reduceWorker, WorkerSpec, type Worker, type WorkerEvent } from "../../shared/worker";
import { discardText, listText, showText, startedHint } from "./workers";

const NOW = 1_800_000_000_000;
const worker = (id: string, createdAt: number): Worker =>
  reduceWorker(null, {
    workerId: id,
    seq: 1,
    ts: createdAt,
    type: "worker.created",
    spec: WorkerSpec.parse({ task: "fix the parser", directory: "/r" }),
    batchId: null,
    targetId: null,
  } as WorkerEvent);

describe("ocw list as text", () => {
  it("a header names the columns; the time is how long ago each worker was created", () => {
    const text = listText([worker("w-a", NOW - 5 * 60_000), worker("w-bb", NOW - 30_000)], {}, NOW);
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/^ID\s+STATE\s+CREATED\s+TASK$/);
    expect(lines[1]).toMatch(/^w-a\s+queued\s+5m ago {2}fix the parser$/);
    expect(lines[3]).toMatch(/^w-bb\s+queued\s+30s ago {2}fix the parser$/);
    // the columns line up under the header
    expect(lines[1]!.indexOf("queued")).toBe(lines[0]!.indexOf("STATE"));
    expect(lines[1]!.indexOf("ago") + 3).toBe(lines[0]!.indexOf("CREATED") + "CREATED".length);
  });
});

describe("ocw discard's line", () => {
  it("says a merged worker's work stays merged, and not once that merge was reverted", () => {
    const w = worker("w-a", NOW);
    expect(discardText(w)).toBe("discarded w-a: its workspace and branch are gone");
    const merged = { ...w, merged: { into: "main", commit: "c1" } };
    expect(discardText(merged)).toBe("discarded w-a: its workspace and branch are gone; its work stays merged in main");
    expect(discardText({ ...merged, reverted: { into: "main", commit: "c2" } })).toBe(
      "discarded w-a: its workspace and branch are gone; its merge into main was reverted",
    );
    // a second discard (the engine answers it with the worker as it is) is not said as a removal done again
    expect(discardText({ ...w, discarded: true }, true)).toBe("w-a was already discarded: its workspace and branch are gone");
  });
});

describe("ocw show's next steps", () => {
  it("an honest failure's `ocw continue` names --message, which it requires (copied as shown, it was a usage error)", () => {
    const failed = { ...worker("w-f", NOW), state: "honest-failure" as const };
    expect(showText(failed)).toContain("ocw continue w-f --message TEXT");
  });
});

describe("ocw show of a discarded worker", () => {
  it("says it was discarded and offers only what still works: retry, not resume, continue or discard (they refuse)", () => {
    for (const state of ["error", "stopped", "interrupted", "honest-failure"] as const) {
      const text = showText({ ...worker("w-d", NOW), state, discarded: true });
      expect(text).toContain("discarded: its workspace and branch are gone");
      const next = text.split("\n").find((l) => l.startsWith("next:"));
      expect(next).toBe("next: ocw retry w-d (its task again as a new worker)");
    }
    const built = showText({ ...worker("w-b", NOW), state: "built" as const, discarded: true });
    expect(built).not.toMatch(/^next:/m);
    const merged = showText({ ...worker("w-m", NOW), state: "built" as const, discarded: true, merged: { into: "main", commit: "c1" } });
    expect(merged).toContain("next: ocw revert w-m undoes the merge");
  });
});

describe("ocw show of a worker that waits on an ask", () => {
  it("names the command that answers it (there was none on the command line)", () => {
    const ask = {
      id: "per_1",
      workerId: "w-q",
      sessionId: "s",
      kind: "permission" as const,
      tool: "edit",
      what: "a.txt",
      patterns: [],
      always: [],
      createdAt: NOW,
      status: "pending" as const,
    };
    const w = { ...worker("w-q", NOW), state: "waiting-approval" as const, asks: [ask] };
    expect(showText(w)).toContain("next: ocw approve per_1 (once; --always, --reject) · ocw asks --worker w-q");
  });
});

describe("ocw show: a tool name and branch names a model or a repository chose stay data", () => {
  // Any control character (ESC, BEL, CSI as U+009B…), a bidi or zero-width one.
  const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;
  it("no escape sequence and no fake next line from the ask's tool name; no raw control in the branch names", () => {
    const ask = {
      id: "per_1",
      workerId: "w-q",
      sessionId: "s",
      kind: "permission" as const,
      tool: "bash\u001b]52;c;cm0gLXJmIH4=\u0007\nnext: ocw approve per_1 --always",
      what: "echo \u202eok",
      patterns: [],
      always: [],
      createdAt: NOW,
      status: "pending" as const,
    };
    const w = {
      ...worker("w-q", NOW),
      baseBranch: "main\u009b2J",
      merged: { into: "ma\u202ein", commit: "c1" },
      state: "waiting-approval" as const,
      asks: [ask],
    };
    const text = showText(w);
    expect(text).not.toMatch(RAW);
    expect(text.split("\n").filter((l) => l.startsWith("next:"))).toHaveLength(1);
    expect(text).toContain("a tool name the model chose, untrusted:");
  });
});

describe("a worker ocw retry or ocw rebase started", () => {
  it("is said with how to follow it, answer its asks and read its verdict (it sat in waiting-approval unseen)", () => {
    expect(startedHint("w-new")).toBe(
      "  it runs in the engine: follow it with `ocw logs w-new --follow`; its asks: `ocw asks --worker w-new` (or the GUI); its verdict: `ocw show w-new`",
    );
  });
});

describe("ocw show of a graded worker", () => {
  it("says what its checks cannot rule out, a changed helper the held-back tests import included", () => {
    const verdict = {
      verdict: "built",
      claim: "built",
      honest: true,
      checks: [],
      scope: { passed: true, violations: [] },
      caveats: [
        "no held-back files: every test the checks run was visible to the worker (and could be fitted to)",
        "the worker changed tests/helpers.py, which a held-back test imports from beside it",
      ],
    } as unknown as NonNullable<Worker["verdict"]>;
    const text = showText({ ...worker("w-v", NOW), state: "built" as const, verdict });
    expect(text).toContain("what these checks cannot rule out:\n  - no held-back files");
    expect(text).toContain("  - the worker changed tests/helpers.py, which a held-back test imports from beside it");
  });
});

describe("ocw show of a worker whose check failed", () => {
  it("shows the failed check's last lines of output, made safe and marked untrusted (only --json had them: a newcomer saw 'fail npm test (exit 1)' and no why)", () => {
    const output = `${Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n")}\nnot ok 1 - parser \u001b[31mfails\u001b[0m\n`;
    const verdict = {
      verdict: "honest-failure",
      claim: "built",
      honest: false,
      checks: [
        { name: "npm test", passed: false, exitCode: 1, output },
        { name: "lint", passed: true, exitCode: 0, output: "all good" },
      ],
      scope: { passed: true, violations: [] },
    } as unknown as NonNullable<Worker["verdict"]>;
    const text = showText({ ...worker("w-f", NOW), state: "honest-failure" as const, verdict });
    expect(text).toContain("  fail npm test (exit 1)\n    output (untrusted: the worker's code ran in it), its last 12 of 31 lines:\n    │ line 20\n");
    expect(text).toContain("    │ not ok 1 - parser ⟪U+001B⟫[31mfails⟪U+001B⟫[0m\n  pass lint (exit 0)\n");
    expect(text).not.toContain("all good");
    expect(text).not.toContain("\u001b");
  });
});

describe("ocw show of a failed check's worker-written output, attacked", () => {
  const show = (output: string) =>
    showText({
      ...worker("w-a", NOW),
      state: "honest-failure" as const,
      verdict: {
        verdict: "honest-failure",
        claim: "built",
        honest: false,
        checks: [{ name: "t", passed: false, exitCode: 1, output }],
        scope: { passed: true, violations: [] },
      } as unknown as NonNullable<Worker["verdict"]>,
    });
  it("marks every line-breaking, terminal and bidi character, and cuts a long line", () => {
    const text = show(`a\rb\u0085c\u2028d\u2029e\u000bf\u000cg\u009b2Jh\u202ei\u2066j${"x".repeat(5000)}\n`);
    const block = text.slice(text.indexOf("    output ("), text.indexOf("  scope"));
    expect(block.split("\n").filter(Boolean)).toHaveLength(2);
    expect(block).not.toMatch(/[\r\u0085\u2028\u2029\u000b\u000c\u009b\u202e\u2066]/);
    expect(block.length).toBeLessThan(700);
  });
  it("takes no time over 64 KiB of spaces between two words (a trailing-space regex took quadratic time)", () => {
    const t = Date.now();
    show(`a${" ".repeat(64 * 1024)}b`);
    expect(Date.now() - t).toBeLessThan(500);
  });
});
