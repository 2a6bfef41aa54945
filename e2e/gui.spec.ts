// The GUI's core flows against a real engine (`ocw serve`), real opencode and real git; the scripted model is the only
// stand-in. Diffs people can read (in approval cards and the diff tab), verdict chips that do not contradict
// themselves, submission order, a narrow window, and honest states when the model server or the engine goes away.
// The target is saved through the API (the setup wizard has its own suite). Screenshots land in test-results/screenshots.
import { expect, test, type Locator, type Page } from "@playwright/test";
import { editFile, readFile, writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedEngine, shots, type ScriptedEngine } from "./scripted-setup";

const shot = shots("gui-", { fullPage: true });

const BIG =
  Array.from({ length: 80 }, (_, i) => `line ${String(i + 1).padStart(2, "0")} of the generated file, long enough to need some room on screen`).join("\n") +
  "\n";

let setup: ScriptedEngine;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
let releaseOrder!: () => void;
const orderGate = new Promise<void>((r) => (releaseOrder = r));

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "newfile",
          match: /TASK-GUI-NEW/,
          script: (ctx) => (ctx.turnStep === 0 ? writeFile("big.txt", BIG) : { text: "Wrote big.txt.\nOUTCOME: built" }),
        },
        {
          name: "edit",
          match: /TASK-GUI-EDIT/,
          script: (ctx) =>
            ctx.turnStep === 0
              ? readFile("cli.js")
              : ctx.turnStep === 1
                ? editFile("cli.js", 'console.log("hello");', 'console.log("hello, world");')
                : { text: "Edited cli.js.\nOUTCOME: built" },
        },
        {
          name: "liar",
          match: /TASK-GUI-LIAR/,
          script: (ctx) => (ctx.turnStep === 0 ? writeFile("b.txt", "gamma\n") : { text: "b.txt has beta in it.\nOUTCOME: built" }),
        },
        {
          name: "hang",
          match: /TASK-GUI-HANG/,
          script: () => ({ hang: true, textBeforeHang: "Working on it…" }),
        },
        {
          name: "order",
          match: /TASK-GUI-ORDER/,
          script: async () => {
            await orderGate;
            return { text: "Nothing to do.\nOUTCOME: honest-failure — ordering test" };
          },
        },
      ],
    },
    target: { engine: "capture", slots: 3 },
    repos: [
      {
        "README.md": "# gui repo\n",
        "cli.js": '#!/usr/bin/env node\nconst args = process.argv.slice(2);\nconsole.log("hello");\nprocess.exit(0);\n',
      },
    ],
  });
  ({ model, engine, repo } = setup);
  page = await (await browser.newContext()).newPage();
  page.on("pageerror", (err) => console.error("[page error]", err.message));
  page.on("console", (m) => {
    if (m.type() === "error") console.error("[console]", m.text());
  });
});

test.afterAll(async () => {
  releaseOrder?.();
  await page?.context().close();
  await setup?.close(); // a model closed by a test is closed again: no harm
});

/** Every element's box lies inside the viewport's width (nothing pushed off to the right). */
async function expectWithinWidth(page: Page, rows: Locator) {
  const width = page.viewportSize()!.width;
  const boxes = await rows.evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => ({ left: r.left, right: r.right, w: r.width })));
  expect(boxes.length).toBeGreaterThan(0);
  for (const b of boxes) {
    expect(b.w).toBeGreaterThan(0);
    expect(b.left).toBeGreaterThanOrEqual(0);
    expect(b.right).toBeLessThanOrEqual(width);
  }
}

