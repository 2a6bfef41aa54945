// Approvals at scale, notifications and the keyboard against a real engine (`ocw serve`), real opencode in its sandbox
// and real git; the scripted model is the only stand-in. Flags on ask cards before the decision (protected, out of
// scope, symlink with its real path; a write outside the workspace refused by the engine, with the flag shown), bulk
// decisions for the same tool and pattern per batch and per worker, grants listed and revoked, the Notification API
// with its permission and a sound, the pending count in the tab title, the shortcut sheet on `?`, and the phase /
// elapsed / tokens / tokens/s line on cards. Screenshots land in OCW_SHOTS_DIR (default test-results/screenshots).
import { existsSync, symlinkSync } from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { expect, test, type Page } from "@playwright/test";
import { bash, writeFile } from "../test/fixtures/scripted-model";
import { cleanup, openUi, tempDir, type E2EEngine } from "./engine";
import { scriptedEngine, shots, type ScriptedEngine } from "./scripted-setup";

const shot = shots("gui-approvals-", { fullPage: true });

let setup: ScriptedEngine;
let engine: E2EEngine;
let page: Page;
let repo: string;
let outside: string;
let releaseGrant!: () => void;
const grantGate = new Promise<void>((r) => (releaseGrant = r));

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  outside = tempDir("outside");
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "protected",
          match: /TASK-FLAG-PROTECTED/,
          script: (c) => (c.turnStep === 0 ? writeFile("secret.env", "TOKEN=x\n") : { text: "OUTCOME: honest-failure — refused" }),
        },
        {
          name: "scope",
          match: /TASK-FLAG-SCOPE/,
          script: (c) => (c.turnStep === 0 ? writeFile("README.md", "# changed\n") : { text: "OUTCOME: honest-failure — refused" }),
        },
        {
          name: "symlink",
          match: /TASK-FLAG-LINK/,
          script: (c) => (c.turnStep === 0 ? writeFile("docs-link/note.md", "a note\n") : { text: "Wrote the note.\nOUTCOME: built" }),
        },
        {
          name: "outside",
          match: /TASK-FLAG-OUTSIDE/,
          script: (c) => (c.turnStep === 0 ? writeFile("out-link/escape.txt", "x\n") : { text: "OUTCOME: honest-failure — refused" }),
        },
        { name: "bulk", match: /TASK-BULK-BATCH/, script: (c) => (c.turnStep === 0 ? bash("echo bulk-check") : { text: "Ran it.\nOUTCOME: built" }) },
        {
          name: "twice",
          match: /TASK-BULK-WORKER/,
          script: (c) =>
            c.turnStep === 0
              ? {
                  toolCalls: [
                    { name: "bash", args: { command: "echo twice" } },
                    { name: "bash", args: { command: "echo twice" } },
                  ],
                }
              : { text: "Ran both.\nOUTCOME: built" },
        },
        {
          name: "grant",
          match: /TASK-GRANT/,
          script: async (c) => {
            // The same command three times: a grant answers exactly that command (never `echo *`).
            if (c.turnStep === 0) return bash("echo grant-one");
            if (c.turnStep === 1) return bash("echo grant-one");
            if (c.turnStep === 2) {
              await grantGate;
              return bash("echo grant-one");
            }
            return { text: "Ran three echoes.\nOUTCOME: built" };
          },
        },
        {
          name: "same",
          match: /TASK-SAME-WRITE/,
          script: (c) => (c.turnStep === 0 ? writeFile("docs/index.md", "# docs\n") : { text: "Wrote it.\nOUTCOME: built" }),
        },
        { name: "workdir", match: /TASK-WORKDIR/, script: (c) => (c.turnStep === 0 ? bash("ls", { workdir: "src" }) : { text: "Listed.\nOUTCOME: built" }) },
        {
          name: "hidden",
          match: /TASK-HIDDEN/,
          script: (c) =>
            c.turnStep === 0
              ? bash("npm test \u2067\u2066 ; rm -rf src \u2069\u2066 #\u2069\u2069")
              : c.turnStep === 1
                ? bash("echo harmless\nrm -rf src")
                : { text: "OUTCOME: honest-failure — refused" },
        },
        { name: "stall", match: /TASK-STALL/, script: () => ({ hang: true, textBeforeHang: "Thinking very hard…" }) },
      ],
    },
    // Stalls are flagged after 4 s without events (the notification test needs one).
    env: { OCW_STALL_SEC: "4" },
    target: { engine: "capture", slots: 4 },
    repos: [{ "README.md": "# approvals repo\n", "src/app.js": "console.log(1);\n", "secret.env": "TOKEN=old\n", "docs/index.md": "# docs\n" }],
  });
  ({ engine, repo } = setup);
  // Two committed symlinks: one to a folder inside the repository, one to a folder outside it.
  symlinkSync("docs", path.join(repo, "docs-link"));
  symlinkSync(outside, path.join(repo, "out-link"));
  execFileSync("git", ["add", "-A"], { cwd: repo });
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "links"], { cwd: repo });
  // The URL `ocw serve` printed hands the tab its token (kept for this tab): every test can then open any screen.
  page = await openUi(browser, engine, { permissions: ["notifications"] });
});

