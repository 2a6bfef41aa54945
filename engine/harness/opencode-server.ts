import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Target } from "../../shared/target";
import { compileAgentPrompt, compileOpencodeConfig, OFFLINE_ENV, seedModelsCatalog, seedOpencodeConfigDir, WORKER_AGENT, type ProviderAccess } from "./config";
import { allowListedEnv, limitSetup, sandboxed, type SandboxKind, servePolicy } from "../sandbox";
import { failureText, type OpencodePort } from "./port";
import { httpPort } from "./http-port";
import { followSse } from "./sse";
import { mayHandle, opencodeEvent } from "./translate";
import { alive, childPids, killGroup, type Launched, readPidFile, Supervisor, writePidFile } from "../process";
import { config as ocwConfig } from "../config";

/** The engine's cgroup folders (where cgroups bind), which the worker shell writes each command's group into. */
function cgroupParents(): string[] {
  const p = limitSetup().parents;
  return p ? [...new Set([p.pids, p.memory])] : [];
}

export type { OpencodeEvent } from "./translate";

export function opencodeBinary(): string {
  const configured = ocwConfig().OCW_OPENCODE_BIN;
  if (configured) return configured;
  const require = createRequire(import.meta.url);
  const pkg = require.resolve("opencode-ai/package.json");
  // opencode-ai's postinstall places the platform binary as bin/opencode.exe on every OS.
  const bin = path.join(path.dirname(pkg), "bin", "opencode.exe");
  if (!existsSync(bin)) throw new Error(`opencode binary missing at ${bin}: reinstall with \`npm ci\` (opencode-ai's postinstall places it)`);
  return bin;
}

/** opencode's log past this size is moved aside (one earlier file kept) when its serve starts. */
export const OPENCODE_LOG_CAP = 8 * 2 ** 20;

/**
 * opencode appends every run to one log file (XDG_DATA_HOME/opencode/log/opencode.log), never trimmed: past the cap it
 * becomes opencode.log.1 (replacing the one before), so what the state dir holds of it stays under twice the cap.
 */
function rotateLog(file: string): void {
  try {
    if (statSync(file).size > OPENCODE_LOG_CAP) renameSync(file, `${file}.1`);
  } catch {
    /* none yet, or not ours to move: opencode appends to it as before */
  }
}

export interface OpencodeServerOptions {
  target: Target;
  /** Per-target folder for opencode's HOME/XDG dirs, so the user's own opencode config and data are never touched. */
  home: string;
  log?: (line: string) => void;
  startTimeoutMs?: number;
  /** How opencode reaches the model: the engine's key gateway for keyed targets (the real key never enters opencode). */
  provider?: ProviderAccess | ProviderAccess[];
  /**
   * The sandbox opencode serve runs in (deny by default: its file tools write only the workspaces; the engine's state,
   * $HOME, /tmp, /run and every user repository are not there) and the shell each bash command gets (its own sandbox per command). Absent: unconfined, for
   * the bare-SDK baseline of the bench.
   */
  confine?: {
    kind: SandboxKind;
    stateDir: string;
    workspacesRoot: string;
    tmpRoot: string;
    /** The engine's object mirrors (workspace/mirror.ts), which every workspace borrows its objects from: read-only. */
    mirrorsRoot: string;
    shell: string;
    plugin?: string;
  };
  /**
   * The engine's egress proxy (engine/net/egress.ts), given as HTTP_PROXY and HTTPS_PROXY: every connection opencode's
   * process makes (a webfetch and each of its redirects) is checked when it is made; `direct` (NO_PROXY: the model's
   * endpoints, the key gateway) is reached past it. Absent: the host's network unchecked (the bench's bare-SDK baseline).
   */
  egress?: { proxy: string; direct: string[] };
}

/** What opencode serve's Bun runs of fetch at once (BUN_CONFIG_MAX_HTTP_REQUESTS): 256 model slots and EGRESS_CAP, with room. */
export const BUN_MAX_HTTP_REQUESTS = 512;

/** The npm registry opencode may install plugins from: nowhere unless configured (opencode is run offline). */
export function opencodeRegistry(): string {
  return ocwConfig().OCW_OPENCODE_NPM_REGISTRY ?? "http://127.0.0.1:9/";
}

