import { appendFileSync } from "node:fs";
import path from "node:path";
import { Option, type Command } from "commander";
import type { EngineLock } from "../../shared/api";
import { connect, healthy } from "../api/client";
import { hostEngine, StateDirTaken, type HostedEngine } from "../api/host";
import { waitForEngine } from "../api/launcher";
import { readLock } from "../api/lock";
import { ACTIVATE, superviseEngine } from "../api/supervisor";
import { stateDir } from "../store/paths";

export function registerServeCommands(program: Command): void {
  program
    .command("serve")
    .description("start the engine (or attach to the running one) and print the browser UI's URL; stays in the foreground")
    .option("--port <n>", "port for the control API and UI (default: a free one)", (v) => Number(v))
    .option("--background", "run without printing, restarted when it dies (how clients start the engine)")
    .option("--no-sandbox", "run workers without the OS sandbox: they can then read your files and secrets (only where no sandbox is available)")
    .addOption(new Option("--supervised", "the engine process under a --background supervisor").hideHelp())
    .addOption(new Option("--standby", "load, then wait for the supervisor to make this the engine").hideHelp())
    .action(async (o: { port?: number; background?: boolean; supervised?: boolean; standby?: boolean; sandbox?: boolean }) => {
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
        console.error(`ocw: attached to the engine already running (pid ${lock.pid}); Ctrl-C detaches, \`ocw stop\` stops it`);
        await new Promise<void>((resolve) => {
          const t = setInterval(() => readLock(dir)?.instanceId !== lock.instanceId && (clearInterval(t), resolve()), 1000);
          process.once("SIGINT", () => (clearInterval(t), resolve()));
        });
      };
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
        hosted = await hostEngine({ stateDir: dir, port: o.port, log, ...(o.supervised ? { supervisorPid: process.ppid } : {}) });
      } catch (err) {
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
      const stop = () => void hosted.close().then(() => process.exit(0));
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
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
      await connect(lock).shutdown.mutate().catch(() => undefined);
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && readLock(dir)) await new Promise((r) => setTimeout(r, 100));
      console.error(readLock(dir) ? `ocw: the engine (pid ${lock.pid}) did not stop in 15 s` : "ocw: engine stopped");
    });
}
