import { Command } from "commander";
import { VERSION } from "../shared/api";
import { releaseOf, selfCommand } from "./api/launcher";
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
import { registerAskCommands } from "./commands/asks";
import { fail } from "./commands/errors";
import { HELP_AFTER, unknownCommandHint } from "./commands/hints";

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
  // The release this install is (its plugin.json), else the package's version.
  .version(releaseOf(selfCommand().bundle) ?? VERSION)
  .showHelpAfterError("(run `ocw --help` for usage)")
  .exitOverride((err) => {
    if (err.code === "commander.helpDisplayed" || err.code === "commander.version") process.exit(0);
    // `ocw help [COMMAND]` asked for help: 0 (it was 2). Help shown for a missing subcommand (`ocw`, `ocw target`) stays 2.
    if (err.code === "commander.help" && err.exitCode === 0) process.exit(0);
    process.exit(2);
  });

program.addHelpText("after", HELP_AFTER);
// A word from other tools ("status", "approve", "ps") is answered with the command that does it; anything else gets
// commander's spelling guess ("lsit" → list).
program.on("command:*", (operands: string[]) => {
  const word = operands[0] ?? "";
  const hint = unknownCommandHint(word);
  if (hint) program.error(`error: unknown command '${word}'\n(${hint})`, { code: "commander.unknownCommand" });
  (program as unknown as { unknownCommand(): void }).unknownCommand();
});

registerServeCommands(program);
registerGrantsCommand(program);
registerHousekeepingCommands(program);
registerWorkerCommands(program);
registerRunCommand(program);
registerAskCommands(program);
registerGradeCommand(program);
registerMcpCommand(program);
registerClaudeCommands(program);
registerDeployCommand(program);
registerModelSetupCommands(program, { registerServingSupervisor });

// A usage error names the command's own help (`ocw show --help`), not the list of every command.
const helpHints = (cmd: Command, path: string): void => {
  for (const sub of cmd.commands) {
    const p = `${path} ${sub.name()}`;
    sub.showHelpAfterError(`(run \`${p} --help\` for usage)`);
    helpHints(sub, p);
  }
};
helpHints(program, "ocw");

// `ocw help lsit` printed every command on stderr (exit 2) without a word about "lsit": it reads as `ocw lsit`, so
// the unknown command is named, with its guess.
const [first, second] = process.argv.slice(2);
if (first === "help" && second && !second.startsWith("-") && !program.commands.some((c) => c.name() === second || c.aliases().includes(second)))
  process.argv.splice(2, 1);

// Whatever a command did not catch itself is one line, said as what it is (its stack with OCW_DEBUG=1), never Node's
// stack trace of an unhandled rejection.
await program.parseAsync(process.argv).catch(fail);
