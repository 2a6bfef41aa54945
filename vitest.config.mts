import { defineConfig } from "vitest/config";

/** Unit files that need git, bubblewrap or a real opencode (the rest of `unit`, less STARTS_PROCESSES, is the `pure` tier: `npm run test:pure`). */
const NEEDS_TOOLS = [
  "engine/sandbox/sandbox.test.ts",
  "engine/sandbox/cgroup.test.ts",
  "engine/workspace/workspace.test.ts",
  "engine/workspace/workspace-attack.test.ts",
  "engine/workspace/snapshot.test.ts",
  "engine/workspace/snapshot-attack.test.ts",
  "engine/workspace/snapshot-fuzz.test.ts",
  "engine/workspace/kept-index.test.ts",
  "engine/workspace/kept-index-attack.test.ts",
  "engine/workspace/kept-stats-attack.test.ts",
  "engine/workspace/land.test.ts",
  "engine/grading/checks.test.ts",
  "engine/grading/grade.test.ts",
  // every cheating-worker pass (gaming.test.ts, gaming-attack-N.test.ts): real git, python3, bash and node runners
  "engine/grading/gaming*.test.ts",
  "engine/grading/build-files.test.ts",
  // real GNU make (where installed) and git
  "engine/grading/make-include-path.test.ts",
  "engine/workspace/name-collision.test.ts",
  "engine/workspace/land-attack-2.test.ts",
  "engine/workers/engine.test.ts",
  "engine/workers/attempts.test.ts",
  "engine/workers/batches.test.ts",
  "engine/workers/push.test.ts",
  "engine/workers/publish.test.ts",
  "engine/workers/publish-attack.test.ts",
  "engine/workspace/mirror.test.ts",
  "engine/harness/opencode-config-seed.test.ts",
  "engine/process/run.test.ts",
];

/**
 * Unit files that start child processes (node, a stand-in binary, a stub server in a process of its own, esbuild): in
 * the `unit` tier only. The `pure` tier runs in-process code alone, so it stays fast on 2 cores (each process start is
 * ~100 ms of CPU here).
 */
const STARTS_PROCESSES = [
  "engine/process/supervisor.test.ts",
  "engine/harness/opencode-server.test.ts",
  "engine/process/process.test.ts",
  "scripts/layers.test.ts",
  "engine/commands/layers-clients.test.ts",
  "engine/serving/records.test.ts",
  "engine/api/lock.test.ts",
  "engine/serving/serving-identity.test.ts",
  "engine/serving/get-llama.test.ts",
  "engine/serving/k8s.test.ts",
  "engine/models/mtp.test.ts",
  "bench/model.test.ts",
  // Found by logging child_process in the pure tier (12-06): git, bash, node, mkfifo/truncate, stand-in binaries, probes.
  "engine/workers/open.test.ts",
  "engine/grading/ladder.test.ts",
  "engine/serving/llama-build.test.ts",
  "engine/serving/servers-api.test.ts",
  "engine/sandbox/plugin-paths.test.ts",
  "engine/hardware/parse.test.ts",
  "engine/commands/model-setup.test.ts",
  "electron/open-worker.test.ts",
  // Found by test/pure-setup.ts (12-06): a plan that probes for an installed vLLM (spawnSync).
  "engine/serving/fit-service.test.ts",
];

/** Unit files that hold the machine for seconds by design (an attacker's floods of connections): in the `unit` tier only. */
const FLOODS = ["engine/net/egress-attack-2.test.ts"];

/**
 * The benchmark after a model server starts or is captured (OCW_SETUP_BENCH_SEC, 30 s by default) is off in tests: a test of
 * another feature would wait for it, and a scripted model would answer its requests. Its own tests turn it on.
 */
const env = { OCW_SETUP_BENCH_SEC: "0" };

/** The unit files (the `pure` tier is these less NEEDS_TOOLS, STARTS_PROCESSES and FLOODS). */
const UNIT_FILES = [
  "shared/**/*.test.ts",
  "engine/**/*.test.ts",
  "renderer/src/**/*.test.ts",
  "bench/**/*.test.ts",
  "electron/**/*.test.ts",
  "scripts/**/*.test.ts",
];
// bench/tmp holds the bench's scratch (a bundle of an earlier commit's source, for before/after runs).
const UNIT_EXCLUDE = ["**/node_modules/**", "bench/tmp/**"];

export default defineConfig({
  test: {
    // Transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache, keyed by each file's content
    // and the config; `npm ci` starts it over): the pure tier ran ~10.5 s cold, ~8.5 s warm on 2 cores (12-06). No
    // plugin or import here reads a file other than the module itself, the case the cache cannot see (vitest's docs).
    experimental: { fsModuleCache: true },
    projects: [
      {
        test: {
          name: "unit",
          env,
          include: UNIT_FILES,
          exclude: UNIT_EXCLUDE,
          testTimeout: 20_000,
          // A file's setup and clean-up (repositories made, a temp tree removed) under a loaded machine: vitest's 10 s
          // failed snapshot.test.ts's afterAll rmSync once at load ~8 (the whole file counted failed, every test passed).
          hookTimeout: 60_000,
        },
      },
      {
        // The same files as `unit` minus the ones above: no git, bubblewrap, opencode or child process; meant to run in seconds.
        test: {
          name: "pure",
          env,
          // a file here that starts a process fails, saying where it belongs (test/pure-setup.ts)
          setupFiles: ["test/pure-setup.ts"],
          // No process of its own per file: the pure files share one module graph (their imports are most of the time).
          isolate: false,
          // Its slow files mostly wait (timers, sockets): more of them at once than there are cores, but each worker
          // loads the module graph again (~0.7 s of CPU here): 4 ran the tier in 8.5–9 s on 2 cores (12-07), 6 in 10–10.4 s.
          maxWorkers: 4,
          sequence: { groupOrder: 2 },
          include: [...UNIT_FILES, "test/pure-setup.test.ts"],
          exclude: [...UNIT_EXCLUDE, ...NEEDS_TOOLS, ...STARTS_PROCESSES, ...FLOODS],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: "integration",
          env,
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/global-setup.ts"],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          // Real opencode servers are heavy (≈400–800 MB each); two files at a time fit on 2 cores / 24 GiB.
          maxWorkers: 2,
          fileParallelism: true,
          // Its own group: vitest runs projects with a different maxWorkers in separate groups (one command may name
          // files of several projects).
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
