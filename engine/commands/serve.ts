import { appendFileSync } from "node:fs";
import path from "node:path";
import { Option, type Command } from "commander";
import type { EngineLock } from "../../shared/api";
import type { DecidedBy } from "../../shared/permission";
import { connect, healthy } from "../api/client";
import { hostEngine, StateDirTaken, superviseServing, type HostedEngine } from "../api/host";
import { ensureEngine, waitForEngine, stateDir } from "../api/launcher";
import { alive, currentOwner, readLock, supervisorOf } from "../api/lock";
import { ACTIVATE, superviseEngine } from "../api/supervisor";
import { portNumber } from "./hints";

export function registerServeCommands(program: Command): void {
  program
    .command("serve")
    .description("start the engine (or attach to the running one) and print the browser UI's URL; stays in the foreground")
    .option("--port <n>", "port for the control API and UI (default: a free one)", portNumber)
    .option("--background", "run without printing, restarted when it dies (how clients start the engine)")
    .option("--supervise", "start the engine as a client does (detached, under its supervisor) or attach to it; print its URL; Ctrl-C detaches")
    .option("--no-sandbox", "run workers without the OS sandbox: they can then read your files and secrets (only where no sandbox is available)")
    .addOption(new Option("--supervised", "the engine process under a --background supervisor").hideHelp())
    .addOption(new Option("--standby", "load, then wait for the supervisor to make this the engine").hideHelp())
    .action(async (o: { port?: number; background?: boolean; supervise?: boolean; supervised?: boolean; standby?: boolean; sandbox?: boolean }) => {
      // The engine (and a supervised restart of it) reads the opt-out from its environment.
      if (o.sandbox === false) process.env.OCW_NO_SANDBOX = "1";
      const dir = stateDir();
      if (o.standby) {
        // Dies with its supervisor (the IPC channel closes); otherwise waits to take over.
        process.once("disconnect", () => process.exit(0));
        await new Promise<void>((resolve) => process.on("message", (m) => m === ACTIVATE && resolve()));
      }
      const attach = async (lock: EngineLock) => {
        console.log(`http://127.0.0.1:${lock.port}/?token=${lock.token}`);
        const ignored = portIgnored(o.port, lock.port);
        if (ignored) console.error(`ocw: ${ignored}`);
        console.error(`ocw: attached to the engine already running (pid ${lock.pid}); Ctrl-C detaches, \`ocw stop\` stops it`);
        await new Promise<void>((resolve) => {
          const t = setInterval(() => {
            const now = readLock(dir);
            if (now?.instanceId === lock.instanceId) return;
            clearInterval(t);
            // it ended without a word when the engine was stopped (`ocw stop` in another shell)
            console.error(
              now
                ? `ocw: the engine was restarted (pid ${now.pid}); this ocw serve ends: \`ocw serve\` attaches to the new one`
                : `ocw: the engine (pid ${lock.pid}) stopped (\`ocw stop\` or another client); this ocw serve ends`,
            );
            resolve();
          }, 1000);
          process.once("SIGINT", () => (clearInterval(t), resolve()));
        });
      };
      if (o.supervise && !o.background) return superviseAndFollow(dir, o.port);
      const running = readLock(dir);
      if (running && !o.supervised && (await healthy(running))) {
        if (o.background) return; // a client started a supervisor, but the engine is up already
        return attach(running);
      }
      if (o.background && !o.supervised) {
        const note = (line: string) => appendFileSync(path.join(dir, "supervisor.log"), `${new Date().toISOString()} ${line}\n`);
        process.exit(await superviseEngine(dir, note));
      }
      const log = o.background ? () => {} : (l: string) => console.error(l);
      let hosted: HostedEngine;
      try {
        hosted = await hostEngine({
          stateDir: dir,
          port: o.port,
          log,
          ...(o.supervised ? { supervisorPid: process.ppid } : {}),
          // in a terminal: said before it exits (it ended without a word when another shell ran `ocw stop`)
          ...(o.background ? {} : { onStopped: (by: DecidedBy) => console.error(`ocw: ${stoppedBy(by)}`) }),
        });
      } catch (err) {
        const problem = o.background || o.supervised ? null : listenProblem(err, o.port);
        if (problem) {
          console.error(`ocw: ${problem}`);
          process.exit(2);
        }
        if (!(err instanceof StateDirTaken)) throw err;
        // Another engine claimed the state dir first (several `ocw serve` at once): use that one.
        if (o.supervised) process.exit(0);
        const lock = await waitForEngine(dir, 30_000);
        if (!lock) {
          console.error(`ocw: ${err.message}; it did not answer within 30 s`);
          process.exit(1);
        }
        return attach(lock);
      }
      if (!o.background) {
        console.log(`${hosted.url}/?token=${hosted.token}`);
        console.error(`ocw: engine running (pid ${process.pid}, state ${dir}); open the URL above in a browser. Ctrl-C stops it.`);
      }
      const stop = (signal: string) => () =>
        void hosted.close(signal === "SIGINT" ? "Ctrl-C in `ocw serve`" : `${signal} to \`ocw serve\``).then(() => process.exit(0));
      process.once("SIGINT", stop("SIGINT"));
      process.once("SIGTERM", stop("SIGTERM"));
    });

  program
    .command("stop")
    .description("stop the running engine (workers that are running become interrupted and can be resumed)")
    .action(async () => {
      const dir = stateDir();
      const lock = readLock(dir);
      if (!lock) {
        console.error("ocw: no engine is running");
        return;
      }
      await connect(lock, "cli:ocw stop")
        .shutdown.mutate()
        .catch(() => undefined);
      // Stopped once it let go of the state dir, not when its lock went (its first step): a command run right after
      // then starts the next engine at once instead of waiting on this one's close.
      const holding = () => readLock(dir) !== null || currentOwner(dir)?.instanceId === lock.instanceId;
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && holding()) await new Promise((r) => setTimeout(r, 100));
      console.error(holding() ? `ocw: the engine (pid ${lock.pid}) did not stop in 15 s` : "ocw: engine stopped");
    });
}

