// The dashboard people keep open all day, against a real engine (`ocw serve`), real opencode and git, and the scripted
// model: what needs you comes first (asks, then running, then queued, then settled batches), filters and search,
// folding and archiving a settled batch, the slot a worker waiting for a person hands to the next queued one (the
// serving panel shows both counts), and an engine that goes away: every control disabled, timers frozen, a banner;
// started again it is back on the same port and token and this tab reconnects by itself. At 1440×900 and 900×700.
import { expect, test, type Page } from "@playwright/test";
import { bash, writeFile } from "../test/fixtures/scripted-model";
import { approvingPoll, startEngine, type E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("needs-you-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;
let otherRepo: string;
const ids: Record<string, string> = {};

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        { name: "done", match: /TASK-NY-DONE/, script: (c) => (c.turnStep === 0 ? writeFile("done.txt", "done\n") : { text: "Done.\nOUTCOME: built" }) },
        { name: "ask", match: /TASK-NY-ASK/, script: (c) => (c.turnStep === 0 ? bash("echo needs-you") : { text: "Ran it.\nOUTCOME: built" }) },
        { name: "hang", match: /TASK-NY-HANG/, script: () => ({ hang: true, textBeforeHang: "Working on it…" }) },
      ],
    },
    // One slot: the worker that asks gives it to the next one.
    target: { engine: "capture", slots: 1 },
    repos: [{ "README.md": "# needs-you repo\n" }, { "README.md": "# other repo\n" }],
    viewport: { width: 1440, height: 900 },
  });
  ({ engine, page } = setup);
  [repo, otherRepo] = setup.repos as [string, string];
});

test.afterAll(() => setup?.close());

test("needs you first: the ask, then running, then queued, then the settled batch; the slot of the ask went to the next worker", async () => {
  const done = await engine.client.workers.startBatch.mutate({
    tasks: [1, 2].map((i) => ({ task: `TASK-NY-DONE ${i}: write done.txt`, title: `Done ${i}`, directory: otherRepo, checks: [{ file: "done.txt" }] })),
  });
  ids.batch = done.batchId;
  // Their edits are approved here (through the API), one by one as they ask.
  for (const id of done.workerIds) await approvingPoll(engine, id, (w) => w.state).toBe("built");
  ids.ask = (
    await engine.client.workers.start.mutate({ task: "TASK-NY-ASK: run a command", title: "Asks a person", directory: repo, checks: [{ run: "true" }] })
  ).workerId;
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: ids.ask! })).state, { timeout: 90_000 }).toBe("waiting-approval");
  // Slots = 1 and nobody answers: the next worker still starts.
  ids.run = (
    await engine.client.workers.start.mutate({ task: "TASK-NY-HANG: a long job", title: "Runs long", directory: repo, checks: [{ run: "true" }] })
  ).workerId;
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: ids.run! })).state, { timeout: 90_000 }).toBe("running");
  ids.queued = (
    await engine.client.workers.start.mutate({ task: "TASK-NY-HANG: waits its turn", title: "Waits its turn", directory: repo, checks: [{ run: "true" }] })
  ).workerId;

  await page.goto(engine.origin + "/#/");
  const sections = page.locator("section.batch");
  await expect(sections).toHaveCount(2);
  await expect(sections.nth(0)).toHaveAttribute("aria-label", "tasks outside batches");
  await expect(sections.nth(1)).toHaveAttribute("aria-label", `batch ${ids.batch}`);
  await expect(sections.nth(0).locator(".card-title")).toHaveText(["Asks a person", "Runs long", "Waits its turn"]);
  const slots = page.getByRole("group", { name: "target scripted" });
  await expect(slots).toContainText("1/1 slots on the model · 1 waiting for you (slot handed over) · 1 queued");
  // The active target in the side bar: "1 slot", not "1 slots".
  await expect(page.locator(".target-line")).toHaveText(/ · 1 slot$/);
  await expect(page.getByRole("radio", { name: /Needs you 1/ })).toBeVisible();
  await shot(page, "1440-order");
  await page.setViewportSize({ width: 900, height: 700 });
  await expect(sections.nth(0).locator(".card-title").first()).toBeInViewport();
  expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(900);
  await shot(page, "900-order");
  await page.setViewportSize({ width: 1440, height: 900 });
});

test("a settled batch's header at 900 px: Archive sits on the line of its sibling controls; narrower, the controls wrap together", async () => {
  await page.goto(engine.origin + "/#/");
  const batch = page.getByRole("region", { name: `batch ${ids.batch}` });
  const head = batch.locator("header.batch-head");
  const rename = head.getByRole("button", { name: `Rename ${ids.batch}`, exact: true });
  const mergeAll = head.getByRole("button", { name: "Merge all built (2)…", exact: true });
  const archive = head.getByRole("button", { name: "Archive", exact: true });
  /** The vertical middle of one box lies within the other's height: the two sit on one line. */
  const sameLine = async (a: typeof archive, b: typeof archive) => {
    const [x, y] = [(await a.boundingBox())!, (await b.boundingBox())!];
    const mid = x.y + x.height / 2;
    return mid > y.y && mid < y.y + y.height;
  };
  for (const width of [900, 560]) {
    await page.setViewportSize({ width, height: 700 });
    await expect(archive).toBeVisible();
    expect(await sameLine(archive, mergeAll), `${width} px: Archive beside Merge all built`).toBe(true);
    expect((await archive.boundingBox())!.x, `${width} px: Archive after Merge all built`).toBeGreaterThan((await mergeAll.boundingBox())!.x);
    const box = (await archive.boundingBox())!;
    expect(box.x + box.width, `${width} px: Archive inside the window`).toBeLessThanOrEqual(width);
    expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(width);
    // At 900 px the whole row of controls is one line: the batch's name, Name… and Merge all built with Archive.
    if (width === 900) expect(await sameLine(archive, rename), "900 px: Archive on the line of Name…").toBe(true);
    await shot(batch, `${width}-batch-head`);
  }
  await page.setViewportSize({ width: 1440, height: 900 });
  expect(await sameLine(archive, rename), "1440 px: one line").toBe(true);
  await shot(batch, "1440-batch-head");
});