test.afterAll(async () => {
  releaseGrant?.();
  await page?.context().close();
  await setup?.close();
  cleanup(outside ?? "");
});

const pendingCount = async () => (await engine.client.approvals.list.query()).length;

test("every ask card shows its flags before the decision: protected, out of scope, symlink with its real path; an outside write is refused before anyone is asked", async () => {
  await page.goto(engine.url);
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  const start = (task: string, extra: { scope?: string[]; protect?: string[] } = {}) =>
    engine.client.workers.start.mutate({ task, directory: repo, checks: [{ run: "true" }], ...extra });
  const p = (await start("TASK-FLAG-PROTECTED: put a token in secret.env", { protect: ["secret.env"] })).workerId;
  const s = (await start("TASK-FLAG-SCOPE: touch the readme", { scope: ["src/**"] })).workerId;
  const l = (await start("TASK-FLAG-LINK: write a note through docs-link")).workerId;
  const o = (await start("TASK-FLAG-OUTSIDE: write through out-link")).workerId;
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(3);
  const asks = await engine.client.approvals.list.query();
  const askOf = (id: string) => asks.find((a) => a.workerId === id)!;

  await page.getByRole("link", { name: /^Approvals/ }).click();
  // Protected: the chip and the engine's detail, above the buttons.
  const pFlags = page.getByRole("list", { name: `flags of ${askOf(p).id}` });
  await expect(pFlags).toContainText("protected");
  await expect(pFlags).toContainText("secret.env is protected (secret.env)");
  const sFlags = page.getByRole("list", { name: `flags of ${askOf(s).id}` });
  await expect(sFlags).toContainText("out of scope");
  await expect(sFlags).toContainText("README.md is outside the task's scope (src/**)");
  const lFlags = page.getByRole("list", { name: `flags of ${askOf(l).id}` });
  await expect(lFlags).toContainText("symlink");
  await expect(lFlags).toContainText("docs-link is a symlink: the write lands in");
  await expect(lFlags).toContainText("/docs/note.md");
  // The flags sit before the decision buttons in the card.
  const card = page.locator(`[data-ask-id="${askOf(p).id}"]`);
  const [flagsBox, buttonBox] = await Promise.all([
    card.getByRole("list", { name: /^flags of/ }).boundingBox(),
    card.getByRole("button", { name: "Approve once" }).boundingBox(),
  ]);
  expect(flagsBox!.y).toBeLessThan(buttonBox!.y);
  await shot(page, "01-flags");

  // The outside write never waited for anyone: the workspace plugin refused it before the tool ran (opencode reads a
  // file to edit before it asks), so no ask was made, and the worker page shows the refusal the worker was given.
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: o })).state, { timeout: 60_000 }).not.toMatch(/starting|running|queued/);
  expect((await engine.client.workers.get.query({ workerId: o })).asks).toEqual([]);
  await page.goto(`${engine.origin}/#/workers/${o}`);
  await page.locator("details.tool-error summary", { hasText: "out-link/escape.txt" }).click();
  await expect(page.getByText(/refused this write call: out-link\/escape.txt leads outside your workspace/).first()).toBeVisible();
  // One refused call is "1 tool failure", not "1 tool failures".
  await expect(page.locator(".facts .chip-warn")).toHaveText("1 tool failure");
  await shot(page, "02-refused-outside");
  expect(existsSync(path.join(outside, "escape.txt"))).toBe(false);

  for (const id of [p, s]) await engine.client.approvals.decide.mutate({ askId: askOf(id).id, decision: "reject" });
  await engine.client.approvals.decide.mutate({ askId: askOf(l).id, decision: "once" });
  await expect.poll(pendingCount, { timeout: 30_000 }).toBe(0);
});

