// The dashboard's everyday readings against a real engine (`ocw serve`), real opencode and git, and the scripted model,
// at 1440×900 and 900×700: batch names (given at the start, renamed in the GUI and with `ocw batch --name`), cost per
// worker, batch and repository (money on an API target with a price, tokens on a model of one's own), search over
// transcript text (the engine's workers.search, snippets shown as the worker's text), tokens that move while a worker
// streams, tok/s over the time on the model (time waiting for a person left out), and the theme (light, dark, system)
// kept across a reload.
import { execFileSync } from "node:child_process";
import { expect, test, type Page } from "@playwright/test";
import { dollars } from "../shared/cost";
import { throughput } from "../shared/metrics";
import { bash } from "../test/fixtures/scripted-model";
import { BUNDLE, openUi, type E2EEngine } from "./engine";
import { scriptedEngine, shots, type ScriptedEngine } from "./scripted-setup";

const shot = shots("desk-", { fullPage: false });
/** Both sizes: 1440×900, then 900×700 (nothing wider than the window), back to 1440×900. */
async function bothSizes(page: Page, name: string, visible?: () => Promise<void>) {
  await page.setViewportSize({ width: 1440, height: 900 });
  await visible?.();
  await shot(page, `${name}-1440`);
  await page.setViewportSize({ width: 900, height: 700 });
  await visible?.();
  expect(await page.locator("html").evaluate((el) => el.scrollWidth)).toBeLessThanOrEqual(900);
  await shot(page, `${name}-900`);
  await page.setViewportSize({ width: 1440, height: 900 });
}

const LONG = Array.from({ length: 600 }, (_, i) => `word${i}`).join(" ");

let setup: ScriptedEngine;
let engine: E2EEngine;
let page: Page;
let repoA: string;
let repoB: string;
const ids: Record<string, string> = {};

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  // A model of one's own (tokens) and an API target with a price (money): both are the scripted model.
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 15,
      scripts: [
        {
          name: "flux",
          match: /TASK-DESK-FLUX/,
          script: () => ({ text: "The flux capacitor is misaligned in the warp module.\nOUTCOME: honest-failure — nothing to change" }),
        },
        { name: "plain", match: /TASK-DESK-PLAIN/, script: () => ({ text: "Nothing special here.\nOUTCOME: honest-failure — nothing to change" }) },
        { name: "stream", match: /TASK-DESK-STREAM/, script: () => ({ hang: true, textBeforeHang: LONG }) },
        {
          name: "ask",
          match: /TASK-DESK-ASK/,
          script: (c) => (c.turnStep === 0 ? bash("echo desk") : { text: `Ran it. ${LONG.slice(0, 400)}\nOUTCOME: built` }),
        },
      ],
    },
    target: { id: "local", engine: "capture", slots: 4 },
    repos: [{ "README.md": "# repo A\n" }, { "README.md": "# repo B\n" }],
  });
  engine = setup.engine;
  [repoA, repoB] = setup.repos as [string, string];
  await engine.client.targets.save.mutate({
    target: {
      id: "paid",
      model: "scripted-1",
      endpoint: setup.model.url,
      serving: { engine: "api", endpoints: [], slots: 2 },
      checks: [],
      price: { inputPerMTok: 3, outputPerMTok: 15 },
    },
  });
  page = await openUi(browser, engine, { viewport: { width: 1440, height: 900 } });
});

test.afterAll(async () => {
  await page?.context().close();
  await setup?.close();
});

const settled = async (id: string) =>
  expect.poll(async () => (await engine.client.workers.get.query({ workerId: id })).state, { timeout: 120_000 }).toBe("honest-failure");

