// States that do not lie and focus that does not land on a destructive button, against a real engine, real opencode,
// real git and the scripted model: the page title names the task; after Stop the focus is on Resume; after Resume a
// tool cut off by the stop no longer says "running"; the Diff tab of a merged worker says where it went; a target can
// be deleted (refused while a worker of it runs).
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { bash, writeFile, type ScriptedModel } from "../test/fixtures/scripted-model";
import { approvingPoll, type E2EEngine, type WorkerView } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("truthful-", { fullPage: false });

let setup: ScriptedUi;
let model: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 1,
      scripts: [
        // A long shell command; resumed, the model works on (and hangs) so the worker is running again.
        { name: "toolhang", match: /TASK-TR-TOOL/, script: (c) => (c.userTexts.length === 1 ? bash("sleep 600") : { hang: true, textBeforeHang: "Resumed." }) },
        {
          name: "merge",
          match: /TASK-TR-MERGE/,
          script: (c) => (c.turnStep === 0 ? writeFile("merged.txt", "merged\n") : { text: "Wrote it.\nOUTCOME: built" }),
        },
      ],
    },
    target: { engine: "capture", slots: 2 },
    inactiveTargets: ["spare"],
    repos: [{ "README.md": "# truthful repo\n" }],
    viewport: { width: 1440, height: 900 },
  });
  ({ model, engine, page, repo } = setup);
});

test.afterAll(() => setup?.close());

async function approveAll(workerId: string, until: (w: WorkerView) => boolean) {
  await approvingPoll(engine, workerId, until).toBe(true);
}

test("title from the task; targets deletable (not while in use); Stop puts focus on Resume; a tool cut off by the stop is not 'running' after Resume", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-TR-TOOL: a long command",
    title: "Long shell command",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await approveAll(workerId, (w) => w.asks.some((a) => a.status === "decided") && w.currentTool === "bash" && w.state === "running");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await expect(page).toHaveTitle("Long shell command — opencode-worker");

  // Targets: the one in use is refused, the spare one goes.
  await page.goto(`${engine.origin}/#/setup`);
  // The screen settles first: the plan card and the servers list arrive after it opens and push the targets table down,
  // so a click aimed at a row just before they land hits whatever moved under it (seen under CI's load).
  await expect(page.getByRole("status").filter({ hasText: "Planning with the engine" })).toHaveCount(0, { timeout: 60_000 });
  await expect(page.getByRole("region", { name: "Model servers" })).toContainText("None", { timeout: 60_000 });
  await page.getByRole("button", { name: "Delete target scripted" }).click();
  await expect(page.getByRole("group", { name: "Confirm deleting target scripted" }).getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.getByRole("group", { name: "Confirm deleting target scripted" }).getByRole("button", { name: "Delete", exact: true }).click();
  await expect(page.getByText(/target "scripted" has 1 worker queued or running/)).toBeVisible();
  await page.getByRole("button", { name: "Delete target spare" }).click();
  await page.getByRole("group", { name: "Confirm deleting target spare" }).getByRole("button", { name: "Delete", exact: true }).click();
  // The confirm group stands in the button's place while the engine deletes (it also stops a server it started for the
  // target, so the answer takes a moment): wait for the row to go, not only the button.
  await expect(page.getByRole("group", { name: "Confirm deleting target spare" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Delete target spare" })).toHaveCount(0);
  await expect.poll(async () => (await engine.client.targets.list.query()).targets.map((t) => t.id)).toEqual(["scripted"]);
  await shot(page, "targets");

  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("button", { name: "Stop", exact: true }).click();
  await expect(page.getByRole("group", { name: "Confirm stop" }).getByRole("button", { name: "Cancel" })).toBeFocused();
  await page.getByRole("button", { name: "Stop now" }).click();
  const resume = page.getByRole("button", { name: "Resume", exact: true });
  await expect(resume).toBeEnabled({ timeout: 30_000 });
  await expect(resume).toBeFocused();
  await expect(page.locator(":focus")).not.toHaveText(/Discard/);
  await shot(page, "stopped-focus");
  await resume.click();
  await expect.poll(async () => model.requests.filter((r) => r.matched === "toolhang").length, { timeout: 60_000 }).toBeGreaterThan(1);
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toBe("running");
  const oldTool = page.locator("details.part.tool").filter({ hasText: "sleep 600" }).first();
  // Killed by the stop: opencode says "completed" (with "User aborted the command" in its output); shown as killed.
  await expect(oldTool.locator(".chip")).toHaveText(/^(killed|not finished)$/);
  await shot(page, "resumed-old-tool");
  await engine.client.workers.stop.mutate({ workerId });
});

test("an API key typed in Setup is kept out of targets.json, the page and the API: the OS keychain, else a 0600 file", async () => {
  await page.goto(`${engine.origin}/#/setup`);
  await page.getByRole("button", { name: "Set API key of scripted" }).click();
  const field = page.getByLabel("API key for scripted");
  await expect(field).toBeFocused();
  await field.fill("sk-e2e-secret-123");
  await page.getByRole("form", { name: "API key of scripted" }).getByRole("button", { name: "Save" }).click();
  await expect(page.getByText(/key of scripted stored in the (OS keychain|state dir \(0600 file)/)).toBeVisible();
  await expect(page.getByText(/key in (keychain|0600 file)/)).toBeVisible();
  expect(readFileSync(path.join(engine.stateDir, "targets.json"), "utf8")).not.toContain("sk-e2e-secret-123");
  const t = (await engine.client.targets.list.query()).targets.find((x) => x.id === "scripted")!;
  expect(JSON.stringify(t)).not.toContain("sk-e2e-secret-123");
  if (t.keyFile) expect(statSync(t.keyFile).mode & 0o777).toBe(0o600);
  else expect(t.keyStore).toBe("keychain");
  expect(await page.content()).not.toContain("sk-e2e-secret-123");
  await shot(page, "key-stored");
});

test("the Diff tab of a merged worker says where its changes went", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-TR-MERGE: write merged.txt",
    title: "To be merged",
    directory: repo,
    checks: [{ file: "merged.txt" }],
  });
  await approveAll(workerId, (w) => w.state === "built");
  const merged = await engine.client.workers.merge.mutate({ workerId });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("tab", { name: "Diff" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Merged into" })).toContainText("Merged into main");
  await expect(page.getByText("No changes in the worktree yet")).toHaveCount(0);
  expect(merged).toBeTruthy();
  await shot(page, "merged-diff");
});
