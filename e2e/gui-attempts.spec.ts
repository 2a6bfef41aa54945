// Best-of-N in the GUI, against a real engine (`ocw serve`), real opencode and real git, on two scripted model servers
// saved as two targets. Three attempts of one task over the targets in turn: target A's first attempt writes the wrong
// thing and says so, its second never finishes, target B's builds. Checked: the attempts side by side (verdict, claim,
// tokens, time, changed lines, diff), the winner the checks picked, the attempt stopped for it, "Merge the winner"
// merging exactly its commit, and the ledger on the Grades screen whose rows open the workers behind them.
// Screenshots land in OCW_SHOTS_DIR (default test-results/screenshots).
import { execFileSync } from "node:child_process";
import { expect, test, type Locator, type Page } from "@playwright/test";
import { startScriptedModel, writeFile, type ScriptContext, type ScriptedModel, type Step } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, openUi, startEngine, type E2EEngine } from "./engine";
import { shots } from "./scripted-setup";

const shot = shots("gui-attempts-", { fullPage: true });

let a: ScriptedModel;
let b: ScriptedModel;
let engine: E2EEngine;
let page: Page;
let repo: string;
const extraRepos: string[] = [];
let aStarts = 0;
let aFailed: () => void = () => {};
const aFailedP = new Promise<void>((r) => (aFailed = r));

const onA = (c: ScriptContext): Step => {
  if (c.turnStep === 0) return ++aStarts === 1 ? writeFile("greeting.txt", "hello world\nfrom attempt one\n") : { hang: true, textBeforeHang: "Thinking…" };
  aFailed();
  return { text: "greeting.txt does not say hi.\nOUTCOME: honest-failure — wrong greeting" };
};
const onB = async (c: ScriptContext): Promise<Step> => {
  if (c.turnStep === 0) {
    await aFailedP;
    await new Promise((r) => setTimeout(r, 1000));
    return writeFile("greeting.txt", "hi\n");
  }
  return { text: "Wrote greeting.txt.\nOUTCOME: built" };
};

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  a = await startScriptedModel({ modelId: "scripted-1", chunkDelayMs: 2, fallback: onA });
  b = await startScriptedModel({ modelId: "scripted-1", chunkDelayMs: 2, fallback: onB });
  engine = await startEngine();
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
  repo = makeRepo({ "README.md": "# attempts repo\n" });
  page = await openUi(browser, engine);
});

test.afterAll(async () => {
  await page?.context().close();
  await engine?.kill();
  await a?.close();
  await b?.close();
  cleanup(engine?.stateDir ?? "", repo ?? "", ...extraRepos);
});