test("a named batch: its name instead of its id, renamed in the GUI and with ocw batch --name; cost per worker, batch and repository", async () => {
  const b = await engine.client.workers.startBatch.mutate({
    name: "Nightly cleanup",
    tasks: [
      { task: "TASK-DESK-FLUX: look at the warp module", title: "Warp module", directory: repoA, targetId: "paid", checks: [{ run: "true" }] },
      { task: "TASK-DESK-PLAIN: look at the rest", title: "The rest", directory: repoA, targetId: "paid", checks: [{ run: "true" }] },
    ],
  });
  ids.batch = b.batchId;
  [ids.flux, ids.plain] = b.workerIds as [string, string];
  ids.local = (
    await engine.client.workers.start.mutate({ task: "TASK-DESK-PLAIN: on my own model", title: "Local job", directory: repoB, checks: [{ run: "true" }] })
  ).workerId;
  for (const id of [ids.flux!, ids.plain!, ids.local!]) await settled(id);

  await page.goto(`${engine.origin}/#/`);
  const batch = page.getByRole("region", { name: `batch ${ids.batch}` });
  await expect(batch.getByRole("heading", { level: 2 })).toContainText("Batch Nightly cleanup");
  await expect(batch).toContainText(ids.batch!); // the id stays beside the name
  // Money on the API target: its tokens at $3 / $15 per million.
  const flux = await engine.client.workers.get.query({ workerId: ids.flux! });
  expect(flux.usage.input).toBeGreaterThan(0);
  await expect(batch.getByLabel(`cost of batch ${ids.batch}`)).toHaveText(/^\$\d/);
  const repos = page.getByRole("region", { name: "Cost by repository" });
  await expect(repos.getByLabel(`cost of ${repoA}`)).toContainText(/\$\d/);
  await expect(repos.getByLabel(`cost of ${repoB}`)).toContainText(/\d+(\.\d)?k? tok$/);
  await expect(repos.getByLabel(`cost of ${repoB}`)).not.toContainText("$");
  await expect(page.getByRole("combobox", { name: "Batch" }).locator("option", { hasText: "Nightly cleanup" })).toHaveCount(1);
  await bothSizes(page, "named-batch-cost", () => expect(batch.getByRole("heading", { level: 2 })).toBeInViewport());

  // The worker page: its cost in money, and tokens over its time on the model.
  await page.goto(`${engine.origin}/#/workers/${ids.flux}`);
  const usd = (flux.usage.input * 3 + (flux.usage.output + flux.usage.reasoning) * 15) / 1e6;
  await expect(page.getByLabel(`cost of ${ids.flux}`)).toContainText(dollars(usd));
  // The price is changed in place: every cost follows (double the price, double the cost).
  await page.getByRole("button", { name: "Set the price of paid" }).click();
  const price = page.getByRole("form", { name: "price of paid" });
  await price.getByLabel("dollars per million input tokens").fill("6");
  await price.getByLabel("dollars per million output tokens").fill("30");
  await price.getByRole("button", { name: "Save" }).click();
  const usd2 = usd * 2;
  await expect(page.getByLabel(`cost of ${ids.flux}`)).toContainText(dollars(usd2));
  expect((await engine.client.targets.list.query()).targets.find((t) => t.id === "paid")!.price).toEqual({ inputPerMTok: 6, outputPerMTok: 30 });
  await page.goto(`${engine.origin}/#/workers/${ids.local}`);
  await expect(page.getByLabel(`cost of ${ids.local}`)).toHaveText(/^cost \d+(\.\d)?k? tok$/);
  // It changed nothing: the verdict card says why, once; the facts line above does not repeat it.
  await expect(
    page
      .getByRole("region", { name: `Verdict of ${ids.local}` })
      .getByRole("note")
      .first(),
  ).toContainText("no change");
  await expect(page.locator(".facts")).not.toContainText("no change");
  await expect(page.getByRole("button", { name: /Set the price of/ })).toHaveCount(0);
  await bothSizes(page, "worker-cost", () => expect(page.getByLabel(`cost of ${ids.local}`)).toBeInViewport());

  // Renamed in the GUI: every client hears it (a batch event), the header follows.
  await page.goto(`${engine.origin}/#/`);
  await batch.getByRole("button", { name: `Rename ${ids.batch}` }).click();
  const name = batch.getByRole("textbox", { name: "Batch name" });
  await expect(name).toBeFocused();
  await name.fill("Renamed in the GUI");
  await name.press("Enter");
  await expect(batch.getByRole("heading", { level: 2 })).toContainText("Batch Renamed in the GUI");
  expect((await engine.client.workers.batch.query({ batchId: ids.batch! })).name).toBe("Renamed in the GUI");
  // …and with the CLI; a name that is not one line is refused with the reason.
  execFileSync(process.execPath, [BUNDLE, "batch", ids.batch!, "--name", "From the CLI"], { env: { ...process.env, OCW_STATE_DIR: engine.stateDir } });
  await expect(batch.getByRole("heading", { level: 2 })).toContainText("Batch From the CLI");
  let refused = "";
  try {
    execFileSync(process.execPath, [BUNDLE, "batch", ids.batch!, "--name", "two\nlines"], {
      env: { ...process.env, OCW_STATE_DIR: engine.stateDir },
      stdio: "pipe",
    });
  } catch (err) {
    refused = String((err as { stderr?: Buffer }).stderr ?? "");
  }
  expect(refused).toContain("one line");
  // An unknown batch is refused, saying so; nothing is named.
  await expect(engine.client.workers.nameBatch.mutate({ batchId: "b-nope", name: "x" })).rejects.toThrow(/unknown batch "b-nope"/);
  expect(await engine.client.workers.batchNames.query()).toEqual({ [ids.batch!]: "From the CLI" });
  // The name is searched too.
  await page.getByRole("searchbox", { name: "Search task or id" }).fill("from the cli");
  await expect(page.locator(".worker-card .card-title")).toHaveText(["Warp module", "The rest"]);
  await page.getByRole("searchbox", { name: "Search task or id" }).fill("");
});

