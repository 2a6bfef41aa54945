import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["shared/**/*.test.ts", "engine/**/*.test.ts"],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          // Real opencode servers are heavy (≈400–800 MB each); two files at a time fit on 2 cores / 24 GiB.
          maxWorkers: 2,
          fileParallelism: true,
        },
      },
    ],
  },
});
