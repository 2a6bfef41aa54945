// Thirty-odd workers at once, as a person running a batch sees them (real engine, real opencode and git, the scripted
// model): the three that ask come first, above the running ones and the long queue; filters narrow the list; a task
// title of one unbroken 300-character word does not widen the page. At 1360×900 and 560×900.
import { expect, test, type Page } from "@playwright/test";
import { bash } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("many-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;
const LONG = `src/${"deeply-nested-directory-name-".repeat(10)}file.ts`;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        { name: "ask", match: /TASK-MANY-ASK/, script: (c) => (c.turnStep === 0 ? bash("echo asks-a-person") : { text: "OUTCOME: built" }) },
        { name: "hang", match: /TASK-MANY-HANG/, script: () => ({ hang: true, textBeforeHang: `Working on ${LONG}` }) },
      ],
    },
    target: { engine: "scripted", slots: 6 },
  });
  ({ engine, page, repo } = setup);
  await page.setViewportSize({ width: 1360, height: 900 });
});

test.afterAll(() => setup?.close());

test("32 workers: the ones that ask first, then running, then queued; filters narrow; a huge title stays in its card", async () => {
  const tasks = [
    ...Array.from({ length: 3 }, (_, i) => ({ task: `TASK-MANY-ASK ${i}`, title: `Asks ${i}`, directory: repo, checks: [{ run: "true" }] })),
    ...Array.from({ length: 29 }, (_, i) => ({
      // One title of 200 characters without a space; one task with none, whose first line (a 900-character word) is its title.
      task: i === 1 ? `${LONG.repeat(3)}\nTASK-MANY-HANG ${i}` : `TASK-MANY-HANG ${i}`,
      title: i === 0 ? LONG.slice(0, 200) : i === 1 ? undefined : `Long job ${i}`,
      directory: repo,
      checks: [{ run: "true" }],
    })),
  ];
  const { batchId } = await engine.client.workers.startBatch.mutate({ tasks });
  await page.goto(`${engine.origin}/#/`);
  await expect(page.getByRole("radio", { name: /^Needs you 3/ })).toBeVisible({ timeout: 120_000 });
  const batch = page.getByRole("region", { name: `batch ${batchId}` });
  await expect(batch.locator(".worker-card")).toHaveCount(32);
  const titles = await batch.locator(".worker-card .card-title").allTextContents();
  expect(titles.slice(0, 3).sort()).toEqual(["Asks 0", "Asks 1", "Asks 2"]);
  // The queue lists its first five (not all 26, which pushed the cards that need you out of view), and all on request.
  const queue = page.getByRole("region", { name: "Queue" });
  await expect(queue).toContainText("26 waiting for a free slot");
  await expect(queue.getByRole("listitem")).toHaveCount(5);
  await expect(batch.locator(".worker-card").first()).toBeInViewport();
  expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(1360);
  await shot(page, "1360-dashboard");
  await queue.getByRole("button", { name: "Show all 26 queued" }).click();
  await expect(queue.getByRole("listitem")).toHaveCount(26);
  await queue.getByRole("button", { name: "Show the first 5 only" }).click();
  await expect(queue.getByRole("listitem")).toHaveCount(5);
  await page.getByRole("radio", { name: /^Needs you/ }).click();
  await expect(batch.locator(".worker-card")).toHaveCount(3);
  await page.getByRole("radio", { name: /^All/ }).click();
  await page.setViewportSize({ width: 560, height: 900 });
  await page.waitForTimeout(400); // the navigation's slide-out transition
  expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(560);
  expect(await page.locator(".content").evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await shot(page, "560-dashboard");
  await page.goto(`${engine.origin}/#/approvals`);
  await expect(page.locator("[data-ask-id]")).toHaveCount(3);
  // Each card holds its buttons (the bulk bar's "Reject all 3 in batch …" wraps instead of sticking out).
  await expect(page.getByRole("button", { name: /^Reject all 3 in batch / }).first()).toBeVisible();
  for (const card of await page.locator("[data-ask-id]").all()) expect(await card.evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await shot(page, "560-approvals");
  await page.setViewportSize({ width: 1360, height: 900 });
});
