// What a newcomer met walking every screen, keyboard-only for part of it, 900 and 1360 px wide, against a real engine,
// real opencode and the scripted model:
// - New task refused by the engine (an empty task, a folder that is no git repository), submitted with the keyboard:
//   Start worker is disabled while the engine answers and the focus fell to the page's top; it goes to the field the
//   message is under now. That field's message sat inside its label and was read as part of its name ("Task the task is
//   empty: …"): the field is named by its label's words, the message is its description;
// - "Retry as new worker" opens the new worker's page and the focus fell to the page's top: it goes to that page's
//   heading (as "Continue on the new base" does, which opens another worker's page the same way);
// - a continued worker's latest round said "running" while the worker was stopped (or queued for a slot): it says the
//   worker's state;
// - the notices in the bottom-right corner covered the page's last controls (a worker page's "Send steer") even
//   scrolled to its end: the page keeps room for them at its end.
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import { writeFile, type ScriptContext } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("walk-", { fullPage: false });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

/** The first turn of a session (no follow-up, no steer yet). */
const firstTurn = (c: ScriptContext) => c.userTexts.length === 1 && c.turnStep === 0;

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        { name: "fail", match: /TASK-FAIL/, script: () => ({ text: "I could not do it.\nOUTCOME: honest-failure — the file is locked" }) },
        { name: "hang", match: /TASK-HANG/, script: (c) => (firstTurn(c) ? { hang: true, textBeforeHang: "Thinking…" } : { text: "Done.\nOUTCOME: built" }) },
        {
          // Round 1 writes a file and is built; the follow-up of round 2 never finishes.
          name: "round",
          match: /TASK-ROUND/,
          script: (c) =>
            c.userTexts.length > 1
              ? { hang: true, textBeforeHang: "Thinking again…" }
              : c.turnStep === 0
                ? writeFile("r.txt", "ok\n")
                : { text: "Wrote r.txt.\nOUTCOME: built" },
        },
      ],
    },
    target: { engine: "scripted", slots: 3 },
    policies: [{ tool: "edit", pattern: "*", decision: "once" }],
  });
  ({ engine, repo, page } = setup);
});

test.afterAll(() => setup?.close());

const state = (workerId: string) => async () => (await engine.client.workers.get.query({ workerId })).state;

test("New task refused by the engine, submitted with the keyboard: the focus goes to the field its message is under", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  const directory = form.getByRole("textbox", { name: "Directory (git repository)" });
  const task = form.getByRole("textbox", { name: "Task", exact: true });
  const start = form.getByRole("button", { name: "Start worker" });
  await directory.fill(repo);
  await start.focus();
  await page.keyboard.press("Enter");
  await expect(form.getByRole("alert")).toHaveText("the task is empty: say what the worker should do");
  await expect(task).toBeFocused();
  // Named by its label alone; the message is its description (it was read as part of the name: "Task the task is empty…").
  await expect(task).toHaveAccessibleName("Task");
  await expect(task).toHaveAccessibleDescription("the task is empty: say what the worker should do");

  await task.fill("TASK-FAIL anything");
  await directory.fill("/tmp");
  await start.focus();
  await page.keyboard.press("Enter");
  await expect(form.getByRole("alert")).toHaveText(/^\/tmp is not a git repository: run `git init/);
  await expect(directory).toBeFocused();
  await expect(directory).toHaveAccessibleName("Directory (git repository)");
  await shot(page, "new-task-refused-focus");
  expect(await engine.client.workers.list.query()).toHaveLength(0);
});

test("Retry as new worker, pressed with the keyboard, leaves the focus on the new worker's heading", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-FAIL now",
    title: "A task that fails",
    directory: repo,
    checks: [{ run: "false" }],
  });
  await expect.poll(state(workerId), { timeout: 60_000 }).toBe("honest-failure");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const retry = page.getByRole("button", { name: "Retry as new worker", exact: true });
  await retry.focus();
  await page.keyboard.press("Enter");
  await page.waitForURL((u) => /#\/workers\/w-/.test(u.hash) && !u.hash.endsWith(workerId));
  const heading = page.getByRole("heading", { level: 2, name: "A task that fails", exact: true });
  await expect(heading).toBeFocused();
  // Its title is the first's: the page says what it retries, and leads back to it (the dashboard's card too).
  const back = page.getByRole("link", { name: `retry of ${workerId}`, exact: true });
  await expect(back).toHaveAttribute("href", `#/workers/${workerId}`);
  await shot(page, "retry-focus");
  const retryId = decodeURIComponent(new URL(page.url()).hash.replace("#/workers/", ""));
  await page.goto(`${engine.origin}/#/dashboard`);
  await expect(page.getByRole("region", { name: retryId, exact: true }).getByRole("link", { name: `retry of ${workerId}`, exact: true })).toBeVisible();
  await expect(page.getByRole("region", { name: workerId, exact: true }).getByRole("link", { name: /^retry of / })).toHaveCount(0);
});