/**
 * A supervised `opencode serve` for one target: loopback, random port, generated password, offline env.
 * Emits `event` (an OpencodeEvent: the SDK's typed union, see translate.ts), `ready`, `down` (crash or exit; workers must be marked interrupted), `resync`
 * (the event stream reconnected: state may have been missed). Restarts are the one supervisor's (engine/process/supervisor.ts).
 */
export class OpencodeServer extends EventEmitter {
  url: string | null = null;
  /** The running server's HTTP port: the agent check here, every other call through `port` (events: sse.ts). */
  private client: ReturnType<typeof httpPort> | null = null;
  port: OpencodePort | null = null;
  private proc: ChildProcess | null = null;
  private readonly password = randomBytes(24).toString("base64url");
  private streamAbort: AbortController | null = null;
  /**
   * Restarts after a crash: 250 ms, 500 ms, … up to 30 s, never giving up (a failed restart is tried again); a start
   * that holds resets it. Concurrent `start()` callers share one start.
   */
  private readonly supervisor = new Supervisor(
    () => this.launch(),
    {
      onReady: () => this.emit("ready"),
      onDown: (_why, code, signal) => {
        this.clear();
        this.emit("down", `opencode serve exited unexpectedly (code ${code}, signal ${signal})`);
      },
      onRestart: (n, why, delayMs) => n > 1 && this.opts.log?.(`restart failed: ${why}; trying again in ${delayMs} ms`),
    },
    { baseDelayMs: 250, capDelayMs: 30_000, maxRestarts: Number.POSITIVE_INFINITY, resetOnReady: true, end: (l) => this.end(l) },
  );
  readonly authHeader: string;

