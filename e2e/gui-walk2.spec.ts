// A second newcomer's walk, over the screens the earlier walks passed least: Setup (hardware, model fit, capture, API
// provider), the attempts of one task (winner, losers, merge), Grades, Settings, Approvals with asks from several
// workers, and the dashboard at 900 and 1360 px in light and dark themes, keyboard-only for part of it. A real engine
// (`ocw serve`) on a simulated machine (fake nvidia-smi), real opencode and real git; two scripted models saved as two
// targets. What it met (each check below failed before its fix):
// - Setup's memory chart was a blank bar: its segments shared the class .seg with the dashboard's segmented control,
//   whose panel background painted over their colours (the legend alone kept them);
// - Setup's model catalog ran past a 900 px window (long repo names and Plan buttons kept on one line);
// - the Attempts page said "Stopped: another attempt was built." where the worker's page and card name attempt 2;
// - a losing attempt's page offered "Resume anyway" once the winner was merged, although the engine then refuses to
//   land it: not offered then, and its note says why and what is left (discard, or revert that merge first);
// - the merged winner's diff on the Attempts page said "No changes." (its workspace is gone once merged): it says where
//   the change is now, as the worker page's Diff tab does.
// Screenshots in OCW_SHOTS_DIR (default test-results/screenshots), prefixed walk2-.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { bash, startScriptedModel, writeFile, type ScriptContext, type ScriptedModel, type Step } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, openUi, ROOT, startEngine, tempDir, type E2EEngine } from "./engine";
import { shots } from "./scripted-setup";

const shot = shots("walk2-", { fullPage: false });

let a: ScriptedModel;
let b: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
let dir: string;
let groupId: string;
let workerIds: string[] = [];
let aStarts = 0;
let aFailed: () => void = () => {};
const aFailedP = new Promise<void>((r) => (aFailed = r));

// Target A: the first attempt writes the wrong greeting and says so; the next one thinks forever (stopped for the winner).
const onA = (c: ScriptContext): Step => {
  if (c.turnStep === 0) return ++aStarts === 1 ? writeFile("greeting.txt", "hello world\n") : { hang: true, textBeforeHang: "Thinking…" };
  aFailed();
  return { text: "greeting.txt does not say hi.\nOUTCOME: honest-failure — wrong greeting" };
};
// Target B builds, once A's first has failed.
const onB = async (c: ScriptContext): Promise<Step> => {
  if (c.turnStep === 0) {
    await aFailedP;
    await new Promise((r) => setTimeout(r, 1000));
    return writeFile("greeting.txt", "hi\n");
  }
  return { text: "Wrote greeting.txt.\nOUTCOME: built" };
};
// Workers that each ask to run a command (no approval rule is set for bash): several asks from several workers.
const askers = [
  {
    name: "ask",
    match: /TASK-ASK/,
    script: (c: ScriptContext): Step => {
      const n = /TASK-ASK-(\d)/.exec(c.userTexts[0] ?? "")?.[1] ?? "0";
      return c.turnStep === 0 ? bash(`echo step-${n} && ls -la`, { description: `List the files for step ${n}` }) : { text: "Listed.\nOUTCOME: built" };
    },
  },
];

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  a = await startScriptedModel({ modelId: "scripted-1", chunkDelayMs: 2, scripts: askers, fallback: onA });
  b = await startScriptedModel({ modelId: "scripted-1", chunkDelayMs: 2, fallback: onB });
  // A simulated machine: one 24 GB NVIDIA card (the fake nvidia-smi), 64 GiB of RAM, no llama-server.
  dir = tempDir("walk2");
  const csv = path.join(dir, "nvidia.csv");
  writeFileSync(csv, "0, GPU-00000000-0000-0000-0000-000000000000, NVIDIA GeForce RTX 4090, 00000000:01:00.0, 24564, 500, 24064, 580.65.06, 8.9\n");
  writeFileSync(path.join(dir, "nvcc"), "#!/bin/sh\n", { mode: 0o755 });
  engine = await startEngine(path.join(dir, "state"), {
    PATH: [path.join(ROOT, "test", "fixtures", "hardware", "bin"), process.env.PATH ?? ""].join(path.delimiter),
    OCW_NVCC: path.join(dir, "nvcc"),
    OCW_RAM_BYTES: String(64 * 1024 ** 3),
    LLAMA_SERVER: "",
    OCW_LLAMA_CACHE: path.join(dir, "no-llama"),
    OCW_FAKE_NVIDIA_SMI: csv,
    OCW_FAKE_ROCM_SMI: "",
  });
  const target = (id: string, url: string) => ({
    id,
    model: "scripted-1",
    endpoint: url,
    keyRef: null,
    serving: { engine: "scripted" as const, endpoints: [], slots: 4 },
    checks: [],
  });
  await engine.client.targets.save.mutate({ target: target("local-a", a.url), activate: true });
  await engine.client.targets.save.mutate({ target: target("local-b", b.url) });
  await engine.client.policies.set.mutate({ rules: [{ tool: "edit", pattern: "*", decision: "once" }] });
  repo = makeRepo({ "README.md": "# walk2 repo\n" });
  page = await openUi(browser, engine);
});

