// Reads the GUI repeats whose answers come back out of order, against a real engine, real opencode and the scripted
// model. A CI run under load saw one such read leave the setup screen's finished build "building" for good
// (gui-desk2.spec.ts); the worker page's diff is read again as the worker changes, at most every 2 s, and an earlier
// read still on its way could replace the newer diff with the older one when it came back, which then stood until the
// worker changed again (at its end, never). Emulated: the first diff read is answered at once by the engine but held
// back from the page until a later read's answer is shown.
import { expect, test, type Page } from "@playwright/test";
import { writeFile } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("reads-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;
let releaseSecond!: () => void;
const secondGate = new Promise<void>((r) => (releaseSecond = r));

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "two-files",
          match: /TASK-TWO-FILES/,
          script: async (c) => {
            if (c.turnStep === 0) return writeFile("first.txt", "one\n");
            if (c.turnStep === 1) {
              await secondGate;
              return writeFile("second.txt", "two\n");
            }
            return { text: "Wrote both.\nOUTCOME: built" };
          },
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
    policies: [{ tool: "edit", pattern: "*", decision: "once" }],
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

test("the worker page's diff: an earlier read answered after a later one does not bring the older diff back", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-TWO-FILES write two files", directory: repo });
  // first.txt written, the second write not yet made
  await expect.poll(async () => (await engine.client.workers.diff.query({ workerId })).diff, { timeout: 60_000 }).toContain("first.txt");
  let held = 0;
  let lastThrough = 0;
  let letFirstThrough!: () => void;
  const firstHeld = new Promise<void>((r) => (letFirstThrough = r));
  let firstAnswered!: () => void;
  const firstDone = new Promise<void>((r) => (firstAnswered = r));
  await page.route(/\/trpc\/[^?]*workers\.diff/, async (route) => {
    if (held++ > 0) {
      lastThrough = Date.now();
      return route.continue();
    }
    // the engine answers now (first.txt only); the page hears it only later
    const res = await route.fetch();
    const body = await res.json();
    await firstHeld;
    await route.fulfill({ response: res, json: body });
    firstAnswered();
  });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("tab", { name: /diff/i }).click();
  const diff = page.getByRole("group", { name: "Worktree diff" });
  await expect.poll(() => held).toBe(1);
  releaseSecond();
  // the worker writes second.txt and finishes; the page reads the diff again (the later read, let through)
  await expect(diff.getByRole("region", { name: "diff of second.txt" })).toBeVisible({ timeout: 60_000 });
  // At rest, and its last change read: no later read will come to put the newest diff back.
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toBe("built");
  await expect.poll(() => Date.now() - lastThrough, { timeout: 20_000 }).toBeGreaterThan(3000);
  letFirstThrough();
  await firstDone;
  await page.evaluate(() => new Promise((r) => setTimeout(r, 500)));
  await expect(diff.getByRole("region", { name: "diff of second.txt" })).toBeVisible();
  await expect(diff.getByRole("region", { name: "diff of first.txt" })).toBeVisible();
  await shot(page, "diff-newest");
});
