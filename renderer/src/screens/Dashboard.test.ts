// The dashboard's queue panel with many queued workers (server-side render: no DOM): the first QUEUE_SHOWN, a count of
// the rest and a button for all of them, so a long queue does not push the workers that need a person out of view.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it, vi } from "vitest";
import { reduceWorker, WorkerSpec, type Worker } from "../../../shared/worker";

vi.mock("../api", () => ({ errorText: (e: unknown) => String(e), api: {} }));

const { QueuePanel, QUEUE_SHOWN } = await import("./Dashboard");

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
