// `ocw run` and the GUI on one engine: an ask of `ocw run --approve ask` answered in the browser leaves the terminal
// prompt at once; `--batch` announces every ask; `ocw run` prints only its own workers; nothing claims an ask "stays
// pending" once it was answered. Real engine, real opencode, real git, the real CLI bundle; the scripted model stands in.
import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect, test, type Page } from "@playwright/test";
import { writeFile } from "../test/fixtures/scripted-model";
import { BUNDLE, cleanup, tempDir, type E2EEngine } from "./engine";
import { scriptedEngine, shots, type ScriptedEngine } from "./scripted-setup";

const shot = shots("cli-", { fullPage: false });

let setup: ScriptedEngine;
let engine: E2EEngine;
let page: Page;
let repo: string;
let work: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedEngine({
    model: {
      chunkDelayMs: 2,
      scripts: [
        {
          name: "cli",
          match: /TASK-CLI-(\w+)/,
          script: (ctx) => (ctx.turnStep === 0 ? writeFile(`${/TASK-CLI-(\w+)/.exec(ctx.firstUserText)![1]}.txt`, "x\n") : { text: "Done.\nOUTCOME: built" }),
        },
        { name: "other", match: /TASK-OTHER/, script: (ctx) => (ctx.turnStep === 0 ? writeFile("other.txt", "o\n") : { text: "Done.\nOUTCOME: built" }) },
      ],
    },
    target: { engine: "capture", slots: 4 },
    repos: [{ "README.md": "# cli repo\n" }],
  });
  ({ engine, repo } = setup);
  work = tempDir("cli-work");
  page = await (await browser.newContext()).newPage();
});

test.afterAll(async () => {
  await page?.context().close();
  await setup?.close();
  cleanup(work ?? "");
});

/** `ocw run` on the test engine, stdin kept open (a terminal where nobody types). */
function ocwRun(args: string[]): { proc: ChildProcess; err: () => string; done: Promise<number | null> } {
  const proc = spawn(process.execPath, [BUNDLE, "run", ...args], { env: { ...process.env, OCW_STATE_DIR: engine.stateDir }, stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (b) => (err += b.toString()));
  const done = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  return { proc, err: () => err, done };
}

test("an ask of `ocw run --approve ask` answered in the GUI leaves the terminal prompt at once; only its own worker is printed", async () => {
  const run = ocwRun(["--dir", repo, "--task", "TASK-CLI-one: write one.txt", "--check", "test -f one.txt", "--approve", "ask"]);
  await expect.poll(run.err, { timeout: 60_000 }).toContain("allow? [y]es once");
  // Another client's worker runs meanwhile: its events are not this run's business.
  const other = (await engine.client.workers.start.mutate({ task: "TASK-OTHER: write other.txt", directory: repo, checks: [] })).workerId;
  await expect.poll(async () => (await engine.client.approvals.list.query()).some((a) => a.workerId === other), { timeout: 60_000 }).toBe(true);
  const otherAsk = (await engine.client.approvals.list.query()).find((a) => a.workerId === other)!;
  await engine.client.approvals.decide.mutate({ askId: otherAsk.id, decision: "once" });

  await page.goto(engine.url);
  await page.getByRole("link", { name: /^Approvals/ }).click();
  const item = page.getByRole("list", { name: "Pending approvals" }).getByRole("listitem");
  await expect(item).toHaveCount(1);
  await shot(page, "01-gui-answers-cli-ask");
  await item.getByRole("button", { name: "Approve once" }).click();
  // No key was pressed in the terminal: the prompt is left as soon as the engine reports the decision.
  await expect.poll(run.err, { timeout: 10_000 }).toMatch(/ask was answered elsewhere \(by person[^\n]*\): once; no answer needed here/);
  expect(await run.done).toBe(0);
  const err = run.err();
  expect(err).not.toContain("stays pending");
  expect(err).not.toContain(other);
  expect(err).toMatch(/verdict built/);
});

test("`ocw run --batch` prints every ask as it arrives, and ends without a false “stays pending”", async () => {
  const file = path.join(work, "batch.json");
  writeFileSync(file, JSON.stringify(["two", "three"].map((k) => ({ task: `TASK-CLI-${k}: write ${k}.txt`, dir: repo, checks: [{ file: `${k}.txt` }] }))));
  const run = ocwRun(["--batch", file, "--approve", "ask"]);
  // Both asks are on the terminal before anyone answers either.
  await expect.poll(() => (run.err().match(/asks edit: /g) ?? []).length, { timeout: 90_000 }).toBe(2);
  expect(run.err()).toContain("two.txt");
  expect(run.err()).toContain("three.txt");
  // One answered at the terminal, the other in the GUI (here: through the API, as the GUI does).
  run.proc.stdin!.write("y\n");
  await expect.poll(async () => (await engine.client.approvals.list.query()).length, { timeout: 30_000 }).toBe(1);
  const [left] = await engine.client.approvals.list.query();
  await engine.client.approvals.decide.mutate({ askId: left!.id, decision: "once" });
  expect(await run.done).toBe(0);
  expect(run.err()).not.toContain("stays pending");
});
