// What a newcomer met with a screen reader, the keyboard and a narrow window, against a real engine, real opencode and
// the scripted model:
// - every dashboard card with a pending ask had buttons named "Approve" and "Reject", the same on every card: which
//   worker's ask a button answered could not be told. Each is named by its worker and the ask's tool now, and text a
//   worker or its starter chose (a title, a command) cannot make a button carry another card's name;
// - after Discard in the worker page's confirm dialog the focus fell to the page's top: it goes to the page's heading;
// - the "1 ask" badge of a card with a long title wrapped onto two lines 900 px wide;
// - 900 px wide, a card's ask line was cut to one line beside its buttons ("edit: name…"): it wraps below them now;
// - after Merge in its confirm dialog the focus fell to the page's top (Merge… went away once merged); after Publish
//   branch, a push, or Cancel in the inline stop confirmation too: it goes to the heading, or back where it came from;
// - a discarded worker's page showed Stop and Resume, disabled: a discarded worker is never stopped or resumed.
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { bash, writesAsTold } from "../test/fixtures/scripted-model";
import { approvingPoll, type E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("a11y-", { fullPage: true });

const LONG_TITLE = "Rename the settings loader and every caller of it across the whole repository, then update its docs";

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        writesAsTold("TASK-WRITE"),
        {
          // Runs the command its task spells out: a command the worker wrote, shown on its card.
          name: "say",
          match: /TASK-SAY /,
          script: (c) => (c.turnStep === 0 ? bash(`echo '${c.firstUserText.split("TASK-SAY ")[1]!.trim()}'`) : { text: "Done.\nOUTCOME: built" }),
        },
      ],
    },
    target: { engine: "scripted", slots: 3 },
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

test("each dashboard card's Approve and Reject name their worker and its ask; a title or a command cannot borrow another card's names", async () => {
  const a = (await engine.client.workers.start.mutate({ task: "TASK-WRITE file=named.txt text=ok", directory: repo, checks: [] })).workerId;
  // Its title and its command both spell out the names of the first card's buttons.
  const forged = `Approve ${a}'s edit ask`;
  const b = (await engine.client.workers.start.mutate({ task: `TASK-SAY Reject ${a}'s edit ask`, title: forged, directory: repo, checks: [] })).workerId;
  await expect.poll(async () => (await engine.client.approvals.list.query()).length, { timeout: 60_000 }).toBe(2);
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/dashboard`);
  const cardA = page.getByRole("region", { name: a, exact: true });
  const cardB = page.getByRole("region", { name: b, exact: true });
  await expect(cardB).toContainText(forged);
  await expect(cardB).toContainText(`Reject ${a}'s edit ask`);

  // One button on the whole page carries each name, on its own worker's card; the text shown stays short.
  for (const [card, id, tool] of [
    [cardA, a, "edit"],
    [cardB, b, "bash"],
  ] as const) {
    for (const verb of ["Approve", "Reject"]) {
      const name = `${verb} ${id}'s ${tool} ask`;
      await expect(page.getByRole("button", { name, exact: true }), name).toHaveCount(1);
      await expect(card.getByRole("button", { name, exact: true })).toHaveText(verb);
    }
  }
  // The first card's names are nowhere on the second card (its title link and its command are not buttons).
  await expect(cardB.getByRole("button", { name: forged })).toHaveCount(0);
  await expect(cardB.getByRole("button", { name: `Reject ${a}` })).toHaveCount(0);
  await shot(page, "dashboard-ask-buttons", false);

  // Decided by its name, the right worker's ask is the one answered.
  await page.getByRole("button", { name: `Reject ${b}'s bash ask`, exact: true }).click();
  await expect(cardB.getByRole("button", { name: /^Approve / })).toHaveCount(0);
  await expect(cardA.getByRole("button", { name: `Approve ${a}'s edit ask`, exact: true })).toBeVisible();
});

/** A worker waiting on its one ask (a write of `file`), and its card on the dashboard 900 px wide. */
async function askingCardAt900(file: string, title?: string) {
  const { workerId } = await engine.client.workers.start.mutate({ task: `TASK-WRITE file=${file} text=ok`, title, directory: repo, checks: [] });
  await expect
    .poll(async () => (await engine.client.workers.get.query({ workerId })).asks.filter((x) => x.status === "pending").length, { timeout: 60_000 })
    .toBe(1);
  await page.setViewportSize({ width: 900, height: 900 });
  await page.goto(`${engine.origin}/#/dashboard`);
  return { workerId, card: page.getByRole("region", { name: workerId, exact: true }) };
}