test("approval cards show the whole diff: all 80 added lines of a new file, and both sides of an edit", async () => {
  await page.goto(engine.url);
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  await engine.client.workers.start.mutate({ task: "TASK-GUI-NEW: write big.txt", title: "New file", directory: repo, checks: [{ file: "big.txt" }] });
  await engine.client.workers.start.mutate({
    task: "TASK-GUI-EDIT: greet the world in cli.js",
    title: "Edit cli.js",
    directory: repo,
    checks: [{ run: "grep -q world cli.js" }],
  });
  await expect.poll(async () => (await engine.client.approvals.list.query()).length, { timeout: 90_000 }).toBe(2);
  const asks = await engine.client.approvals.list.query();
  const bigAsk = asks.find((a) => a.what.includes("big.txt"))!;
  const editAsk = asks.find((a) => a.what.includes("cli.js"))!;

  await page.getByRole("link", { name: /^Approvals/ }).click();
  const bigCard = page.locator(`[data-ask-id="${bigAsk.id}"]`);
  const bigDiff = bigCard.getByRole("group", { name: `diff of ${bigAsk.id}` });
  await expect(bigDiff).toContainText("+80");
  // Each of the 80 lines is in the card, on its own row, inside the window's width.
  const added = bigDiff.locator("tr").filter({ hasText: /line \d\d of the generated file/ });
  await expect(added).toHaveCount(80);
  await expectWithinWidth(page, added);
  for (const n of [1, 40, 80]) await expect(bigDiff.getByText(`line ${String(n).padStart(2, "0")} of the generated file`, { exact: false })).toHaveCount(1);

  const editDiff = page.locator(`[data-ask-id="${editAsk.id}"]`).getByRole("group", { name: `diff of ${editAsk.id}` });
  await expect(editDiff).toContainText('console.log("hello");');
  await expect(editDiff).toContainText('console.log("hello, world");');
  await expect(editDiff).toContainText("−1");
  await expect(editDiff).toContainText("+1");
  await expectWithinWidth(page, editDiff.locator("tr").filter({ hasText: "console.log" }));
  await shot(page, "01-approval-diffs");

  // The same diffs in split layout: still inside the window.
  await editDiff.getByRole("radio", { name: "Split" }).click();
  await expect(editDiff.getByRole("radio", { name: "Split" })).toHaveAttribute("aria-checked", "true");
  await expect(editDiff).toContainText('console.log("hello");');
  await expect(editDiff).toContainText('console.log("hello, world");');
  await expectWithinWidth(page, editDiff.locator("tr").filter({ hasText: "console.log" }));
  await shot(page, "02-approval-diffs-split");
  await editDiff.getByRole("radio", { name: "Unified" }).click();

  for (const a of asks) await engine.client.approvals.decide.mutate({ askId: a.id, decision: "once" });
});

test("the diff tab lists the changed files with line numbers, and shows both sides of an edit", async () => {
  const workers = await engine.client.workers.list.query();
  const edit = workers.find((w) => w.spec.task.includes("TASK-GUI-EDIT"))!;
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: edit.id })).state, { timeout: 90_000 }).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${edit.id}`);
  await page.getByRole("tab", { name: "Diff" }).click();
  const diff = page.getByRole("group", { name: "Worktree diff" });
  await expect(diff.getByRole("list", { name: "Changed files" })).toContainText("cli.js");
  const file = diff.getByRole("region", { name: "diff of cli.js" });
  await expect(file).toContainText('console.log("hello");');
  await expect(file).toContainText('console.log("hello, world");');
  // Line numbers: the edited line is line 3 on both sides.
  await expect(file.locator("tr").filter({ hasText: 'console.log("hello, world");' })).toContainText("3");
  await expectWithinWidth(page, file.locator("tr").filter({ hasText: "console.log" }));
  await shot(page, "03-worker-diff-tab");

  const big = workers.find((w) => w.spec.task.includes("TASK-GUI-NEW"))!;
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: big.id })).state, { timeout: 90_000 }).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${big.id}`);
  await page.getByRole("tab", { name: "Diff" }).click();
  const bigFile = page.getByRole("group", { name: "Worktree diff" }).getByRole("region", { name: "diff of big.txt" });
  await expect(bigFile.locator("tr").filter({ hasText: /line \d\d of the generated file/ })).toHaveCount(80);
  await expectWithinWidth(page, bigFile.locator("tr").filter({ hasText: /line \d\d of the generated file/ }));
  await shot(page, "04-worker-diff-newfile", false);
});

