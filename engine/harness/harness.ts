import { OpencodeServer, type OpencodeServerOptions } from "./opencode-server";
import type { OpencodePort } from "./port";
import type { OpencodeEvent } from "./translate";

/**
 * The engine's seam to opencode: one server per target, its typed port (port.ts: the calls the engine makes), and its
 * event stream. Production uses the real
 * `opencode serve` (OpencodeServer); unit tests pass a fake that plays sessions, asks and idles in memory, so the state
 * machine, asks, steer, stop/resume, budgets and recovery are tested in milliseconds without a binary.
 */
export interface HarnessServer {
  readonly ready: boolean;
  readonly url: string | null;
  readonly pid: number | undefined;
  /** The Authorization header of the server's own API (fault injection and the bench read its stream directly). */
  readonly authHeader: string;
  /** The calls the engine makes of the running server (null while it is not up). */
  readonly port: OpencodePort | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  on(event: "event", listener: (e: OpencodeEvent) => void): this;
  on(event: "down", listener: (why: string) => void): this;
  on(event: "ready" | "resync", listener: () => void): this;
}

export type Harness = (opts: OpencodeServerOptions) => HarnessServer;

/** The real one: `opencode serve`, sandboxed when the options say so. */
export const opencodeHarness: Harness = (opts) => new OpencodeServer(opts);