test.afterAll(async () => {
  await page?.context().close();
  await engine?.kill();
  await a?.close();
  await b?.close();
  cleanup(dir ?? "", repo ?? "");
});

/** The theme, through the control a person uses. */
async function theme(p: Page, t: "light" | "dark") {
  await p.getByRole("combobox", { name: "Theme" }).selectOption(t);
  await expect(p.locator("html")).toHaveAttribute("data-theme", t);
}

/** Nothing on the page is wider than the window (no sideways scroll at this width). */
async function noSidewaysScroll(p: Page) {
  const over = (await p.evaluate(`[...document.querySelectorAll("main *")]
    .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && getComputedStyle(e).position !== "fixed")
    .slice(0, 5)
    .map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right))`)) as string[];
  expect(over, "elements past the window's right edge").toEqual([]);
}

test("Setup on a 24 GB GPU machine: hardware, the model that fits, a dead capture URL, an API key variable not set (1360 light, 900 dark)", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/setup`);
  await theme(page, "light");
  await expect(page.getByRole("list", { name: "Detected hardware" }).getByRole("listitem").filter({ hasText: "RTX 4090" })).toHaveCount(1);
  await expect(page.getByRole("region", { name: "Recommended setup" })).toContainText("fits");
  await shot(page, "setup-1360-light");
  await page.setViewportSize({ width: 900, height: 900 });
  await theme(page, "dark");
  await noSidewaysScroll(page);
  await shot(page, "setup-900-dark");
  const rec = page.getByRole("region", { name: "Recommended setup" });
  const bar = rec.getByRole("img", { name: /^CUDA0 NVIDIA GeForce RTX 4090: weights/ });
  await bar.scrollIntoViewIfNeeded();
  await shot(page, "setup-900-dark-recommended");
  // The chart's bar is painted in its legend's colours (its segments were drawn in the panel's colour: a blank bar).
  const painted = (l: typeof bar) =>
    l.evaluate((e) => (globalThis as unknown as { getComputedStyle: (e: unknown) => { backgroundColor: string } }).getComputedStyle(e).backgroundColor);
  expect(await painted(bar.locator("span").first())).toBe(await painted(rec.locator(".legend .swatch").first()));
  await page.getByRole("table", { name: "Model catalog" }).scrollIntoViewIfNeeded();
  await shot(page, "setup-900-dark-catalog");

  await page.getByRole("radio", { name: "Capture a running server" }).check();
  const form = page.getByRole("form", { name: "Capture a running server" });
  await form.getByRole("textbox", { name: "Server URL" }).fill("http://127.0.0.1:9/v1");
  await form.getByRole("button", { name: "Verify and save" }).click();
  await expect(form.getByRole("alert")).toContainText("nothing OpenAI-compatible answers at http://127.0.0.1:9");
  await form.scrollIntoViewIfNeeded();
  await shot(page, "setup-900-dark-capture-dead");

  await page.getByRole("radio", { name: "Use an API provider" }).check();
  const api = page.getByRole("form", { name: "Use an API provider" });
  await api.getByLabel("Base URL").fill(b.url);
  await api.getByLabel("Model id").fill("scripted-1");
  await api.getByLabel(/^Key environment variable/).fill("OCW_WALK2_NOT_SET");
  await api.getByRole("button", { name: "Verify and save" }).click();
  await expect(api.getByRole("alert")).toContainText("OCW_WALK2_NOT_SET is not set in the engine's environment");
  // the engine's `ocw stop` in its message shows as code, not between raw backticks
  await expect(api.getByRole("alert").locator("code")).toHaveText(["ocw stop"]);
  await expect(api.getByRole("alert")).not.toContainText("`");
  await api.scrollIntoViewIfNeeded();
  await shot(page, "setup-900-dark-provider-unset");
  const saved = page.getByRole("region", { name: "Saved targets" });
  await saved.scrollIntoViewIfNeeded();
  await expect(page.getByLabel("Active target")).toContainText("local-a");
  await shot(page, "setup-900-dark-saved-targets");
  expect((await engine.client.targets.list.query()).targets.map((t) => t.id).sort()).toEqual(["local-a", "local-b"]);
});