test("verdict chips: a worker that claimed built and failed shows “failed” and, separately, “claim false”; approved inline on its card", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-GUI-LIAR: put beta in b.txt",
    title: "Liar",
    directory: repo,
    checks: [{ run: "grep -q beta b.txt" }],
  });
  await page.goto(engine.origin + "/#/");
  const card = page.getByRole("region", { name: workerId, exact: true });
  // Its write ask can be approved right on the dashboard card.
  await expect(card.getByRole("button", { name: `Approve ${workerId}'s edit ask`, exact: true })).toBeVisible({ timeout: 90_000 });
  await expect(card).toContainText("b.txt");
  await shot(page, "05-dashboard-inline-ask");
  await card.getByRole("button", { name: `Approve ${workerId}'s edit ask`, exact: true }).click();
  await expect(card.getByLabel("verdict: failed")).toBeVisible({ timeout: 90_000 });
  await expect(card.getByLabel("verdict: failed")).toHaveText("failed · 0/1 checks");
  await expect(card.getByLabel("claim: false")).toHaveText("claim false: said built");
  await expect(card).not.toContainText("honest failure");
  await expect(card).not.toContainText("dishonest");
  // The honest, built ones say so.
  const built = (await engine.client.workers.list.query()).find((w) => w.spec.task.includes("TASK-GUI-EDIT"))!;
  await expect(page.getByRole("region", { name: built.id, exact: true }).getByLabel("verdict: built")).toBeVisible();
  await expect(page.getByRole("region", { name: built.id, exact: true }).getByLabel("claim: honest")).toBeVisible();
  await shot(page, "06-dashboard-verdict-chips");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const verdict = page.getByRole("region", { name: `Verdict of ${workerId}` });
  await expect(verdict.locator(".verdict-head")).toContainText("failed");
  await expect(verdict.getByRole("status")).toHaveText("false claim");
  await expect(verdict).not.toContainText("honest failure");
  await shot(page, "07-verdict-card-false-claim");
});

test("cards and queue follow submission order (a batch of 8 on 3 slots)", async () => {
  await page.goto(engine.origin + "/#/");
  const tasks = Array.from({ length: 8 }, (_, i) => ({
    task: `TASK-GUI-ORDER T${i + 1}: wait`,
    title: `Order T${i + 1}`,
    directory: repo,
    checks: [{ run: "true" }],
  }));
  const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({ tasks });
  const batch = page.getByRole("region", { name: `batch ${batchId}` });
  await expect(batch.locator(".worker-card")).toHaveCount(8);
  await expect(batch.locator(".card-title")).toHaveText(tasks.map((t) => t.title));
  const queue = page.getByRole("region", { name: "Queue" });
  await expect(queue.getByRole("listitem")).toHaveCount(5, { timeout: 30_000 });
  await expect(queue.getByRole("listitem")).toHaveText(workerIds.slice(3).map((id, i) => `${id} — Order T${i + 4}`));
  await expect(batch.getByRole("img", { name: /^progress:/ })).toBeVisible();
  await shot(page, "08-dashboard-order-queue");
  releaseOrder();
  for (const id of workerIds)
    await expect.poll(async () => (await engine.client.workers.get.query({ workerId: id })).verdict !== null, { timeout: 120_000 }).toBe(true);
  await expect(batch.locator(".card-title")).toHaveText(tasks.map((t) => t.title));
});

