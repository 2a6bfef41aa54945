import { InvalidArgumentError } from "commander";
import { CliError } from "./errors";

/**
 * What a newcomer types that is not an `ocw` command, and where it lives instead. Commander's own guess goes by spelling
 * alone ("status" → setup, "ps" → push): a word from other tools is answered with the command that does it.
 */
const OTHER_WORDS: Record<string, string> = {
  status: "`ocw list` lists the workers and their states, `ocw show ID` one of them; `ocw doctor` the hardware and model servers",
  ps: "`ocw list` lists the workers and their states",
  ls: "`ocw list` lists the workers and their states",
  workers: "`ocw list` lists the workers and their states",
  worker: "`ocw show ID` shows one worker, `ocw list` all of them",
  answer: "`ocw asks` lists the asks workers wait on; `ocw approve ASK_ID` allows one once (--always, --reject)",
  reject: "`ocw approve ASK_ID --reject` refuses an ask (`ocw asks` lists them)",
  deny: "`ocw approve ASK_ID --reject` refuses an ask (`ocw asks` lists them)",
  allow: "`ocw approve ASK_ID` allows an ask once, --always for its worker (`ocw asks` lists them)",
  ask: "`ocw asks` lists the asks workers wait on; `ocw approve ASK_ID` answers one",
  // The GUI's screen names, typed as commands.
  approvals: "`ocw asks` lists the asks workers wait on (the GUI's Approvals); `ocw approve ASK_ID` answers one",
  inbox: "`ocw asks` lists the asks workers wait on; `ocw approve ASK_ID` answers one",
  pending: "`ocw asks` lists the asks workers wait on; `ocw approve ASK_ID` answers one",
  grades: "`ocw list` lists the workers with their verdicts, `ocw show ID` one verdict in full (`ocw grade` runs the model ladder against a target)",
  verdict: "`ocw show ID` shows a worker's verdict: its checks, its claim, its flagged files",
  start: "`ocw serve` starts the engine, `ocw run` a worker",
  kill: "`ocw cancel ID` stops a worker, `ocw stop` the engine",
  rm: "`ocw discard ID` removes a finished worker's workspace and branch",
  delete: "`ocw discard ID` removes a finished worker's workspace and branch",
  remove: "`ocw discard ID` removes a finished worker's workspace and branch; `ocw target remove ID` a target",
  log: "`ocw logs ID` prints a worker's transcript (`--follow` keeps printing)",
  tail: "`ocw logs ID --follow` prints a worker's transcript as it grows",
  diff: "`ocw show ID` shows a built worker's change (its diff stat); `ocw publish ID` puts it in your repository as a branch to diff with git",
  engine: "`ocw serve` runs the engine in the foreground, `ocw stop` stops it",
  version: "`ocw --version` prints the version",
};

/** The command for a word that is not one of ocw's, or null (commander then guesses by spelling). */
export function unknownCommandHint(word: string): string | null {
  return Object.hasOwn(OTHER_WORDS, word.toLowerCase()) ? OTHER_WORDS[word.toLowerCase()]! : null;
}

type IdKind = "worker" | "batch";
const PREFIX: Record<string, string> = { "w-": "a worker", "b-": "a batch", "a-": "an attempts group" };

/**
 * A worker id where a batch id belongs (or the other way round) is refused before the engine is asked, with the
 * command that takes it; the engine would only say "unknown batch". Ids of no known shape are left to the engine.
 * `instead`: what to run with this id.
 */
export function expectId(id: string, wants: IdKind, instead?: string): void {
  const kind = Object.entries(PREFIX).find(([p]) => id.startsWith(p))?.[1];
  if (!kind || kind === `a ${wants}`) return;
  throw new CliError(`"${id}" is ${kind} id, not ${wants === "worker" ? "a worker id (w-…)" : "a batch id (b-…)"}${instead ? `: ${instead}` : ""}`);
}

/** `--timeout`-like values: a positive number, else commander's one-line "option … is invalid" (exit 2). */
export function positiveNumber(): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!v.trim() || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("It must be a positive number of seconds.");
    return n;
  };
}

/**
 * `--port`: a whole number from 1 to 65535 (it was `Number(v)`: "abc" went on as NaN). Below 1024 is taken: root may open
 * it, and the listen refusal (EACCES) says why for anyone else (serve.ts listenProblem).
 */
export function portNumber(v: string): number {
  const n = Number(v);
  // what is wrong with it, then what to do: "It must be a port number from 1 to 65535" left --port 0 (a free port
  // elsewhere) and 1..1023 (which only root may open) unexplained
  const fix = "give a port from 1024 to 65535 (e.g. --port 8080), or leave --port out for a free one.";
  if (!/^\d+$/.test(v.trim())) throw new InvalidArgumentError(`It is not a whole number: ${fix}`);
  if (n === 0) throw new InvalidArgumentError(`Port 0 is not a port to listen on (other tools read it as "any free port"): ${fix}`);
  if (n > 65535) throw new InvalidArgumentError(`Ports end at 65535: ${fix}`);
  return n;
}

/** Said after `ocw --help`: the first commands to run, and what the exit status means. */
export const HELP_AFTER = `
Examples:
  ocw setup --capture http://127.0.0.1:8080/v1          use a model server you already run (or: ocw fit, ocw setup --runtime llama.cpp)
  ocw run --dir ~/src/repo --task "Add a --verbose flag to cli.js" --check "node --test" --scope "cli.js"
  ocw list                                             the workers, their states and verdicts
  ocw show ID · ocw logs ID --follow · ocw merge ID     one worker: its verdict card, its transcript, landing it
  ocw COMMAND --help                                   each command's options

Exit status:
  0    done (ocw run, continue, resume: only when the verdict is built)
  1    refused by the state of things (a merge conflict, not finished yet), or the worker was not built
  2    bad input: an unknown command, flag, id or path (the message says which); ocw wait: nothing before --timeout
  3    something needed is unavailable (the engine went away, a model server, the sandbox); setup: underpowered
  130  interrupted (Ctrl-C); the worker goes on in the engine
  Errors and progress go to stderr; stdout carries the result (with --json, only the JSON).
`;