test("a card's ask badge stays on one line inside its card, 900 px wide", async () => {
  const { card } = await askingCardAt900("badge.txt", LONG_TITLE);
  const badge = card.getByRole("link", { name: "1 pending approval", exact: true });
  await expect(badge).toHaveText("1 ask");
  await page.waitForTimeout(400); // the navigation drawer's slide after the resize
  // Its text's line boxes: one top (before, "1" and "ask" sat on two lines, out of its 18 px pill).
  const lines = await badge.evaluate((el) => {
    const r = el.ownerDocument.createRange();
    r.selectNodeContents(el);
    return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size;
  });
  expect(lines, "lines of the badge's text").toBe(1);
  const inside = await badge.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const outer = el.closest(".card")!.getBoundingClientRect();
    return box.left >= outer.left && box.right <= outer.right && el.scrollWidth <= el.clientWidth;
  });
  expect(inside, "the badge inside its card").toBe(true);
  await shot(card, "ask-badge-900");
  await shot(page, "dashboard-900", false);
  await page.setViewportSize({ width: 1360, height: 900 });
});

test("after Discard in its confirm dialog the focus goes to the worker page's heading, not the page's top; no Stop or Resume is left", async () => {
  const title = "Discard me";
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-WRITE file=gone.txt text=ok",
    title,
    directory: repo,
    checks: [{ run: "test -f gone.txt" }],
  });
  await approvingPoll(engine, workerId, (w) => w.state).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("button", { name: "Discard…" }).focus();
  await page.keyboard.press("Enter");
  const dialog = page.getByRole("dialog", { name: "Confirm discard" });
  await dialog.getByRole("button", { name: "Discard", exact: true }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByText("discarded: workspace and branch removed").first()).toBeVisible();
  await expect(page.getByRole("button", { name: "Discard…" })).toHaveCount(0);
  await expect(page.getByRole("heading", { name: title, level: 2 })).toBeFocused();
  // Never stopped or resumed again: neither button is there, not even disabled.
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Resume" })).toHaveCount(0);
  await shot(page, "discarded-focus", false);
  // Tab goes on from there, into the page (not back to the navigation at its top).
  await page.keyboard.press("Tab");
  expect(await page.evaluate(`!!document.activeElement?.closest(".detail")`)).toBe(true);
});

test("a card's pending ask line reads whole 900 px wide: the tool and the file, not cut short", async () => {
  const { workerId, card } = await askingCardAt900("settings-loader.txt");
  await expect(card.getByRole("button", { name: `Approve ${workerId}'s edit ask`, exact: true })).toBeVisible();
  await page.waitForTimeout(400); // the navigation drawer's slide after the resize
  const line = card.locator(".card-ask > .mono");
  await expect(line).toHaveText(/^edit: .*settings-loader\.txt$/);
  // All of its text is in its box: none cut off to the side (it was "edit: name…") nor below.
  const whole = await line.evaluate((el) => ({ width: [el.scrollWidth, el.clientWidth], height: [el.scrollHeight, el.clientHeight] }));
  expect(whole.width[0], "scrollWidth of the ask line within its clientWidth").toBeLessThanOrEqual(whole.width[1]!);
  expect(whole.height[0], "scrollHeight of the ask line within its clientHeight").toBeLessThanOrEqual(whole.height[1]!);
  await shot(card, "ask-line-900");
  await page.setViewportSize({ width: 1360, height: 900 });
  await engine.client.workers.stop.mutate({ workerId });
});

/** A built worker of its own file, its page open. */
async function builtWorker(file: string, title: string): Promise<string> {
  const { workerId } = await engine.client.workers.start.mutate({
    task: `TASK-WRITE file=${file} text=ok`,
    title,
    directory: repo,
    checks: [{ run: `test -f ${file}` }],
  });
  await approvingPoll(engine, workerId, (w) => w.state).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  return workerId;
}

