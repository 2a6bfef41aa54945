// Housekeeping and honest containment in the GUI, against a real engine (`ocw serve`) started unsandboxed on purpose
// (--no-sandbox through OCW_NO_SANDBOX=1), real opencode and real git, on a pool target of two scripted model servers
// that report their load like llama.cpp (`/slots`). The scripted model is the only stand-in. Checked: the unsandboxed
// warning and badges, each endpoint of the pool with health, slots in use and the server's own load, the phase line of a
// running card, "merge all built" stopping at a conflict with the reason, retry as a new worker, discard after a
// confirm. Screenshots land in OCW_SHOTS_DIR (default test-results/screenshots).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { expect, test, type Page } from "@playwright/test";
import { startScriptedModel, writeFile, type ScriptedModel, type ScriptedModelOptions } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, openUi, startEngine, type E2EEngine } from "./engine";
import { shots } from "./scripted-setup";

const shot = shots("gui-housekeeping-", { fullPage: true });

const SCRIPTS: ScriptedModelOptions["scripts"] = [
  { name: "one", match: /TASK-HK-ONE/, script: (c) => (c.turnStep === 0 ? writeFile("x.txt", "one\n") : { text: "Wrote x.txt.\nOUTCOME: built" }) },
  { name: "two", match: /TASK-HK-TWO/, script: (c) => (c.turnStep === 0 ? writeFile("x.txt", "two\n") : { text: "Wrote x.txt.\nOUTCOME: built" }) },
  { name: "three", match: /TASK-HK-THREE/, script: (c) => (c.turnStep === 0 ? writeFile("y.txt", "three\n") : { text: "Wrote y.txt.\nOUTCOME: built" }) },
  {
    name: "fail",
    match: /TASK-HK-FAIL/,
    script: (c) => (c.turnStep === 0 ? writeFile("z.txt", "no\n") : { text: "Could not make it say yes.\nOUTCOME: honest-failure — no yes" }),
  },
  { name: "hang", match: /TASK-HK-HANG/, script: () => ({ hang: true, textBeforeHang: "Working…" }) },
];

let models: ScriptedModel[] = [];
let engine: E2EEngine;
let page: Page;
let repo: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  models = [
    await startScriptedModel({ modelId: "pool-coder", chunkDelayMs: 2, slots: 2, scripts: SCRIPTS }),
    await startScriptedModel({ modelId: "pool-coder", chunkDelayMs: 2, slots: 2, scripts: SCRIPTS }),
  ];
  engine = await startEngine(undefined, { OCW_NO_SANDBOX: "1", OCW_POOL_PROBE_MS: "500" });
  await engine.client.targets.save.mutate({
    target: {
      id: "pool",
      model: "pool-coder",
      endpoint: models[0]!.url,
      keyRef: null,
      serving: { engine: "capture", endpoints: models.map((m) => ({ url: m.url, slots: 2 })), slots: 4 },
      checks: [],
    },
    activate: true,
  });
  // Writes are approved by a policy rule: these tests are about what happens after the work is done.
  await engine.client.policies.set.mutate({ rules: [{ tool: "edit", pattern: "*", decision: "once" }] });
  repo = makeRepo({ "README.md": "# housekeeping repo\n" });
  page = await openUi(browser, engine);
});

test.afterAll(async () => {
  await page?.context().close();
  await engine?.kill();
  for (const m of models) await m.close().catch(() => undefined);
  cleanup(engine?.stateDir ?? "", repo ?? "");
});

const state = async (workerId: string) => (await engine.client.workers.get.query({ workerId })).state;

test("an unsandboxed engine says so on every screen, each worker carries the badge; the pool's endpoints show health, slots and load", async () => {
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-HK-HANG: a long job",
    title: "Long job",
    directory: repo,
    checks: [{ run: "true" }],
  });
  const warning = page.getByRole("alert", { name: "Workers are not sandboxed" });
  await expect(warning).toContainText("--no-sandbox");
  await expect(warning).toContainText("can read your files and secrets");
  const card = page.getByRole("region", { name: workerId, exact: true });
  await expect(card.getByText("unsandboxed", { exact: true })).toBeVisible();
  // Running on one endpoint of the pool: that endpoint counts it, and its server reports one busy slot.
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).endpoint, { timeout: 60_000 }).not.toBeNull();
  const on = (await engine.client.workers.get.query({ workerId })).endpoint!;
  const other = models.map((m) => m.url).find((u) => u !== on)!;
  const list = page.getByRole("list", { name: "endpoints of pool" });
  await expect(list.getByRole("listitem")).toHaveCount(2);
  const busy = list.getByRole("listitem", { name: `endpoint ${on}` });
  await expect(busy).toContainText("healthy");
  await expect(busy).toContainText("1/2 slots");
  await expect(busy).toContainText("server: 1/2 busy · queue");
  await expect(list.getByRole("listitem", { name: `endpoint ${other}` })).toContainText("0/2 slots");
  await expect(card.getByLabel(`progress of ${workerId}`)).toContainText("thinking / writing");
  await shot(page, "01-unsandboxed-pool");
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await expect(page.getByText("unsandboxed", { exact: true })).toBeVisible();
  await expect(page.getByRole("region", { name: "Worker" })).toContainText(`on ${on}`);
  await expect(page.getByRole("alert", { name: "Workers are not sandboxed" })).toBeVisible();
  await engine.client.workers.stop.mutate({ workerId });
  await expect.poll(() => state(workerId), { timeout: 30_000 }).toBe("stopped");
});

