// Playwright: the browser UI served by a real `ocw serve` (real engine + real opencode + the scripted model), in Debian
// Chromium; plus the Electron shell where a binary exists, and static checks of the shell's security settings.
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defineConfig } from "@playwright/test";

// Chromium and Playwright write caches and profiles under $HOME and /tmp unless told otherwise: keep them in the run.
// Outside the checkout: test repos made under TMPDIR must not sit inside this project's own git work tree.
// One folder per checkout (two checkouts' runs at once would sweep each other's engines at global setup).
const checkout = createHash("sha256").update(path.resolve(__dirname)).digest("hex").slice(0, 8);
// the benchmark after a model server starts or is captured is off in e2e (as in vitest.config.mts): 30 s per setup
process.env.OCW_SETUP_BENCH_SEC ??= "0";
const runDir = (process.env.OCW_E2E_RUN_DIR ??= path.join(os.tmpdir(), `ocw-e2e-${process.getuid?.() ?? "run"}-${checkout}`));
for (const d of ["xdg-cache", "xdg-config", "xdg-data", "tmp"]) mkdirSync(path.join(runDir, d), { recursive: true });
process.env.XDG_CACHE_HOME = path.join(runDir, "xdg-cache");
process.env.XDG_CONFIG_HOME = path.join(runDir, "xdg-config");
process.env.XDG_DATA_HOME = path.join(runDir, "xdg-data");
process.env.TMPDIR = path.join(runDir, "tmp");

export const CHROMIUM = process.env.OCW_CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "e2e",
  testIgnore: ["bench/**"],
  globalSetup: "./e2e/global-setup.ts",
  outputDir: "test-results/playwright",
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 180_000,
  expect: { timeout: 30_000 },
  forbidOnly: !!process.env.CI,
  reporter: [["list"], ["json", { outputFile: process.env.PLAYWRIGHT_JSON_OUTPUT_NAME ?? "test-results/playwright.json" }]],
  use: {
    headless: true,
    viewport: { width: 1360, height: 900 },
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
  },
  projects: [{ name: "chromium" }],
});