test("search finds words that are only in a worker's transcript, with the snippet shown as the worker's text", async () => {
  await page.goto(`${engine.origin}/#/`);
  const search = page.getByRole("searchbox", { name: "Search task or id" });
  // Neither the task text nor the title says "flux capacitor": only what the model wrote.
  await search.fill("flux capacitor");
  await expect(page.locator(".worker-card .card-title")).toHaveText(["Warp module"]);
  const hit = page.getByLabel(`transcript match in ${ids.flux}`);
  await expect(hit).toContainText("The flux capacitor is misaligned");
  await expect(hit.locator(".untrusted")).toHaveAttribute("title", /data, not instructions/);
  // A settled card's last line uses the card's width: no empty rate chart beside it squeezes it into a narrow column.
  const card = page.getByRole("region", { name: ids.flux!, exact: true });
  await expect(card.getByRole("img", { name: /tokens per second of/ })).toHaveCount(0);
  const row = (await card.locator(".card-row").boundingBox())!;
  const line = (await card.locator(".card-row .untrusted").boundingBox())!;
  expect(row.x + row.width - (line.x + line.width)).toBeLessThan(40);
  await bothSizes(page, "search-transcript", () => expect(hit).toBeInViewport());
  // The engine's answer, as every client gets it: worker ids and a snippet under `untrusted`.
  const r = await engine.client.workers.search.query({ query: "warp module misaligned" });
  expect(r.hits.map((h) => h.workerId)).toEqual([ids.flux]);
  expect(r.hits[0]!.untrusted.snippet).toContain("misaligned");
  await search.fill("no such words anywhere");
  await expect(page.getByText("No worker matches these filters.")).toBeVisible();
  await search.fill("");
});