test("filters by state, repository and batch, search by task text and id, and fold and archive the settled batch", async () => {
  await page.goto(engine.origin + "/#/");
  const cards = page.locator(".worker-card .card-title");
  await page.getByRole("radio", { name: /Needs you/ }).click();
  await expect(cards).toHaveText(["Asks a person"]);
  await page.getByRole("radio", { name: /Settled/ }).click();
  await expect(cards).toHaveText(["Done 1", "Done 2"]);
  await page.getByRole("radio", { name: /^All/ }).click();
  await page.getByRole("searchbox", { name: "Search task or id" }).fill("long job");
  await expect(cards).toHaveText(["Runs long"]);
  await page.getByRole("searchbox", { name: "Search task or id" }).fill(ids.queued!);
  await expect(cards).toHaveText(["Waits its turn"]);
  await page.getByRole("searchbox", { name: "Search task or id" }).fill("");
  await page.getByRole("combobox", { name: "Repository" }).selectOption(otherRepo);
  await expect(cards).toHaveText(["Done 1", "Done 2"]);
  await page.getByRole("combobox", { name: "Repository" }).selectOption("");
  await page.getByRole("combobox", { name: "Batch" }).selectOption("single");
  await expect(cards).toHaveCount(3);
  await page.getByRole("combobox", { name: "Batch" }).selectOption("");
  await shot(page, "1440-filters");

  const batch = page.getByRole("region", { name: `batch ${ids.batch}` });
  await batch.getByRole("button", { name: `Batch ${ids.batch}` }).click();
  await expect(batch.getByRole("button", { name: `Batch ${ids.batch}` })).toHaveAttribute("aria-expanded", "false");
  await expect(batch.locator(".worker-card")).toHaveCount(0);
  await page.reload();
  await expect(page.getByRole("region", { name: `batch ${ids.batch}` }).locator(".worker-card")).toHaveCount(0);
  await page
    .getByRole("region", { name: `batch ${ids.batch}` })
    .getByRole("button", { name: "Archive" })
    .click();
  await expect(page.getByRole("region", { name: `batch ${ids.batch}` })).toHaveCount(0);
  await page.getByRole("checkbox", { name: "Archived (1)" }).check();
  await expect(page.getByRole("region", { name: `batch ${ids.batch}` })).toBeVisible();
  await expect(page.getByRole("region", { name: "tasks outside batches" })).toHaveCount(0);
  await shot(page, "1440-archived");
  await page
    .getByRole("region", { name: `batch ${ids.batch}` })
    .getByRole("button", { name: "Unarchive" })
    .click();
  // The last archived batch taken back: the live view again, with it.
  await expect(page.getByRole("region", { name: "tasks outside batches" })).toBeVisible();
  await expect(page.getByRole("region", { name: `batch ${ids.batch}` })).toBeVisible();
  await expect(page.getByRole("checkbox", { name: /Archived/ })).toHaveCount(0);
});

test("the engine goes away: a banner, every control disabled, timers frozen; started again on the same port and token, the tab reconnects", async () => {
  await page.goto(engine.origin + "/#/");
  const askCard = page.getByRole("region", { name: ids.ask!, exact: true });
  await expect(askCard.getByRole("button", { name: `Approve ${ids.ask}'s bash ask`, exact: true })).toBeEnabled();
  const stateDir = engine.stateDir;
  const origin = engine.origin;
  await engine.kill();
  const lost = page.getByRole("alert", { name: "Engine not reachable" });
  await expect(lost).toBeVisible({ timeout: 20_000 });
  await expect(lost).toContainText("actions are disabled and timers paused");
  await expect(askCard.getByRole("button", { name: `Approve ${ids.ask}'s bash ask`, exact: true })).toBeDisabled();
  await expect(page.getByRole("searchbox", { name: "Search task or id" })).toBeDisabled();
  const elapsed = page.getByRole("region", { name: ids.run!, exact: true }).getByTitle("elapsed");
  const before = await elapsed.textContent();
  await page.waitForTimeout(2500);
  expect(await elapsed.textContent()).toBe(before);
  await page.keyboard.press("a"); // the approvals shortcut does nothing either
  await shot(page, "1440-engine-lost");
  await page.setViewportSize({ width: 900, height: 700 });
  await expect(page.getByRole("button", { name: "Menu" })).toBeVisible();
  await page.waitForTimeout(500); // the navigation's slide-out transition
  await shot(page, "900-engine-lost");
  await page.setViewportSize({ width: 1440, height: 900 });

  engine = setup.engine = await startEngine(stateDir); // the one afterAll ends
  expect(engine.origin).toBe(origin);
  await expect(lost).toBeHidden({ timeout: 30_000 });
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  // A clean stop interrupts the workers it ran: they offer Resume, enabled again.
  await expect(page.getByRole("region", { name: ids.run!, exact: true }).getByRole("button", { name: "Resume" })).toBeEnabled({ timeout: 30_000 });
  await expect(page.getByRole("searchbox", { name: "Search task or id" })).toBeEnabled();
  await shot(page, "1440-reconnected");
});