test("a continued worker's latest round says the worker's state: stopped, not running", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-ROUND write r.txt",
    title: "Rounds",
    directory: repo,
    checks: [{ run: "test -f r.txt" }],
  });
  await expect.poll(state(workerId), { timeout: 60_000 }).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("button", { name: "Continue…" }).click();
  const dialog = page.getByRole("dialog", { name: "Continue the worker" });
  await dialog.getByRole("textbox").fill("and then some more");
  await dialog.getByRole("button", { name: "Send follow-up" }).click();
  const round2 = page.getByRole("region", { name: `Rounds of ${workerId}` }).getByRole("listitem", { name: "round 2" });
  await expect.poll(state(workerId), { timeout: 60_000 }).toBe("running");
  await expect(round2.locator(".chip")).toHaveText("running");
  await page.getByRole("button", { name: "Stop", exact: true }).click();
  await page.getByRole("button", { name: "Stop now", exact: true }).click();
  await expect.poll(state(workerId), { timeout: 60_000 }).toBe("stopped");
  await expect(round2.locator(".chip")).toHaveText("stopped");
  await expect(page.getByRole("region", { name: `Rounds of ${workerId}` }).getByText("running", { exact: true })).toHaveCount(0);
  await shot(page, "round-stopped");
});

test("the notices leave the page's end free: scrolled to its end, Send steer is not under them (900 px)", async () => {
  await page.setViewportSize({ width: 900, height: 480 });
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  await form.getByRole("textbox", { name: "Directory (git repository)" }).fill(repo);
  await form.getByRole("textbox", { name: "Task", exact: true }).fill("TASK-HANG think");
  await form.getByRole("button", { name: "Start worker" }).click();
  await page.waitForURL(/#\/workers\/w-/);
  const notice = page.locator(".notice").filter({ hasText: /^started w-/ });
  await expect(notice).toBeVisible();
  const send = page.getByRole("button", { name: "Send steer", exact: true });
  // The page as it stays while the worker thinks (its header grows a line once the model streams).
  await expect(page.getByRole("log", { name: "Transcript" }).getByText("Thinking…")).toBeVisible();
  await expect(send).toBeEnabled();
  // Scrolled to the page's end, as a person does to reach its last controls.
  await page.locator("main.content").evaluate((m) => m.scrollTo(0, m.scrollHeight));
  const covered = await send.evaluate((b) => {
    const r = b.getBoundingClientRect();
    return [...b.ownerDocument.querySelectorAll(".notice")]
      .map((n) => n.getBoundingClientRect())
      .some((n) => n.left < r.right && n.right > r.left && n.top < r.bottom && n.bottom > r.top);
  });
  await expect(notice).toBeVisible();
  await shot(page, "notices-room-900");
  expect(covered, "Send steer lies under a notice").toBe(false);
});

test("an empty New task form, submitted, says every field's problem at once, each under its field, and focuses the first", async () => {
  const workers = (await engine.client.workers.list.query()).length;
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  const directory = form.getByRole("textbox", { name: "Directory (git repository)" });
  const task = form.getByRole("textbox", { name: "Task", exact: true });
  const wall = form.getByRole("textbox", { name: "Wall-clock budget (s)" });
  await directory.fill("");
  await wall.fill("soon");
  await form.getByRole("button", { name: "Start worker" }).click();
  await expect(form.getByRole("alert")).toHaveCount(3);
  // Each field keeps its label as its name; its message is its description, in the engine's words.
  await expect(directory).toHaveAccessibleName("Directory (git repository)");
  await expect(directory).toHaveAttribute("aria-invalid", "true");
  await expect(directory).toHaveAccessibleDescription("directory is required");
  await expect(task).toHaveAccessibleName("Task");
  await expect(task).toHaveAttribute("aria-invalid", "true");
  await expect(task).toHaveAccessibleDescription("the task is empty: say what the worker should do");
  await expect(wall).toHaveAccessibleName("Wall-clock budget (s)");
  await expect(wall).toHaveAttribute("aria-invalid", "true");
  await expect(wall).toHaveAccessibleDescription(/^the wall-clock budget is a number of seconds above 0: got "soon"/);
  await expect(directory).toBeFocused();
  await shot(page, "new-task-every-error");
  // Fixing one field clears its message alone.
  await task.fill("TASK-FAIL anything");
  await expect(task).toHaveAttribute("aria-invalid", "false");
  await expect(form.getByRole("alert")).toHaveCount(2);
  // Nothing was sent: no worker started.
  expect(await engine.client.workers.list.query()).toHaveLength(workers);
});

test("+ Add another task copies the checks of the task before it, and says so until they are edited", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  await form.getByRole("group", { name: "Check 1" }).getByRole("textbox", { name: "Command" }).fill("grep -qx a a.txt");
  await form.getByRole("button", { name: "+ Add another task (batch)" }).click();
  const second = form.locator("fieldset").nth(1);
  // The copy is there, and it says where it came from: a newcomer's second task failed on the first task's check.
  await expect(second.getByRole("group", { name: "Check 1" }).getByRole("textbox", { name: "Command" })).toHaveValue("grep -qx a a.txt");
  const note = second.getByRole("note");
  await expect(note).toHaveText("Copied from the task before this one: edit them for this task, or remove them.");
  await expect(form.locator("fieldset").first().getByRole("note")).toHaveCount(0);
  await shot(page, "new-task-checks-copied");
  await second.getByRole("group", { name: "Check 1" }).getByRole("textbox", { name: "Command" }).fill("grep -qx b b.txt");
  await expect(note).toHaveCount(0);
});

