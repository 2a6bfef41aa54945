// Short commands the engine runs many of (git above all), started from a worker thread. Starting a process blocks the
// thread that starts it until the child has exec'd (libuv waits on a close-on-exec pipe): 12–15 ms a command on this
// 2-core machine, ~17 git commands per worker. On the engine's own thread that stalled everything else — asks,
// approvals, the event stream to every client — for seconds in a 16-worker batch (measured: 7.4 s of the engine's
// CPU profile in ChildProcess.spawn). From a worker thread only that thread waits.
// Platform layer: Node only, no business logic.
import { type ChildProcess, spawn } from "node:child_process";
import { Worker } from "node:worker_threads";

/** What a finished command left: exit code (null when it could not start or died by a signal), its output. */
export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Set when the command could not be started at all (ENOENT, EACCES, a missing cwd). */
  startError?: string;
  /** Set when it ran past its `limitMs` and was killed. */
  timedOut?: boolean;
}

interface CommandOptions {
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
  /**
   * Wall-clock milliseconds it may run: past them its whole process group is killed and it is reported failed
   * (`timedOut`). For git reading a worker's files: a FIFO named `.gitignore`, or in a nested repository's `.git`, makes
   * it wait for good.
   */
  limitMs?: number;
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
const MAX_OUTPUT_BYTES = 64 * 2 ** 20;

type Reply = { id: number } & CommandResult;

// Plain CommonJS, evaluated in the worker thread or the helper process (COMMAND_HELPER): the engine is one bundled file,
// so neither can load a module of ours. `on` and `post` are the host's message port.
const COMMAND_SOURCE = `
const { spawn } = require("node:child_process");
const losslessUtf8 = ${losslessUtf8.toString()};
// Environments come as a base (sent when it changes) and each command's differences from it (see EnvChannel).
let base = {};
on((m) => {
  if (m.base) { base = m.base; return; }
  const { id, file, args, cwd, set, unset, max, lossless, bytes: asBytes, limit } = m;
  const env = Object.assign({}, base, set);
  for (const k of unset) delete env[k];
  let child;
  const out = [], err = [];
  let bytes = 0, over = false, late = false, timer;
  let done = false;
  const finish = (r) => { if (!done) { done = true; clearTimeout(timer); post({ id, ...r }); } };
  try {
    // With a time limit, a group of its own: a script's git, not only the shell, is ended at the limit.
    child = spawn(file, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: !!limit });
  } catch (e) {
    return finish({ exitCode: null, signal: null, stdout: "", stderr: "", startError: String(e && e.message || e) });
  }
  if (limit) timer = setTimeout(() => {
    late = true;
    try { process.kill(-child.pid, "SIGKILL"); } catch { child.kill("SIGKILL"); }
  }, limit);
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
  child.on("close", (code, signal) => late
    ? finish({ exitCode: null, signal, stdout: "", stderr: "it ran past " + limit / 1000 + " s: it was stopped", timedOut: true })
    : over
    ? finish({ exitCode: null, signal, stdout: "", stderr: "its output passed " + max + " bytes: it was stopped" })
    : finish({ exitCode: code, signal, stdout: asBytes ? Buffer.concat(out).toString("latin1") : lossless ? losslessUtf8(Buffer.concat(out)) : Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }));
});
`;

const WORKER_SOURCE = `const { parentPort } = require("node:worker_threads");
const on = (f) => parentPort.on("message", f);
const post = (m) => parentPort.postMessage(m);
${COMMAND_SOURCE}`;

/**
 * The same, in a small helper process of the engine's: a fork copies the page tables of the process that forks, so a
 * start from the engine (100–200 MB resident) costs its thread ~5 ms of CPU and waits on the scheduler for longer under
 * load, where the helper (a bare Node, ~40 MB) forks in ~1 ms (measured: 128 starts from a process 100 MB larger took
 * 4.7 ms of CPU each against 1.1 ms; bench/report.md). It ends when the engine does (its channel closes).
 */
const HELPER_SOURCE = `const on = (f) => process.on("message", f);
const post = (m) => process.send(m);
process.on("disconnect", () => process.exit(0));
${COMMAND_SOURCE}`;

interface CommandHost {
  post(m: unknown): void;
  ref(): void;
  unref(): void;
  close(): void;
}

class CommandThread {
  private worker: CommandHost | null = null;
  /** Commands go to a helper process (useCommandHelper), else to a worker thread. */
  private helper = false;
  private helperFailed = false;
  private seq = 0;
  private readonly waiting = new Map<number, { resolve: (r: CommandResult) => void; reject: (e: Error) => void }>();
  /** The environment base the current host holds (a new host starts without one). */
  private env = new EnvChannel();
  readonly stats = { commands: 0, envEntries: 0, bases: 0 };

