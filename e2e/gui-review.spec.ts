// After the verdict in the GUI (issue 26), against a real engine (`ocw serve`), real opencode and real git, the scripted
// model the only stand-in: a person comments on two lines of a failed worker's diff, sends them as one review, and sees
// round 2's verdict and the history of rounds with the comments; "Continue…" sends a plain follow-up. Screenshots land in
// OCW_SHOTS_DIR (default test-results/screenshots).
import { execFileSync } from "node:child_process";
import { expect, test, type Page } from "@playwright/test";
import { writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("gui-review-", { fullPage: true });

let setup: ScriptedUi;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "review",
          match: /TASK-GUI-REVIEW/,
          script: (c) => {
            const round = c.userTexts.length;
            if (c.turnStep > 0) return { text: round === 1 ? "Wrote the list.\nOUTCOME: built" : "Applied the review.\nOUTCOME: built" };
            if (round === 1) return writeFile("src/list.txt", "alpha\nbeta\ngamma\n");
            if (round === 2) return writeFile("src/list.txt", "alpha\nBETA\nGAMMA\n");
            return writeFile("src/list.txt", "alpha\nBETA\nGAMMA\ndelta\n");
          },
        },
      ],
    },
    target: { engine: "scripted", slots: 2 },
    // Writes are approved by a policy rule: this test is about what happens after the verdict.
    policies: [{ tool: "edit", pattern: "*", decision: "once" }],
    repos: [{ "README.md": "# review repo\n" }],
  });
  ({ model, engine, page, repo } = setup);
});

test.afterAll(() => setup?.close());

/** Hovers a line of the diff's new version and opens its comment editor with the + beside the line number. */
async function commentOnLine(line: number, body: string) {
  const row = page.locator("tr", { has: page.locator(`[data-line-new-num="${line}"]`) }).first();
  await row.hover();
  await row.locator(".diff-add-widget").click();
  const editor = page.getByRole("form", { name: `comment on src/list.txt:${line}` });
  await editor.getByRole("textbox", { name: "Comment" }).fill(body);
  await editor.getByRole("button", { name: "Add comment" }).click();
  await expect(page.getByRole("note", { name: `comment on src/list.txt:${line}` })).toContainText(body);
}

