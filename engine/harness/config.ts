import { readFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Target } from "../../shared/target";
import { targetSlug } from "../../shared/target";
import { projectRoot } from "../paths";
import { OPENCODE_FIRST_REQUEST_TOKENS } from "../serving";

export const WORKER_AGENT = "ocw-worker";
const PROVIDER_ID = "ocw";
/** How opencode reaches a target's model when it is not the target's own endpoint: the engine's key gateway. */
export interface ProviderAccess {
  baseURL: string;
  apiKey: string;
}

/** Offline-safe opencode environment (notes/opencode.md §0): no model-list fetch, updates, sharing, plugins or ~/.claude. */
export const OFFLINE_ENV: Record<string, string> = {
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  OPENCODE_PURE: "1",
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
  OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
  // A worker must not configure its own opencode: an opencode.json or .opencode/ (MCP servers, plugins, tools) written in
  // its workspace would run inside opencode's process, outside the per-command sandbox. Our config comes in the env.
  OPENCODE_DISABLE_PROJECT_CONFIG: "1",
  // Workers are graded from git, not from file events; the watcher costs start-up time per worktree.
  OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER: "1",
  // opencode runs on Bun, whose bmalloc/libpas marks every 16 KiB page it decommits with madvise(MADV_DONTDUMP). That
  // splits the heap into one memory map per page until vm.max_map_count (65530) is reached; then madvise fails with
  // EAGAIN and bmalloc retries forever: opencode serve hangs at 100% CPU (WebKit bug 319025, oven-sh/bun#27490). Here a
  // serve hit the limit after ~60 workers (32 at once). `Malloc=1` makes bmalloc use the system allocator: ~250 maps
  // instead of 14–36k after 48 workers, and 20% faster (less kernel time), for ~40% more RSS (docs/opencode.md).
  Malloc: "1",
};

/** The package opencode installs into every config directory it reads (its plugin SDK). */
export const OPENCODE_PLUGIN_PACKAGE = "@opencode-ai/plugin";

/**
 * Pre-seeds opencode's global config directory (`$XDG_CONFIG_HOME/opencode`) so that opencode does not try to install
 * its plugin SDK there. opencode 1.18.33 (Config.loadInstanceState) forks `Npm.install(dir, add: @opencode-ai/plugin)`
 * for every config directory on every instance boot, i.e. for every new workspace directory; Npm.install reifies (under
 * a lock named `npm-install:<dir>`) unless `<dir>/node_modules` exists and `<dir>/package-lock.json`'s root package
 * lists every dependency of `<dir>/package.json` plus that package (Npm.checkDirty compares names only). Offline the
 * install can only fail, it holds the lock while npm retries, and concurrent boots time out on it: "background
 * dependency install failed … LockTimeoutError" / "ReleaseError: token mismatch" on every start, and a lock left behind
 * when serve is stopped. Workers run no plugins (OPENCODE_PURE), so the package is not needed: the seed says it is there.
 * The directory is opencode's own under our per-target home, never the user's config.
 */
export function seedOpencodeConfigDir(configDir: string): void {
  mkdirSync(path.join(configDir, "node_modules"), { recursive: true, mode: 0o700 });
  const lockFile = path.join(configDir, "package-lock.json");
  const pkgFile = path.join(configDir, "package.json");
  const read = (f: string): Record<string, unknown> | null => {
    try {
      return JSON.parse(readFileSync(f, "utf8")) as Record<string, unknown>;
    } catch {
      return null;
    }
  };
  const deps = (o: unknown): string[] => {
    const r = (o ?? {}) as Record<string, Record<string, unknown> | undefined>;
    return ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"].flatMap((k) => Object.keys(r[k] ?? {}));
  };
  const pkg = read(pkgFile);
  const lock = read(lockFile);
  const locked = new Set(deps((lock?.packages as Record<string, unknown> | undefined)?.[""]));
  const wanted = [...deps(pkg), OPENCODE_PLUGIN_PACKAGE];
  if (wanted.every((d) => locked.has(d))) return;
  const dependencies = Object.fromEntries(wanted.map((d) => [d, "*"]));
  if (!pkg) writeFileSync(pkgFile, JSON.stringify({ dependencies }, null, 2) + "\n");
  writeFileSync(lockFile, JSON.stringify({ name: "opencode-config", lockfileVersion: 3, requires: true, packages: { "": { dependencies } } }, null, 2) + "\n");
}

/**
 * opencode's models.dev catalog for a worker: empty. Without OPENCODE_MODELS_PATH opencode builds every instance's
 * provider list from the catalog embedded in its binary (hundreds of providers and models): ~0.9 s of its one JS
 * thread per new workspace directory, so a batch of new worktrees queues on that thread and the first model requests
 * arrive late and in bursts (16 at once: 15–19 s of serve CPU, first requests at 10–23 s; with this file 4–6 s CPU,
 * all by 6–11 s). Our providers are complete in the config (npm package, models, limits), so the catalog adds nothing.
 */
export const OPENCODE_MODELS_CATALOG = "{}\n";

/** Writes the empty models catalog (see OPENCODE_MODELS_CATALOG) at `file`, for OPENCODE_MODELS_PATH. */
export function seedModelsCatalog(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  let current: string | null = null;
  try {
    current = readFileSync(file, "utf8");
  } catch {
    current = null;
  }
  if (current !== OPENCODE_MODELS_CATALOG) writeFileSync(file, OPENCODE_MODELS_CATALOG);
  return file;
}

