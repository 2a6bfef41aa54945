// Landing in the GUI against a real engine (`ocw serve`), real opencode, real git and the scripted model: a batch whose
// task b comes after a shows the dependency (a → b) and its integration verdict beside the workers' own; a worker whose
// change holds a flagged file (.npmrc) shows it on the verdict card, and its merge dialog needs an explicit acceptance.
// Screenshots land in OCW_SHOTS_DIR (default test-results/screenshots).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { readFile, writeFile, writesAsTold } from "../test/fixtures/scripted-model";
import type { E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("gui-landing-", { fullPage: true });

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 2,
      scripts: [
        writesAsTold("GL-WRITE"),
        {
          name: "read",
          match: /GL-READ from=(\S+) to=(\S+)/,
          script: (c) => {
            const [, from, to] = /GL-READ from=(\S+) to=(\S+)/.exec(c.firstUserText)!;
            if (c.turnStep === 0) return readFile(from!);
            if (c.turnStep === 1) return writeFile(to!, `copy of ${/ALPHA-\w+/.exec(c.lastToolResult ?? "")?.[0] ?? "nothing"}\n`);
            return { text: "Copied.\nOUTCOME: built" };
          },
        },
      ],
    },
    target: { engine: "scripted", slots: 4 },
    // Writes are approved by a policy rule: this is about what happens after the work is done.
    policies: [{ tool: "edit", pattern: "*", decision: "once" }],
    repos: [{ "README.md": "# landing repo\n" }],
  });
  ({ engine, page, repo } = setup);
});

test.afterAll(() => setup?.close());

test("a batch with a dependency draws a → b and shows the integration verdict beside the workers' own", async () => {
  const { batchId } = await engine.client.workers.startBatch.mutate({
    tasks: [
      { id: "a", task: "GL-WRITE file=a.txt text=ALPHA-7", title: "Write a", directory: repo, checks: [{ run: "grep -q ALPHA-7 a.txt" }] },
      {
        id: "b",
        after: ["a"],
        task: "GL-READ from=a.txt to=b.txt",
        title: "Copy a into b",
        directory: repo,
        checks: [{ run: "grep -q 'copy of ALPHA-7' b.txt" }],
      },
    ],
    integration: { checks: [{ name: "a and b together", run: "grep -q ALPHA-7 a.txt && grep -q 'copy of ALPHA-7' b.txt" }] },
  });
  const plan = page.getByLabel(`plan of batch ${batchId}`);
  const deps = plan.getByRole("list", { name: "task dependencies" });
  await expect(deps.getByRole("listitem")).toHaveCount(2);
  await expect(deps.getByRole("listitem", { name: /^task b after a/ })).toContainText("a →");
  const verdict = plan.getByRole("group", { name: "integration verdict" });
  await expect(verdict.getByLabel("integration: passed")).toBeVisible({ timeout: 150_000 });
  await expect(verdict).toContainText("1/1 checks · 2 workers combined");
  await expect(verdict).toContainText("a and b together");
  await expect(deps.getByRole("listitem", { name: "task a: built" })).toBeVisible();
  await expect(deps.getByRole("listitem", { name: "task b after a: built" })).toBeVisible();
  await shot(page, "01-batch-dependency-integration");
  // Landing through "Merge all built": the integration commit, once.
  await page.getByRole("button", { name: /Merge all built/ }).click();
  await page
    .getByRole("group", { name: "Merge all built" })
    .getByRole("button", { name: /^Merge \d/ })
    .click();
  await expect(verdict).toContainText("landed on main", { timeout: 30_000 });
  expect(readFileSync(path.join(repo, "b.txt"), "utf8")).toBe("copy of ALPHA-7\n");
  await shot(page, "02-batch-landed");
});

test("grading puts nothing into the repository; Publish branch adds exactly the graded commit as ocw/<id>", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "GL-WRITE file=notes.txt text=published",
    title: "publish me",
    directory: repo,
    checks: [{ file: "notes.txt", equals: "published" }],
    scope: ["notes.txt"],
  });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 120_000 }).toBe("built");
  const branchOf = () => execFileSync("git", ["-C", repo, "branch", "--list", `ocw/${workerId}`], { encoding: "utf8" }).trim();
  expect(branchOf()).toBe("");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const publish = page.getByRole("button", { name: "Publish branch" });
  await expect(publish).toBeVisible();
  await shot(page, "00-verdict-publish-branch");
  await publish.click();
  await expect.poll(branchOf, { timeout: 30_000 }).toBe(`ocw/${workerId}`);
  const commit = (await engine.client.workers.get.query({ workerId })).verdict!.commit!;
  expect(execFileSync("git", ["-C", repo, "rev-parse", `ocw/${workerId}`], { encoding: "utf8" }).trim()).toBe(commit);
  await expect(page.getByText(`published ocw/${workerId} at ${commit.slice(0, 8)}`)).toBeVisible();
  await shot(page, "00b-branch-published");
  // Not merged: main is where it was; discard removes the published branch with the worker's workspace.
  await engine.client.workers.discard.mutate({ workerId });
  expect(branchOf()).toBe("");
});

test("a flagged file is on the verdict card, and the merge needs an explicit acceptance", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "GL-WRITE file=.npmrc text=script-shell=/tmp/x",
    title: "npm config",
    directory: repo,
    checks: [{ run: "test -f .npmrc" }],
    scope: [".npmrc"],
  });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 120_000 }).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const flags = page.getByRole("group", { name: "Flagged files" });
  await expect(flags).toContainText(".npmrc");
  await expect(flags).toContainText("npm configuration");
  await page.getByRole("button", { name: "Merge…" }).click();
  const dialog = page.getByRole("dialog", { name: "Confirm merge" });
  await expect(dialog.getByRole("group", { name: "Flagged files to accept" })).toContainText(".npmrc");
  await expect(dialog.getByRole("button", { name: "Merge" })).toBeDisabled();
  await shot(page, "03-flagged-merge-dialog");
  await dialog.getByLabel("accept flagged files").check();
  await dialog.getByRole("button", { name: "Merge" }).click();
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).merged?.into ?? null, { timeout: 30_000 }).toBe("main");
  await expect(page.getByRole("button", { name: "Revert merge" })).toBeVisible();
  await shot(page, "04-merged-revert");
});

test("the merge dialog's change summary marks what the worker named: a file name's bidi control is shown, not obeyed", async () => {
  // The verdict card made the diff stat's file names safe; the merge dialog showed the same lines raw.
  const { workerId } = await engine.client.workers.start.mutate({
    task: "GL-WRITE file=notes\u202Etxt.md text=hello",
    title: "bidi name",
    directory: repo,
    checks: [{ run: 'test -n "$(ls notes*)"' }],
  });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 120_000 }).toBe("built");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("button", { name: "Merge…" }).click();
  const dialog = page.getByRole("dialog", { name: "Confirm merge" });
  const summary = dialog.locator(".diffstat");
  await expect(summary).toContainText("notes⟪U+202E⟫txt.md");
  await expect(summary).not.toContainText("\u202e");
  await shot(page, "05-merge-dialog-bidi-name");
  await dialog.getByRole("button", { name: "Cancel" }).click();
});