test("three attempts: the loser names the attempt that was built; after the winner is merged it offers no Resume anyway", async () => {
  await page.setViewportSize({ width: 1360, height: 900 });
  await theme(page, "light");
  const started = await engine.client.workers.startAttempts.mutate({
    task: "Make greeting.txt say hi",
    title: "Greeting says hi",
    directory: repo,
    checks: [{ run: "grep -qx hi greeting.txt", name: "greeting is hi" }],
    scope: ["greeting.txt"],
    attempts: 3,
    targets: ["local-a", "local-b"],
  });
  groupId = started.groupId!;
  workerIds = started.workerIds;
  await expect.poll(async () => (await engine.client.workers.attempts.query({ groupId })).settled, { timeout: 170_000 }).toBe(true);
  const g = await engine.client.workers.attempts.query({ groupId });
  expect(g.winner).toBe(workerIds[1]);
  const lost = g.attempts.find((x) => x.stoppedForWinner)!;
  expect(lost).toBeTruthy();

  await page.goto(`${engine.origin}/#/attempts/${groupId}`);
  const side = page.getByRole("region", { name: "Attempts side by side" });
  const loser = side.getByRole("article", { name: `Attempt ${lost.index}` });
  // It said "Stopped: another attempt was built." where the worker's page and card named attempt 2.
  await expect(loser.getByText("Stopped: attempt 2 was built.", { exact: true })).toBeVisible();
  await shot(page, "attempts-1360-light");

  await page.getByRole("button", { name: "Merge the winner…" }).click();
  await page.getByRole("dialog", { name: "Confirm merge of the winner" }).getByRole("button", { name: "Merge", exact: true }).click();
  await expect(page.getByLabel("Winner")).toContainText("Merged into main");
  // The winner's diff, once merged (its workspace gone): where its change is now, not "No changes.".
  const winnerDiff = page.getByRole("region", { name: "Diff of attempt 2" });
  await expect(winnerDiff.getByRole("status")).toContainText("Merged into main as");
  await expect(winnerDiff).not.toContainText("No changes");
  await page.setViewportSize({ width: 900, height: 900 });
  await theme(page, "dark");
  await noSidewaysScroll(page);
  await shot(page, "attempts-900-dark-merged");

  // The loser's page once the winner is merged: resumed, it could never land (the engine refuses a second attempt of a
  // merged task), so it offers no "Resume anyway"; its note says why, and what is left to do.
  await page.goto(`${engine.origin}/#/workers/${lost.workerId}`);
  const head = page.getByRole("region", { name: "Worker", exact: true });
  await expect(head.getByText(`attempt ${lost.index} of 3`, { exact: true })).toBeVisible();
  await expect(head.getByRole("button", { name: "Resume anyway", exact: true })).toHaveCount(0);
  await expect(head.getByRole("note")).toContainText("That attempt was merged into main, so this one cannot be merged");
  await expect(head.getByRole("button", { name: "Discard…", exact: true })).toBeEnabled();
  await shot(page, "loser-after-merge-900-dark");
});