/**
 * Why the engine could not listen on the port `ocw serve --port N` named, in words with what to do (it was Node's stack
 * trace of EADDRINUSE), or null for any other failure.
 */
export function listenProblem(err: unknown, port: number | undefined): string | null {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = port === undefined ? "the port chosen" : `port ${port}`;
  if (code === "EADDRINUSE") return `${where} on 127.0.0.1 is already in use by another program: pick another --port, or leave --port out for a free one`;
  if (code === "EACCES")
    return `${where} on 127.0.0.1 may not be opened by this user (ports below 1024 need root privileges): pick one from 1024 to 65535, or leave --port out for a free one`;
  return null;
}

/** The line a foreground `ocw serve` prints when another client stopped its engine: who asked, in words. */
export function stoppedBy(by: DecidedBy): string {
  if (by.kind === "cli" && by.name === "ocw stop") return "engine stopped (ocw stop from another client)";
  if (by.kind === "mcp") return "engine stopped (a stop request from an MCP client)";
  return `engine stopped (a stop request from ${by.kind === "cli" ? "another ocw command" : "another client"})`;
}

/** `ocw serve --port N` while the engine already runs on another port: said, not silently another URL. */
export function portIgnored(asked: number | undefined, running: number): string | null {
  if (asked === undefined || asked === running) return null;
  return `--port ${asked} is ignored: the engine already runs on port ${running} (its URL above); to move it, \`ocw stop\`, then \`ocw serve --port ${asked}\``;
}

/**
 * `ocw serve --supervise` (what `npm start` runs where the desktop app cannot start): the engine as every client
 * starts it — detached, under its supervisor, so kill -9 brings it back on the same port and token — and this
 * process only prints its URL and follows it: a restart is reported, Ctrl-C detaches, `ocw stop` ends both.
 */
async function superviseAndFollow(dir: string, port?: number): Promise<void> {
  if (port !== undefined) console.error("ocw: --port is ignored with --supervise: the engine takes back the port it had");
  let lock: EngineLock;
  try {
    lock = await ensureEngine(dir, { timeoutMs: 30_000 });
  } catch (err) {
    console.error(`ocw: ${(err as Error).message}`);
    process.exit(1);
  }
  console.log(`http://127.0.0.1:${lock.port}/?token=${lock.token}`);
  console.error(
    `ocw: engine running under its supervisor (pid ${lock.pid}, state ${dir}); open the URL above in a browser. Ctrl-C detaches (the engine keeps running), \`ocw stop\` stops it.`,
  );
  let current = lock;
  let goneSince: number | null = null;
  await new Promise<void>((resolve) => {
    const t = setInterval(() => {
      const now = readLock(dir);
      if (now && now.instanceId !== current.instanceId) {
        console.error(
          `ocw: the engine was restarted by its supervisor (pid ${now.pid}); ${now.port === current.port && now.token === current.token ? "same URL, open tabs reconnect" : `new URL: http://127.0.0.1:${now.port}/?token=${now.token}`}`,
        );
        current = now;
      }
      const sup = supervisorOf(current);
      if (now || (sup && alive(sup))) goneSince = null;
      // Neither an engine nor its supervisor for 2 s (a restart takes half a second): stopped for good.
      else if ((goneSince ??= Date.now()) < Date.now() - 2_000) {
        console.error("ocw: the engine stopped");
        clearInterval(t);
        resolve();
      }
    }, 500);
    process.once("SIGINT", () => (clearInterval(t), resolve()));
    process.once("SIGTERM", () => (clearInterval(t), resolve()));
  });
}

/** `ocw serving supervise --target ID` (hidden): runs a recorded model server under its supervisor, as the engine starts it. */
export function registerServingSupervisor(serving: Command): void {
  serving
    .command("supervise", { hidden: true })
    .requiredOption("--target <id>", "target whose recorded server to run")
    .action(async (opts: { target: string }) => {
      try {
        process.exitCode = await superviseServing(opts.target);
      } catch (e) {
        process.stderr.write(`ocw: ${(e as Error).message.split("\n")[0]}\n`);
        process.exitCode = 2;
      }
    });
}
