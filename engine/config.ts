import { z } from "zod";

/**
 * Every OCW_* environment variable the engine and its commands read, in one place: its meaning, its type and its
 * default. Read at call time (tests and the supervisor set them per process); a malformed value falls back to the
 * default rather than crashing a command. `ocw doctor` and docs list them from here.
 */
const num = (def: number) => z.coerce.number().finite().catch(def).default(def);
const str = () => z.string().min(1).optional().catch(undefined);
/** A value kept as written, an empty one included (where "" means "none"). */
const raw = () => z.string().optional().catch(undefined);
const flag = () =>
  z
    .enum(["1", "0", "true", "false"])
    .optional()
    .catch(undefined)
    .transform((v) => v === "1" || v === "true");

export const ConfigSchema = z.object({
  // where things are
  OCW_STATE_DIR: str().describe("the state dir (lock, logs, workspaces, targets); default: the platform's per-user data dir"),
  OCW_ROOT: str().describe("the install root (protocol/, packs/); default: found from the bundle's location"),
  OCW_PACKS_DIR: str().describe("where target packs and ladder grades live; default: <root>/packs"),
  OCW_BUNDLE: str().describe("the ocw bundle a client starts the engine with; default: the running script"),
  OCW_OPENCODE_BIN: str().describe("the opencode binary; default: the pinned opencode-ai package's"),
  OCW_OPENCODE_NPM_REGISTRY: str().describe("npm registry opencode may use for plugins; default: nowhere (offline)"),
  OCW_BWRAP: str().describe("the bubblewrap binary; default: bwrap on PATH"),
  // behaviour
  OCW_NO_SANDBOX: flag().describe("1: run workers without the OS sandbox (the person's explicit opt-out)"),
  OCW_SANDBOX_READONLY: str().describe(
    'extra folders (":"-separated, absolute) bound read-only into worker commands and checks, besides the toolchain allow-list',
  ),
  OCW_GIT_READ_SEC: num(600).describe(
    "wall-clock seconds the engine's git may take over a worker's files at grading (a FIFO named .gitignore makes git wait for good): past them the grading fails and says why",
  ),
  OCW_COMMAND_TIMEOUT_SEC: num(600).describe("wall-clock seconds one worker command may run, whatever timeout the model asked for"),
  OCW_COMMAND_MAX_PROCS: num(1024).describe(
    "processes (tasks) a worker command or check may have: its cgroup's pids.max where cgroups bind, and RLIMIT_NPROC (which the kernel does not apply to root)",
  ),
  OCW_COMMAND_MAX_MEM_MB: num(8192).describe(
    "memory of a worker command or check, MiB: its cgroup's memory limit (all its processes and in-memory files, no swap) where cgroups bind, and RLIMIT_DATA per process",
  ),
  OCW_COMMAND_CPU_SEC: num(1800).describe("CPU seconds per process of a worker command or check (RLIMIT_CPU)"),
  OCW_COMMAND_MAX_FILE_MB: num(4096).describe("largest file a worker command or check may write, MiB (RLIMIT_FSIZE)"),
  OCW_COMMAND_OUTPUT_MB: num(8).describe("output kept of one worker command or check, MiB; the rest is dropped"),
  OCW_SNAPSHOT_MAX_FILES: num(20000).describe("new files a worker's snapshot may add (untracked, not ignored); past it nothing is graded"),
  OCW_SNAPSHOT_MAX_MB: num(1024).describe("bytes a worker's snapshot may add in all, MiB; past it nothing is graded"),
  OCW_SNAPSHOT_FILE_MAX_MB: num(100).describe("largest file a worker's snapshot may hold, MiB; past it nothing is graded"),
  OCW_SNAPSHOT_GIT: flag().describe(
    "1: the engine's commit of a worker's files always made by git itself (add, write-tree, commit-tree), never inside the engine",
  ),
  OCW_SANDBOX_TMPFS_MB: num(256).describe("size of each in-memory folder of a sandbox ($HOME, /tmp, /run, /dev/shm …), MiB"),
  OCW_LIMITS: str().describe(
    "prlimit: keep the per-process limits only; default: a cgroup per worker command and check where cgroups are writable (v2 delegated, else v1 pids+memory), a systemd-run scope per check where a user systemd runs",
  ),
  OCW_WORKER_WALL_SEC: num(14400).describe("wall-clock seconds a worker may run when its task names no budget (0: no limit)"),
  OCW_STALL_SEC: num(300).describe("seconds without an event before a running worker is flagged stalled"),
  OCW_RETENTION_DAYS: num(14).describe("finished workers older than this lose their workspaces (built-but-unmerged never); 0 keeps all"),
  OCW_POOL_PROBE_MS: num(2000).describe("how often the endpoints of pool targets with work are read (health, live load)"),
  OCW_MODEL_PROBE_MS: num(5000).describe("how often the engine checks that the active target's model server answers"),
  OCW_HANDOVER_SEC: num(30).describe("seconds a worker waits for a person before its model slot goes to the next queued worker"),
  OCW_DEBUG: flag().describe("1: print stacks of unexpected CLI errors"),
  // model setup
  OCW_RAM_BYTES: str().describe("host memory ocw plans with, in bytes (a container's limit, a shared machine); default: what the OS reports"),
  OCW_RAM_BANDWIDTH_GBPS: str().describe("host memory bandwidth in GB/s for speed estimates; default: an assumed 60"),
  OCW_HF_ENDPOINT: str().describe("the Hugging Face Hub endpoint (a mirror, tests); default: https://huggingface.co"),
  OCW_LLAMA_TAG: str().describe("the llama.cpp release tag to install; default: the pinned one (its assets need sha256 digests)"),
  OCW_LLAMA_RELEASES_URL: raw().describe("a release listing (JSON) to install llama.cpp from (a mirror, tests)"),
  OCW_LLAMA_CACHE: raw().describe("where llama-server builds and downloads are cached; default: ~/.cache/opencode-worker/llama"),
  OCW_LLAMA_BUILD_SCRIPT: str().describe("the llama-server build script; default: scripts/build-llama-server.sh of this install"),
  OCW_NVCC: raw().describe('the nvcc a CUDA source build uses; "" = none; default: PATH, CUDA_HOME, /usr/local/cuda'),
  OCW_VLLM_BIN: str().describe("the vllm binary; default: vllm on PATH"),
  OCW_PYTHON: str().describe("the Python that runs SGLang/vLLM modules; default: python3 on PATH"),
  OCW_CONTAINER_ENGINE: str().describe("podman or docker for runtime images; default: whichever is on PATH"),
  OCW_VLLM_IMAGE: str().describe("the vLLM image; default: the pinned one (newest family minimum in the catalog)"),
  OCW_SGLANG_IMAGE: str().describe("the SGLang image; default: the pinned one"),
  OCW_KEYCHAIN: str().describe("off: API keys set from the GUI go to a 0600 file under the state dir, never the OS keychain"),
  OCW_SUPERVISE: str().describe("0: model servers the engine starts run unsupervised (detached)"),
  OCW_SUPERVISOR_CMD: str().describe("how to run `ocw serving supervise`, as a JSON array (tests); default: this CLI"),
  OCW_SETUP_BENCH_SEC: num(30).describe("seconds the benchmark after a model server starts (or is captured) may take; 0 skips it"),
});
type Config = z.infer<typeof ConfigSchema>;

const KEYS = Object.keys(ConfigSchema.shape);
/** The last environment parsed: its OCW_* values (what the schema reads) and the config they gave. */
let last: { key: string; config: Config } | null = null;

/**
 * The config of `env` (read at call time). The schema is parsed again only when one of its variables changed since the
 * last call (hot paths, each API request and grading among them, call this; a parse of the whole schema costs ~0.5 ms).
 */
export function config(env: NodeJS.ProcessEnv = process.env): Config {
  let key = "";
  for (const k of KEYS) {
    const v = env[k];
    key += v === undefined ? "-" : `+${v.length}:${v}`;
  }
  if (last?.key !== key) last = { key, config: ConfigSchema.parse(env) };
  return { ...last.config };
}
