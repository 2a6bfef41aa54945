// UI benchmark (not part of `npm test`; `npm run bench` runs it after the engine part and merges its result).
// 1. Start-up: `ocw serve` spawned with a fresh state dir → Chromium shows the dashboard with a live engine connection
//    (OCW_BENCH_REPS times).
// 2. The dashboard with 32 live streaming workers (OCW_BENCH_WORKERS): frames per second (goal ≥ 60) beside a blank
//    page's at the same moment (the machine's own limit), first contentful paint on a reload (goal ≤ 500 ms) and where
//    it went (document, scripts, first worker card),
//    long tasks, the live transcript of one worker (fps, characters streamed per second), and the JS heap at the start and the end of OCW_BENCH_SEC seconds on
//    the dashboard (default 20; `npm run bench` uses 600 for "heap after 10 minutes").
// Run alone: `npx playwright test -c playwright.bench.config.ts`. Result: OCW_BENCH_UI_OUT (default test-results/bench-ui.json).
// OCW_BENCH_PROFILE=1 also saves a CPU profile of the page over the dashboard stretch (test-results/bench-ui.cpuprofile,
// for Chromium's DevTools) and the self time per function, costliest first (bench-ui-profile.txt).
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test, type CDPSession, type Page } from "@playwright/test";
import { startScriptedModel, type ScriptedModel } from "../../test/fixtures/scripted-model";
import { cleanup, makeRepo, startEngine, type E2EEngine } from "../engine";

const WORKERS = Number(process.env.OCW_BENCH_WORKERS ?? 32);
const SECONDS = Number(process.env.OCW_BENCH_SEC ?? 20);
const REPS = Number(process.env.OCW_BENCH_REPS ?? 1);
const CHUNK_MS = 20;
const RESULTS = path.resolve(__dirname, "..", "..", "test-results");
const OUT = process.env.OCW_BENCH_UI_OUT ?? path.join(RESULTS, "bench-ui.json");
const SHOTS = path.join(RESULTS, "screenshots");

const result: Record<string, unknown> = {};
const save = () => {
  mkdirSync(path.dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify({ ...result, at: new Date().toISOString() }, null, 2));
};

const PROFILE = process.env.OCW_BENCH_PROFILE === "1";

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function of a CDP CPU profile, the costliest first (positions are in the built bundle: map them with its .map). */
function profileSummary(p: CpuProfile): string {
  const byNode = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const f = byNode.get(id)!;
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    total += dt;
    const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop() ?? ""}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  });
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40);
  return (
    [
      `${Math.round(total)} ms sampled`,
      ...rows.map(([k, ms]) => `${ms.toFixed(1).padStart(9)} ms  ${((ms / total) * 100).toFixed(1).padStart(5)} %  ${k}`),
    ].join("\n") + "\n"
  );
}

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

