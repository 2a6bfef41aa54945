import { type ClientKind, connect, type EngineClient } from "../api/client";
import { ensureEngine, olderEngineText, type OlderEngine } from "../api/launcher";
import { lastStop, readLock, stopWasUpgrade } from "../api/lock";
import type { EngineLock } from "../../shared/api";

/** A user-facing error from a tool: becomes an `isError` result with this message. */
export class ToolError extends Error {}

/** True when the error is a failed connection (engine gone / restarted), not an answer from the engine. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { data?: unknown; shape?: unknown; cause?: { code?: string; message?: string; cause?: { code?: string } }; message?: string };
  if (e && (e.data || e.shape)) return false;
  const text = `${e?.message ?? ""} ${e?.cause?.message ?? ""} ${e?.cause?.code ?? ""} ${e?.cause?.cause?.code ?? ""}`;
  return /fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed|UND_ERR|EPIPE/i.test(text);
}

/** True when the engine refused the connection: the request never reached it, so retrying cannot repeat it. */
function isRefused(err: unknown): boolean {
  const e = err as { data?: unknown; message?: string; cause?: { code?: string; message?: string; cause?: { code?: string; message?: string } } };
  if (e && e.data) return false;
  return /ECONNREFUSED/.test(
    `${e?.message ?? ""} ${e?.cause?.code ?? ""} ${e?.cause?.message ?? ""} ${e?.cause?.cause?.code ?? ""} ${e?.cause?.cause?.message ?? ""}`,
  );
}

/**
 * The bridge's connection to the user's engine. Finds it through the lock file, starting it (detached) when none
 * runs, and reconnects once when a call finds the engine gone (e.g. `ocw stop`, or a restart on another port).
 * Concurrent calls share one lookup, so a reconnect starts at most one engine.
 */
export class EngineLink {
  private lockP: Promise<EngineLock> | null = null;
  private clients = new Map<string, { pid: number; client: EngineClient }>();
  private lockPid: number | null = null;
  /** The engine the current lookup found (its instance id is the lock's while it runs). */
  private found: { lockP: Promise<EngineLock>; instanceId: string } | null = null;
  /**
   * The running engine is older than this bridge and was kept, as workers are at work on it (launcher.ts). While it
   * is, each call looks again, so the first call after its workers are all at rest replaces it.
   */
  older: OlderEngine | null = null;
  /** The older engine (its instance id) this bridge told its client about already: said once per engine. */
  private olderSaid: string | null = null;

  constructor(
    readonly stateDir: string,
    /** The caller's name as the engine records it, e.g. "mcp:claude-code". */
    private readonly name: () => ClientKind,
    private readonly log: (line: string) => void = () => {},
  ) {}

  private ensure(): Promise<EngineLock> {
    this.lockP ??= (async () => {
      const had = readLock(this.stateDir);
      let older: OlderEngine | null = null;
      const lock = await ensureEngine(this.stateDir, {
        onOlderKept: (o) => {
          older = o;
          if (this.older?.instanceId !== o.instanceId) this.log(`kept the older engine (pid ${o.pid}): ${olderEngineText(o, "this bridge")}`);
        },
      }).catch((err) => {
        throw new ToolError(`cannot reach or start the opencode-worker engine: ${(err as Error).message}`);
      });
      this.older = older;
      if (!had || had.pid !== lock.pid) this.log(`started the engine (pid ${lock.pid}, state ${this.stateDir})`);
      else if (this.lockPid !== lock.pid) this.log(`attached to the engine (pid ${lock.pid})`);
      this.lockPid = lock.pid;
      return lock;
    })();
    const p = this.lockP;
    p.catch(() => {
      if (this.lockP === p) this.lockP = null;
    });
    return p;
  }

  /** A client that names itself `header` (default: the MCP client), on the current engine. */
  async client(header: ClientKind = this.name()): Promise<EngineClient> {
    return (await this.clientOn(header)).client;
  }

  private async clientOn(header: ClientKind): Promise<{ lockP: Promise<EngineLock>; client: EngineClient }> {
    // The engine found before no longer holds the lock (stopped, crashed, restarted on another port): found again
    // before anything is sent, so the token never goes to a port that engine gave up, which another local process may
    // hold now (and could pass on to an engine restarted later with the same port and token).
    if (this.found && this.lockP === this.found.lockP && readLock(this.stateDir)?.instanceId !== this.found.instanceId) {
      this.log(`the engine (pid ${this.lockPid}) is gone; finding it again`);
      this.lockP = null;
    } else if (this.older && this.lockP === this.found?.lockP) {
      // An older engine kept for its workers: looked at again, replaced once they are all at rest.
      this.lockP = null;
    }
    const lockP = this.ensure();
    const lock = await lockP;
    this.found = { lockP, instanceId: lock.instanceId };
    let c = this.clients.get(header);
    if (!c || c.pid !== lock.pid) {
      c = { pid: lock.pid, client: connect(lock, header) };
      this.clients.set(header, c);
    }
    return { lockP, client: c.client };
  }

  /**
   * Runs `fn` with a client. When the engine refused the connection (it stopped, or restarted on another port), finds
   * or starts it again and retries once; other failures are not retried, so a mutation is never sent twice.
   */
  async call<T>(fn: (client: EngineClient) => Promise<T>, header: ClientKind = this.name(), since?: number): Promise<T> {
    if (since !== undefined) this.stoppedSince(since);
    const { lockP, client } = await this.clientOn(header);
    try {
      return await fn(client);
    } catch (err) {
      // The engine records a deliberate stop before it drops its connections, so a long call cut off by any failed
      // connection reads that record. Not only a refused one: the query's one resend can go out on another kept-alive
      // connection the stopping engine dropped too, whose close this process had not yet seen, and fail alike.
      if (since !== undefined && isConnectionError(err)) this.stoppedSince(since);
      if (!isRefused(err)) throw err;
      // Only the first caller to notice drops the stale lookup; the others reuse the new one.
      if (this.lockP === lockP) {
        this.log(`lost the engine (${(err as Error).message}); reconnecting`);
        this.lockP = null;
      }
      return fn(await this.client(header));
    }
  }

  /**
   * A call begun at `since` (a long wait) that the engine's deliberate stop cut (`ocw stop`, Ctrl-C in `ocw serve`, the
   * desktop app) ends saying so, rather than starting the engine again behind the person's back; the next call starts
   * it as on first use. After a crash, or once another client started it again, the call goes on.
   */
  private stoppedSince(since: number): void {
    const stop = lastStop(this.stateDir);
    // A client's replacement of an older engine (launcher.ts) is no person's stop: the call finds the new engine.
    if (!stop || stop.at < since || readLock(this.stateDir) || stopWasUpgrade(this.stateDir, stop)) return;
    this.lockP = null;
    throw new ToolError(
      `the engine was stopped (${stop.by}) while this call waited: its running workers are interrupted. The next call starts it again; resume continues an interrupted worker`,
    );
  }

  /**
   * What to tell the client once about an older engine kept for its workers (null when there is none, or it was said):
   * `self` names this side ("this bridge").
   */
  olderNote(self = "this bridge"): string | null {
    const o = this.older;
    if (!o || this.olderSaid === o.instanceId) return null;
    this.olderSaid = o.instanceId;
    return olderEngineText(o, self);
  }

  get enginePid(): number | null {
    return this.lockPid;
  }
}