test("tokens move while a worker streams; tok/s counts only the time on the model", async () => {
  ids.stream = (
    await engine.client.workers.start.mutate({ task: "TASK-DESK-STREAM: write a lot", title: "Streams", directory: repoB, checks: [{ run: "true" }] })
  ).workerId;
  await page.goto(`${engine.origin}/#/`);
  const stats = page.getByLabel(`progress of ${ids.stream}`);
  // Nothing is reported while it streams (the model has not finished its step): the count is the streamed estimate.
  const estimate = async () => Number(((await stats.textContent()) ?? "").match(/~(\d+(?:\.\d)?)(k?) tok\b/)?.[1] ?? 0);
  await expect.poll(estimate, { timeout: 120_000 }).toBeGreaterThan(0);
  const first = await estimate();
  await expect.poll(estimate, { timeout: 60_000 }).toBeGreaterThan(first);
  expect((await engine.client.workers.get.query({ workerId: ids.stream })).usage.output).toBe(0);
  await bothSizes(page, "live-tokens", () => expect(stats).toBeInViewport());
  await page.goto(`${engine.origin}/#/workers/${ids.stream}`);
  await expect(page.getByLabel(`tokens of ${ids.stream}`)).toContainText(/\+ ~\d[\d,]* streaming/);
  await engine.client.workers.stop.mutate({ workerId: ids.stream });

  // A worker that waits for a person: that wait is not model time.
  ids.ask = (
    await engine.client.workers.start.mutate({ task: "TASK-DESK-ASK: run a command", title: "Asks first", directory: repoB, checks: [{ run: "true" }] })
  ).workerId;
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: ids.ask! })).state, { timeout: 90_000 }).toBe("waiting-approval");
  await page.waitForTimeout(3000); // the person takes a while
  const ask = (await engine.client.workers.get.query({ workerId: ids.ask })).asks.find((a) => a.status === "pending")!;
  await engine.client.approvals.decide.mutate({ askId: ask.id, decision: "once" });
  await expect.poll(async () => (await engine.client.workers.get.query({ workerId: ids.ask! })).state, { timeout: 120_000 }).toMatch(/built|honest-failure/);
  const w = await engine.client.workers.get.query({ workerId: ids.ask });
  const answered = w.asks.find((a) => a.id === ask.id)!;
  expect(answered.decidedAt! - answered.createdAt).toBeGreaterThanOrEqual(3000);
  // Model time leaves the wait out: it is at most the time it ran minus the time the ask waited.
  expect(w.modelMs).toBeGreaterThan(0);
  expect(w.modelMs).toBeLessThanOrEqual(w.endedAt! - w.startedAt! - (answered.decidedAt! - answered.createdAt));
  const tp = throughput(w, Date.now());
  await page.goto(`${engine.origin}/#/`);
  const card = page.getByLabel(`progress of ${ids.ask}`);
  await expect(card).toContainText(`${tp.tokPerSec!.toFixed(1)} tok/s`);
  await expect(card.getByText(/tok\/s$/)).toHaveAttribute("title", /on the model \(time waiting for you, queued or grading left out\)/);
  await page.goto(`${engine.origin}/#/workers/${ids.ask}`);
  await expect(page.getByLabel(`speed of ${ids.ask}`)).toContainText(`${tp.tokPerSec!.toFixed(1)} tok/s over`);
  await bothSizes(page, "tok-per-sec", () => expect(page.getByLabel(`speed of ${ids.ask}`)).toBeInViewport());
});

test("theme: dark, light or the system's, kept across a reload", async () => {
  await page.goto(`${engine.origin}/#/`);
  const theme = page.getByRole("combobox", { name: "Theme" });
  const bg = () => page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()") as Promise<string>;
  await page.emulateMedia({ colorScheme: "light" });
  await theme.selectOption("dark");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  expect(await bg()).toBe("#101318");
  await page.reload();
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(theme).toHaveValue("dark");
  await bothSizes(page, "theme-dark", () => expect(theme).toBeInViewport());
  await theme.selectOption("light");
  expect(await bg()).toBe("#f5f6f8");
  // The system's: follows the scheme the system asks for, as it changes.
  await theme.selectOption("system");
  await page.emulateMedia({ colorScheme: "dark" });
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await page.emulateMedia({ colorScheme: "light" });
  await expect(page.locator("html")).toHaveAttribute("data-theme", "light");
  expect(await page.evaluate("localStorage.getItem('ocw.theme')")).toBeNull();
});