/** The worker agent's permission rules: gates on edit/bash/webfetch, nothing outside the worktree, reads free. */
const WORKER_PERMISSION = {
  edit: "ask",
  bash: "ask",
  webfetch: "ask",
  external_directory: "deny",
  // Reads reach the engine, which answers those inside the workspace at once and refuses the rest: opencode's own
  // check goes by the path as written, and a symlink in the workspace would read any file of the machine.
  read: "ask",
  // Searches too: their root may be a symlink out of the workspace (a way to list other workers' workspaces).
  glob: "ask",
  grep: "ask",
  list: "allow",
  todowrite: "allow",
  question: "allow",
  task: "deny",
  skill: "deny",
} as const;

interface AgentPrompt {
  prompt: string;
  /** Where the pack came from, or null when the target has none. */
  pack: string | null;
}

/** The protocol plus the active target's pack deltas (packs/<target-slug>/agent.md), as one system prompt. */
export function compileAgentPrompt(target: Target | null, root = projectRoot()): AgentPrompt {
  const protocolFile = path.join(root, "protocol", "opencode-worker-protocol.md");
  if (!existsSync(protocolFile)) throw new Error(`worker protocol not found at ${protocolFile}: the opencode-worker install is incomplete`);
  let prompt = readFileSync(protocolFile, "utf8").trim();
  let pack: string | null = null;
  if (target) {
    const packFile = path.join(root, "packs", targetSlug(target), "agent.md");
    if (existsSync(packFile)) {
      pack = packFile;
      prompt += `\n\n## Notes for this model (pack ${targetSlug(target)})\n\n` + readFileSync(packFile, "utf8").trim();
    }
  }
  return { prompt, pack };
}

/**
 * How long a model request may go without a byte from the server (opencode's headerTimeout and chunkTimeout, the
 * gateway's socket timeout). opencode's own 300 s gives up on a worker whose server is still processing its prompt:
 * llama-server answers 200 as a slot takes the request and sends nothing more until the prompt is read, and a worker's
 * first prompt (≈ 5k tokens, more after a compaction) takes minutes on a CPU, longer with every slot busy. A server that
 * hangs still ends the request, after this long; the watchdog flags its workers stalled long before.
 */
export function modelSilenceMs(target: Pick<Target, "serving">): number {
  return (target.serving.silenceSec ?? (target.serving.engine === "api" ? 300 : 1800)) * 1000;
}

/** opencode's provider id for endpoint `i` of a target (a pool has one provider per endpoint; the first is "ocw"). */
export const providerIdFor = (i: number) => (i === 0 ? PROVIDER_ID : `${PROVIDER_ID}-${i}`);

/**
 * The context and output limits opencode is given for a target. opencode compacts a session once a turn's tokens reach
 * context − output, and sends output as every request's max_tokens; vLLM and SGLang refuse a request whose prompt +
 * max_tokens passes their context. An 8,192-token output on a slot that verify accepts (≥ the first request + 1,024)
 * left nothing below the compaction line — every turn compacted, and on vLLM the first request was refused — so the
 * output shrinks to what leaves room for the first request (never below 1,024).
 */
function modelLimits(target: Pick<Target, "contextLimit" | "outputLimit" | "serving">): { context: number; output: number } {
  const context = target.contextLimit ?? target.serving.perSlotCtx ?? 32768;
  const want = target.outputLimit ?? 8192;
  return { context, output: Math.max(Math.min(1024, want), Math.min(want, context - OPENCODE_FIRST_REQUEST_TOKENS)) };
}

/**
 * The full opencode config for one target, passed in OPENCODE_CONFIG_CONTENT (no file, user config untouched). `access`
 * gives, per endpoint of the target in order, how opencode reaches it (the engine's gateway for keyed targets); absent,
 * the target's one endpoint, keyless.
 */
export function compileOpencodeConfig(target: Target, agent: AgentPrompt, access?: ProviderAccess | ProviderAccess[]): Record<string, unknown> {
  const model = { name: target.model, tool_call: true, limit: modelLimits(target) };
  const silence = modelSilenceMs(target);
  // A keyed target is reached through the engine's gateway, which adds the key: opencode never holds it.
  const list = access === undefined ? [{ baseURL: target.endpoint, apiKey: "none" }] : Array.isArray(access) ? access : [access];
  const provider = Object.fromEntries(
    list.map((a, i) => [
      providerIdFor(i),
      {
        npm: "@ai-sdk/openai-compatible",
        name: `opencode-worker target ${target.id}${i ? ` endpoint ${i}` : ""}`,
        options: { baseURL: a.baseURL, apiKey: a.apiKey, headerTimeout: silence, chunkTimeout: silence },
        models: { [target.model]: model },
      },
    ]),
  );
  return {
    $schema: "https://opencode.ai/config.json",
    provider,
    model: `${PROVIDER_ID}/${target.model}`,
    small_model: `${PROVIDER_ID}/${target.model}`,
    enabled_providers: Object.keys(provider),
    autoupdate: false,
    share: "disabled",
    lsp: false,
    formatter: false,
    // Per-step snapshots serialize sessions of one project (notes §6); workers have their own git worktrees instead.
    snapshot: false,
    permission: WORKER_PERMISSION,
    agent: {
      [WORKER_AGENT]: {
        description: "opencode-worker: does one scoped task and reports an honest OUTCOME line",
        mode: "primary",
        prompt: agent.prompt,
        permission: WORKER_PERMISSION,
      },
    },
  };
}