test("ocw serve → rendered dashboard", async ({ browser }) => {
  test.setTimeout(REPS * 60_000 + 30_000);
  const runs: number[] = [];
  // Where each start-up went (ms since spawn): the engine listening (URL printed), the page's document answered, the
  // first API call answered (health, then the picture), the event stream answered, the status showing live.
  const phases: Record<string, number>[] = [];
  const loadBefore = os.loadavg()[0]!;
  for (let i = 0; i < REPS; i++) {
    // A fresh browser context each time: no cached bundle, no cookie.
    const context = await browser.newContext();
    const page = await context.newPage();
    const t0 = performance.now();
    const at: Record<string, number> = {};
    const mark = (k: string) => (at[k] ??= Math.round(performance.now() - t0));
    page.on("response", (r) => {
      const u = new URL(r.url());
      if (u.pathname === "/") mark("documentMs");
      else if (u.pathname === "/trpc/health") mark("healthMs");
      else if (u.pathname.startsWith("/trpc/workers.list")) mark("pictureMs");
      else if (u.pathname === "/trpc/events") mark("eventsMs");
    });
    const engine = await startEngine();
    mark("urlPrintedMs");
    try {
      await page.goto(engine.url);
      await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
      runs.push(performance.now() - t0);
      mark("liveMs");
      phases.push(at);
    } finally {
      await context.close();
      await engine.kill();
      cleanup(engine.stateDir);
    }
  }
  result.dashboardStartupMs = {
    median: round(median(runs), 0),
    min: round(Math.min(...runs), 0),
    max: round(Math.max(...runs), 0),
    runs: runs.map((x) => round(x, 0)),
  };
  const keys = ["urlPrintedMs", "documentMs", "healthMs", "pictureMs", "eventsMs", "liveMs"];
  result.dashboardStartupPhases = {
    ...Object.fromEntries(keys.map((k) => [k, round(median(phases.map((p) => p[k]).filter((x): x is number => x !== undefined)), 0)])),
    load: [round(loadBefore, 2), round(os.loadavg()[0]!, 2)],
    cores: os.availableParallelism?.() ?? os.cpus().length,
  };
  save();
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

// Every document of the page records its long tasks from its first script on, and when its first worker card appeared
// (first paint can be the empty shell: this is when the person sees their workers).
const LONG_TASKS = `
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longTasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: "longtask", buffered: true });
  window.__firstCard = null;
  const mo = new MutationObserver(() => {
    if (document.querySelector(".worker-card")) { window.__firstCard = performance.now(); mo.disconnect(); }
  });
  document.addEventListener("DOMContentLoaded", () => mo.observe(document.body, { childList: true, subtree: true }));
`;

/**
 * Characters the live transcript has shown so far. The transcript is virtualised (rows scrolled away leave the page),
 * so its text in the page stops growing once it is longer than a screen: each row counts with the most it ever showed,
 * sampled every frame.
 */
const SHOWN_CHARS = `(() => {
  const seen = new Map();
  const sample = () => {
    for (const r of document.querySelectorAll('[aria-label=Transcript] .vrow')) {
      const k = r.dataset.index, n = r.textContent.length;
      if (!(seen.get(k) >= n)) seen.set(k, n);
    }
  };
  window.__shownChars = () => { sample(); let t = 0; for (const n of seen.values()) t += n; return t; };
  const loop = () => { sample(); requestAnimationFrame(loop); };
  requestAnimationFrame(loop);
})()`;

/** Used JS heap of the page's isolate after a forced collection, so the figure is what is retained, not garbage. */
async function heapMb(cdp: CDPSession): Promise<number> {
  await cdp.send("HeapProfiler.collectGarbage");
  const { usedSize } = await cdp.send("Runtime.getHeapUsage");
  return round(usedSize / 2 ** 20);
}

async function longTasksSince(page: Page, since: number) {
  const all = (await page.evaluate("window.__longTasks")) as { start: number; duration: number }[];
  const xs = all.filter((t) => t.start >= since).map((t) => t.duration);
  return { count: xs.length, totalMs: round(xs.reduce((a, b) => a + b, 0)), maxMs: round(Math.max(0, ...xs)) };
}

test.describe(`dashboard with ${WORKERS} streaming workers`, () => {
  let model: ScriptedModel;
  let engine: E2EEngine;
  let repo: string;

  test.beforeAll(async () => {
    // Text for longer than the measured stretch, so every worker still streams at its end.
    const words = Math.ceil(((SECONDS + 120) * 1000) / CHUNK_MS);
    const long = Array.from({ length: words }, (_, i) => (i % 12 === 11 ? "line\n" : `word${i % 97}`)).join(" ");
    model = await startScriptedModel({ chunkDelayMs: CHUNK_MS, fallback: () => ({ text: `${long}\nOUTCOME: honest-failure — benchmark` }) });
    engine = await startEngine();
    repo = makeRepo();
    await engine.client.targets.save.mutate({
      target: {
        id: "bench",
        model: "scripted-1",
        endpoint: model.url,
        keyRef: null,
        serving: { engine: "scripted", endpoints: [], slots: WORKERS },
        checks: [],
      },
      activate: true,
    });
  });

  test.afterAll(async () => {
    await engine?.kill();
    await model?.close();
    cleanup(engine?.stateDir ?? "", repo);
  });

  test("fps, first paint, long tasks, heap", async ({ page }) => {
    test.setTimeout((SECONDS + 300 + WORKERS * 6) * 1000);
    await page.addInitScript(LONG_TASKS);
    await page.goto(engine.url);
    await expect(page.getByRole("status", { name: "engine connection: live" })).toBeVisible();
    const tasks = Array.from({ length: WORKERS }, (_, i) => ({ task: `TASK-BENCH-${i}: stream`, directory: repo, title: `bench ${i}` }));
    await engine.client.workers.startBatch.mutate({ tasks });
    // Every worker streaming before anything is measured (on a loaded 2-core machine, 32 starts took over 180 s).
    await expect.poll(() => model.inFlight(), { timeout: 180_000 + WORKERS * 6_000 }).toBe(WORKERS);

    // Reload while all stream: time to first paint with every worker live.
    await page.reload();
    await expect(page.getByRole("region", { name: /^batch / })).toBeVisible();
    const fcp = (await page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime ?? null")) as number | null;
    await expect(page.locator(".worker-card").first()).toBeVisible();
    // Where the time to first paint went: the page and its scripts from the engine, then the first cards.
    const paint = (await page.evaluate(`(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      const js = performance.getEntriesByType("resource").filter((r) => r.initiatorType === "script" || r.name.endsWith(".js"));
      return {
        documentMs: nav ? nav.responseEnd : null,
        scriptsMs: js.length ? Math.max(...js.map((r) => r.responseEnd)) : null,
        scriptKb: js.reduce((a, r) => a + (r.encodedBodySize || 0), 0) / 1024,
        firstCardMs: window.__firstCard,
      };
    })()`)) as Record<string, number | null>;

    // Saved at once: a later step failing on an overloaded machine still leaves the first-paint figures.
    Object.assign(result, { workers: WORKERS, firstPaintMs: fcp === null ? null : round(fcp) });
    save();

    // The live transcript of one streaming worker: one whose text the engine is publishing now (with 64 workers on
    // 2 cores, one opencode session can be starved for minutes; the first worker listed was such a one).
    const seen = new Map<string, number>();
    const probe = engine.client.events.subscribe(
      { lastEventId: (await engine.client.health.query()).cursor },
      {
        onData: (t) => {
          const e = t.data as { type: string; workerId?: string; delta?: string };
          if (e.type === "delta" && e.workerId) seen.set(e.workerId, (seen.get(e.workerId) ?? 0) + (e.delta?.length ?? 0));
        },
      },
    );
    await expect.poll(() => seen.size, { timeout: 120_000 }).toBeGreaterThan(0);
    await page.waitForTimeout(2000);
    probe.unsubscribe();
    const first = { id: [...seen.entries()].sort((a, b) => b[1] - a[1])[0]![0] };
    await page.goto(`${engine.origin}/#/workers/${first.id}`);
    // Streamed text must reach the page before its frames say anything about streaming.
    await expect(page.locator(".vrow").first()).toBeVisible({ timeout: 120_000 });
    await page.evaluate(SHOWN_CHARS);
    const chars = () => page.evaluate("window.__shownChars()") as Promise<number>;
    // The same worker's text as the engine publishes it over the same stretch: when the page shows little, this tells
    // whether the page lagged or the worker itself wrote little then (one starved opencode among 32 on 2 cores).
    const engineChars = new Map<string, number>();
    const sub = engine.client.events.subscribe(
      { lastEventId: (await engine.client.health.query()).cursor },
      {
        onData: (t) => {
          const e = t.data as { type: string; workerId?: string; delta?: string };
          if (e.type === "delta" && e.workerId) engineChars.set(e.workerId, (engineChars.get(e.workerId) ?? 0) + (e.delta?.length ?? 0));
        },
      },
    );
    const chars0 = await chars();
    const d0 = Date.now();
    const detail = (await page.evaluate(fpsOver(Math.min(5_000, SECONDS * 200)))) as { fps: number; worstFrameMs: number };
    const transcriptCharsPerSec = round(((await chars()) - chars0) / ((Date.now() - d0) / 1000));
    const engineCharsPerSec = round((engineChars.get(first.id) ?? 0) / ((Date.now() - d0) / 1000));
    sub.unsubscribe();
    // Workers whose chat request is open at the model but whose text reached the engine not at all in that stretch.
    const silentWorkers = WORKERS - engineChars.size;
    const rows = (await page.evaluate("document.querySelectorAll('.vrow').length")) as number;
    await page.screenshot({ path: path.join(SHOTS, "bench-worker-detail.png") });
    // The same transcript with markdown rendering off (plain text), to see what markdown costs while it streams.
    await page.evaluate("localStorage.setItem('ocw.markdown', 'off')");
    await page.reload();
    await expect(page.locator(".vrow").first()).toBeVisible({ timeout: 120_000 });
    const detailPlain = (await page.evaluate(fpsOver(Math.min(5_000, SECONDS * 200)))) as { fps: number; worstFrameMs: number };
    await page.evaluate("localStorage.removeItem('ocw.markdown')");

    // The dashboard for SECONDS: frames, long tasks and the heap at both ends of the same document.
    await page.goto(`${engine.origin}/#/`);
    await expect(page.getByRole("region", { name: /^batch / })).toBeVisible();
    const cdp = await page.context().newCDPSession(page);
    const heapStartMb = await heapMb(cdp);
    const since = (await page.evaluate("performance.now()")) as number;
    const t0 = Date.now();
    if (PROFILE) {
      await cdp.send("Profiler.enable");
      await cdp.send("Profiler.setSamplingInterval", { interval: 500 });
      await cdp.send("Profiler.start");
    }
    const dash = (await page.evaluate(fpsOver(Math.min(10_000, SECONDS * 400)))) as { fps: number; worstFrameMs: number };
    if (PROFILE) {
      const { profile } = await cdp.send("Profiler.stop");
      mkdirSync(RESULTS, { recursive: true });
      writeFileSync(path.join(RESULTS, "bench-ui.cpuprofile"), JSON.stringify(profile));
      writeFileSync(path.join(RESULTS, "bench-ui-profile.txt"), profileSummary(profile as CpuProfile));
    }
    await page.screenshot({ path: path.join(SHOTS, "bench-dashboard.png") });
    // The control: a blank page in the same browser, same moment, same load. What it cannot reach is the machine's
    // doing (2 busy cores, 32 opencode servers), not the dashboard's.
    const blankPage = await (await page.context().browser()!.newContext()).newPage();
    await blankPage.setContent("<!doctype html><title>blank</title>");
    const blank = (await blankPage.evaluate(fpsOver(Math.min(5_000, SECONDS * 200)))) as { fps: number; worstFrameMs: number };
    await blankPage.context().close();
    await page.waitForTimeout(Math.max(0, SECONDS * 1000 - (Date.now() - t0)));
    const longTasks = { ...(await longTasksSince(page, since)), windowSec: round((Date.now() - t0) / 1000) };
    const heapEndMb = await heapMb(cdp);
    const streaming = model.inFlight();

    Object.assign(result, {
      workers: WORKERS,
      streamSec: round((Date.now() - t0) / 1000),
      // The dashboard's fps: fpsW16 is the key bench/report.ts reads (named when 16 was the count; `workers` says how
      // many streamed), fpsW<N> names the count measured.
      fpsW16: round(dash.fps),
      [`fpsW${WORKERS}`]: round(dash.fps),
      worstFrameMs: round(dash.worstFrameMs),
      blankPageFps: round(blank.fps),
      workerDetailFps: round(detail.fps),
      // workerDetailFps is with markdown rendering on (the default); this one with it off.
      workerDetailFpsPlain: round(detailPlain.fps),
      workerDetailWorstFrameMs: round(detail.worstFrameMs),
      workerDetailPlainWorstFrameMs: round(detailPlain.worstFrameMs),
      transcriptCharsPerSec,
      engineCharsPerSec,
      silentWorkers,
      renderedRows: rows,
      firstPaintMs: fcp === null ? null : round(fcp),
      firstPaint: Object.fromEntries(Object.entries(paint).map(([k, v]) => [k, v === null ? null : round(v)])),
      longTasks,
      heapStartMb,
      heapEndMb,
      streamingAtEnd: streaming,
    });
    save();
    console.log("bench-ui", JSON.stringify(result));
    // A check of the measurement, not of the goal (fps ≥ 60): the report says whether the goal was met.
    expect(streaming, "every worker still streams at the end of the measured stretch").toBe(WORKERS);
  });
});
