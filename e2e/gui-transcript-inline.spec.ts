// The worker detail's transcript shows what people did between the model's parts (real engine, real opencode; the
// scripted model is the only stand-in): a worker writes a plan and asks to write cli.js, the ask is approved from the
// worker's page, then a steer is sent from the same page. The transcript shows, in the order they happened, the plan,
// the ask, the decision ("Approved once by you (gui)"), the steer ("You steered") and the text the model wrote after
// it; each a row of its own, named for a screen reader, and no separate steer list under it. Screenshot in
// OCW_SHOTS_DIR (default test-results/screenshots).
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import { openUi, type E2EEngine } from "./engine";
import { SHOTS, scriptedEngine, type ScriptedEngine } from "./scripted-setup";

const STEER = "STEER-INLINE: also print the version";

let setup: ScriptedEngine;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
let releaseSteer!: () => void;
const steerGate = new Promise<void>((r) => (releaseSteer = r));

test.beforeAll(async () => {
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "inline",
          match: /TASK-INLINE/,
          script: async (c) => {
            if (c.userTexts.some((t) => t.includes("STEER-INLINE"))) return { text: "Followed the steer: version printed too.\nOUTCOME: built" };
            if (c.turnStep === 0) return { ...writeFile("cli.js", "console.log('hi');\n"), text: "Plan: write cli.js." };
            await steerGate; // hold the next request until the page has sent its steer
            return { text: "Wrote cli.js." };
          },
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
  });
  ({ model, engine, repo } = setup);
});

test.afterAll(async () => {
  releaseSteer?.();
  await page?.context().close();
  await setup?.close();
});

/** The transcript's rows, in their order on screen (the list is virtualised: rows are placed by index). */
async function rows(p: Page): Promise<string[]> {
  return p.evaluate(`[...document.querySelectorAll("[aria-label=Transcript] .vrow")]
    .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
    .map((r) => (r.firstElementChild?.getAttribute("aria-label") ?? "") + " | " + (r.textContent ?? ""))`) as Promise<string[]>;
}

const at = (all: string[], re: RegExp) => all.findIndex((r) => re.test(r));

test("steers and approval decisions are rows of the transcript, in the order they happened", async ({ browser }) => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-INLINE: write cli.js",
    title: "Inline",
    directory: repo,
    checks: [{ run: "test -f cli.js" }],
  });
  page = await openUi(browser, engine);
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const transcript = page.getByRole("log", { name: "Transcript" });

  // The ask arrives live: a row in the transcript, waiting, and the card to decide it.
  const askRow = transcript.getByRole("note", { name: /^Asked to edit: cli\.js \(waiting for a decision\)$/ });
  await expect(askRow).toBeVisible({ timeout: 120_000 });
  const pending = page.getByRole("region", { name: "Pending approvals of this worker" });
  await pending.getByRole("button", { name: "Approve once" }).click();
  const decision = transcript.getByRole("note", { name: /^Approved once by you \(gui\) — edit cli\.js$/ });
  await expect(decision).toBeVisible();
  await expect(transcript.getByRole("note", { name: /^Asked to edit: cli\.js$/ })).toBeVisible();

  // The model's next request is held until the steer is in.
  await expect.poll(() => model.requests.some((r) => r.kind === "chat" && r.matched === "inline" && r.turnStep === 1), { timeout: 60_000 }).toBe(true);
  await page.getByLabel("Steering message").fill(STEER);
  await page.getByRole("button", { name: "Send steer" }).click();
  await expect(transcript.getByRole("note", { name: `You steered: ${STEER}` })).toBeVisible();
  releaseSteer();
  await expect(transcript).toContainText("Followed the steer: version printed too.", { timeout: 90_000 });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 90_000 }).toBe("built");

  const all = await rows(page);
  const plan = at(all, /Plan: write cli\.js\./);
  const asked = at(all, /^Asked to edit: /);
  const approved = at(all, /^Approved once by you \(gui\)/);
  const steered = at(all, /^You steered: STEER-INLINE/);
  const followed = at(all, /Followed the steer/);
  for (const [name, i] of Object.entries({ plan, asked, approved, steered, followed }))
    expect(i, `${name} row in ${JSON.stringify(all, null, 1)}`).toBeGreaterThanOrEqual(0);
  expect(plan).toBeLessThan(asked);
  expect(asked).toBeLessThan(approved);
  expect(approved).toBeLessThan(steered);
  expect(steered).toBeLessThan(followed);
  // The same order after a reload, read from the worker's log rather than the live stream.
  await page.reload();
  await expect(transcript).toContainText("Followed the steer: version printed too.");
  expect(await rows(page)).toEqual(all);
  // No separate list of steers under the transcript: each is in it once.
  await expect(page.getByText(STEER)).toHaveCount(1);
  await page.screenshot({ path: path.join(SHOTS, "gui-transcript-inline.png"), fullPage: true });
});
