// The GUI's core flows against a real engine (`ocw serve`), real opencode and real git; the scripted model is the only
// stand-in. Diffs people can read (in approval cards and the diff tab), verdict chips that do not contradict
// themselves, submission order, a narrow window, and honest states when the model server or the engine goes away.
// The target is saved through the API (the setup wizard has its own suite). Screenshots land in test-results/screenshots.
import path from "node:path";
import { expect, test, type Locator, type Page } from "@playwright/test";
import { editFile, readFile, startScriptedModel, writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, startEngine, type E2EEngine } from "./engine";

const SHOTS = path.resolve(__dirname, "..", "test-results", "screenshots");
const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: path.join(SHOTS, `gui-${name}.png`), fullPage });

const BIG = Array.from({ length: 80 }, (_, i) => `line ${String(i + 1).padStart(2, "0")} of the generated file, long enough to need some room on screen`).join("\n") + "\n";

let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
let releaseOrder!: () => void;
const orderGate = new Promise<void>((r) => (releaseOrder = r));

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  model = await startScriptedModel({
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
          ctx.turnStep === 0 ? readFile("cli.js") : ctx.turnStep === 1 ? editFile("cli.js", 'console.log("hello");', 'console.log("hello, world");') : { text: "Edited cli.js.\nOUTCOME: built" },
      },
      {
        name: "liar",
        match: /TASK-GUI-LIAR/,
        script: (ctx) => (ctx.turnStep === 0 ? writeFile("b.txt", "gamma\n") : { text: "b.txt has beta in it.\nOUTCOME: built" }),
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
  });
  engine = await startEngine();
  await engine.client.targets.save.mutate({
    target: { id: "scripted", model: "scripted-1", endpoint: model.url, serving: { engine: "capture", endpoints: [], slots: 3 }, checks: [] },
    activate: true,
  });
  repo = makeRepo({ "README.md": "# gui repo\n", "cli.js": '#!/usr/bin/env node\nconst args = process.argv.slice(2);\nconsole.log("hello");\nprocess.exit(0);\n' });
  page = await (await browser.newContext()).newPage();
  page.on("pageerror", (err) => console.error("[page error]", err.message));
  page.on("console", (m) => {
    if (m.type() === "error") console.error("[console]", m.text());
  });
});

test.afterAll(async () => {
  releaseOrder?.();
  await page?.context().close();
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", repo ?? "");
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
  await engine.client.workers.start.mutate({ task: "TASK-GUI-EDIT: greet the world in cli.js", title: "Edit cli.js", directory: repo, checks: [{ run: "grep -q world cli.js" }] });
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