test("three attempts side by side: B's built attempt wins, the hanging one is stopped, Merge the winner merges its commit; the ledger opens its workers", async () => {
  const { groupId, workerIds } = await engine.client.workers.startAttempts.mutate({
    task: "Make greeting.txt say hi",
    title: "Greeting says hi",
    directory: repo,
    checks: [{ run: "grep -qx hi greeting.txt", name: "greeting is hi" }],
    scope: ["greeting.txt"],
    attempts: 3,
    targets: ["local-a", "local-b"],
  });
  expect(groupId).toMatch(/^a-/);
  expect(workerIds).toHaveLength(3);
  await expect.poll(async () => (await engine.client.workers.attempts.query({ groupId: groupId! })).settled, { timeout: 170_000 }).toBe(true);
  const g = await engine.client.workers.attempts.query({ groupId: groupId! });
  const states = await Promise.all(
    workerIds.map((id) => engine.client.workers.get.query({ workerId: id }).then((w) => `${w.id} ${w.state}: ${w.stateReason}`)),
  );
  expect(g.winner, states.join("\n")).toBe(workerIds[1]);
  // Attempt 1 or 3 (whichever A started second) was stopped for the winner: the loser.
  const lost = g.attempts.find((x) => x.stoppedForWinner)!;
  expect(lost.index === 1 || lost.index === 3, states.join("\n")).toBe(true);

  // The dashboard card links to the attempts.
  await page.goto(`${engine.origin}/#/`);
  // The loser's card says which attempt was built, and offers neither Resume nor Retry (its task is done).
  const loserCard = page.getByRole("region", { name: lost.workerId, exact: true });
  await expect(loserCard.getByText("Stopped: attempt 2 was built.", { exact: true })).toBeVisible();
  await expect(loserCard.getByRole("button", { name: `Resume ${lost.workerId}`, exact: true })).toHaveCount(0);
  await expect(loserCard.getByRole("button", { name: `Retry ${lost.workerId}`, exact: true })).toHaveCount(0);
  await shot(loserCard, "00-loser-card");
  const card = page.getByRole("region", { name: workerIds[1]! });
  await expect(card.getByRole("link", { name: "attempt 2/3" })).toBeVisible();
  await card.getByRole("link", { name: "attempt 2/3" }).click();
  await expect(page).toHaveURL(new RegExp(`#/attempts/${groupId}$`));

  const side = page.getByRole("region", { name: "Attempts side by side" });
  await expect(side.getByRole("article")).toHaveCount(3);
  const [one, two, three] = [1, 2, 3].map((i) => side.getByRole("article", { name: `Attempt ${i}` })) as [Locator, Locator, Locator];
  await expect(two.getByText("winner")).toBeVisible();
  await expect(two.getByLabel("verdict: built")).toBeVisible();
  await expect(two.getByLabel("claim: honest")).toBeVisible();
  await expect(two.getByLabel("claim", { exact: true })).toHaveText("said built");
  await expect(two.getByLabel("changed lines")).toHaveText("1");
  await expect(two).toContainText("local-b");
  // Attempt 1 or 3 (whichever A started first) failed honestly; the other was stopped for the winner.
  const failed = (await one.getByLabel("verdict: failed").count()) ? one : three;
  const stopped = failed === one ? three : one;
  await expect(failed.getByLabel("claim: honest")).toBeVisible();
  await expect(failed.getByLabel("changed lines")).toHaveText("2");
  // It names the attempt that was built (it said "another attempt", where its card and page named it).
  await expect(stopped).toContainText("Stopped: attempt 2 was built.");
  await expect(stopped.getByText("no verdict")).toBeVisible();
  await expect(page.getByLabel("Winner")).toContainText(workerIds[1]!);
  // The winner's diff is shown; another attempt's diff on request.
  await expect(page.getByRole("region", { name: "Diff of attempt 2" })).toContainText("hi");
  await shot(page, "01-side-by-side");
  await failed.getByRole("button", { name: "Diff" }).click();
  await expect(page.getByRole("region", { name: /Diff of attempt [13]/ })).toContainText("from attempt one");
  await shot(page, "02-loser-diff");

  // Merge the winner: after a confirm, exactly its graded commit lands on main.
  await page.getByRole("button", { name: "Merge the winner…" }).click();
  const dialog = page.getByRole("dialog", { name: "Confirm merge of the winner" });
  await expect(dialog).toContainText(workerIds[1]!);
  await shot(page, "03-merge-confirm", false);
  await dialog.getByRole("button", { name: "Merge", exact: true }).click();
  await expect(page.getByLabel("Winner")).toContainText("Merged into main");
  // Nothing left to merge: the button is gone (the summary says where the winner went).
  await expect(page.getByRole("button", { name: "Merge the winner…" })).toHaveCount(0);
  await expect(page.getByRole("region", { name: "Attempts" }).getByRole("heading", { level: 2 })).toBeFocused();
  const winner = await engine.client.workers.get.query({ workerId: workerIds[1]! });
  expect(winner.merged?.into).toBe("main");
  expect(execFileSync("git", ["show", "main:greeting.txt"], { cwd: repo, encoding: "utf8" })).toBe("hi\n");
  expect(execFileSync("git", ["rev-list", "--parents", "-n", "1", "main"], { cwd: repo, encoding: "utf8" })).toContain(winner.verdict!.commit!);

  // The ledger per target: rows open the workers behind them.
  await page.goto(`${engine.origin}/#/grades`);
  const ledger = page.getByRole("table", { name: "Ledger" });
  const rowA = ledger.getByRole("row", { name: "ledger of local-a" });
  const rowB = ledger.getByRole("row", { name: "ledger of local-b" });
  // local-a: one task, two attempts, one graded (failed), one stopped; local-b: one built.
  await expect(rowA).toContainText("0%");
  await expect(rowA).toContainText("k=2");
  await expect(rowB).toContainText("100%");
  await rowA.click();
  const behind = page.getByLabel("workers behind local-a");
  await expect(behind.getByRole("link")).toHaveCount(2);
  await shot(page, "04-ledger");
  await behind.getByRole("link", { name: new RegExp(lost.workerId) }).click();
  const head = page.getByRole("region", { name: "Worker", exact: true });
  // Its place among the attempts, and a link named for where it goes.
  await expect(head.getByText(`attempt ${lost.index} of 3`, { exact: true })).toBeVisible();
  await expect(head.getByRole("link", { name: "all 3 attempts", exact: true })).toHaveAttribute("href", `#/attempts/${groupId}`);
  // A losing attempt: the page says which attempt was built and leads to it; no Stop, Resume or Retry as for any
  // stopped worker (its task is done). Attempt 2 is merged: resumed, this one could never land (the engine refuses a
  // second attempt of a merged task), so "Resume anyway" is not offered either, and the note says why; discarding stays.
  await expect(head.getByRole("note")).toHaveText(
    "Attempt 2 was built, so this attempt was stopped before its verdict. Its transcript and diff stay here. That attempt was merged into main, so this one cannot be merged: discard it, or revert that merge first to take this one instead.",
  );
  await expect(head.getByRole("note").getByRole("link", { name: "Attempt 2", exact: true })).toHaveAttribute("href", `#/workers/${workerIds[1]}`);
  const actions = head.locator(".actions");
  for (const name of ["Stop", "Resume", "Retry as new worker"]) await expect(actions.getByRole("button", { name, exact: true })).toHaveCount(0);
  await expect(actions.getByRole("button", { name: "Resume anyway", exact: true })).toHaveCount(0);
  await expect(actions.getByRole("button", { name: "Discard…", exact: true })).toBeEnabled();
  await shot(page, "05-stopped-attempt");
  await head.getByRole("note").getByRole("link", { name: "Attempt 2", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`#/workers/${workerIds[1]}$`));
  await expect(page.getByRole("region", { name: "Worker", exact: true }).getByText("attempt 2 of 3", { exact: true })).toBeVisible();

  // The attempt that failed honestly: its task is done by the merged attempt 2, so no Retry (its page or its card) or Continue, and
  // its page says why and leads to that attempt; the engine refuses the retry too, in words for a person.
  const failedId = g.attempts.find((x) => x.verdict === "honest-failure")!.workerId;
  await page.goto(`${engine.origin}/#/workers/${failedId}`);
  const failedHead = page.getByRole("region", { name: "Worker", exact: true });
  await expect(failedHead.getByRole("note")).toHaveText(
    "Attempt 2 of this task was merged into main, so its task is done: this attempt is not retried or continued (its work could not land beside that merge). Revert that merge first to try the task again.",
  );
  await expect(failedHead.getByRole("note").getByRole("link", { name: "Attempt 2", exact: true })).toHaveAttribute("href", `#/workers/${workerIds[1]}`);
  for (const name of ["Retry as new worker", "Continue…"])
    await expect(failedHead.locator(".actions").getByRole("button", { name, exact: true })).toHaveCount(0);
  await expect(failedHead.locator(".actions").getByRole("button", { name: "Discard…", exact: true })).toBeEnabled();
  await shot(page, "05b-failed-attempt-after-merge");
  await page.goto(`${engine.origin}/#/`);
  const failedCard = page.getByRole("region", { name: failedId, exact: true });
  await expect(failedCard.getByText("Attempt 2 was merged.", { exact: true })).toBeVisible();
  await expect(failedCard.getByRole("button", { name: `Retry ${failedId}`, exact: true })).toHaveCount(0);
  await shot(failedCard, "05c-failed-attempt-card");
  await expect(engine.client.workers.retry.mutate({ workerId: failedId })).rejects.toThrow(
    `worker ${failedId} is not retried: another attempt at its task, ${workerIds[1]}, was merged into main`,
  );
});