test("a bash ask shows the folder it runs in (its workdir)", async () => {
  await page.goto(engine.origin + "/#/approvals");
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-WORKDIR: list src", directory: repo, checks: [{ run: "true" }] });
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(1);
  const ask = (await engine.client.approvals.list.query()).find((a) => a.workerId === workerId)!;
  expect(ask.workdir).toBe("src");
  const card = page.locator(`[data-ask-id="${ask.id}"]`);
  await expect(card.locator(".ask-workdir")).toHaveText("in folder: src");
  await shot(page, "00-workdir", false);
  await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "reject" });
  await expect.poll(pendingCount, { timeout: 30_000 }).toBe(0);
});

test("an edit that writes what the file already holds says so, in place of a diff of header lines only", async () => {
  await page.goto(engine.origin + "/#/approvals");
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-SAME-WRITE: rewrite the docs index",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(1);
  const ask = (await engine.client.approvals.list.query()).find((a) => a.workerId === workerId)!;
  const card = page.locator(`[data-ask-id="${ask.id}"]`);
  await expect(card.getByLabel(`diff of ${ask.id}`)).toHaveText(/no change to the file's content/);
  await shot(page, "00-unchanged-write", false);
  await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "reject" });
  await expect.poll(pendingCount, { timeout: 30_000 }).toBe(0);
});

test("bulk: one click approves the same command in every worker of a batch; the tab title counts what is pending", async () => {
  await page.goto(engine.origin + "/#/approvals");
  const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({
    tasks: [1, 2, 3].map((i) => ({ task: `TASK-BULK-BATCH ${i}: run the check`, title: `Bulk ${i}`, directory: repo, checks: [{ run: "true" }] })),
  });
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(3);
  await expect(page).toHaveTitle("(3) opencode-worker");
  const first = (await engine.client.approvals.list.query())[0]!;
  const bulk = page.getByRole("group", { name: `bulk decisions like ${first.id}` });
  await expect(bulk).toContainText("echo");
  const approveAll = bulk.getByRole("button", { name: `Approve all 3 in batch ${batchId}` });
  await expect(approveAll).toBeVisible();
  await shot(page, "03-bulk-batch");
  await approveAll.click();
  await expect.poll(pendingCount, { timeout: 30_000 }).toBe(0);
  await expect(page).toHaveTitle("opencode-worker");
  // The notice says what was approved ("approved 3" alone said three of what?).
  await expect(page.locator(".notice").filter({ hasText: /^approved 3 asks/ })).toBeVisible();
  // Their commands change no file: graded honest-failure (a no-op is never built), which is not what this test is about.
  for (const id of workerIds)
    await expect.poll(async () => (await engine.client.workers.get.query({ workerId: id })).state, { timeout: 120_000 }).toBe("honest-failure");
  // Each was answered by a person through the GUI, once.
  for (const id of workerIds)
    expect((await engine.client.workers.get.query({ workerId: id })).asks.map((a) => [a.decision, a.by?.kind])).toEqual([["once", "person"]]);

  // Cards: phase, elapsed, tokens and tokens/s as the target reported them.
  await page.goto(engine.origin + "/#/");
  const stats = page.getByLabel(`progress of ${workerIds[0]}`);
  await expect(stats).toContainText(/took \d+s/);
  await expect(stats).toContainText(/\d+(\.\d)?k? tok\b/);
  await expect(stats).toContainText(/\d+\.\d tok\/s/);
  await shot(page, "04-cards-progress");
});

test("bulk per worker: the same command asked twice in parallel by one worker decided with one click (bulk groups exactly the same command, never a pattern)", async () => {
  const { workerId } = await engine.client.workers.start.mutate({ task: "TASK-BULK-WORKER: run two commands", directory: repo, checks: [{ run: "true" }] });
  await page.goto(engine.origin + "/#/approvals");
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(2);
  const first = (await engine.client.approvals.list.query())[0]!;
  const rejectAll = page.getByRole("group", { name: `bulk decisions like ${first.id}` }).getByRole("button", { name: "Reject all 2 of this worker" });
  await expect(rejectAll).toBeVisible();
  await shot(page, "05-bulk-worker");
  await rejectAll.click();
  await expect.poll(pendingCount, { timeout: 30_000 }).toBe(0);
  // The first reject settles the worker's message; opencode cancels its sibling, which the bulk then leaves alone.
  const w = await engine.client.workers.get.query({ workerId });
  expect(w.asks).toHaveLength(2);
  expect(w.asks[0]!.decision).toBe("reject");
  for (const a of w.asks) expect(a.status === "cancelled" || a.decision === "reject").toBe(true);
  await expect(page.getByText(/failed:/)).toHaveCount(0);
});

