// UI benchmark (not part of `npm test`): the dashboard with 16 live streaming workers in Chromium.
// Measures frames per second while they stream (goal ≥ 50), first contentful paint, the longest frame, and the page's
// JS heap at the start and the end. Run: `npx playwright test -c playwright.bench.config.ts`
// (OCW_BENCH_SEC sets how long the workers stream, default 20; the 30-minute memory run is OCW_BENCH_SEC=1800).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { expect, test } from "@playwright/test";
import { startScriptedModel, type ScriptedModel } from "../../test/fixtures/scripted-model";
import { cleanup, makeRepo, startEngine, type E2EEngine } from "../engine";

const WORKERS = Number(process.env.OCW_BENCH_WORKERS ?? 16);
const SECONDS = Number(process.env.OCW_BENCH_SEC ?? 20);
const CHUNK_MS = 20;
const OUT = path.resolve(__dirname, "..", "..", "test-results", "bench-ui.json");

let model: ScriptedModel;
let engine: E2EEngine;
let repo: string;

test.beforeAll(async () => {
  const words = Math.ceil((SECONDS * 1000) / CHUNK_MS);
  const long = Array.from({ length: words }, (_, i) => (i % 12 === 11 ? "line\n" : `word${i % 97}`)).join(" ");
  model = await startScriptedModel({ chunkDelayMs: CHUNK_MS, fallback: () => ({ text: `${long}\nOUTCOME: honest-failure — benchmark` }) });
  engine = await startEngine();
  repo = makeRepo();
  await engine.client.targets.save.mutate({
    target: { id: "bench", model: "scripted-1", endpoint: model.url, keyRef: null, serving: { engine: "scripted", endpoints: [], slots: WORKERS }, checks: [] },
    activate: true,
  });
});

test.afterAll(async () => {
  await engine?.kill();
  await model?.close();
  cleanup(engine?.stateDir ?? "", repo);
});

const fpsOver = (ms: number) => `new Promise((resolve) => {
  let frames = 0, worst = 0, last = performance.now();
  const t0 = last;
  const tick = (now) => {
    frames++; worst = Math.max(worst, now - last); last = now;
    if (now - t0 < ${ms}) requestAnimationFrame(tick);
    else resolve({ fps: frames / ((now - t0) / 1000), worstFrameMs: worst });
  };
  requestAnimationFrame(tick);
})`;
const heap = "(performance.memory ? performance.memory.usedJSHeapSize : null)";

test(`dashboard with ${WORKERS} streaming workers`, async ({ page }) => {
  test.setTimeout((SECONDS + 240) * 1000);
  await page.goto(engine.url);
  await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
  const tasks = Array.from({ length: WORKERS }, (_, i) => ({ task: `TASK-BENCH-${i}: stream`, directory: repo, title: `bench ${i}` }));
  await engine.client.workers.startBatch.mutate({ tasks });
  // Wait until every worker streams.
  await expect.poll(() => model.inFlight(), { timeout: 180_000 }).toBe(WORKERS);
  const heapStart = (await page.evaluate(heap)) as number | null;
  const dash = (await page.evaluate(fpsOver(Math.min(10_000, SECONDS * 400)))) as { fps: number; worstFrameMs: number };

  // Reload while streaming: time to first paint with 16 live workers.
  await page.screenshot({ path: path.resolve(__dirname, "..", "..", "test-results", "screenshots", "bench-dashboard.png") });
  await page.reload();
  await expect(page.getByRole("region", { name: /^batch / })).toBeVisible();
  const fcp = (await page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime ?? null")) as number | null;

  // A live transcript of one streaming worker.
  const first = (await engine.client.workers.list.query())[0]!;
  await page.goto(`${engine.origin}/#/workers/${first.id}`);
  const detail = (await page.evaluate(fpsOver(Math.min(5_000, SECONDS * 200)))) as { fps: number; worstFrameMs: number };
  const rows = (await page.evaluate("document.querySelectorAll('.vrow').length")) as number;
  await page.screenshot({ path: path.resolve(__dirname, "..", "..", "test-results", "screenshots", "bench-worker-detail.png") });

  const remaining = SECONDS * 1000 - 0;
  await page.goto(`${engine.origin}/#/`);
  await page.waitForTimeout(Math.max(0, Math.min(remaining, SECONDS * 1000) - 20_000));
  const heapEnd = (await page.evaluate(heap)) as number | null;

  const result = { workers: WORKERS, streamSec: SECONDS, dashboard: dash, workerDetail: { ...detail, renderedRows: rows }, firstContentfulPaintMs: fcp, heapStart, heapEnd, at: new Date().toISOString() };
  writeFileSync(OUT, JSON.stringify(result, null, 2));
  test.info().annotations.push({ type: "bench", description: JSON.stringify(result) });
  console.log("bench-ui", JSON.stringify(result));
  expect(dash.fps).toBeGreaterThanOrEqual(50);
});
