// Model text as sanitized markdown against a real engine, real opencode and the scripted model: emphasis, lists and
// fenced code render (the code highlighted by shiki, loaded on first use), raw HTML and javascript: links written by
// the model do not become elements, a half-streamed answer already renders while the worker runs, and a long tool
// output is cut to its first lines with "Show all". At 1440×900 and 900×700.
import { expect, test, type Page } from "@playwright/test";
import { bash } from "../test/fixtures/scripted-model";
import { approvingPoll, type E2EEngine } from "./engine";
import { scriptedUi, shots, type ScriptedUi } from "./scripted-setup";

const shot = shots("markdown-", { fullPage: false });

const ANSWER = [
  "## What I did",
  "",
  "I added a **verbose** flag and kept `--quiet`:",
  "",
  "Hidden: a\u202Ebidi\u202C override and a zero\u200Bwidth space.",
  "",
  "- parses `--verbose`",
  "- prints one line per step",
  "",
  "```ts",
  "export function verbose(args: string[]): boolean {",
  '  return args.includes("--verbose");',
  "}",
  "```",
  "",
  "<script>window.__pwned = 1</script>",
  "",
  'Inline <img src="http://127.0.0.1:1/beacon.png" onerror="window.__pwned = 2"> html and ![a beacon](http://127.0.0.1:1/b.png) and [click me](javascript:window.__pwned=3).',
  "",
  "OUTCOME: built",
].join("\n");

let setup: ScriptedUi;
let engine: E2EEngine;
let page: Page;
let repo: string;

test.describe.configure({ mode: "serial" });

test.beforeAll(async ({ browser }) => {
  setup = await scriptedUi(browser, {
    model: {
      chunkDelayMs: 1,
      scripts: [
        { name: "md", match: /TASK-MD-DONE/, script: (c) => (c.turnStep === 0 ? bash("seq 1 300") : { text: ANSWER }) },
        { name: "stream", match: /TASK-MD-STREAM/, script: () => ({ hang: true, textBeforeHang: "Working: **half way** there.\n\n```bash\nnpm test" }) },
      ],
    },
    target: { engine: "capture", slots: 2 },
    repos: [{ "README.md": "# markdown repo\n" }],
    viewport: { width: 1440, height: 900 },
  });
  ({ engine, page, repo } = setup);
});

test.afterAll(() => setup?.close());

test("model text renders as sanitized markdown with highlighted code; a long tool output is cut with Show all", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-MD-DONE: add a verbose flag",
    title: "Markdown answer",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await approvingPoll(engine, workerId, (w) => w.verdict !== null).toBe(true);
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const md = page.locator(".part.text .md").filter({ hasText: "What I did" });
  await expect(md.getByRole("heading", { name: "What I did" })).toBeVisible();
  await expect(md.locator("strong")).toHaveText("verbose");
  await expect(md.locator("li")).toHaveCount(2);
  // Bidi and zero-width characters the model wrote are shown, not obeyed (shared/untrusted.ts).
  await expect(md).toContainText("a⟪U+202E⟫bidi⟪U+202C⟫ override and a zero⟪U+200B⟫width space");
  await expect(md.locator("code.inline-code").first()).toHaveText("--quiet");
  // The fenced block, highlighted: tokens with their own colours.
  const code = md.locator("pre.code-block");
  await expect(code).toHaveAttribute("data-lang", "typescript");
  await expect(code).toHaveClass(/shiki/);
  expect(await code.locator("span[style]").count()).toBeGreaterThan(5);
  await expect(code).toContainText('return args.includes("--verbose");');
  // What the model wrote as HTML stays inert: no script, no image, no javascript: link.
  expect(await md.locator("script, img, iframe, [onerror]").count()).toBe(0);
  const link = md.getByText("click me");
  await expect(link).toBeVisible();
  expect((await link.getAttribute("href")) ?? "").not.toMatch(/^javascript:/i);
  expect(await page.evaluate("globalThis.__pwned ?? null")).toBeNull();
  await shot(page, "1440-answer");

  // The tool's 300 lines: the first 40, then Show all.
  const tool = page.locator("details.part.tool").filter({ hasText: "seq 1 300" });
  await tool.locator("summary").click();
  const out = tool.locator(".tool-io pre").nth(1);
  await expect(out).toContainText("40");
  await expect(out).not.toContainText("300");
  const all = tool.getByRole("button", { name: /^Show all \(30\d lines/ });
  await expect(all).toBeVisible();
  await shot(page, "1440-tool-cut");
  await all.click();
  await expect(out).toContainText("300");
  await page.setViewportSize({ width: 900, height: 700 });
  await md.getByRole("heading", { name: "What I did" }).scrollIntoViewIfNeeded();
  await shot(page, "900-answer");
  await page.setViewportSize({ width: 1440, height: 900 });
});

test("a half-streamed answer renders as markdown while the worker runs", async () => {
  const { workerId } = await engine.client.workers.start.mutate({
    task: "TASK-MD-STREAM: a long job",
    title: "Streaming",
    directory: repo,
    checks: [{ run: "true" }],
  });
  await page.goto(`${engine.origin}/#/workers/${workerId}`);
  const md = page.locator(".part.text .md").filter({ hasText: "half way" });
  await expect(md.locator("strong")).toHaveText("half way", { timeout: 90_000 });
  // The fence is still open: shown as a code block already.
  await expect(md.locator("pre.code-block")).toContainText("npm test");
  expect((await engine.client.workers.get.query({ workerId })).state).toBe("running");
  await shot(page, "1440-streaming");
  await engine.client.workers.stop.mutate({ workerId });
});