  constructor(private readonly opts: OpencodeServerOptions) {
    super();
    this.authHeader = "Basic " + Buffer.from(`opencode:${this.password}`).toString("base64");
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  get ready(): boolean {
    return this.client !== null;
  }

  /** Starts the server (once; concurrent callers share the start). Resolves when the worker agent is verified. */
  async start(): Promise<void> {
    await this.supervisor.start();
  }

  /** An allow-listed environment: nothing of the engine's (its token, the user's keys, Claude Code's) is inherited. */
  private env(): Record<string, string> {
    const h = this.opts.home;
    mkdirSync(h, { recursive: true, mode: 0o700 });
    const xdg = {
      HOME: h,
      XDG_DATA_HOME: path.join(h, ".local/share"),
      XDG_CONFIG_HOME: path.join(h, ".config"),
      XDG_STATE_HOME: path.join(h, ".local/state"),
      XDG_CACHE_HOME: path.join(h, ".cache"),
      TMPDIR: path.join(h, "tmp"),
    };
    for (const d of Object.values(xdg)) mkdirSync(d, { recursive: true, mode: 0o700 });
    // opencode would otherwise try to npm-install its plugin SDK there on every instance boot (see the function)
    seedOpencodeConfigDir(path.join(xdg.XDG_CONFIG_HOME, "opencode"));
    const config = compileOpencodeConfig(this.opts.target, compileAgentPrompt(this.opts.target), this.opts.provider);
    const plugin = this.opts.confine?.plugin;
    // Our one plugin names each session's workspace to the worker shell. External plugins load only from the config
    // (OPENCODE_PURE would skip ours too): the project's own .opencode/ is off (OPENCODE_DISABLE_PROJECT_CONFIG), and
    // opencode's global config folder is the engine's, under the state dir no worker command can see.
    if (plugin) config.plugin = [pathToFileURL(plugin).href];
    const offline: Record<string, string> = { ...OFFLINE_ENV };
    if (plugin) delete offline.OPENCODE_PURE;
    // Bun's fetch reads both spellings; https goes through HTTPS_PROXY only (HTTP_PROXY alone leaves it direct).
    const e = this.opts.egress;
    const proxy: Record<string, string> = e
      ? { HTTP_PROXY: e.proxy, HTTPS_PROXY: e.proxy, http_proxy: e.proxy, https_proxy: e.proxy, NO_PROXY: e.direct.join(","), no_proxy: e.direct.join(",") }
      : {};
    return allowListedEnv({
      ...xdg,
      ...offline,
      ...proxy,
      ...(this.opts.confine ? { SHELL: this.opts.confine.shell } : {}),
      OPENCODE_SERVER_PASSWORD: this.password,
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      // An empty models.dev catalog: the embedded one costs ~0.9 s of serve's JS thread per new workspace (see config.ts).
      OPENCODE_MODELS_PATH: seedModelsCatalog(path.join(h, "models-catalog.json")),
      // The plugin install opencode starts in a fresh HOME is useless offline and costs ~64 MB; point it nowhere.
      npm_config_registry: opencodeRegistry(),
      // Bun's fetch runs at most this many requests at once per process (256 by default) and queues the rest: the
      // target's workers' model requests (up to 256 slots) and the egress proxy's cap on its webfetches (EGRESS_CAP,
      // 128) fit together (docs/security.md, measured).
      BUN_CONFIG_MAX_HTTP_REQUESTS: String(BUN_MAX_HTTP_REQUESTS),
    });
  }

  /** opencode serve's command line: inside its sandbox when confined. */
  private command(): { file: string; args: string[]; env: Record<string, string> } {
    // Warnings and errors only: its INFO lines (~4 KB per worker) grew its one log file for as long as the engine ran.
    const argv = [opencodeBinary(), "serve", "--hostname=127.0.0.1", "--port=0", "--log-level=WARN"];
    const env = this.env();
    const c = this.opts.confine;
    if (!c) return { file: argv[0]!, args: argv.slice(1), env };
    // Deny by default (servePolicy): the system allow-list, the engine's state hidden whole (lock, token, logs with
    // held-back checks, keys, other targets) but what is bound back. No user repository is there: every workspace
    // borrows its objects from the engine's mirrors.
    return sandboxed(
      argv,
      servePolicy({
        stateDir: c.stateDir,
        // opencode's own home and the workspaces writable; the engine's cgroups too (the worker shell makes each
        // command's group under them, cgroup.ts).
        writable: [this.opts.home, c.workspacesRoot, c.tmpRoot, ...cgroupParents()],
        // The mirrors, the worker shell and plugin, and the opencode install itself (wherever it lives: a Claude Code
        // plugin is installed under ~/.claude/plugins), read-only.
        readOnly: [c.mirrorsRoot, path.dirname(c.shell), ...(c.plugin ? [path.dirname(c.plugin)] : []), path.dirname(path.dirname(realpathSync(argv[0]!)))],
        env,
        cwd: this.opts.home,
      }),
      c.kind,
    );
  }

  private get pidFile(): string {
    return path.join(this.opts.home, "opencode.pid");
  }

  /** One start for the supervisor: spawn, wait for the address, verify the worker agent, open the event stream. */
  private async launch(): Promise<Launched> {
    const t0 = performance.now();
    endStaleServer(this.opts.home, this.opts.log);
    rotateLog(path.join(this.opts.home, ".local/share/opencode/log/opencode.log"));
    const cmd = this.command();
    const proc = spawn(cmd.file, cmd.args, { cwd: this.opts.home, env: cmd.env, stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    writePidFile(this.pidFile, proc.pid);
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill("SIGKILL");
        reject(new Error(`opencode serve did not report ready within ${(this.opts.startTimeoutMs ?? 60_000) / 1000}s`));
      }, this.opts.startTimeoutMs ?? 60_000);
      let out = "";
      let err = "";
      proc.stdout!.on("data", (b: Buffer) => {
        out += b.toString();
        const m = /listening on (http:\/\/[^\s]+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!.replace(/\/$/, ""));
        }
      });
      proc.stderr!.on("data", (b: Buffer) => {
        err += b.toString();
        if (err.length > 20_000) err = err.slice(-10_000);
        this.opts.log?.(b.toString().trimEnd());
      });
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`opencode serve exited during start-up (code ${code}, signal ${signal}): ${err.trim().slice(-500) || "no output"}`));
      });
    });
    this.url = url;
    const client = httpPort({ url, authorization: this.authHeader });
    try {
      await this.verifyAgent(client);
    } catch (err) {
      // a serve without the worker agent (or that stopped answering) is not left running beside the next try
      client.close();
      proc.kill("SIGKILL");
      throw err;
    }
    this.client = client;
    this.port = client;
    this.openStream(url);
    return { pid: proc.pid!, child: proc, readyMs: performance.now() - t0 };
  }

  /** The worker agent must be loaded before any session is created; otherwise prompts fail silently (notes §2). */
  private async verifyAgent(client: ReturnType<typeof httpPort>): Promise<void> {
    let res = await client.agents({ directory: this.opts.home });
    // A serve restarted after a crash can print its address before it answers: a request that got no HTTP answer at
    // all is retried for a few seconds (a wrong answer is not).
    for (let i = 0; i < 20 && !res.ok && res.kind === "no-answer"; i++) {
      await new Promise((r) => setTimeout(r, 250));
      res = await client.agents({ directory: this.opts.home });
    }
    const names = res.ok ? res.value.map((a) => a.name) : [];
    if (!names.includes(WORKER_AGENT)) {
      throw new Error(
        `opencode did not load the worker agent "${WORKER_AGENT}" (agents: ${names.join(", ") || "none"}; ${res.ok ? "HTTP 200" : failureText(res)})`,
      );
    }
  }

  /**
   * opencode's global event stream (sse.ts reads it; the SDK's types describe its events, translate.ts adapts them).
   * An event whose type the engine drops is told by its head and never parsed. Reconnects are ours: a reconnect must be
   * known because events may have been missed (resync).
   */
  private openStream(url: string): void {
    const abort = new AbortController();
    this.streamAbort = abort;
    let first = true;
    let delay = 100;
    const headers = { Authorization: this.authHeader };
    const onData = (data: string) => {
      if (!mayHandle(data)) return;
      let env: { directory?: string; payload?: { type?: unknown } } | null;
      try {
        env = JSON.parse(data);
      } catch {
        return; // not JSON: carries nothing for us
      }
      if (typeof env !== "object" || env === null) return;
      const p = env.payload;
      if (!p?.type) return;
      if (p.type === "server.connected") {
        if (!first) this.emit("resync");
        first = false;
        delay = 100;
        return;
      }
      const e = opencodeEvent(p, env.directory);
      if (e) this.emit("event", e);
    };
    const loop = async () => {
      while (!abort.signal.aborted && this.client) {
        const dropped = await followSse(`${url}/global/event`, headers, abort.signal, onData);
        if (abort.signal.aborted) return;
        this.opts.log?.(`event stream dropped: ${dropped}; reconnecting`);
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 2000);
      }
    };
    void loop();
  }

  /** What a running server leaves behind when it goes: its client, port, address and event stream. */
  private clear(): void {
    this.streamAbort?.abort();
    this.client?.close();
    this.client = null;
    this.port = null;
    this.url = null;
    this.proc = null;
  }

  /** Stops a serve: SIGTERM, SIGKILL after 3 s, then the process groups of its bash children. */
  private async end(l: Launched): Promise<void> {
    this.clear();
    const children = childPids(l.pid);
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => l.child.kill("SIGKILL"), 3000);
      l.child.once("exit", () => {
        clearTimeout(t);
        resolve();
      });
      l.child.kill("SIGTERM");
    });
    for (const c of children) killGroup(c);
  }

  /** Stops the server. Callers abort busy sessions first so bash children end (they run in their own process groups). */
  async stop(): Promise<void> {
    // a serve still starting is not the supervisor's yet: ended here, so its start fails instead of outliving the stop
    const starting = this.proc && this.supervisor.running?.child !== this.proc ? this.proc : null;
    this.clear();
    await this.supervisor.stop();
    if (starting?.pid && starting.exitCode === null && starting.signalCode === null) await this.end({ pid: starting.pid, child: starting, readyMs: 0 });
  }
}

/**
 * A previous engine killed with -9 leaves its opencode serve running on the same data dir (`home`): end it. The engine
 * calls this for every target at start-up, and each server before it spawns.
 */
export function endStaleServer(home: string, log?: (line: string) => void): void {
  const who = readPidFile(path.join(home, "opencode.pid"));
  if (!who || who.pid === process.pid) return;
  // Ours only when it is still the process that was recorded (its start time matches); a pid file of an older engine
  // holds a bare pid, which is ours only when it still runs opencode.
  if (!alive(who)) return;
  const pid = who.pid;
  if (who.startTime === null) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("opencode")) return;
    } catch {
      if (process.platform === "linux") return; // gone
    }
  }
  for (const c of childPids(pid)) killGroup(c);
  try {
    process.kill(pid, "SIGKILL");
    log?.(`ended a stale opencode serve (pid ${pid}) left by an earlier engine`);
  } catch {
    /* already gone */
  }
}
