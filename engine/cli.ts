import { Command } from "commander";
import { VERSION } from "../shared/api";
import { registerDeployCommand } from "./commands/deploy";
import { registerGradeCommand } from "./commands/grade";
import { registerRunCommand } from "./commands/run";
import { registerMcpCommand } from "./mcp/command";
import { registerServeCommands, registerServingSupervisor } from "./commands/serve";
import { registerGrantsCommand } from "./commands/grants";
import { registerHousekeepingCommands } from "./commands/housekeeping";
import { registerWorkerCommands } from "./commands/workers";
import { registerClaudeCommands } from "./commands/claude";
import { registerModelSetupCommands } from "./commands/model-setup";

// `ocw logs ID | head -1`: a reader that went away ends the command quietly (it was an EPIPE stack trace). Not for the
// engine (`serve`) or the MCP bridge, whose stdout is not a person's pager.
if (!["serve", "mcp"].includes(process.argv[2] ?? ""))
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(141); // as a program that SIGPIPE ended: 128 + 13, no stack trace
    throw err;
  });

const program = new Command();
program
  .name("ocw")
  .description("opencode-worker: hand scoped coding tasks to OpenCode workers on a local or API model, and grade them honestly")
  .version(VERSION)
  .showHelpAfterError("(run `ocw --help` for usage)")
  .exitOverride((err) => {
    if (err.code === "commander.helpDisplayed" || err.code === "commander.version") process.exit(0);
    process.exit(2);
  });

registerServeCommands(program);
registerGrantsCommand(program);
registerHousekeepingCommands(program);
registerWorkerCommands(program);
registerRunCommand(program);
registerGradeCommand(program);
registerMcpCommand(program);
registerClaudeCommands(program);
registerDeployCommand(program);
registerModelSetupCommands(program, { registerServingSupervisor });

await program.parseAsync(process.argv);
