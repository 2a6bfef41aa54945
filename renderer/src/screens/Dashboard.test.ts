// The dashboard's queue panel with many queued workers (server-side render: no DOM): the first QUEUE_SHOWN, a count of
// the rest and a button for all of them, so a long queue does not push the workers that need a person out of view.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it, vi } from "vitest";
import { Verdict } from "../../../shared/verdict";
import { reduceWorker, WorkerSpec, type Worker } from "../../../shared/worker";

vi.mock("../api", () => ({ errorText: (e: unknown) => String(e), api: {} }));

const { QueuePanel, QUEUE_SHOWN, askButtonName, failedWhy } = await import("./Dashboard");

const queued = (n: number): Worker[] =>
  Array.from({ length: n }, (_, i) =>
    reduceWorker(null, {
      type: "worker.created",
      workerId: `w-${i}`,
      seq: 1,
      ts: 1000 + i,
      spec: WorkerSpec.parse({ task: `Job ${i}`, directory: "/repo" }),
      batchId: null,
      targetId: null,
    }),
  );

describe("the queue panel", () => {
  it("26 queued: the first five listed, the rest counted, a button shows them all", () => {
    const html = renderToStaticMarkup(createElement(QueuePanel, { queued: queued(26) }));
    expect(html.match(/<li>/g)).toHaveLength(QUEUE_SHOWN);
    expect(html).toContain("Job 4");
    expect(html).not.toContain("Job 5<");
    expect(html).toContain("26 waiting for a free slot");
    expect(html).toContain("and 21 more.");
    expect(html).toMatch(/<button [^>]*aria-expanded="false"[^>]*>Show all 26 queued<\/button>/);
  });

  it("five or fewer: all listed, no button", () => {
    const html = renderToStaticMarkup(createElement(QueuePanel, { queued: queued(QUEUE_SHOWN) }));
    expect(html.match(/<li>/g)).toHaveLength(QUEUE_SHOWN);
    expect(html).not.toContain("<button");
  });
});

describe("a failed card's footer says why it failed", () => {
  const v = (checks: boolean[], scope: Partial<Verdict["scope"]> = {}): Verdict =>
    Verdict.parse({
      verdict: "honest-failure",
      claim: "honest-failure",
      claimReason: null,
      honest: true,
      checks: checks.map((passed, i) => ({ name: `check ${i}`, passed, output: "" })),
      scope: { passed: true, violations: [], changedFiles: ["a.txt"], ...scope },
      gradedAt: 1,
      branch: null,
      worktree: null,
      diffStat: "",
      mergeHint: null,
    });

  it("a worker that changed nothing, every check passing, is not said to have failed its checks", () => {
    expect(failedWhy(v([true], { changedFiles: [] }))).toBe("Failed: it changed no file.");
  });

  it("failing checks are counted; out of scope and an oversized snapshot say so", () => {
    expect(failedWhy(v([false]))).toBe("Failed its checks.");
    expect(failedWhy(v([true, false, true]))).toBe("Failed 1 of its 3 checks.");
    expect(failedWhy(v([true], { passed: false, violations: ["x"] }))).toBe("Failed: it changed files outside its scope.");
    expect(failedWhy(v([false], { passed: false, violations: ["x"], snapshotCap: "too many files" }))).toBe("Failed: its files were too large to grade.");
  });
});

describe("a card's Approve / Reject names", () => {
  it("name the worker and the ask's tool", () => {
    expect(askButtonName("Approve", "w-1a2b", "bash")).toBe("Approve w-1a2b's bash ask");
    expect(askButtonName("Reject", "w-1a2b", "external_directory")).toBe("Reject w-1a2b's external_directory ask");
  });

  it("show a tool name as one word: a space, a quote or a hidden character cannot hold another button's name", () => {
    const forged = askButtonName("Approve", "w-1", "bash ask, Reject w-2's edit");
    expect(forged).toBe("Approve w-1's bash⟪U+0020⟫ask⟪U+002C⟫⟪U+0020⟫Reject⟪U+0020⟫w-2⟪U+0027⟫s⟪U+0020⟫edit ask");
    expect(forged).not.toContain("Reject w-2's edit");
    expect(askButtonName("Approve", "w-1", "ba\u202Esh")).toBe("Approve w-1's ba⟪U+202E⟫sh ask");
    expect(askButtonName("Approve", "w-1", "")).toBe("Approve w-1's unnamed ask");
    expect(askButtonName("Approve", "w-1", "x".repeat(500))).toBe(`Approve w-1's ${"x".repeat(40)}… ask`);
  });
});

describe("the section of workers not in a batch", () => {
  it("is named for what it holds — single tasks and attempt groups alike — not 'Single tasks'", async () => {
    const { BatchGroup } = await import("./Dashboard");
    const w = (id: string, groupId: string | null): Worker => ({
      ...reduceWorker(null, {
        type: "worker.created",
        workerId: id,
        seq: 1,
        ts: 1000,
        spec: WorkerSpec.parse({ task: `Task of ${id}`, directory: "/repo" }),
        batchId: null,
        targetId: null,
      }),
      ...(groupId ? { groupId } : {}),
    });
    const group = { batchId: "", workers: [w("w-1", null), w("w-2", "g-1"), w("w-3", "g-1")], settled: false };
    const html = renderToStaticMarkup(createElement(BatchGroup, { group: group as never, archived: false, onArchive: () => undefined, hits: null }));
    expect(html).not.toMatch(/Single tasks/i);
    expect(html).toContain('<h2 tabindex="-1">Tasks outside batches</h2>');
    expect(html).toContain('aria-label="tasks outside batches"');
  });
});
