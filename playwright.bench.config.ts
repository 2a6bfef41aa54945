// UI benchmarks (e2e/bench/*.bench.ts): same browser setup as playwright.config.ts, not part of `npm test`.
import { defineConfig } from "@playwright/test";
import base from "./playwright.config";

export default defineConfig({
  ...base,
  testDir: "e2e/bench",
  testMatch: /.*\.bench\.ts$/,
  testIgnore: [],
  outputDir: "test-results/playwright-bench",
  reporter: [["list"], ["json", { outputFile: "test-results/playwright-bench.json" }]],
});
