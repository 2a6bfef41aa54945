import { mkdirSync } from "node:fs";
import path from "node:path";
import { endpointsOf, isPool, type Target } from "../../shared/target";
import { modelSilenceMs, providerIdFor } from "./config";
import { KeyGateway } from "../gateway";
import { directEntries, EgressProxy, type EgressOptions } from "../net";
import { type SandboxKind, writeWorkerShell, writeWorkspacePlugin } from "../sandbox";
import { resolveKey } from "../serving";
import { opencodeHarness, type Harness, type HarnessServer } from "./harness";
import { opencodeRegistry } from "./opencode-server";

/**
 * The opencode servers of the engine: one per target (made on first use, by the harness), each reaching the model
 * through one provider per endpoint. Keyed targets and every API provider go through the engine's loopback key gateway:
 * the key never enters opencode or a worker's reach, and a provider saved without a key that is given one later (`ocw
 * target key`, Setup's key field) sends it from its next request on. A key-less model server of the person's own
 * (llama.cpp, vLLM, a captured one) is reached directly: every token it streams would otherwise pass through the engine's
 * process (issue 31: the engine's own CPU per task); a key set on it later takes effect when its opencode server starts
 * again. Every server is sandboxed as the engine's sandbox says, with the per-command worker shell.
 */
interface ServersOptions {
  stateDir: string;
  sandbox: { kind: SandboxKind };
  workspacesRoot: string;
  tmpRoot: string;
  /** The engine's object mirrors (workspace/mirror.ts): read-only in every server's sandbox. */
  mirrorsRoot: string;
  harness?: Harness;
  log: (line: string) => void;
  /** Wiring of a new server's events (translation, down, ready, resync). */
  wire: (targetId: string, s: HarnessServer) => void;
  /** The egress proxy's stand-ins (a test's: a resolver, a local server playing a public address); default: none. */
  net?: Pick<EgressOptions, "lookup" | "dial">;
}

/** The gateway's limit is a backstop behind opencode's own (the same silence): opencode gives up first, then retries. */
const GATEWAY_GRACE_MS = 10_000;

export class OpencodeServers {
  private readonly servers = new Map<string, HarnessServer>();
  private readonly gateway = new KeyGateway();
  /** Every connection of opencode's process but those to its model (`direct`) goes through it (engine/net/egress.ts). */
  private readonly egress: EgressProxy;
  /** Per target, the NO_PROXY entries its server was given: what it reaches past the egress proxy. */
  private readonly directs = new Map<string, string[]>();
  /** Each gateway-routed server's routes and the key they send, or null (read again whenever a worker of it starts). */
  private readonly keyed = new Map<string, { key: string | null; baseURLs: string[]; upstreams: string[] }>();

  constructor(private readonly opts: ServersOptions) {
    this.egress = new EgressProxy({ ...opts.net, log: opts.log });
  }

  /** What any opencode server reaches past the egress proxy (NO_PROXY entries): the model's endpoints, the key gateway. */
  direct(): string[] {
    return [...new Set([...this.directs.values()].flat())];
  }

  get(targetId: string): HarnessServer | undefined {
    return this.servers.get(targetId);
  }

  /** The target's server (not started: callers `start()` it when they need it up). */
  async for(target: Target): Promise<HarnessServer> {
    // Read as each worker starts (not on every request): a key set again in Setup (`targets.setKey`, a new typed key)
    // or removed reaches the running server's gateway routes now, not at the engine's next start.
    const key = target.keyRef || target.keyFile || target.keyStore ? resolveKey(target) : null;
    let s = this.servers.get(target.id);
    const routes = this.keyed.get(target.id);
    // the target saved again with its base URL fixed (same id, same number of endpoints): its routes go there now
    const upstreams = endpointsOf(target).map((e) => e.url);
    const moved = !!routes && upstreams.length === routes.upstreams.length && upstreams.some((u, i) => u !== routes.upstreams[i]);
    if (routes && (routes.key !== key || moved)) {
      routes.baseURLs.forEach((u, i) => this.gateway.rekey(u, key, moved ? upstreams[i] : undefined));
      routes.key = key;
      if (moved) routes.upstreams = upstreams;
    }
    if (s) return s;
    if ((target.keyRef || target.keyFile) && !key)
      throw new Error(`the target's key variable ${target.keyRef} is not set: export ${target.keyRef}=… in the engine's environment`);
    // One provider per endpoint of a pool (a worker's prompts name its endpoint's). Through the gateway where there is a
    // key, and for a provider without one (its key can come later: rekeyed above; opencode never holds its endpoint).
    const routed = !!key || target.serving.engine === "api";
    const provider = await Promise.all(
      endpointsOf(target).map((e, i) =>
        routed
          ? this.gateway.add(`${target.id}-${i}`, { upstream: e.url, key, silenceMs: modelSilenceMs(target) + GATEWAY_GRACE_MS })
          : { baseURL: e.url, apiKey: "none" },
      ),
    );
    // The model's endpoints (or the gateway before them) and opencode's package registry are reached directly; every
    // other connection through the egress proxy, which checks it when it is made.
    const direct = directEntries([...provider.map((p) => p.baseURL), opencodeRegistry()]);
    await this.egress.start();
    const { stateDir, workspacesRoot, tmpRoot, mirrorsRoot, sandbox } = this.opts;
    // There before the server starts: a mount namespace cannot gain the folder later (its mirrors come and go inside).
    mkdirSync(mirrorsRoot, { recursive: true });
    const shell = writeWorkerShell(path.join(stateDir, "sandbox", "worker-shell"), { workspacesRoot, tmpRoot, kind: sandbox.kind, stateDir });
    // Names each session's workspace to the worker shell (the shell refuses a command without it).
    const plugin = writeWorkspacePlugin(path.join(stateDir, "sandbox", "ocw-workspace.js"));
    s = this.servers.get(target.id);
    if (s) return s;
    // An identity of its own at the proxy: what this server's fetches hold there is counted apart from every other's, and
    // capped below what Bun runs at once, so its webfetches never take the slots of its model requests.
    const proxy = this.egress.identity(`target ${target.id}'s opencode`);
    if (routed) this.keyed.set(target.id, { key, baseURLs: provider.map((p) => p.baseURL), upstreams: endpointsOf(target).map((e) => e.url) });
    s = (this.opts.harness ?? opencodeHarness)({
      target,
      home: path.join(stateDir, "opencode", target.id),
      log: (l) => this.opts.log(`[opencode ${target.id}] ${l}`),
      provider,
      confine: { kind: sandbox.kind, stateDir, workspacesRoot, tmpRoot, mirrorsRoot, shell, plugin },
      egress: { proxy, direct },
    });
    this.directs.set(target.id, direct);
    this.opts.wire(target.id, s);
    this.servers.set(target.id, s);
    return s;
  }

  list(): { targetId: string; ready: boolean; url: string | null; pid: number | undefined }[] {
    return [...this.servers.entries()].map(([targetId, s]) => ({ targetId, ready: s.ready, url: s.url, pid: s.pid }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
    this.gateway.close();
    await this.egress.close();
  }
}

/** The model a worker's prompts name: its endpoint's provider in a pool; the target's default otherwise. */
export function modelFor(endpoint: string | null, target: Target): { providerID: string; modelID: string } | undefined {
  if (!isPool(target) || !endpoint) return undefined;
  const i = endpointsOf(target).findIndex((e) => e.url === endpoint);
  return i < 0 ? undefined : { providerID: providerIdFor(i), modelID: target.model };
}
