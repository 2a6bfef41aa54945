// What a newcomer met starting work from New task with the keyboard, against a real engine, real opencode and the
// scripted model: the form's "Start …" button goes away with the New task screen, and the focus fell to the page's top
// (document.body) on the screen it opened: a batch (the dashboard), one task (its worker's page) and one task's
// attempts (its attempts page). The focus goes to what was started: the new batch's heading, the worker's heading, the
// attempts' heading (as "Retry as new worker" opens a worker's page).
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("start-focus-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: { chunkDelayMs: 2, scripts: [{ name: "hang", match: /TASK-HANG/, script: () => ({ hang: true, textBeforeHang: "Thinking…" }) }] },
    target: { engine: "scripted", slots: 2 },
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

async function fill(tasks: string[], attempts = 1) {
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  await form.getByRole("textbox", { name: "Directory (git repository)" }).first().fill(repo);
  for (const [i, t] of tasks.entries()) {
    if (i > 0) await form.getByRole("button", { name: "+ Add another task (batch)" }).click();
    await form.getByRole("textbox", { name: "Task", exact: true }).nth(i).fill(t);
  }
  await form.getByLabel("Attempts").fill(String(attempts));
  await form.getByRole("button", { name: /^Start / }).focus();
  await page.keyboard.press("Enter");
}

test("a batch started with the keyboard leaves the focus on the new batch's heading on the dashboard", async () => {
  await fill(["TASK-HANG one", "TASK-HANG two"]);
  await page.waitForURL((u) => u.hash === "#/");
  const batchId = (await engine.client.workers.list.query()).find((w) => w.batchId)!.batchId!;
  const heading = page.getByRole("region", { name: `batch ${batchId}`, exact: true }).getByRole("heading", { level: 2 });
  await expect(heading).toBeFocused();
  await shot(page, "batch");
});

test("one task started with the keyboard leaves the focus on its worker's heading", async () => {
  await fill(["TASK-HANG three"]);
  await page.waitForURL(/#\/workers\/w-/);
  await expect(page.getByRole("heading", { level: 2, name: "TASK-HANG three", exact: true })).toBeFocused();
});

test("one task's attempts started with the keyboard leave the focus on the attempts' heading", async () => {
  await fill(["TASK-HANG four"], 2);
  await page.waitForURL(/#\/attempts\//);
  await expect(page.getByRole("heading", { level: 2, name: "TASK-HANG four", exact: true })).toBeFocused();
});
