import type { Command } from "commander";
import { connect } from "../api/client";
import { hostEngine } from "../api/host";
import { readLock } from "../api/lock";
import { stateDir } from "../store/paths";

export function registerServeCommands(program: Command): void {
  program
    .command("serve")
    .description("start the engine (or attach to the running one) and print the browser UI's URL; stays in the foreground")
    .option("--port <n>", "port for the control API and UI (default: a free one)", (v) => Number(v))
    .option("--background", "run without printing (used when a client starts the engine)")
    .action(async (o: { port?: number; background?: boolean }) => {
      const dir = stateDir();
      const lock = readLock(dir);
      if (lock) {
        console.log(`http://127.0.0.1:${lock.port}/?token=${lock.token}`);
        console.error(`ocw: attached to the engine already running (pid ${lock.pid}); Ctrl-C detaches, \`ocw stop\` stops it`);
        await new Promise<void>((resolve) => {
          const t = setInterval(() => !readLock(dir) && (clearInterval(t), resolve()), 1000);
          process.once("SIGINT", () => (clearInterval(t), resolve()));
        });
        return;
      }
      const log = o.background ? () => {} : (l: string) => console.error(l);
      const hosted = await hostEngine({ stateDir: dir, port: o.port, log });
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
