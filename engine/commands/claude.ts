// CLI commands made for Claude Code (and anyone at a terminal):
//   `ocw wait --until-ask-or-settled [--batch ID | --worker ID]`: blocks until a worker asks or a verdict arrives, prints
//     ONE compact line and exits. Run in the background from Claude Code's Bash tool, its end wakes Claude: a push
//     channel without polling.
//   `ocw gui [--url]`: the dashboard's URL (starting the engine when none runs), without blocking; opens a browser
//     unless --url.
//   `ocw hook session-start|stop`: the plugin's hooks (a one-line summary at session start; unanswered asks before
//     stopping). They never start an engine and stay silent when none runs.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { EngineLock } from "../../shared/api";
import { type PermissionAsk, terminalSafe } from "../../shared/permission";
import { plainName } from "../../shared/wait";
import { isAtRest, pendingAsks, type Worker } from "../../shared/worker";
import { counted } from "../../shared/words";
import { connect, healthy, type EngineClient } from "../api/client";
import { follow } from "../api/follow";
import { ensureEngine, stateDir } from "../api/launcher";
import { readLock } from "../api/lock";
import { OcwError } from "../../shared/errors";
import { CliError, fail } from "./errors";
import { expectId, positiveNumber } from "./hints";

/** The dashboard's address for a running engine (the token in it lets the browser in). */
const guiUrl = (lock: Pick<EngineLock, "port" | "token">) => `http://127.0.0.1:${lock.port}/?token=${lock.token}`;

/**
 * What `ocw gui` hands the browser: a private page (0600, in the state dir) that forwards to the dashboard with the token
 * in the fragment. A program's argv is readable by every local user (`ps`), and so is the browser's when it is started
 * with a URL: the token must never be a command-line argument. The fragment is never sent to the engine (no server log
 * has it) and the page takes it out of the address bar at once.
 */
function guiLauncher(dir: string, lock: Pick<EngineLock, "port" | "token">): string {
  const target = `http://127.0.0.1:${lock.port}/#token=${encodeURIComponent(lock.token)}`;
  const attr = target.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  const html =
    `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>opencode-worker</title>\n` +
    `<meta http-equiv="refresh" content="0;url=${attr}">\n` +
    `<script>location.replace(${JSON.stringify(target).replace(/</g, "\\u003c")})</script>\n` +
    `<p><a href="${attr}">Open the opencode-worker dashboard</a></p>\n`;
  const file = path.join(dir, "gui.html");
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, html, { mode: 0o600 });
  chmodSync(tmp, 0o600); // a leftover temp file of another mode keeps it on write
  renameSync(tmp, file);
  return file;
}

/** The repository root of `dir` (resolved), or `dir` itself when git cannot say. */
function repoRootOf(dir: string): string {
  try {
    return path.resolve(
      execFileSync("git", ["-C", dir, "rev-parse", "--show-toplevel"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 5000 }).trim() || dir,
    );
  } catch {
    return path.resolve(dir);
  }
}

const inRepo = (w: Worker, root: string) => {
  const d = path.resolve(w.spec.directory);
  return path.resolve(w.repo) === root || d === root || d.startsWith(root + path.sep);
};

/** The running engine, or null (never starts one). */
async function runningEngine(): Promise<EngineLock | null> {
  const lock = readLock(stateDir());
  return lock && (await healthy(lock)) ? lock : null;
}

/** Worker-written text on one line, control characters made visible, bounded, and marked as such. */
const quoted = (s: string, n = 120) => {
  const one = terminalSafe(s);
  return JSON.stringify(one.length > n ? one.slice(0, n - 1) + "…" : one);
};

/** An ask's tool as Claude reads it: opencode's own names plain, anything else the model chose quoted and labelled. */
const toolWord = (tool: string) => (plainName(tool) ? tool : `a tool named (untrusted) ${quoted(tool, 60)}`);

