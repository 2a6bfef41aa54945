// A worker's question ask in the GUI, bounded as the MCP form and `ocw run` bound it (shared/ask-view.ts: at most 5
// questions of 10 options each, every text cut) against a real engine, real opencode and the scripted model: an ask of
// 7 questions is listed in part with a note and can only be dismissed; an ask with 14
// options shows 10 and a field for the text of one not shown, and the typed answer reaches the worker. (opencode's
// question tool wants a header and each option's description.) Option text
// with HTML stays text. Screenshots at 1360 and 560 wide in OCW_SHOTS_DIR (default test-results/screenshots).
import { expect, test, type Page } from "@playwright/test";
import { TOO_MANY_QUESTIONS } from "../shared/ask-view";
import { bash, toolCall, type ScriptedModel } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("questions-", { fullPage: true });

let setup: ScriptedUi;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
const toolResults: string[] = [];

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "many",
          match: /TASK-Q-MANY/,
          // The first turn asks 7 questions at once; the dismissal's note arrives as a steer (a turn of its own).
          script: (c) =>
            c.turnStep === 0 && c.userTexts.length === 1
              ? toolCall("question", {
                  questions: Array.from({ length: 7 }, (_, i) => ({
                    question: `Many question number ${i + 1}?`,
                    header: `Q${i + 1}`,
                    options: [
                      { label: "Yes", description: "go on" },
                      { label: "No", description: "stop" },
                    ],
                  })),
                })
              : { text: "OUTCOME: honest-failure — the questions were dismissed" },
        },
        {
          name: "bidi",
          match: /TASK-Q-BIDI/,
          script: (c) => (c.turnStep === 0 ? { ...bash("echo safe \u202Etxt.exe"), text: "Thinking\u202E aloud." } : { text: "OUTCOME: built" }),
        },
        {
          name: "plain",
          match: /TASK-Q-PLAIN/,
          script: (c) =>
            c.turnStep === 0
              ? toolCall("question", {
                  questions: [
                    {
                      question: "Tabs or spaces?",
                      header: "Indent",
                      options: [
                        { label: "Tabs", description: "one tab" },
                        { label: "Spaces", description: "two spaces" },
                      ],
                    },
                  ],
                })
              : { text: "OUTCOME: built" },
        },
        {
          name: "wide",
          match: /TASK-Q-WIDE/,
          script: (c) => {
            if (c.turnStep === 0)
              return toolCall("question", {
                questions: [
                  {
                    question: "Which release channel?",
                    header: "Channel",
                    options: Array.from({ length: 14 }, (_, i) => ({
                      label:
                        i === 0
                          ? `<img src="http://127.0.0.1:9/px.png"> channel-${i + 1}`
                          : i === 1
                            ? `/srv/releases/${"very-long-segment-".repeat(12)}channel.json`
                            : `channel-${i + 1}`,
                      description: i === 0 ? "<b>bold?</b> [a link](http://127.0.0.1:9/)" : `the ${i + 1}th channel`,
                    })),
                  },
                ],
              });
            toolResults.push(c.lastToolResult ?? "");
            return { text: "OUTCOME: built" };
          },
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ model, engine, page, repo } = setup);
  // Nothing the worker wrote loads anything from elsewhere.
  await page.route("http://127.0.0.1:9/**", (r) => r.abort());
});

test.afterAll(() => setup?.close());

async function pendingAsk(workerId: string) {
  await expect
    .poll(async () => (await engine.client.workers.get.query({ workerId })).asks.some((a) => a.status === "pending"), { timeout: 120_000 })
    .toBe(true);
  return (await engine.client.workers.get.query({ workerId })).asks.find((a) => a.status === "pending")!;
}