test("comment two diff lines, send them as one review: round 2 is graded built, the history shows both rounds and the comments", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-GUI-REVIEW: write src/list.txt",
    title: "List in capitals",
    directory: repo,
    checks: [
      { file: "src/list.txt", matches: "^BETA$", name: "beta in capitals" },
      { file: "src/list.txt", matches: "^GAMMA$", name: "gamma in capitals" },
    ],
    scope: ["src/**"],
  });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const verdict = page.getByRole("region", { name: `Verdict of ${workerId}` });
  await expect(verdict).toContainText("failed");
  await expect(verdict).toContainText("0/2 checks");

  await page.getByRole("tab", { name: "Diff" }).click();
  await page.getByRole("button", { name: "Start a review" }).click();
  await commentOnLine(2, "Capitals here: BETA.");
  await commentOnLine(3, "And here: GAMMA.");
  await expect(page.getByRole("group", { name: "Review" }).getByRole("status")).toHaveText("2 comments pending");
  await page.getByRole("textbox", { name: "Review message" }).fill("Two lines to fix.");
  await shot(page, "1-comments");
  await page.getByRole("button", { name: "Submit review" }).click();

  await expect(verdict).toContainText("built", { timeout: 60_000 });
  await expect(verdict).toContainText("2/2 checks");
  const rounds = page.getByRole("region", { name: `Rounds of ${workerId}` });
  await expect(rounds.getByRole("listitem", { name: "round 1" })).toContainText("failed");
  await expect(rounds.getByRole("listitem", { name: "round 2" })).toContainText("built");
  await expect(rounds.getByRole("listitem", { name: "round 2" })).toContainText("review of round 1");
  await expect(rounds.getByRole("listitem", { name: "round 2" })).toContainText("changed since round 1: src/list.txt");
  const comments = rounds.getByRole("list", { name: "review comments of round 2" });
  await expect(comments).toContainText("src/list.txt:2 Capitals here: BETA.");
  await expect(comments).toContainText("src/list.txt:3 And here: GAMMA.");
  await page.getByRole("region", { name: `Rounds of ${workerId}` }).scrollIntoViewIfNeeded();
  await shot(page, "2-round-2-built");

  // The model got one follow-up quoting each file:line with its comment.
  const last = model.requests.filter((r) => r.kind === "chat" && JSON.stringify(r.body.messages).includes("TASK-GUI-REVIEW")).at(-1)!;
  const sent = JSON.stringify(last.body.messages);
  expect(sent).toContain("- src/list.txt:2 — Capitals here: BETA.");
  expect(sent).toContain("- src/list.txt:3 — And here: GAMMA.");
  expect(sent).toContain("Two lines to fix.");
  // Grading published nothing; Publish branch brings round 2's graded commit as ocw/<id>.
  const branchTip = () =>
    execFileSync("git", ["-C", repo, "for-each-ref", "--format=%(objectname)", `refs/heads/ocw/${workerId}`])
      .toString()
      .trim();
  expect(branchTip()).toBe("");
  await page.getByRole("button", { name: "Publish branch" }).click();
  await expect.poll(branchTip, { timeout: 30_000 }).not.toBe("");
  expect(execFileSync("git", ["-C", repo, "show", `ocw/${workerId}:src/list.txt`]).toString()).toBe("alpha\nBETA\nGAMMA\n");
  const round2 = branchTip();

  // Continue… sends a plain follow-up: round 3, graded again.
  await page.getByRole("button", { name: "Continue…" }).click();
  const dialog = page.getByRole("dialog", { name: "Continue the worker" });
  await dialog.getByRole("textbox", { name: "Follow-up message" }).fill("Add delta at the end.");
  await dialog.getByRole("button", { name: "Send follow-up" }).click();
  await expect(rounds.getByRole("listitem", { name: "round 3" })).toContainText("built", { timeout: 60_000 });
  await expect(rounds.getByRole("listitem", { name: "round 3" })).toContainText("Add delta at the end.");
  await shot(page, "3-round-3");
  // The branch published at round 2 follows the latest verdict when published again (nothing moves it by itself).
  expect(branchTip()).toBe(round2);
  await page.getByRole("button", { name: "Publish branch" }).click();
  const round3 = (await engine.client.workers.get.query({ workerId })).verdict!.commit!;
  await expect.poll(branchTip, { timeout: 30_000 }).toBe(round3);
});

test("a check that already passes on the base is called out on the worker page; the built verdict is flagged weak evidence", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-GUI-REVIEW: write src/list.txt",
    title: "Weak checks",
    directory: repo,
    checks: [{ run: "test -f README.md", name: "readme exists" }],
  });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await expect(page.getByRole("alert", { name: "Checks that prove nothing" })).toContainText(
    "these checks already pass before any change: they prove nothing (readme exists)",
  );
  const verdict = page.getByRole("region", { name: `Verdict of ${workerId}` });
  await expect(verdict).toContainText("built", { timeout: 60_000 });
  await expect(verdict).toContainText("weak evidence");
  // The warning sits between the header and the verdict with the same gap as between panels, not stuck to the verdict.
  const warnBox = (await page.getByRole("alert", { name: "Checks that prove nothing" }).boundingBox())!;
  const verdictBox = (await verdict.boundingBox())!;
  expect(verdictBox.y - (warnBox.y + warnBox.height)).toBeGreaterThanOrEqual(8);
  await expect(verdict.getByRole("note")).toContainText("every check already passed before any change");
  await shot(page, "4-weak-evidence");
});