/** What the Stop hook tells Claude when this repository's workers wait for answers. */
export function stopReason(asks: Pick<PermissionAsk, "workerId" | "tool">[]): string {
  return `${counted(asks.length, "opencode-worker ask")} on this repository ${asks.length === 1 ? "is" : "are"} unanswered (${asks
    .slice(0, 5)
    .map((a) => `${a.workerId} ${toolWord(a.tool)}`)
    .join(", ")}): the workers are blocked. Answer them (pending_approvals, then approve), or tell the person they wait.`;
}

/** The one line `ocw wait` prints. */
function waitLine(event: string, ws: Worker[], batchId?: string): string {
  const asks = ws.flatMap((w) => pendingAsks(w));
  const final = ws.filter((w) => isAtRest(w.state));
  const built = final.filter((w) => w.state === "built").length;
  const of = batchId ? `batch ${batchId}` : ws.length === 1 ? `worker ${ws[0]!.id}` : `${ws.length} workers`;
  return `ocw: ${event} — ${of}: ${counted(asks.length, "ask")} waiting, ${final.length}/${ws.length} settled (${built} built)`;
}

export function registerClaudeCommands(program: Command): void {
  program
    .command("wait")
    .description("block until a worker asks or a verdict arrives, print one line and exit (run it in the background from Claude Code)")
    .option("--until-ask-or-settled", "return on the first ask or the first worker that settles (the default, and only, mode)")
    .option("--batch <batchId>", "watch this batch's workers")
    .option("--worker <workerId>", "watch this worker")
    .option("--timeout <sec>", "give up after this many seconds (default 3600)", positiveNumber())
    .addHelpText("after", "\nExit status: 0 a worker asked or settled (or nothing to wait for), 2 nothing before --timeout, 3 no engine runs or it went away.")
    .action(async (o: { batch?: string; worker?: string; timeout?: number }) => {
      try {
        if (o.batch && o.worker) throw new CliError("give --batch or --worker, not both");
        if (o.batch) expectId(o.batch, "batch", `wait on that worker with \`ocw wait --worker ${o.batch}\``);
        if (o.worker) expectId(o.worker, "worker", `wait on that batch with \`ocw wait --batch ${o.worker}\``);
        const lock = await runningEngine();
        // Exit 3, as when the engine goes away while waiting: 2 means "nothing before --timeout" to whoever waits on this.
        if (!lock) throw new OcwError("unavailable", "no engine is running, so no worker can ask or settle (`ocw gui --url` starts one)");
        const client = connect(lock, "cli:ocw wait");
        let ids: string[];
        let load: (() => Promise<Worker[]>) | undefined;
        if (o.worker) ids = [(await client.workers.get.query({ workerId: o.worker })).id];
        else if (o.batch) {
          ids = (await client.workers.batch.query({ batchId: o.batch })).workerIds;
          load = () => client.workers.list.query({ batchId: o.batch! });
        } else {
          const root = repoRootOf(process.cwd());
          ids = (await client.workers.list.query()).filter((w) => !isAtRest(w.state) && inRepo(w, root)).map((w) => w.id);
          if (!ids.length) {
            console.log(`ocw: nothing to wait for — no unfinished worker on ${root}`);
            return;
          }
        }
        const timeoutSec = o.timeout && o.timeout > 0 ? o.timeout : 3600;
        const start = await snapshot(client, ids, load);
        const finalAtStart = new Set(start.filter((w) => isAtRest(w.state)).map((w) => w.id));
        // The engine going away (Ctrl-C of `ocw serve`, `ocw stop`, a crash) is news too: the event stream would
        // otherwise reconnect until the timeout, and whoever waits on this line (Claude, woken when it ends) never hears.
        const gone = new AbortController();
        let lost: string | null = null;
        const r = await follow(client, ids, {
          load,
          timeoutMs: timeoutSec * 1000,
          signal: gone.signal,
          onConnection: (state, detail) => {
            if (state !== "lost" || lost !== null) return;
            lost = detail || "connection closed";
            gone.abort();
          },
          until: (ws) => [...ws.values()].some((w) => pendingAsks(w).length > 0 || (isAtRest(w.state) && !finalAtStart.has(w.id))),
        });
        if (lost !== null) {
          console.log(
            `ocw: lost the engine (${lost}) — workers it ran are interrupted until it runs again; the next ocw command or tool call starts it (\`ocw gui --url\`), then resume them`,
          );
          process.exitCode = 3;
          return;
        }
        const ws = [...r.workers.values()];
        const ask = ws.flatMap((w) => pendingAsks(w))[0];
        const done = ws.find((w) => isAtRest(w.state) && !finalAtStart.has(w.id));
        const event =
          r.reason === "settled"
            ? "all settled"
            : ask
              ? `${ask.workerId} asks ${toolWord(ask.tool)} (untrusted: ${quoted(askPath(ask.what, r.workers.get(ask.workerId)?.worktree))}); answer with approve {"askId":"${ask.id}"}`
              : done
                ? `${done.id} settled ${done.verdict?.verdict ?? done.state}`
                : `nothing after ${timeoutSec} s`;
        console.log(waitLine(event, ws, o.batch));
        if (r.reason === "timeout") process.exitCode = 2;
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("gui")
    .description("the dashboard's URL (starts the engine when none runs); opens it in a browser unless --url")
    .option("--url", "only print the URL (does not block, opens nothing)")
    .action(async (o: { url?: boolean }) => {
      try {
        const lock = await ensureEngine(stateDir());
        console.log(guiUrl(lock));
        // Never the URL itself: its token would be in the argv of the opener and of the browser, which `ps` shows.
        if (o.url) return;
        const why = await openBrowser(guiLauncher(stateDir(), lock), stateDir());
        if (why) console.error(noBrowserLine(why));
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("hook")
    .description("Claude Code plugin hooks: session-start (one-line summary of this repository's workers) and stop (unanswered asks)")
    .argument("<event>", "session-start | stop")
    .action(async (event: string) => {
      // A hook must never break the session: any failure is silence. An event no hook has is a mistake in the
      // hook's configuration, said at once (it was said only when the engine ran and the repository had workers).
      if (event !== "session-start" && event !== "stop") fail(new CliError(`unknown hook "${event}": session-start or stop`));
      try {
        const input = readHookInput();
        const lock = await runningEngine();
        if (!lock) return;
        const root = repoRootOf(typeof input.cwd === "string" && input.cwd ? input.cwd : process.cwd());
        const ws = (await connect(lock, "cli:ocw hook").workers.list.query()).filter((w) => inRepo(w, root));
        if (!ws.length) return;
        if (event === "session-start") {
          const line = sessionSummary(ws, lastSeen(root));
          markSeen(root);
          if (line) console.log(line);
        } else if (event === "stop") {
          const asks = ws.flatMap((w) => pendingAsks(w));
          // Claude Code sets stop_hook_active when it is already continuing because of this hook: never loop.
          if (!asks.length || input.stop_hook_active) return;
          console.log(JSON.stringify({ decision: "block", reason: stopReason(asks) }));
        } else throw new CliError(`unknown hook "${event}": session-start or stop`);
      } catch (err) {
        if (err instanceof CliError) fail(err);
      }
    });
}

async function snapshot(client: EngineClient, ids: string[], load?: () => Promise<Worker[]>): Promise<Worker[]> {
  if (load) return (await load()).filter((w) => ids.includes(w.id));
  return Promise.all(ids.map((id) => client.workers.get.query({ workerId: id })));
}

/** A path in a worker's private workspace, written relative to the repository. */
function askPath(what: string, worktree: string | null | undefined): string {
  if (!worktree || !path.isAbsolute(what)) return what;
  const root = path.resolve(worktree);
  const abs = path.resolve(what);
  return abs.startsWith(root + path.sep) ? path.relative(root, abs).split(path.sep).join("/") : what;
}

/** "opencode-worker: on this repository, 2 workers wait for an answer, 1 running; since the last session 3 finished (2 built, 1 honest-failure)". */
function sessionSummary(ws: Worker[], since: number): string | null {
  const waiting = ws.filter((w) => pendingAsks(w).length > 0);
  const running = ws.filter((w) => !isAtRest(w.state) && !pendingAsks(w).length);
  const finished = ws.filter((w) => isAtRest(w.state) && (w.endedAt ?? 0) > since);
  if (!waiting.length && !running.length && !finished.length) return null;
  const parts: string[] = [];
  if (waiting.length) parts.push(`${counted(waiting.length, "worker")} ${waiting.length === 1 ? "waits" : "wait"} for an answer`);
  if (running.length) parts.push(`${running.length} running`);
  if (finished.length) {
    const by: Record<string, number> = {};
    for (const w of finished) by[w.verdict?.verdict ?? w.state] = (by[w.verdict?.verdict ?? w.state] ?? 0) + 1;
    parts.push(
      `${finished.length} finished since the last session (${Object.entries(by)
        .map(([k, n]) => `${n} ${k}`)
        .join(", ")})`,
    );
  }
  return `opencode-worker on this repository: ${parts.join("; ")} — the workers tool {directory} lists them.`;
}

const seenFile = () => path.join(stateDir(), "claude-sessions.json");
function lastSeen(root: string): number {
  try {
    return (JSON.parse(readFileSync(seenFile(), "utf8")) as Record<string, number>)[root] ?? 0;
  } catch {
    return 0;
  }
}
function markSeen(root: string): void {
  let all: Record<string, number> = {};
  try {
    if (existsSync(seenFile())) all = JSON.parse(readFileSync(seenFile(), "utf8"));
  } catch {}
  all[root] = Date.now();
  try {
    writeFileSync(seenFile(), JSON.stringify(all));
  } catch {}
}

/** The JSON Claude Code writes to a hook's stdin ({} when there is none, e.g. run by hand). */
function readHookInput(): Record<string, unknown> {
  if (process.stdin.isTTY) return {};
  try {
    const text = readFileSync(0, "utf8");
    return text.trim() ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Hands the launcher page to the desktop's opener (xdg-open, open, start) and waits a moment for its verdict: where no
 * browser can open (a headless box: xdg-open exits 3 "no method available", 4 when the opener failed) it said nothing,
 * and the person waited for a window. An opener still running after `waitMs` is taken as a browser that opened (xdg-open
 * runs some browsers in the foreground): it is left to run. Its stderr goes to a file, never a pipe: a pipe whose reader
 * exits would kill a browser writing to it.
 */
async function openBrowser(file: string, dir: string, waitMs = 3000): Promise<string | null> {
  // file: a local file's path (guiLauncher), never a URL with a secret in it
  const [cmd, args] =
    process.platform === "darwin" ? ["open", [file]] : process.platform === "win32" ? ["cmd", ["/c", "start", "", file]] : ["xdg-open", [file]];
  const errFile = path.join(dir, "gui-open.err");
  let fd: number | "ignore" = "ignore";
  try {
    fd = openSync(errFile, "w", 0o600);
  } catch {}
  try {
    const child = spawn(cmd, args as string[], { detached: true, stdio: ["ignore", "ignore", fd] });
    const ended = await new Promise<{ code: number | null; error?: string } | null>((resolve) => {
      const t = setTimeout(() => resolve(null), waitMs);
      child.once(
        "error",
        (e) => (clearTimeout(t), resolve({ code: null, error: (e as NodeJS.ErrnoException).code === "ENOENT" ? `${cmd} is not installed` : e.message })),
      );
      child.once("exit", (code) => (clearTimeout(t), resolve({ code })));
    });
    child.unref();
    if (!ended) return null;
    if (ended.error) return ended.error;
    const said = typeof fd === "number" ? readFileSync(errFile, "utf8") : "";
    const last = said
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1);
    if (ended.code !== 0) return `${cmd} exited ${ended.code}${last ? `: ${terminalSafe(last).slice(0, 200)}` : ""}`;
    // an opener that says it could not, with exit 0 (some do)
    if (last && /no method available|could not|couldn't|failed to|unable to/i.test(said)) return `${cmd}: ${terminalSafe(last).slice(0, 200)}`;
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    if (typeof fd === "number") closeSync(fd);
  }
}

/** The line `ocw gui` prints when no browser opened: why, and to open the URL by hand. */
const noBrowserLine = (why: string) => `ocw: no browser opened (${why}): open the URL above in a browser by hand`;