test("merge all built: merged one by one in submission order, stopping at the conflict with the reason", async () => {
  const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({
    tasks: ["ONE", "TWO", "THREE"].map((k) => ({ task: `TASK-HK-${k}: write a file`, title: `Merge ${k}`, directory: repo, checks: [{ run: "true" }] })),
  });
  for (const id of workerIds) await expect.poll(() => state(id), { timeout: 180_000 }).toBe("built");
  await page.goto(engine.origin + "/#/");
  const batch = page.getByRole("region", { name: `batch ${batchId}` });
  const group = batch.getByRole("group", { name: "Merge all built" });
  await group.getByRole("button", { name: "Merge all built (3)…" }).click();
  await expect(group).toContainText("Merge 3 built workers into their base branch, one by one?");
  await shot(page, "02-merge-all-confirm", false);
  // One call: the engine merges the batch (no loop of merges in the page).
  const call = page.waitForRequest((r) => r.url().includes("workers.mergeBatch"));
  await group.getByRole("button", { name: "Merge 3", exact: true }).click();
  await call;
  const stopped = group.getByRole("alert", { name: "merge all stopped" });
  await expect(stopped).toContainText(`Stopped at ${workerIds[1]}`);
  await expect(stopped).toContainText("x.txt");
  await expect(stopped).toContainText(`not tried: ${workerIds[2]}`);
  await expect(group.getByRole("status")).toContainText("merged 1");
  await shot(page, "03-merge-all-stopped");
  // The user's repository: the first worker's file is merged; nothing of the second or third.
  expect(execFileSync("git", ["show", "main:x.txt"], { cwd: repo, encoding: "utf8" })).toBe("one\n");
  expect(() => execFileSync("git", ["show", "main:y.txt"], { cwd: repo, stdio: "pipe" })).toThrow();
  expect((await engine.client.workers.get.query({ workerId: workerIds[0]! })).merged).not.toBeNull();
  expect((await engine.client.workers.get.query({ workerId: workerIds[2]! })).merged).toBeNull();
  await expect(page.getByRole("region", { name: workerIds[0]!, exact: true }).locator(".chip", { hasText: /^merged$/ })).toBeVisible();
  // The rest is still offered.
  await expect(group.getByRole("button", { name: "Merge all built (2)…" })).toBeVisible();
});

test("retry: a failed worker's task runs again as a new worker; discard: after a confirm, its workspace and branch are gone", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-HK-FAIL: make z.txt say yes",
    title: "Say yes",
    directory: repo,
    checks: [{ run: "grep -q yes z.txt" }],
  });
  await expect.poll(() => state(workerId), { timeout: 180_000 }).toBe("honest-failure");
  const failed = await engine.client.workers.get.query({ workerId });
  expect(failed.worktree && existsSync(failed.worktree)).toBeTruthy();
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const retryCall = page.waitForRequest((r) => r.url().includes("workers.retry"));
  await page.getByRole("button", { name: "Retry as new worker" }).click();
  await retryCall;
  await expect(page).not.toHaveURL(new RegExp(`#/workers/${workerId}$`));
  const retryId = decodeURIComponent(page.url().split("#/workers/")[1]!);
  const retried = await engine.client.workers.get.query({ workerId: retryId });
  expect(retried.spec.task).toBe(failed.spec.task);
  expect(retried.spec.checks).toEqual(failed.spec.checks);
  expect(retried.targetId).toBe("pool");
  await expect(page.getByRole("heading", { name: "Say yes" })).toBeVisible();
  await shot(page, "04-retried");

  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  await page.getByRole("button", { name: "Discard…" }).click();
  const dialog = page.getByRole("dialog", { name: "Confirm discard" });
  await expect(dialog).toContainText(failed.worktree!);
  await expect(dialog).toContainText(failed.branch!);
  await shot(page, "05-discard-confirm", false);
  // Cancel keeps everything.
  await dialog.getByRole("button", { name: "Cancel" }).click();
  expect(existsSync(failed.worktree!)).toBe(true);
  await page.getByRole("button", { name: "Discard…" }).click();
  await dialog.getByRole("button", { name: "Discard", exact: true }).click();
  await expect(page.getByText("discarded: workspace and branch removed")).toBeVisible();
  await expect(page.getByRole("button", { name: "Discard…" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Retry as new worker" })).toBeVisible();
  expect(existsSync(failed.worktree!)).toBe(false);
  expect((await engine.client.workers.get.query({ workerId })).discarded).toBe(true);
  await shot(page, "06-discarded");

  // A built but unmerged worker (the conflicting one) warns that its work is lost before it is discarded.
  const conflicting = (await engine.client.workers.list.query()).find((w) => w.spec.task.startsWith("TASK-HK-TWO"))!;
  await page.goto(`${engine.origin}/#/workers/${conflicting.id}`);
  await page.getByRole("button", { name: "Discard…" }).click();
  await expect(dialog).toContainText("Its built work is not merged and is lost.");
  await dialog.getByRole("button", { name: "Discard", exact: true }).click();
  await expect(page.getByText("discarded: workspace and branch removed")).toBeVisible();
  await expect(page.getByRole("button", { name: "Merge…" })).toHaveCount(0);
  await expect.poll(() => state(retryId), { timeout: 180_000 }).toBe("honest-failure");
});
