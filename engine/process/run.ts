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
  /** Output kept at most, stdout and stderr together (default MAX_OUTPUT_BYTES); past it the command is killed. */
  maxOutputBytes?: number;
  /**
   * stdout decoded losslessly (losslessUtf8): a line or NUL-separated record that is not valid UTF-8 (a file name of any
   * bytes) shows each invalid byte as `\xNN` (and a backslash as `\\`), never as U+FFFD, so two names never read alike.
   */
  lossless?: boolean;
  /** stdout as latin1 (one character per byte), for output whose exact bytes matter (file names to open): Buffer.from(s, "latin1"). */
  bytes?: boolean;
}

/**
 * Bytes as text with nothing lost: valid UTF-8 as it is; in a line (or NUL-separated record) that is not valid UTF-8,
 * each invalid byte as `\xNN` and each backslash as `\\`. Self-contained (no helper, no import): its source also runs
 * in the command thread.
 */
export function losslessUtf8(buf: Buffer): string {
  const whole = buf.toString("utf8");
  if (!whole.includes("\uFFFD")) return whole;
  let out = "";
  let start = 0;
  for (let i = 0; i <= buf.length; i++) {
    if (i < buf.length && buf[i] !== 0x0a && buf[i] !== 0) continue;
    const seg = buf.subarray(start, i);
    let valid = true;
    try {
      new TextDecoder("utf-8", { fatal: true }).decode(seg);
    } catch {
      valid = false;
    }
    if (valid) out += seg.toString("utf8");
    else {
      let j = 0;
      while (j < seg.length) {
        const c = seg[j]!;
        let n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (n > 1) {
          if (j + n > seg.length) n = 0;
          for (let k = 1; n && k < n; k++) if ((seg[j + k]! & 0xc0) !== 0x80) n = 0;
          const d = seg[j + 1]!;
          if (n && ((c === 0xe0 && d < 0xa0) || (c === 0xed && d >= 0xa0) || (c === 0xf0 && d < 0x90) || (c === 0xf4 && d >= 0x90))) n = 0;
        }
        if (n) {
          out += seg
            .subarray(j, j + n)
            .toString("utf8")
            .replace(/\\/g, "\\\\");
          j += n;
        } else {
          out += "\\x" + c.toString(16).padStart(2, "0");
          j++;
        }
      }
    }
    if (i < buf.length) out += String.fromCharCode(buf[i]!);
    start = i + 1;
  }
  return out;
}

/**
 * A command's output is read into one string on the command thread: past V8's string limit (512 MiB) that thread would
 * die, and every command in flight with it. A worker controls what some commands print (the names of the files it
 * made, for one), so output is capped well below that: past the cap the command is killed and reported as failed.
 */
export const MAX_OUTPUT_BYTES = 64 * 2 ** 20;

type Reply = { id: number } & CommandResult;

// Plain CommonJS, evaluated in the worker: the engine is one bundled file, so the worker cannot load a module of ours.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { spawn } = require("node:child_process");
const losslessUtf8 = ${losslessUtf8.toString()};
parentPort.on("message", ({ id, file, args, cwd, env, max, lossless, bytes: asBytes }) => {
  let child;
  const out = [], err = [];
  let bytes = 0, over = false;
  let done = false;
  const finish = (r) => { if (!done) { done = true; parentPort.postMessage({ id, ...r }); } };
  try {
    child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    return finish({ exitCode: null, signal: null, stdout: "", stderr: "", startError: String(e && e.message || e) });
  }
  const keep = (into) => (b) => {
    if (over) return;
    bytes += b.length;
    if (bytes > max) {
      over = true;
      out.length = 0;
      err.length = 0;
      return child.kill("SIGKILL");
    }
    into.push(b);
  };
  child.stdout.on("data", keep(out));
  child.stderr.on("data", keep(err));
  child.on("error", (e) => finish({ exitCode: null, signal: null, stdout: "", stderr: "", startError: String(e && e.message || e) }));
  child.on("close", (code, signal) => over
    ? finish({ exitCode: null, signal, stdout: "", stderr: "its output passed " + max + " bytes: it was stopped" })
    : finish({ exitCode: code, signal, stdout: asBytes ? Buffer.concat(out).toString("latin1") : lossless ? losslessUtf8(Buffer.concat(out)) : Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }));
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
      w.postMessage({
        id,
        file,
        args,
        cwd: opts.cwd,
        env: definedOnly(opts.env),
        max: opts.maxOutputBytes ?? MAX_OUTPUT_BYTES,
        lossless: !!opts.lossless,
        bytes: !!opts.bytes,
      });
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
