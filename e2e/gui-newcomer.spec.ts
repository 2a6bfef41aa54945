// What a newcomer met using the GUI end to end against a real engine, real opencode and the scripted model:
// - a first run with no model: the dashboard's empty state leads to Setup (it offered "Start a task", which is refused);
// - New task: a word in a number field is refused in words under that field (it came back as "Invalid input: expected
//   number, received null", under the token budget even for the wall clock; an exit code as a whole check's schema);
//   a directory typed with "~" or pasted in quotes says why it is refused;
// - the keyboard focus goes on after an action instead of to the page's top: a decision on a worker's page (next ask,
//   else the steering box), in the inbox (next ask) or on a dashboard card (its title), a check or task removed from
//   the form;
// - the worker page's dialogs (merge, continue, discard) take the focus, close on Escape and give the focus back;
// - a discarded worker's Diff tab says it was discarded (it said "No changes in the worktree yet.");
// - a long path in the transcript's ask and decision rows is cut with "…" inside its row (it ran out of the
//   transcript's box), also 900 px wide; a diff's fold button is named by its file, not "▾"; an inbox item is named
//   with the path its card shows, not the engine's state folder.
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import { bash, writeFile, writesAsTold } from "../test/fixtures/scripted-model";
import { approvingPoll, cleanup, openUi, startEngine, type E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("newcomer-", { fullPage: true });

const LONG = `src/${"very-long-directory-name-".repeat(6)}/file-with-a-really-long-name-${"x".repeat(60)}.ts`;
const LONG_CMD = `echo ${"a-very-long-argument-".repeat(20)}`;

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
          name: "long",
          match: /TASK-LONG/,
          script: (c) => (c.turnStep === 0 ? writeFile(LONG, "hello\n") : c.turnStep === 1 ? bash(LONG_CMD) : { text: "Done.\nOUTCOME: built" }),
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

/** A fresh New task form with a valid directory and task, then `fill`, then Start worker. */
async function submitNewTask(fill: Record<string, string>): Promise<void> {
  await page.goto(`${engine.origin}/#/dashboard`);
  await page.goto(`${engine.origin}/#/new`);
  await page.reload();
  await page.locator("input[name=directory]").fill(repo);
  await page.locator("textarea[name=task]").fill("TASK-NONE do nothing");
  for (const [selector, value] of Object.entries(fill)) await page.locator(selector).fill(value);
  await page.getByRole("button", { name: "Start worker" }).click();
}

/** The form field (its <label>) that holds the input `name`. */
const field = (name: string) => page.locator("label.field").filter({ has: page.locator(`[name=${name}]`) });

test("a number field holding something else says so in words, under that field; no worker starts", async () => {
  await submitNewTask({ "input[name=wallSec]": "abc" });
  await expect(field("wallSec").getByRole("alert")).toHaveText(/wall-clock budget is a number of seconds above 0: got "abc"/);
  await expect(page.locator("input[name=wallSec]")).toHaveAttribute("aria-invalid", "true");
  await expect(field("tokens").getByRole("alert")).toHaveCount(0);
  await shot(page, "wall-clock-word");
  // Edited, the field no longer shows the message about its old value.
  await page.locator("input[name=wallSec]").fill("60");
  await expect(page.getByRole("alert")).toHaveCount(0);

  // Over the engine's own limit (a week): the engine's message, under the wall-clock field too (not the token budget).
  await submitNewTask({ "input[name=wallSec]": "99999999" });
  await expect(field("wallSec").getByRole("alert")).toBeVisible();
  await expect(field("tokens").getByRole("alert")).toHaveCount(0);

  await submitNewTask({ "input[name=tokens]": "lots" });
  await expect(field("tokens").getByRole("alert")).toHaveText(/token budget is a whole number above 0: got "lots"/);

  await submitNewTask({ "input[name=fixRounds]": "some" });
  await expect(field("fixRounds").getByRole("alert")).toHaveText(/fix rounds are a whole number from 0 to 10: got "some"/);

  await submitNewTask({ "input[aria-label='Command']": "true", "input[aria-label='Expected exit code']": "zero" });
  const checks = page.getByRole("group", { name: "Checks" });
  await expect(checks.getByRole("alert")).toHaveText(/expected exit code must be a whole number from 0 to 255: got "zero"/);
  await expect(page.getByRole("alert")).not.toContainText("received null");
  await shot(page, "exit-code-word");
  expect(await engine.client.workers.list.query()).toHaveLength(0);
});

test("removing a check or a task leaves the focus on the form, not the page's top", async () => {
  await page.goto(`${engine.origin}/#/new`);
  await page.getByRole("button", { name: "+ Add check" }).click();
  await page.getByRole("button", { name: "Remove check 2" }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("button", { name: "Remove check 2" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "+ Add check" })).toBeFocused();
  await page.getByRole("button", { name: "+ Add another task (batch)" }).click();
  await page.getByRole("button", { name: "Remove task 2" }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByRole("group", { name: "Task 2" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "+ Add another task (batch)" })).toBeFocused();
});

test("a directory with ~ or in quotes is refused with what to type instead", async () => {
  await submitNewTask({ "input[name=directory]": "~/src/repo" });
  const dirError = field("directory").getByRole("alert");
  await expect(dirError).toHaveText(/absolute path.*"~" is not expanded here/);
  await submitNewTask({ "input[name=directory]": `"${repo}"` });
  await expect(dirError).toHaveText(`directory must be an absolute path to a git repository: leave out the quotes around it (${repo})`);
  await shot(page, "directory-quoted");
  // A folder that is no repository says how to make it one.
  await submitNewTask({ "input[name=directory]": "/tmp" });
  await expect(dirError).toHaveText(/\/tmp is not a git repository: run `git init/);
});

test("a decision made with the keyboard on a worker's page leaves the focus on the page's next control, not its top", async () => {
  await submitNewTask({ "textarea[name=task]": "TASK-LONG write a file with a long name, then echo a long line" });
  await page.waitForURL(/#\/workers\//);
  const asks = page.getByRole("region", { name: "Pending approvals of this worker" });
  const once = asks.getByRole("button", { name: "Approve once" });
  await once.focus();
  await page.keyboard.press("Enter");
  await expect(once).toHaveCount(0, { timeout: 60_000 });
  const focused = () => page.evaluate(`document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.textContent ?? ""`);
  await expect.poll(focused).toMatch(/^(Steering message|Approve once)$/);

  // The second ask (the long command): rejected by keyboard, the focus goes on to the steering box.
  const reject = asks.getByRole("button", { name: "Reject" });
  await reject.focus();
  await page.keyboard.press("Enter");
  await expect(asks).toHaveCount(0, { timeout: 60_000 });
  await expect.poll(focused).toBe("Steering message");
});

test("long paths and commands in the transcript's ask and decision rows stay inside their rows, also 900 px wide", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-LONG again", directory: repo, checks: [{ run: "true" }] });
  await approvingPoll(engine, workerId, (w) => w.state).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const transcript = page.getByRole("log", { name: "Transcript" });
  await expect(transcript.getByRole("note", { name: /^Approved once .* bash echo/ })).toBeVisible();
  for (const width of [1360, 900]) {
    await page.setViewportSize({ width, height: 900 });
    await expect(transcript.getByRole("note").first()).toBeVisible();
    // Every mark's text ends inside its own row (before: a long path ran out of the row and the transcript's box).
    const overflowing = await page.evaluate(`[...document.querySelectorAll(".part.mark")].flatMap((row) => {
      const box = row.getBoundingClientRect();
      return [...row.querySelectorAll(".ellipsis")].filter((e) => e.getBoundingClientRect().right > box.right + 1).map((e) => e.textContent);
    })`);
    expect(overflowing, `at ${width} px`).toEqual([]);
    await page.waitForTimeout(400); // the navigation drawer's slide after the resize
    await shot(page, `long-marks-${width}`, false);
  }
  // A diff's fold button is named by its file, not "▾".
  await page.getByRole("tab", { name: "Diff" }).click();
  await expect(page.getByRole("button", { name: /^Fold src\/very-long-directory-name-/ })).toBeVisible();
  await page.getByRole("tab", { name: /^Transcript/ }).click();
});

test("the worker page's dialogs take the focus, close on Escape and give the focus back; once discarded, its Diff tab says so", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-WRITE file=out.txt text=ok",
    directory: repo,
    checks: [{ run: "test -f out.txt" }],
  });
  await approvingPoll(engine, workerId, (w) => w.state).toBe("built");
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const inside = (dialog: string) => page.getByRole("dialog", { name: dialog }).evaluate((d) => d.contains(d.ownerDocument.activeElement));
  for (const [button, dialog] of [
    ["Merge…", "Confirm merge"],
    ["Continue…", "Continue the worker"],
    ["Discard…", "Confirm discard"],
  ] as const) {
    const opener = page.getByRole("button", { name: button });
    await opener.focus();
    await page.keyboard.press("Enter");
    await expect(page.getByRole("dialog", { name: dialog })).toBeVisible();
    expect(await inside(dialog), `${dialog} has the focus`).toBe(true);
    if (dialog === "Confirm merge") await shot(page, "merge-dialog", false);
    await page.keyboard.press("Escape");
    await expect(page.getByRole("dialog", { name: dialog }), `${dialog} closes on Escape`).toHaveCount(0);
    await expect(opener).toBeFocused();
    // Cancel, by keyboard, gives it back too.
    await page.keyboard.press("Enter");
    await page.getByRole("dialog", { name: dialog }).getByRole("button", { name: "Cancel" }).focus();
    await page.keyboard.press("Enter");
    await expect(page.getByRole("dialog", { name: dialog })).toHaveCount(0);
    await expect(opener).toBeFocused();
  }
  expect((await engine.client.workers.get.query({ workerId })).state).toBe("built");

  // Discarded: the Diff tab says why it is empty.
  await page.getByRole("button", { name: "Discard…" }).click();
  await page.getByRole("dialog", { name: "Confirm discard" }).getByRole("button", { name: "Discard", exact: true }).click();
  await expect(page.getByText("discarded: workspace and branch removed").first()).toBeVisible();
  await page.getByRole("tab", { name: "Diff" }).click();
  await expect(page.getByRole("status").filter({ hasText: /^Discarded: its workspace and branch were removed/ })).toBeVisible();
  await expect(page.getByText("No changes in the worktree yet.")).toHaveCount(0);
  await shot(page, "discarded-diff", false);
});

test("the inbox names each ask as its card shows it; a decision with a card's own button leaves the focus on the next ask", async () => {
  for (let i = 0; i < 2; i++) await engine.client.workers.start.mutate({ task: `TASK-WRITE file=inbox${i}.txt text=ok`, directory: repo, checks: [] });
  await expect.poll(async () => (await engine.client.approvals.list.query()).length, { timeout: 60_000 }).toBe(2);
  await page.goto(`${engine.origin}/#/approvals`);
  const list = page.getByRole("list", { name: "Pending approvals" });
  await expect(list.getByRole("listitem")).toHaveCount(2);
  // Each ask is named as its card shows it: the path in the worker's workspace, not the engine's state folder.
  await expect(list.getByRole("listitem", { name: /^edit from w-\S+: inbox0\.txt$/ })).toHaveCount(1);
  expect((await list.getByRole("listitem").first().getAttribute("aria-label")) ?? "").not.toContain(engine.stateDir);
  await list.getByRole("button", { name: "Always allow" }).first().focus();
  await page.keyboard.press("Enter");
  await expect(list.getByRole("listitem")).toHaveCount(1);
  await expect(list.getByRole("listitem")).toBeFocused();
  await list.getByRole("button", { name: "Approve once" }).focus();
  await page.keyboard.press("Enter");
  await expect(page.getByText("Nothing is waiting for you")).toBeVisible();
});

test("Approve on a dashboard card leaves the focus on that card's title", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-WRITE file=card.txt text=ok", directory: repo, checks: [] });
  await expect.poll(async () => (await engine.client.approvals.list.query()).length, { timeout: 60_000 }).toBe(1);
  await page.goto(`${engine.origin}/#/dashboard`);
  const card = page.getByRole("region", { name: workerId });
  await card.getByRole("button", { name: `Approve ${workerId}'s edit ask`, exact: true }).focus();
  await page.keyboard.press("Enter");
  await expect(card.getByRole("button", { name: `Approve ${workerId}'s edit ask`, exact: true })).toHaveCount(0);
  await expect(card.getByRole("link", { name: "TASK-WRITE file=card.txt text=ok" })).toBeFocused();
});

test("a first run with no model: the dashboard's empty state leads to Setup, not to a task that would be refused", async ({ browser }) => {
  const bare = await startEngine();
  try {
    const first = await openUi(browser, bare);
    const empty = first.locator(".empty").filter({ hasText: "No workers yet" });
    await expect(empty.getByRole("link", { name: "Set up a model" })).toBeVisible();
    await expect(empty.getByRole("link", { name: "Start a task" })).toHaveCount(0);
    await shot(first, "first-run", false);
    await empty.getByRole("link", { name: "Set up a model" }).click();
    await expect(first).toHaveURL(/#\/setup/);
    await first.context().close();
  } finally {
    await bare.kill();
    cleanup(bare.stateDir);
  }
});
