// What a newcomer met on a graded worker's page, against a real engine, real opencode and the scripted model: Stop and
// Resume were shown (disabled) beside Continue… on a built or failed worker, which is never stopped or resumed — it is
// continued (a new round, graded again), retried or discarded. They are not shown there, as on a merged or discarded
// one; a continued worker, running again, has its Stop back. Its steering box said only "not running": on a graded
// worker it says Continue… sends the follow-up; a merged or discarded one has no steering box.
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("graded-actions-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "fail-then-hang",
          match: /TASK-FAIL/,
          script: (c) =>
            c.userTexts.length > 1 ? { hang: true, textBeforeHang: "Thinking again…" } : { text: "I could not.\nOUTCOME: honest-failure — locked" },
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

test("a graded worker's page shows no Stop or Resume; continued, it has its Stop back", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-FAIL now", title: "Fails", directory: repo, checks: [{ run: "false" }] });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toBe("honest-failure");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const actions = page.getByRole("region", { name: "Worker", exact: true });
  await expect(actions.getByRole("button", { name: "Continue…" })).toBeVisible();
  await expect(actions.getByRole("button", { name: "Retry as new worker" })).toBeVisible();
  await expect(actions.getByRole("button", { name: "Stop", exact: true })).toHaveCount(0);
  await expect(actions.getByRole("button", { name: "Resume", exact: true })).toHaveCount(0);
  await expect(page.getByRole("textbox", { name: "Steering message" })).toHaveAttribute("placeholder", /graded: Continue… sends it a follow-up/);
  await shot(page, "failed");
  await actions.getByRole("button", { name: "Continue…" }).click();
  const dialog = page.getByRole("dialog", { name: "Continue the worker" });
  await dialog.getByRole("textbox").fill("try again");
  await dialog.getByRole("button", { name: "Send follow-up" }).click();
  await expect(actions.getByRole("button", { name: "Stop", exact: true })).toBeEnabled({ timeout: 60_000 });
});

test("a discarded worker's page has no steering box", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-FAIL again", title: "Fails too", directory: repo, checks: [{ run: "false" }] });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toBe("honest-failure");
  await engine.client.workers.discard.mutate({ workerId });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await expect(page.getByRole("region", { name: "Worker", exact: true })).toContainText("discarded");
  await expect(page.getByRole("textbox", { name: "Steering message" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Send steer" })).toHaveCount(0);
  await shot(page, "discarded");
});
