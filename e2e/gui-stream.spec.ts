// The live transcript of a streaming worker (real engine, real opencode; the scripted model is the only stand-in):
// a page opened while the worker writes shows everything written so far (the engine keeps the text of a part still
// streaming; before, a page opened mid-stream started from the next word), then the text grows, each word once, in
// order, with no gap, while the worker streams. Its task tab says the held-back checks and scope in words. Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import type { ScriptedModel } from "../test/fixtures/scripted-model";
import { openUi, type E2EEngine } from "./engine";
import { scriptedEngine, shots, type ScriptedEngine } from "./scripted-setup";

const shot = shots("gui-stream-", { fullPage: false });

// Distinct words, so a word shown twice, out of order or missing is seen. 20 ms a word: about 40 s of text, far more
// than the test watches, in one text part with no line break (one transcript row).
const WORDS = 2_000;
const TEXT = Array.from({ length: WORDS }, (_, i) => `w${i}`).join(" ");

let setup: ScriptedEngine;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.beforeAll(async () => {
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 20,
      scripts: [{ name: "stream", match: /TASK-STREAM/, script: () => ({ text: `${TEXT}\nOUTCOME: honest-failure — test` }) }],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ model, engine, repo } = setup);
});

test.afterAll(async () => {
  await page?.context().close();
  await setup?.close();
});

/** The streamed text the transcript shows: the rows of the text part, in order (long text is cut into rows), without the "worker" label. */
async function shownText(p: Page): Promise<string> {
  return p.evaluate(`[...document.querySelectorAll("[aria-label=Transcript] .vrow")]
    .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
    .map((r) => r.querySelector(".part-text")?.textContent ?? "")
    .join("\\n")`) as Promise<string>;
}

/** The words shown, as indices: they must be 0, 1, 2, … with none twice and none missing. */
function wordIndices(text: string): number[] {
  return [...text.matchAll(/\bw(\d+)\b/g)].map((m) => Number(m[1]));
}

test("a transcript opened mid-stream shows the text so far, then grows word by word while the worker streams", async ({ browser }) => {
  const checks = [
    { run: "test -f out.txt", timeoutSec: 30 },
    { name: "greeting", file: "out.txt", matches: "^ok" },
  ];
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-STREAM: say the words",
    title: "Streamer",
    directory: repo,
    checks,
    scope: ["out.txt"],
  });
  // Let it write a while before anyone looks: 4 s, about 200 words at 20 ms each.
  await expect.poll(() => model.inFlight(), { timeout: 120_000 }).toBe(1);
  await new Promise((r) => setTimeout(r, 4_000));

  page = await openUi(browser, engine);
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const transcript = page.getByRole("log", { name: "Transcript" });
  // From its first word, not from where the page came in.
  await expect(transcript).toContainText("w0 w1 w2 w3");
  const first = wordIndices(await shownText(page));
  expect(first.length).toBeGreaterThan(100);

  // It grows while the worker streams, each word once and in order.
  await expect.poll(async () => wordIndices(await shownText(page)).length, { timeout: 30_000 }).toBeGreaterThan(first.length + 50);
  const later = wordIndices(await shownText(page));
  expect(later, "every word once, in order, none missing").toEqual(Array.from({ length: later.length }, (_, i) => i));
  expect((await engine.client.workers.get.query({ workerId })).state).toBe("running");
  await shot(page, "transcript");

  // The task's rules in words, not JSON.
  await page.getByRole("tab", { name: "Task & checks" }).click();
  const rules = page.getByRole("list", { name: "held-back checks" });
  await expect(rules.getByRole("listitem")).toHaveText(["test -f out.txt exits 0 within 30 s", "greeting: file out.txt matches /^ok/"]);
  await expect(page.getByText("may change only out.txt")).toBeVisible();
  await expect(page.locator(".task-view")).not.toContainText("{");
  await shot(page, "task");
});