test("after Merge in its confirm dialog the focus goes to the worker page's heading; after a refused merge, back to Merge…", async () => {
  const title = "Merge me";
  await builtWorker("merged.txt", title);
  await page.getByRole("button", { name: "Merge…" }).focus();
  await page.keyboard.press("Enter");
  const dialog = page.getByRole("dialog", { name: "Confirm merge" });
  await dialog.getByRole("button", { name: "Merge", exact: true }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByText(/^merged into main/)).toBeVisible();
  await expect(page.getByRole("button", { name: "Merge…" })).toHaveCount(0);
  await expect(page.getByRole("heading", { name: title, level: 2 })).toBeFocused();
  // Merged, it is never stopped or resumed again: neither button is there, not even disabled.
  await expect(page.getByRole("button", { name: "Stop" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Resume" })).toHaveCount(0);
  await shot(page, "merged-focus", false);

  // Its file changed on main meanwhile: the merge is refused, and the focus is back on Merge… to try again or not.
  const workerId = await builtWorker("clash.txt", "Merge me into a conflict");
  execFileSync("sh", ["-c", "echo other > clash.txt && git add clash.txt && git -c user.name=t -c user.email=t@t commit -qm clash"], { cwd: repo });
  await page.getByRole("button", { name: "Merge…" }).focus();
  await page.keyboard.press("Enter");
  await dialog.getByRole("button", { name: "Merge", exact: true }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("alert").filter({ hasText: "Merge refused" })).toContainText("conflicts in");
  await expect(page.getByRole("button", { name: "Merge…" })).toBeFocused();
  await shot(page, "merge-refused-focus", false);
  expect((await engine.client.workers.get.query({ workerId })).merged).toBeNull();
});

test("after Publish branch, a push (done or refused) and Cancel of Stop the focus is back where it came from, not at the page's top", async () => {
  const workerId = await builtWorker("shared.txt", "Publish me");
  const publish = page.getByRole("button", { name: "Publish branch" });
  await publish.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByText(`published ocw/${workerId}`)).toBeVisible();
  await expect(publish).toBeFocused();

  // Refused (no such remote): its form stays, the focus on its button; pushed: the form goes, the focus to Push….
  await page.getByRole("button", { name: "Push…" }).click();
  const form = page.getByRole("form", { name: "Push" });
  await form.getByLabel("remote", { exact: true }).fill("nowhere");
  await form.getByLabel("open a pull request").uncheck();
  const send = form.getByRole("button", { name: "Push graded commit" });
  await send.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("alert").filter({ hasText: "nowhere" })).toBeVisible();
  await expect(send).toBeFocused();
  const bare = mkdtempSync(path.join(os.tmpdir(), "ocw-a11y-remote-"));
  execFileSync("git", ["init", "-q", "--bare", bare]);
  execFileSync("git", ["-C", repo, "remote", "add", "elsewhere", bare]);
  await form.getByLabel("remote", { exact: true }).fill("elsewhere");
  await send.focus();
  await page.keyboard.press("Enter");
  await expect(page.getByText(/^pushed [0-9a-f]{8} to elsewhere/)).toBeVisible();
  await expect(form).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Push…" })).toBeFocused();
  await shot(page, "pushed-focus", false);

  // Stop's inline confirmation, cancelled: back on Stop (its Cancel went away with the focus).
  const { workerId: waiting } = await engine.client.workers.start.mutate({ task: "TASK-WRITE file=stays.txt text=ok", directory: repo, checks: [] });
  await expect
    .poll(async () => (await engine.client.workers.get.query({ workerId: waiting })).asks.filter((x) => x.status === "pending").length, { timeout: 60_000 })
    .toBe(1);
  await page.goto(`${engine.origin}/#/workers/${waiting}`);
  await page.getByRole("button", { name: "Stop", exact: true }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("group", { name: "Confirm stop" }).getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("button", { name: "Stop", exact: true })).toBeFocused();
  await engine.client.workers.stop.mutate({ workerId: waiting });
});

test("a transcript's tool row held by a pending ask says it waits for approval, not that it runs; answered, it completes", async () => {
  const { workerId } = await askingCardAt900("held.txt");
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const row = page.locator(".part.tool").filter({ hasText: "held.txt" });
  await expect(row.locator(".chip")).toHaveText("waiting for approval");
  await shot(page, "tool-row-waiting", false);
  // Its own ask (earlier tests leave other workers' asks pending).
  const ask = (await engine.client.approvals.list.query()).find((a) => a.workerId === workerId);
  await engine.client.approvals.decide.mutate({ askId: ask!.id, decision: "once" });
  await expect(row.locator(".chip")).toHaveText("completed", { timeout: 30_000 });
});

test("the worker page's header says the worker waits for approval of the tool a pending ask holds, not that it runs it", async () => {
  const { workerId } = await askingCardAt900("header.txt");
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const head = page.getByRole("region", { name: "Worker", exact: true });
  await expect(page.locator(".part.tool").filter({ hasText: "header.txt" }).locator(".chip")).toHaveText("waiting for approval");
  await expect(head).toContainText("waiting for approval of write");
  await expect(head).not.toContainText("running write");
  await shot(page, "header-waiting", false);
  // Answered, the call runs and completes: the header no longer says it waits.
  const ask = (await engine.client.approvals.list.query()).find((a) => a.workerId === workerId);
  await engine.client.approvals.decide.mutate({ askId: ask!.id, decision: "once" });
  await expect(head).not.toContainText("waiting for approval", { timeout: 30_000 });
});
