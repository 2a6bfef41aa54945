import { z } from "zod";

/**
 * Every OCW_* environment variable the engine and its commands read, in one place: its meaning, its type and its
 * default. Read at call time (tests and the supervisor set them per process); a malformed value falls back to the
 * default rather than crashing a command. `ocw doctor` and docs list them from here.
 */
const num = (def: number) => z.coerce.number().finite().catch(def).default(def);
const str = () => z.string().min(1).optional().catch(undefined);
const flag = () => z.enum(["1", "0", "true", "false"]).optional().catch(undefined).transform((v) => v === "1" || v === "true");

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
  OCW_SANDBOX_READONLY: str().describe("extra folders (\":\"-separated, absolute) bound read-only into worker commands and checks, besides the toolchain allow-list"),
  OCW_COMMAND_TIMEOUT_SEC: num(600).describe("wall-clock seconds one worker command may run, whatever timeout the model asked for"),
  OCW_COMMAND_MAX_PROCS: num(1024).describe("processes a worker command or check may have (RLIMIT_NPROC; root is exempt by the kernel)"),
  OCW_COMMAND_MAX_MEM_MB: num(8192).describe("data memory per process of a worker command or check, MiB (RLIMIT_DATA)"),
  OCW_COMMAND_CPU_SEC: num(1800).describe("CPU seconds per process of a worker command or check (RLIMIT_CPU)"),
  OCW_COMMAND_MAX_FILE_MB: num(4096).describe("largest file a worker command or check may write, MiB (RLIMIT_FSIZE)"),
  OCW_COMMAND_OUTPUT_MB: num(8).describe("output kept of one worker command or check, MiB; the rest is dropped"),
  OCW_SANDBOX_TMPFS_MB: num(256).describe("size of each in-memory folder of a sandbox ($HOME, /tmp, /run, /dev/shm …), MiB"),
  OCW_STALL_SEC: num(300).describe("seconds without an event before a running worker is flagged stalled"),
  OCW_RETENTION_DAYS: num(14).describe("finished workers older than this lose their workspaces (built-but-unmerged never); 0 keeps all"),
  OCW_POOL_PROBE_MS: num(2000).describe("how often the endpoints of pool targets with work are read (health, live load)"),
  OCW_MODEL_PROBE_MS: num(5000).describe("how often the engine checks that the active target's model server answers"),
  OCW_DEBUG: flag().describe("1: print stacks of unexpected CLI errors"),
});
export type Config = z.infer<typeof ConfigSchema>;

export function config(env: NodeJS.ProcessEnv = process.env): Config {
  return ConfigSchema.parse(env);
}