test("below 1000 px the navigation folds behind a menu button (down to 800 px)", async () => {
  for (const width of [980, 800]) {
    await page.setViewportSize({ width, height: 800 });
    await page.goto(engine.origin + "/#/");
    const nav = page.getByRole("navigation", { name: "Main" });
    await expect(nav).toBeHidden();
    const menu = page.getByRole("button", { name: "Menu" });
    await expect(menu).toBeVisible();
    await menu.click();
    await expect(nav).toBeVisible();
    await expect(nav.getByRole("link", { name: /^Approvals/ })).toBeVisible();
    if (width === 800) {
      // By keyboard: the open drawer has the focus (on its first link), and Escape closes it, back on the Menu button.
      await expect(nav.getByRole("link", { name: "Dashboard" })).toBeFocused();
      await page.keyboard.press("Escape");
      await expect(nav).toBeHidden();
      await expect(menu).toBeFocused();
      await menu.press("Enter");
      await expect(nav.getByRole("link", { name: "Dashboard" })).toBeFocused();
      // The drawer has finished sliding in before the screenshot (it was taken mid-slide, its left edge cut off).
      await expect.poll(() => nav.evaluate((el) => el.getBoundingClientRect().left)).toBe(0);
      await shot(page, "09-narrow-nav-open", false);
    }
    await nav.getByRole("link", { name: "Grades" }).click();
    await expect(page.getByRole("heading", { name: "Grades", exact: true })).toBeVisible();
    await expect(nav).toBeHidden();
    // Nothing on the dashboard is wider than the window.
    await page.goto(engine.origin + "/#/");
    expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(width);
    if (width === 800) await shot(page, "10-narrow-dashboard", false);
  }
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(engine.origin + "/#/");
  await expect(page.getByRole("navigation", { name: "Main" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Menu" })).toBeHidden();
});

test("a dead model server is not shown as ready: its interrupted worker says why and offers Resume", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-GUI-HANG: a long job",
    title: "Long job",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await page.goto(engine.origin + "/#/");
  await expect
    .poll(() => model.requests.some((r) => r.kind === "chat" && JSON.stringify(r.body.messages).includes("TASK-GUI-HANG")), { timeout: 60_000 })
    .toBe(true);
  await expect(page.getByLabel("health of scripted: ready")).toBeVisible();
  await model.close();
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 90_000 }).toBe("interrupted");
  await expect(page.getByLabel("health of scripted: model server down")).toBeVisible();
  await expect(page.getByLabel("health of scripted: ready")).toHaveCount(0);
  await expect(page.getByRole("alert", { name: "model server of scripted is down" })).toContainText("Resume 1 interrupted");
  const card = page.getByRole("region", { name: workerId, exact: true });
  await expect(card).toContainText("interrupted");
  await expect(card).toContainText("stopped answering");
  // Named for its worker, as every card's button is (each card's was "Resume").
  await expect(card.getByRole("button", { name: `Resume ${workerId}`, exact: true })).toBeEnabled();
  await expect(card.getByRole("button", { name: `Retry ${workerId}`, exact: true })).toBeEnabled();
  await shot(page, "11-model-server-down");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await expect(page.getByRole("button", { name: "Resume" })).toBeEnabled();
  await expect(page.getByRole("button", { name: "Send steer" })).toBeDisabled();
  await shot(page, "12-worker-interrupted");
});

test("when the engine stops, every screen says so (no “ready”, no live slots) and says what to do", async () => {
  await page.goto(engine.origin + "/#/");
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  await engine.kill();
  const lost = page.getByRole("alert", { name: "Engine not reachable" });
  await expect(lost).toBeVisible({ timeout: 20_000 });
  await expect(lost).toContainText("ocw serve");
  await expect(lost).toContainText("last known state");
  await expect(page.getByLabel("health of scripted: unknown: engine offline")).toBeVisible();
  await expect(page.getByText(/^ready$/)).toHaveCount(0);
  await expect(page.getByRole("group", { name: "target scripted" })).toContainText("last known:");
  await shot(page, "13-engine-stopped");
  await page.getByRole("link", { name: /^Approvals/ }).click();
  await expect(lost).toBeVisible();
});