test("a steer sent while the worker writes is shown after the text that began before it, live, reloaded and once the text ends", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-HANG think", title: "Steered", directory: repo, checks: [] });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const log = page.getByRole("log", { name: "Transcript" });
  const text = log.locator(".part.text").filter({ hasText: "Thinking…" });
  await expect(text).toBeVisible({ timeout: 60_000 });
  await page.getByRole("textbox", { name: "Steering message" }).fill("also check the README");
  await page.getByRole("button", { name: "Send steer", exact: true }).click();
  const steer = log.getByRole("note", { name: /^You steered: also check the README/ });
  await expect(steer).toBeVisible();
  /** Whether the steer's row comes after the text's row in the transcript. */
  const steerAfterText = async () => {
    const s = await steer.elementHandle();
    return text.evaluate((t, s) => !!((t.compareDocumentPosition(s!) & 4) /* DOCUMENT_POSITION_FOLLOWING */), s);
  };
  expect(await steerAfterText(), "live: the steer is shown above the text that began before it").toBe(true);
  await shot(page, "steer-after-text");
  await page.reload();
  await expect(steer).toBeVisible();
  await expect(text).toBeVisible();
  expect(await steerAfterText(), "reloaded: the steer is shown above the text that began before it").toBe(true);
  await engine.client.workers.stop.mutate({ workerId });
  await expect.poll(state(workerId), { timeout: 60_000 }).toBe("stopped");
  await page.reload();
  await expect(steer).toBeVisible();
  if (await text.count()) expect(await steerAfterText(), "stopped: the steer is shown above the text that began before it").toBe(true);
});