test("Grades, keyboard only: Tab reaches a ledger row, Enter opens the workers behind it, Tab reaches them (900 dark, 1360 light)", async () => {
  await page.setViewportSize({ width: 900, height: 900 });
  await page.goto(`${engine.origin}/#/grades`);
  const ledger = page.getByRole("table", { name: "Ledger" });
  const rowA = ledger.getByRole("row", { name: "ledger of local-a" });
  await expect(rowA).toBeVisible();
  await rowA.focus();
  await page.keyboard.press("Enter");
  const behind = page.getByLabel("workers behind local-a");
  await expect(behind.getByRole("link")).toHaveCount(2);
  await page.keyboard.press("Tab");
  await expect(behind.getByRole("link").first()).toBeFocused();
  await noSidewaysScroll(page);
  await shot(page, "grades-900-dark");
  await page.setViewportSize({ width: 1360, height: 900 });
  await theme(page, "light");
  await shot(page, "grades-1360-light");
});

test("Settings at 900 dark and 1360 light", async () => {
  await page.setViewportSize({ width: 900, height: 900 });
  await page.goto(`${engine.origin}/#/settings`);
  await theme(page, "dark");
  await expect(page.getByRole("region", { name: "Engine" })).toBeVisible();
  await noSidewaysScroll(page);
  await shot(page, "settings-900-dark");
  await page.setViewportSize({ width: 1360, height: 900 });
  await theme(page, "light");
  await shot(page, "settings-1360-light");
  await page.locator("main.content").evaluate((m) => m.scrollTo(0, m.scrollHeight));
  await shot(page, "settings-1360-light-end");
});

test("Approvals: asks from several workers, decided with the keyboard; the dashboard at 900 and 1360, light and dark", async () => {
  await engine.client.policies.set.mutate({ rules: [{ tool: "edit", pattern: "*", decision: "once" }] });
  const ids: string[] = [];
  for (const n of [1, 2, 3]) {
    const { workerId } = await engine.client.workers.start.mutate({
      task: `TASK-ASK-${n} list the files`,
      title: `List files ${n}`,
      directory: repo,
      checks: [{ run: "true" }],
    });
    ids.push(workerId);
  }
  await expect
    .poll(
      async () =>
        (await Promise.all(ids.map((workerId) => engine.client.workers.get.query({ workerId })))).filter((w) => w.asks.some((x) => x.status === "pending"))
          .length,
      {
        timeout: 90_000,
      },
    )
    .toBe(3);
  await page.setViewportSize({ width: 1360, height: 900 });
  await page.goto(`${engine.origin}/#/dashboard`);
  await theme(page, "light");
  await shot(page, "dashboard-1360-light");
  await page.setViewportSize({ width: 900, height: 900 });
  await theme(page, "dark");
  await noSidewaysScroll(page);
  await shot(page, "dashboard-900-dark");

  await page.goto(`${engine.origin}/#/approvals`);
  const list = page.getByRole("list", { name: "Pending approvals" });
  await expect(list.getByRole("listitem")).toHaveCount(3);
  await noSidewaysScroll(page);
  await shot(page, "approvals-900-dark");
  await page.setViewportSize({ width: 1360, height: 900 });
  await theme(page, "light");
  await shot(page, "approvals-1360-light");
  // Keyboard: j moves to the second ask, a approves it once; the focus stays in the list, never on the page's top.
  await page.locator("main.content").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("j");
  const second = list.getByRole("listitem").nth(1);
  await expect(second).toBeFocused();
  const name = await second.getAttribute("aria-label");
  await page.keyboard.press("a");
  await expect(list.getByRole("listitem")).toHaveCount(2);
  expect(await list.getByRole("listitem").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label")))).not.toContain(name);
  await expect(list.locator("li:focus, li :focus")).toHaveCount(1);
  await shot(page, "approvals-after-key");
  for (let i = 0; i < 2; i++) await page.keyboard.press("a");
  await expect(list.getByRole("listitem")).toHaveCount(0);
  await shot(page, "approvals-empty");
  // Each ran its command and finished (it changed no file: its verdict is no build, whatever it said).
  for (const workerId of ids)
    await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toMatch(/^(built|honest-failure)$/);
  await page.goto(`${engine.origin}/#/dashboard`);
  await shot(page, "dashboard-1360-light-done");
  await page.setViewportSize({ width: 900, height: 900 });
  await theme(page, "dark");
  await shot(page, "dashboard-900-dark-done");
});