  run(file: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
    const w = this.ensure();
    const id = ++this.seq;
    return new Promise<CommandResult>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // Held while a command is out, so a short-lived CLI awaiting one does not exit under it.
      if (this.waiting.size === 1) w.ref();
      const { set, unset } = this.env.diff(opts.env, (b) => w.post({ base: b }));
      this.stats.commands++;
      this.stats.envEntries += Object.keys(set).length + unset.length;
      w.post({
        id,
        file,
        args,
        cwd: opts.cwd,
        set,
        unset,
        max: opts.maxOutputBytes ?? MAX_OUTPUT_BYTES,
        lossless: !!opts.lossless,
        bytes: !!opts.bytes,
        ...(opts.limitMs ? { limit: opts.limitMs } : {}),
      });
    });
  }

  private ensure(): CommandHost {
    if (this.worker) return this.worker;
    const onMessage = (m: Reply) => {
      const p = this.waiting.get(m.id);
      if (!p) return;
      this.waiting.delete(m.id);
      if (!this.waiting.size) host.unref();
      const { id: _id, ...result } = m;
      p.resolve(result);
    };
    const lost = (what: string, why: string) => {
      if (this.worker !== host) return;
      this.worker = null;
      for (const p of this.waiting.values()) p.reject(new Error(`the engine's ${what} ${why}; the command may or may not have run`));
      this.waiting.clear();
    };
    let host: CommandHost;
    this.env = new EnvChannel(() => this.stats.bases++);
    if (this.helper && !this.helperFailed) {
      const child: ChildProcess = spawn(process.execPath, ["-e", HELPER_SOURCE], {
        stdio: ["ignore", "ignore", "ignore", "ipc"],
        // A bare Node (Electron's binary runs as one with this set); the commands get their own environment each.
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ELECTRON_RUN_AS_NODE: "1" },
      });
      host = {
        post: (m) => child.send(m as object),
        ref: () => (child.ref(), child.channel?.ref()),
        unref: () => (child.unref(), child.channel?.unref()),
        close: () => child.connected && child.disconnect(),
      };
      child.on("message", onMessage);
      child.on("error", (e) => {
        // It could not start at all: the thread takes the commands from now on.
        if (!child.pid) this.helperFailed = true;
        lost("command helper", `failed: ${e.message}`);
      });
      child.on("exit", (code, signal) => lost("command helper", `exited (${signal ?? code})`));
    } else {
      const w = new Worker(WORKER_SOURCE, { eval: true, name: "ocw commands" });
      host = { post: (m) => w.postMessage(m), ref: () => w.ref(), unref: () => w.unref(), close: () => void w.terminate() };
      w.on("message", onMessage);
      w.on("error", (e) => lost("command thread", `failed: ${e.message}`));
      w.on("exit", (code) => lost("command thread", `exited (${code})`));
    }
    host.unref();
    this.worker = host;
    return host;
  }

  /** Where commands start from next: the helper process or the thread (an idle current one is closed). */
  setHelper(on: boolean): void {
    if (this.helper === on) return;
    this.helper = on;
    const w = this.worker;
    if (w && !this.waiting.size) {
      this.worker = null;
      w.close();
    }
  }
}

/**
 * A command's environment over the channel to the command host, as its differences from a base the host already holds:
 * the whole environment (~1.5 KB, ~40 entries) was sent with every command, though the engine's commands share nearly
 * all of it. The base is the first environment sent, and is sent again whenever a command's environment differs from it
 * in more entries than half its size (the commands changed company). The channel keeps order, so a base sent before a
 * command is the one its differences apply to.
 */
class EnvChannel {
  private base: Record<string, string> | null = null;

  constructor(private readonly onBase?: () => void) {}

  /** `env`'s entries (undefined ones are unset) as `set`/`unset` against the base; `sendBase` first when the base changes. */
  diff(env: Record<string, string | undefined>, sendBase: (base: Record<string, string>) => void): { set: Record<string, string>; unset: string[] } {
    let d = this.base ? delta(this.base, env) : null;
    if (!d || Object.keys(d.set).length + d.unset.length > Object.keys(this.base!).length / 2) {
      const whole: Record<string, string> = {};
      for (const [k, v] of Object.entries(env)) if (v !== undefined) whole[k] = v;
      this.base = whole;
      sendBase(whole);
      this.onBase?.();
      d = { set: {}, unset: [] };
    }
    return d;
  }
}

function delta(base: Record<string, string>, env: Record<string, string | undefined>): { set: Record<string, string>; unset: string[] } {
  const set: Record<string, string> = {};
  const unset: string[] = [];
  for (const k in env) {
    const v = env[k];
    if (v !== undefined && base[k] !== v) set[k] = v;
  }
  for (const k in base) if (env[k] === undefined) unset.push(k);
  return { set, unset };
}

const thread = new CommandThread();

/**
 * The engine (a long-lived, large process) starts its commands from a small helper process instead of its own thread;
 * a short-lived CLI keeps the thread (a helper's start would cost it more than it saves).
 */
export function useCommandHelper(on = true): void {
  thread.setHelper(on);
}

/** Runs `file args` to completion off the engine's thread and returns its output; never throws for a failed command. */
export function runCommand(file: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
  return thread.run(file, args, opts);
}

/** What went over the channel to the command host in this process: commands, environment entries with them, bases. */
export function commandChannelStats(): { commands: number; envEntries: number; bases: number } {
  return { ...thread.stats };
}

/** Output as a command line prints it, without its one final newline. */
export function trimFinalNewline(text: string): string {
  return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text;
}