test("grants: “Always allow” answers the next matching ask, is listed on the approvals screen and the worker page, and is revoked there", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-GRANT: three echoes",
    title: "Grant",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await page.goto(engine.origin + "/#/approvals");
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(1);
  const ask = (await engine.client.approvals.list.query())[0]!;
  const card = page.locator(`[data-ask-id="${ask.id}"]`);
  await expect(card).toContainText("“Always allow” grants this worker exactly echo grant-one:");
  await card.getByRole("button", { name: "Always allow" }).click();
  // The second echo is answered by the grant, not by a person.
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).asks.length, { timeout: 60_000 }).toBe(2);
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).asks[1]?.by?.kind, { timeout: 30_000 }).toBe("policy");
  const grants = page.getByRole("table", { name: "All grants" });
  await expect(grants.getByRole("row", { name: `grant bash echo grant-one for ${workerId}` })).toBeVisible();
  await shot(page, "06-grants");

  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const mine = page.getByRole("table", { name: `grants of ${workerId}` });
  await expect(mine).toContainText("echo grant-one");
  await mine.getByRole("button", { name: "Revoke" }).click();
  await expect(page.getByRole("region", { name: "Grants of this worker" })).toHaveCount(0);
  expect(await engine.client.approvals.grants.query()).toEqual([]);
  await page.goto(engine.origin + "/#/approvals");
  await expect(page.getByRole("region", { name: "Grants" })).toContainText("No grants");
  // With the grant gone, the third echo waits for a person.
  releaseGrant();
  await expect.poll(pendingCount, { timeout: 60_000 }).toBe(1);
  await engine.client.approvals.decide.mutate({ askId: (await engine.client.approvals.list.query())[0]!.id, decision: "once" });
  // Echoes change no file: a no-op is graded honest-failure, never built.
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).toBe("honest-failure");
  expect((await engine.client.workers.get.query({ workerId })).stateReason).toMatch(/^no change: /);
});

test("the command shown is the command run: bidi controls and line breaks made visible; a link focuses an ask but its keys decide nothing until a click", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-HIDDEN: run the tests",
    title: "Hidden",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await expect
    .poll(async () => (await engine.client.workers.get.query({ workerId })).asks.filter((a) => a.status === "pending").length, { timeout: 120_000 })
    .toBe(1);
  const bidi = (await engine.client.workers.get.query({ workerId })).asks[0]!;
  // Opened the way an ocw://ask/ID link opens it.
  await page.goto(`${engine.origin}/#/approvals/${bidi.id}`);
  const card = page.locator(`[data-ask-id="${bidi.id}"]`);
  const what = page.getByLabel(`what ${bidi.id} asks`);
  await expect(what).toHaveText("npm test ⟪U+2067⟫⟪U+2066⟫ ; rm -rf src ⟪U+2069⟫⟪U+2066⟫ #⟪U+2069⟫⟪U+2069⟫");
  await expect(card).toContainText("“Always allow” is not offered");
  await expect(card.getByRole("button", { name: "Always allow" })).toBeDisabled();
  await expect(page.getByRole("status", { name: "keys off until a click" })).toBeVisible();
  await shot(page, "09-bidi-link", false);
  await page.keyboard.press("a");
  await page.keyboard.press("Shift+A");
  // Nothing was decided by the keys.
  expect((await engine.client.workers.get.query({ workerId })).asks[0]!.status).toBe("pending");
  await what.click();
  await expect(page.getByRole("status", { name: "keys off until a click" })).toHaveCount(0);
  await page.keyboard.press("r");
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).asks[0]!.decision, { timeout: 30_000 }).toBe("reject");

  // A two-line command shows as two visible lines, the break marked.
  await expect
    .poll(async () => (await engine.client.workers.get.query({ workerId })).asks.filter((a) => a.status === "pending").length, { timeout: 120_000 })
    .toBe(1);
  const multi = (await engine.client.workers.get.query({ workerId })).asks[1]!;
  const multiWhat = page.getByLabel(`what ${multi.id} asks`);
  await expect(multiWhat).toHaveText("echo harmless⏎\nrm -rf src");
  const box = await multiWhat.boundingBox();
  const lineHeight = await multiWhat.evaluate(
    (el) => parseFloat((globalThis as unknown as { getComputedStyle: (e: unknown) => { lineHeight: string } }).getComputedStyle(el).lineHeight) || 16,
  );
  expect(box!.height).toBeGreaterThan(lineHeight * 1.5);
  await expect(page.locator(`[data-ask-id="${multi.id}"]`)).toContainText("exactly echo harmless and rm -rf src, each on its own");
  await shot(page, "10-multiline", false);
  await page.locator(`[data-ask-id="${multi.id}"]`).getByRole("button", { name: "Reject" }).click();
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId })).state, { timeout: 60_000 }).not.toBe("waiting-approval");
});

