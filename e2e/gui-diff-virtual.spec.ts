// A very large diff is virtualised, not folded: a worker (real engine, real opencode, real git; the scripted model is
// the only stand-in) writes a 5,000-line file, and its diff tab shows it open at once with only the pieces in view in
// the page; scrolling brings the end in (with the file's own line numbers) and takes the start out. Split layout too.
// Screenshots land in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import { bash } from "../test/fixtures/scripted-model";
import { isAtRest } from "../shared/worker";
import { approvingPoll, type E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("gui-diff-virtual-", { fullPage: false });

const N = 5000;
// Short lines: the engine cuts a diff past 200 kB (the viewer then says so), and this is about 5,000 lines, not bytes.
const line = (i: number) => `row ${String(i).padStart(4, "0")}: const v${i} = f(${i});`;
// The worker makes the file with one command (a 5,000-line write as a tool call's argument is not what this is about).
const MAKE = `for i in $(seq 1 ${N}); do printf 'row %04d: const v%d = f(%d);\\n' $i $i $i; done > huge.ts`;

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      scripts: [{ name: "huge", match: /TASK-HUGE/, script: (c) => (c.turnStep === 0 ? bash(MAKE) : { text: "Wrote huge.ts.\nOUTCOME: built" }) }],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ engine, page, repo } = setup);
});

test.afterAll(() => setup?.close());

test("a 5,000-line diff opens at once, virtualised: only the rows in view are in the page, scrolling brings the end in", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-HUGE: write huge.ts",
    title: "Huge file",
    directory: repo,
    checks: [{ run: "test -f huge.ts" }],
  });
  // A `for` loop is a shell keyword, so no approving policy rule answers it (rules match per simple command, and a
  // command that does not split with certainty is never auto-approved): the one ask is answered here, as a person would.
  await approvingPoll(engine, workerId, (w) => isAtRest(w.state), 150_000).toBe(true);
  const w = await engine.client.workers.get.query({ workerId });
  expect(w.state, w.stateReason ?? "").toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const opened = Date.now();
  await page.getByRole("tab", { name: "Diff" }).click();
  const file = page.getByRole("group", { name: "Worktree diff" }).getByRole("region", { name: "diff of huge.ts" });
  await expect(file).toContainText(`+${N}`);
  // Open, not folded: the first rows are there without a click.
  await expect(file.getByRole("button", { name: /Show .* diff lines/ })).toHaveCount(0);
  await expect(file.getByText(line(1))).toBeVisible();
  const firstPaintMs = Date.now() - opened;
  const body = file.getByLabel("5,000 diff lines, shown as you scroll");
  await expect(body).toBeVisible();
  const rows = () =>
    file
      .locator("tr")
      .filter({ hasText: /row \d{4}: const v\d/ })
      .count();
  const inPage = await rows();
  expect(inPage).toBeGreaterThan(20);
  expect(inPage).toBeLessThan(600);
  await expect(file.getByText(line(N))).toHaveCount(0);
  // Syntax highlighting is on, piece by piece (a whole 5,000-line file was too costly to highlight).
  expect(await file.locator(".dv-piece .hljs-keyword, .dv-piece [class*='hljs']").count()).toBeGreaterThan(0);
  await shot(page, "01-top");

  // To the end: the last line, numbered 5000, is in; the first is out. (Pieces are measured as they come into view, so
  // the height the box reports settles after a scroll or two, as it does when a person drags to the bottom.)
  await expect
    .poll(
      async () => {
        await body.evaluate((el) => (el.scrollTop = el.scrollHeight));
        return file.getByText(line(N)).isVisible();
      },
      { timeout: 30_000 },
    )
    .toBe(true);
  await expect(file.locator("tr").filter({ hasText: line(N) })).toContainText(String(N));
  await expect(file.getByText(line(1))).toHaveCount(0);
  expect(await rows()).toBeLessThan(600);
  await shot(body, "02-end");

  // The middle, in split layout: still a few hundred rows at most, numbered as in the file.
  await page.getByRole("group", { name: "Worktree diff" }).getByRole("radio", { name: "Split" }).click();
  await body.evaluate((el) => (el.scrollTop = el.scrollHeight / 2));
  await expect(
    file
      .locator("tr")
      .filter({ hasText: /row 2[45]\d\d: const v/ })
      .first(),
  ).toBeVisible();
  expect(await rows()).toBeLessThan(600);
  await shot(body, "03-middle-split");
  await page.getByRole("group", { name: "Worktree diff" }).getByRole("radio", { name: "Unified" }).click();
  test
    .info()
    .annotations.push(
      { type: "first paint of the diff tab (ms)", description: String(firstPaintMs) },
      { type: "rows in the page at the top", description: String(inPage) },
    );
});
