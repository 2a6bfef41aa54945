import { connect, ensureEngine, type EngineClient } from "../api/client";
import { readLock } from "../api/lock";

/** A user-facing error from a tool: becomes an `isError` result with this message. */
export class ToolError extends Error {}

/** True when the error is a failed connection (engine gone / restarted), not an answer from the engine. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { data?: unknown; shape?: unknown; cause?: { code?: string; message?: string; cause?: { code?: string } }; message?: string };
  if (e && (e.data || e.shape)) return false;
  const text = `${e?.message ?? ""} ${e?.cause?.message ?? ""} ${e?.cause?.code ?? ""} ${e?.cause?.cause?.code ?? ""}`;
  return /fetch failed|ECONNREFUSED|ECONNRESET|socket hang up|other side closed|UND_ERR|EPIPE/i.test(text);
}

/**
 * The bridge's connection to the user's engine. Finds it through the lock file, starting it (detached) when none
 * runs, and reconnects once when a call fails because the engine went away (e.g. `ocw stop` and a restart).
 */
export class EngineLink {
  private clients = new Map<string, Promise<EngineClient>>();
  private lockPid: number | null = null;

  constructor(
    readonly stateDir: string,
    /** The caller's name as the engine records it, e.g. "mcp:claude-code". */
    private readonly name: () => string,
    private readonly log: (line: string) => void = () => {},
  ) {}

  /** A client that names itself `header` (default: the MCP client), created on first use. */
  client(header = this.name()): Promise<EngineClient> {
    let p = this.clients.get(header);
    if (!p) {
      p = (async () => {
        const had = readLock(this.stateDir);
        const lock = await ensureEngine(this.stateDir).catch((err) => {
          throw new ToolError(`cannot reach or start the opencode-worker engine: ${(err as Error).message}`);
        });
        if (!had || had.pid !== lock.pid) this.log(`started the engine (pid ${lock.pid}, state ${this.stateDir})`);
        else if (this.lockPid !== lock.pid) this.log(`attached to the engine (pid ${lock.pid})`);
        this.lockPid = lock.pid;
        return connect(lock, header);
      })();
      this.clients.set(header, p);
      p.catch(() => this.clients.delete(header));
    }
    return p;
  }

  /** Runs `fn` with a client; when the engine is unreachable, reconnects (starting it again if needed) and retries once. */
  async call<T>(fn: (client: EngineClient) => Promise<T>, header?: string): Promise<T> {
    try {
      return await fn(await this.client(header));
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      this.log(`lost the engine (${(err as Error).message}); reconnecting`);
      this.clients.clear();
      return fn(await this.client(header));
    }
  }

  get enginePid(): number | null {
    return this.lockPid;
  }
}