test("notifications: permission shown, then a new ask, a verdict and a stalled worker each notify (with a sound)", async () => {
  // Record what reaches the browser's Notification API (the real one still shows them).
  // The page's globals, typed loosely: this suite compiles without the DOM library.
  type Win = {
    Notification: new (title: string, opts?: { body?: string }) => object;
    __native?: { title: string; body?: string }[];
    __ocwNotifications?: { tones: () => number };
  };
  await page.addInitScript(() => {
    const win = globalThis as unknown as Win;
    const Native = win.Notification;
    const seen: { title: string; body?: string }[] = [];
    win.__native = seen;
    class Recorded extends Native {
      constructor(title: string, opts?: { body?: string }) {
        super(title, opts);
        seen.push({ title, body: opts?.body });
      }
    }
    Object.defineProperty(win, "Notification", { value: Recorded, configurable: true, writable: true });
  });
  await page.goto(engine.origin + "/#/settings");
  await page.reload(); // a new document, so the init script runs (a hash change alone keeps the page)
  const panel = page.getByRole("region", { name: "Notifications" });
  await expect(panel.getByRole("status", { name: "notification permission" })).toHaveText("allowed by this browser");
  await panel.getByLabel("Notify me").check();
  await panel.getByLabel("also while this window is in front").check();
  await panel.getByLabel("play a sound").check();
  // The button is as wide as its label, not stretched across the panel like a text field.
  const soundBox = (await panel.getByRole("button", { name: "Test sound" }).boundingBox())!;
  expect(soundBox.width).toBeLessThan(200);
  await shot(page, "07-notification-settings");

  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-BULK-BATCH 9: run the check",
    title: "Notify me",
    directory: repo,
    checks: [{ run: "true" }],
  });
  const native = () => page.evaluate(() => ((globalThis as unknown as Win).__native ?? []).map((n) => n.title));
  await expect.poll(pendingCount, { timeout: 120_000 }).toBe(1);
  await expect.poll(native, { timeout: 10_000 }).toContain("Approval waiting: bash");
  await engine.client.approvals.decide.mutate({ askId: (await engine.client.approvals.list.query())[0]!.id, decision: "once" });
  // Its command changes no file: the verdict (a no-op is never built) is a failure, and it notifies as one.
  await expect.poll(native, { timeout: 120_000 }).toContain("Failed: Notify me");

  const stall = await engine.client.workers.start.mutate({ task: "TASK-STALL: think", title: "Stuck", directory: repo, checks: [{ run: "true" }] });
  await expect.poll(native, { timeout: 60_000 }).toContain("Stalled: Stuck");
  expect(await page.evaluate(() => (globalThis as unknown as Win).__ocwNotifications!.tones())).toBeGreaterThanOrEqual(3);
  await engine.client.workers.stop.mutate({ workerId: stall.workerId });
  expect(workerId).toBeTruthy();
});

test("the shortcut sheet opens on ?, closes on Escape; g then a letter navigates", async () => {
  await page.goto(engine.origin + "/#/");
  await expect(page.getByRole("heading", { name: "Workers", exact: true })).toBeVisible();
  await page.keyboard.press("?");
  const sheet = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  await expect(sheet).toBeVisible();
  await expect(sheet.getByRole("region", { name: "Approvals shortcuts" })).toContainText("approve the selected ask once");
  await expect(sheet.getByRole("region", { name: "Anywhere shortcuts" })).toContainText("go to Approvals");
  await shot(page, "08-shortcut-sheet", false);
  await page.keyboard.press("Escape");
  await expect(sheet).toBeHidden();
  await page.keyboard.press("g");
  await page.keyboard.press("a");
  await expect(page.getByRole("heading", { name: "Approvals", exact: true })).toBeVisible();
  await page.keyboard.press("g");
  await page.keyboard.press("p");
  await expect(page.getByRole("heading", { name: "Settings", exact: true })).toBeVisible();
  // The ? button in the header opens it too.
  await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
  await expect(sheet).toBeVisible();
});