test("questions past five: the first five listed, a note, no answer offered; Dismiss tells the worker to ask fewer", async () => {
  const { workerId: many } = await engine.client.workers.start.mutate({ task: "TASK-Q-MANY: ask", title: "Many questions", directory: repo, checks: [] });
  const { workerId: wide } = await engine.client.workers.start.mutate({ task: "TASK-Q-WIDE: ask", title: "Wide question", directory: repo, checks: [] });
  const manyAsk = await pendingAsk(many);
  const wideAsk = await pendingAsk(wide);
  await page.goto(`${engine.origin}/#/approvals`);
  const card = page.locator(`[data-ask-id="${manyAsk.id}"]`);
  await expect(card.getByRole("note", { name: `what of ${manyAsk.id} is not shown` })).toContainText(
    "2 of its 7 questions not shown (at most 5 are): dismiss it, asking the worker to ask at most 5 at a time",
  );
  const listed = card.getByRole("list", { name: `the first 5 questions of ${manyAsk.id}` }).getByRole("listitem");
  await expect(listed).toHaveCount(5);
  await expect(card).not.toContainText("Many question number 6?");
  await expect(card.getByRole("radio")).toHaveCount(0);
  await expect(card.getByRole("button", { name: "Answer" })).toHaveCount(0);

  // The wide one: 10 options of 14, a field for the text of another; the worker's HTML is text, nothing loads.
  const wideCard = page.locator(`[data-ask-id="${wideAsk.id}"]`);
  await expect(wideCard.getByRole("radio")).toHaveCount(10);
  await expect(wideCard.getByRole("radio", { name: /^channel-10 / })).toBeVisible();
  await expect(wideCard.getByRole("radio", { name: /^channel-11 / })).toHaveCount(0);
  await expect(wideCard).toContainText('<img src="http://127.0.0.1:9/px.png"> channel-1');
  await expect(wideCard).toContainText("<b>bold?</b> [a link](http://127.0.0.1:9/)");
  await expect(wideCard.locator("img")).toHaveCount(0);
  await expect(wideCard.getByRole("note", { name: `what of ${wideAsk.id} is not shown` })).toContainText("4 options not shown");
  await shot(page, "1360");
  await page.setViewportSize({ width: 560, height: 900 });
  // Narrow: nothing wider than the window (a long option without spaces wraps), the drawer closed.
  await expect(page.getByRole("navigation", { name: "Main" })).toBeHidden();
  await expect.poll(() => page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(560);
  await expect.poll(() => page.locator(".content").evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await shot(page, "560");
  await page.setViewportSize({ width: 1360, height: 900 });

  // The a key answers no question (it cannot know the picks): it says so.
  await card.click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("a");
  await expect(page.getByText(`The question from ${many} asks more than 5 questions: it can only be dismissed (r)`)).toBeVisible();
  // j / k move the focus with the selection: a screen reader reads the ask moved to.
  const manyFirst = (await page.locator("[data-ask-id]").first().getAttribute("data-ask-id")) === manyAsk.id;
  await page.keyboard.press(manyFirst ? "j" : "k");
  await expect(page.getByRole("listitem", { name: /^question from w-\S+: Which release channel\?$/ })).toBeFocused();
  await page.keyboard.press(manyFirst ? "k" : "j");
  await expect(page.getByRole("listitem", { name: /^question from w-\S+: Many question number 1\?/ })).toBeFocused();
  await card.getByRole("button", { name: "Dismiss" }).click();
  await expect(card).toHaveCount(0);
  const settled = (await engine.client.workers.get.query({ workerId: many })).asks.find((a) => a.id === manyAsk.id)!;
  // The card sends TOO_MANY_QUESTIONS with the dismissal, as the MCP form and `ocw run` do (AskCard.test.ts); opencode's
  // question rejection takes no message, so the engine records the note and sends it to the worker as a steer.
  expect(settled).toMatchObject({ status: "decided", decision: "reject", by: { kind: "person", name: "gui" }, message: TOO_MANY_QUESTIONS });
  const events = await engine.client.workers.events.query({ workerId: many });
  expect(events.filter((e) => e.type === "steer.sent").map((e) => (e as { text?: string }).text)).toEqual([TOO_MANY_QUESTIONS]);
  // …and the model reads it in the worker's next turn.
  await expect.poll(() => model.requests.some((r) => JSON.stringify(r).includes(TOO_MANY_QUESTIONS)), { timeout: 60_000 }).toBe(true);
});

test("an option not shown is answered by its text, and that answer reaches the worker", async () => {
  const wideCard = page.locator("[data-ask-id]");
  await expect(wideCard).toHaveCount(1);
  await wideCard.getByRole("textbox", { name: /^typed answer to question 1 of / }).fill("channel-13");
  await wideCard.getByRole("button", { name: "Answer" }).click();
  await expect(wideCard).toHaveCount(0);
  await expect.poll(() => toolResults.join("\n"), { timeout: 90_000 }).toContain("channel-13");
});

test("an ask answered in another client while its card holds a pick: the card goes, and the page says the pick was not sent", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-Q-PLAIN: ask", title: "Plain question", directory: repo, checks: [] });
  const ask = await pendingAsk(workerId);
  const card = page.locator(`[data-ask-id="${ask.id}"]`);
  await card.getByRole("radio", { name: /^Spaces/ }).check();
  await card.getByRole("textbox", { name: "Message to the worker (optional)" }).fill("two, as in the README");
  await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once", answers: [["Tabs"]] });
  await expect(card).toHaveCount(0);
  await expect(
    page.getByText(
      new RegExp(`^The question from ${workerId} was answered by .* while you were deciding it here: what you typed or picked on its card was not sent\\.$`),
    ),
  ).toBeVisible();
  await shot(page, "answered-elsewhere");
  // The notice's own close button is named for what it closes (not a second "Dismiss" beside an ask's).
  await page
    .locator(".notice", { hasText: `The question from ${workerId} was answered by` })
    .getByRole("button", { name: "Dismiss notice" })
    .click();
  await expect(page.getByText(`The question from ${workerId} was answered by`)).toHaveCount(0);
});

test("the worker page's transcript: a tool's input block shows the command's hidden characters, as its headline does", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-Q-BIDI: run", title: "Bidi command", directory: repo, checks: [] });
  const ask = await pendingAsk(workerId);
  await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const tool = page.locator("details.part.tool").filter({ hasText: "echo safe" });
  await expect(tool.getByText("completed")).toBeVisible({ timeout: 90_000 });
  await tool.locator("summary").click();
  await expect(tool.locator(".tool-io pre").first()).toContainText("echo safe ⟪U+202E⟫txt.exe");
  expect(await tool.evaluate((el) => el.textContent?.includes("\u202E"))).toBe(false);
  await shot(page, "worker-tool-input");
});