test("New task takes attempts: two attempts on one target start as a group and open side by side", async () => {
  // A repository of its own: in the first test's, the winner's "hi" is merged already, and a no-op never wins.
  const fresh = makeRepo({ "README.md": "# attempts repo 2\n" });
  extraRepos.push(fresh);
  await page.goto(`${engine.origin}/#/new`);
  const form = page.getByRole("form", { name: "New task" });
  await form.getByLabel("Directory (git repository)").fill(fresh);
  await form.getByRole("textbox", { name: "Task", exact: true }).fill("Make greeting.txt say hi again");
  await form.getByLabel("Target").selectOption("local-b");
  await form.getByLabel("Attempts").fill("2");
  await form.getByRole("button", { name: "Start 2 attempts" }).click();
  await expect(page).toHaveURL(/#\/attempts\/a-/);
  const groupId = decodeURIComponent(page.url().split("#/attempts/")[1]!);
  const side = page.getByRole("region", { name: "Attempts side by side" });
  await expect(side.getByRole("article")).toHaveCount(2);
  const g = await engine.client.workers.attempts.query({ groupId });
  expect(g.attempts.map((x) => x.target)).toEqual(["local-b", "local-b"]);
  await expect.poll(async () => (await engine.client.workers.attempts.query({ groupId })).winner, { timeout: 170_000 }).not.toBeNull();
  await expect(side.getByText("winner")).toBeVisible();
  // A chip says a thing once: "weak evidence" is not shown twice on one card (the verdict's chips and the attempt's).
  for (const card of await side.getByRole("article").all()) expect(await card.getByText("weak evidence", { exact: true }).count()).toBeLessThanOrEqual(1);
  await shot(page, "06-from-new-task");
});
