// Short commands the engine runs many of (git above all), started from a worker thread. Starting a process blocks the
// thread that starts it until the child has exec'd (libuv waits on a close-on-exec pipe): 12–15 ms a command on this
// 2-core machine, ~17 git commands per worker. On the engine's own thread that stalled everything else — asks,
// approvals, the event stream to every client — for seconds in a 16-worker batch (measured: 7.4 s of the engine's
// CPU profile in ChildProcess.spawn). From a worker thread only that thread waits.
// Platform layer: Node only, no business logic.
import { Worker } from "node:worker_threads";

/** What a finished command left: exit code (null when it could not start or died by a signal), its output. */
export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Set when the command could not be started at all (ENOENT, EACCES, a missing cwd). */
  startError?: string;
}

export interface CommandOptions {
  cwd: string;
  /** The child's whole environment (nothing is inherited implicitly). */
  env: Record<string, string | undefined>;
}

type Reply = { id: number } & CommandResult;

// Plain CommonJS, evaluated in the worker: the engine is one bundled file, so the worker cannot load a module of ours.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { spawn } = require("node:child_process");
parentPort.on("message", ({ id, file, args, cwd, env }) => {
  let child;
  const out = [], err = [];
  let done = false;
  const finish = (r) => { if (!done) { done = true; parentPort.postMessage({ id, ...r }); } };
  try {
    child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    return finish({ exitCode: null, signal: null, stdout: "", stderr: "", startError: String(e && e.message || e) });
  }
  child.stdout.on("data", (b) => out.push(b));
  child.stderr.on("data", (b) => err.push(b));
  child.on("error", (e) => finish({ exitCode: null, signal: null, stdout: "", stderr: "", startError: String(e && e.message || e) }));
  child.on("close", (code, signal) => finish({ exitCode: code, signal, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }));
});
`;

class CommandThread {
  private worker: Worker | null = null;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (r: CommandResult) => void; reject: (e: Error) => void }>();

  run(file: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
    const w = this.ensure();
    const id = ++this.seq;
    return new Promise<CommandResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // Held while a command is out, so a short-lived CLI awaiting one does not exit under it.
      if (this.waiting.size === 1) w.ref();
      w.postMessage({ id, file, args, cwd: opts.cwd, env: definedOnly(opts.env) });
    });
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_SOURCE, { eval: true, name: "ocw commands" });
    w.unref();
    w.on("message", (m: Reply) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (!this.waiting.size) w.unref();
      const { id: _id, ...result } = m;
      p.resolve(result);
    });
    const lost = (why: string) => {
      if (this.worker !== w) return;
      this.worker = null;
      for (const p of this.waiting.values()) p.reject(new Error(`the engine's command thread ${why}; the command may or may not have run`));
      this.waiting.clear();
    };
    w.on("error", (e) => lost(`failed: ${e.message}`));
    w.on("exit", (code) => lost(`exited (${code})`));
    this.worker = w;
    return w;
  }
}

function definedOnly(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

const thread = new CommandThread();

/** Runs `file args` to completion off the engine's thread and returns its output; never throws for a failed command. */
export function runCommand(file: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
  return thread.run(file, args, opts);
}

/** Output as a command line prints it, without its one final newline. */
export function trimFinalNewline(text: string): string {
  return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
}
