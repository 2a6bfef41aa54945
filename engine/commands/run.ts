import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import type { Command } from "commander";
import { BatchFile, BatchName, type BatchSummary, type IntegrationResult, type IntegrationSpec } from "../../shared/batch";
import type { BatchTaskInput } from "../../shared/api";
import { claimWords, outcomeWord } from "../../shared/vocabulary";
import { attemptGroup, MAX_ATTEMPTS, type AttemptGroup } from "../../shared/attempts";
import type { CheckSpec } from "../../shared/check";
import type { EngineEvent } from "../../shared/events";
import { baselineWarning, type Verdict } from "../../shared/verdict";
import { askView, diffChangesNothing, QUESTIONS_SHOWN, questionsView, TOO_MANY_QUESTIONS, UNCHANGED_DIFF } from "../../shared/ask-view";
import type { DecidedBy, DecisionKind, PermissionAsk } from "../../shared/permission";
import { jsonForTerminal, showUntrusted, showUntrustedBlock } from "../../shared/untrusted";
import { toolWord } from "../../shared/wait";
import { isAtRest, pendingAsks, type Worker, type WorkerEvent, type WorkerSpecInput } from "../../shared/worker";
import type { EngineClient } from "../api/client";
import { follow, nextEvent } from "../api/follow";
import { askWhat } from "../mcp/format";
import { uncommitted } from "./uncommitted";
import { CliError, fail, unattendedDecision } from "./errors";
import { expectId } from "./hints";
import { connectWithTarget } from "./target-flags";
import { counted } from "../../shared/words";

interface RunOptions {
  dir?: string;
  task?: string;
  check: string[];
  heldBack?: string;
  scope: string[];
  protect: string[];
  endpoint?: string;
  model?: string;
  apiKeyEnv?: string;
  approve: string;
  timeout?: number;
  batch?: string;
  json?: boolean;
  attempts?: number;
  target: string[];
  allAttempts?: boolean;
  fixRounds?: number;
  name?: string;
}

const collect = (v: string, prev: string[]) => [...prev, v];

/** What each --approve mode does with the worker's asks (the help said "ask (default: ask on the terminal) | once | …"). */
const APPROVE_HELP =
  "how the worker's asks (edits, commands) are answered: ask = on the terminal, one at a time (y once, a always, n no); once = allow each, once; always = allow each, and what it covers for the rest of the run; reject = refuse each";

export function registerRunCommand(program: Command): void {
  program
    .command("run")
    .description("run one task (or a batch) on a worker, grade it with held-back checks, exit 0 only if built")
    .option("--dir <dir>", "the git repository the task works on")
    .option("--task <text>", "what the worker should do")
    .option("--check <cmd>", "a held-back check command (repeatable); the worker never sees it", collect, [])
    .option(
      "--held-back <dir>",
      "a folder of held-back files (keep it outside the repository): copied into the checkout for the --check commands at grading only",
    )
    .option("--scope <glob>", "files the worker may change, relative to --dir (one outside it as `cd` reaches it: ../b/**) (repeatable)", collect, [])
    .option("--protect <glob>", "files the worker must not change, e.g. tests (repeatable)", collect, [])
    .option("--endpoint <url>", "an OpenAI-compatible endpoint to use instead of the active target")
    .option("--model <id>", "the model id at --endpoint")
    .option("--api-key-env <var>", "environment variable holding the endpoint's key")
    .option("--approve <mode>", APPROVE_HELP, "ask")
    .option("--timeout <seconds>", "wall-clock budget per worker", (v) => Number(v))
    .option(
      "--attempts <n>",
      `N attempts of the task (default: the number of --target flags); the checks pick the winner, the rest are stopped once one is built (at most ${MAX_ATTEMPTS})`,
      (v) => Number(v),
    )
    .option("--target <id>", "a saved target (repeatable): the attempts use them in turn", collect, [])
    .option("--all-attempts", "let every attempt run to its verdict (nothing is stopped when one is built)")
    .option(
      "--batch <file>",
      'a JSON file: [{task, dir, checks, scope, protect, fixRounds?}, …] or {"tasks": [{id, after, …}], "integration": {"checks": […]}}',
    )
    .option("--fix-rounds <k>", "on honest-failure, send the failing checks' names and output back to the worker, at most K times", (v) => Number(v))
    .option("--name <text>", "with --batch: the batch's name, shown instead of its id (overrides the file's `name`)")
    .option("--json", "print the final result as JSON on stdout")
    .action((o: RunOptions) => runCommand(o).catch(fail));

  program
    .command("continue")
    .description("send a follow-up to a graded worker (built or honest-failure) in its same session: a new round, graded again; exit 0 only if built")
    .argument("<workerId>", "the worker (see `ocw list`)")
    .requiredOption("--message <text>", "what the worker should do next")
    .option("--approve <mode>", APPROVE_HELP, "ask")
    .option("--timeout <seconds>", "wall-clock limit for this round: the worker is stopped when it passes", (v) => Number(v))
    .option("--json", "print the result as JSON on stdout (what `ocw run --json` prints, plus rounds)")
    .action((workerId: string, o: ContinueOptions) => continueCommand(workerId, o).catch(fail));

  program
    .command("resume")
    .description(
      "resume a stopped, interrupted or errored worker in its same session (a graded one takes `ocw continue`), follow it to its verdict; exit 0 only if built",
    )
    .argument("<workerId>", "the worker (see `ocw list`)")
    .option("--message <text>", "a note for the worker as it goes on")
    .option("--approve <mode>", APPROVE_HELP, "ask")
    .option("--timeout <seconds>", "wall-clock limit: the worker is stopped again when it passes", (v) => Number(v))
    .option("--json", "print the result as JSON on stdout (what `ocw run --json` prints)")
    .action((workerId: string, o: ResumeOptions) => resumeCommand(workerId, o).catch(fail));
}

interface ResumeOptions {
  message?: string;
  approve: string;
  timeout?: number;
  json?: boolean;
}

async function resumeCommand(workerId: string, o: ResumeOptions): Promise<void> {
  checkFollowOptions(o);
  expectId(workerId, "worker", `\`ocw show ${workerId}\` lists its workers; \`ocw resume\` takes one of them`);
  const { client } = await connectWithTarget({}, "cli:ocw resume");
  // Refused: one line, its exit status from the engine's code (an unknown id 2; a worker that runs or was graded 1, as
  // the README says of a refusal by the state of things).
  await client.workers.resume.mutate({ workerId, ...(o.message?.trim() ? { message: o.message } : {}) });
  process.stderr.write(`ocw: ${workerId} resumed\n`);
  const { w, timedOut } = await followOne(client, workerId, o, "resume");
  const out = workerResult(w, await client.workers.events.query({ workerId }));
  if (o.json) process.stdout.write(jsonForTerminal(out.json) + "\n");
  else process.stderr.write(out.summary + "\n");
  if (timedOut) {
    process.stderr.write(`ocw: ${workerId} was stopped at --timeout ${o.timeout}s: \`ocw resume ${workerId}\` goes on\n`);
    process.exit(1);
  }
  process.exit(w.state === "built" ? 0 : 1);
}

interface ContinueOptions {
  message: string;
  approve: string;
  timeout?: number;
  json?: boolean;
}

async function continueCommand(workerId: string, o: ContinueOptions): Promise<void> {
  checkFollowOptions(o);
  if (!o.message?.trim()) throw new CliError("--message is empty: say what the worker should do next");
  expectId(workerId, "worker", `\`ocw show ${workerId}\` lists its workers; \`ocw continue\` takes one of them`);
  const { client } = await connectWithTarget({}, "cli:ocw continue");
  // Refused: one line, its exit status from the engine's code (an unknown id 2; a worker still running or not graded 1).
  await client.workers.continue.mutate({ workerId, message: o.message });
  process.stderr.write(`ocw: ${workerId} continues (a new round)\n`);
  const { w, timedOut } = await followOne(client, workerId, o, "continue");
  const out = workerResult(w, await client.workers.events.query({ workerId }));
  const rounds = (w.rounds ?? []).map((r) => ({ round: r.round, verdict: r.verdict, claim: r.claim, honest: r.honest, commit: r.commit }));
  const latest = rounds.at(-1);
  const json = { ...out.json, verdict: latest?.verdict ?? "honest-failure", rounds };
  if (o.json) process.stdout.write(jsonForTerminal(json) + "\n");
  else process.stderr.write(out.summary + "\n" + rounds.map(roundLine).join("\n") + "\n");
  if (timedOut) {
    process.stderr.write(`ocw: ${workerId} was stopped at --timeout ${o.timeout}s: \`ocw resume ${workerId}\` goes on\n`);
    process.exit(1);
  }
  process.exit(json.verdict === "built" && w.state === "built" ? 0 : 1);
}

/**
 * One round of `ocw continue`, in the words every verdict is read in ("failed", "claim false: said built"): it read
 * "honest-failure (claim built)" under a summary that said "failed … claim false: said built".
 */
export function roundLine(r: { round: number; verdict?: Verdict["verdict"] | null; claim?: Verdict["claim"] | null; honest?: boolean | null }): string {
  return `  round ${r.round}: ${r.verdict ? outcomeWord(r.verdict) : "not graded"} (${r.verdict ? claimWords({ claim: r.claim ?? null, honest: !!r.honest }) : r.claim ? `claim ${outcomeWord(r.claim)}` : "no claim"})`;
}

/** The options every following command takes: how asks are answered, and the time it follows before it stops. */
function checkFollowOptions(o: { approve: string; timeout?: number }): void {
  if (!["ask", "once", "always", "reject"].includes(o.approve)) throw new CliError(`--approve must be ask, once, always or reject (got "${o.approve}")`);
  if (o.timeout !== undefined && !(o.timeout > 0)) throw new CliError("--timeout must be a positive number of seconds");
}

/**
 * One worker followed to its end, its asks answered as `--approve` says; past `--timeout` it is stopped, as `ocw run
 * --timeout` does with its wall-clock budget (not left running unattended).
 */
async function followOne(
  client: EngineClient,
  workerId: string,
  o: { approve: string; timeout?: number },
  command: "resume" | "continue",
): Promise<{ w: Worker; timedOut: boolean }> {
  detachOnInterrupt([workerId]);
  const result = await followAndAnswer(client, [workerId], o.approve, o.timeout);
  const w = result.workers.get(workerId)!;
  if (result.reason !== "timeout") return { w, timedOut: false };
  return { w: await client.workers.stop.mutate({ workerId, reason: `ocw ${command} --timeout ${o.timeout}s passed` }).catch(() => w), timedOut: true };
}

/**
 * Ctrl-C while following: the workers are the engine's and go on; say so, and how to follow or stop them, rather than
 * vanishing (exit 130, as an interrupted command does).
 */
function detachOnInterrupt(ids: string[]): void {
  process.once("SIGINT", () => {
    const one = ids.length === 1 ? ids[0]! : "ID";
    process.stderr.write(
      `\nocw: detached: ${ids.join(", ")} ${ids.length === 1 ? "keeps" : "keep"} running in the engine (its asks wait: \`ocw asks\`, \`ocw approve ASK_ID\`, or the GUI) — follow with \`ocw logs ${one} --follow\`, stop with \`ocw cancel ${one}\`\n`,
    );
    process.exit(130);
  });
}

/** What a follower says when the engine goes away (stopped, crashed, restarting) and when it is back. */
const connectionSay = (say: (line: string) => void) => (state: "lost" | "back", detail: string) =>
  say(
    state === "lost"
      ? `ocw: the engine is unreachable (${detail}); waiting for it to come back (\`ocw gui --url\` starts it again; its workers then show as interrupted, to resume)`
      : "ocw: the engine is back",
  );

/** Follows workers until they are final (or the timeout), answering their asks as `--approve` says. */
async function followAndAnswer(
  client: EngineClient,
  ids: string[],
  approve: string,
  timeoutSec?: number,
  batchId?: string,
): Promise<{ workers: Map<string, Worker>; summary: BatchSummary | null; reason: string }> {
  const asker = approve === "ask" ? new TerminalAsker(client) : null;
  // Status lines never land on a prompt's line: while the person is being asked, they wait and follow the answer.
  const say = (line: string) => (asker ? asker.status(line) : process.stderr.write(line + "\n"));
  const answered = new Set<string>();
  const onAsks = (workers: Map<string, Worker>) => {
    // An ask shown at this prompt that the worker's picture says is answered (its event missed: the stream was reset, the
    // engine restarted) leaves the prompt with the answer, as its event would have it do.
    if (asker) settleAnsweredElsewhere(asker, workers);
    for (const w of workers.values()) {
      for (const ask of pendingAsks(w)) {
        if (answered.has(ask.id)) continue;
        answered.add(ask.id);
        // Shown as the GUI and MCP show it: a path in the workspace as the repository's, never the engine's folder.
        const shown = { ...ask, what: askWhat(ask, w.worktree), ...(ask.diff ? { diff: askWhat({ what: ask.diff }, w.worktree) } : {}) };
        if (asker) asker.enqueue(shown);
        else {
          const d = unattendedDecision(ask, approve as DecisionKind);
          say(unattendedAskLine(shown, d.decision, approve === "always"));
          void client.approvals.decide
            .mutate(d)
            .catch((err) => say(`ocw: could not answer ${ask.id}: ${showUntrusted((err as Error).message, { lines: false, max: 2000 })}`));
        }
      }
    }
  };
  const mine = new Set(ids);
  const onEvent = (event: EngineEvent, workers: Map<string, Worker>) => {
    // Only this run's workers: the engine's stream carries every client's workers.
    if (event.type === "worker.created" && batchId && event.batchId === batchId) mine.add(event.workerId);
    // the stream started again from a new picture of the workers: what it missed is read from there
    if (event.type === "reset") return onAsks(workers);
    if (!("workerId" in event) || !mine.has(event.workerId)) return;
    progress(event, say);
    // An ask answered elsewhere (the GUI, Claude over MCP, a policy) leaves the terminal prompt at once.
    if (event.type === "ask.resolved") asker?.resolved(event.askId, event.status, event.decision, event.by, event.message);
    onAsks(workers);
  };
  try {
    if (batchId) return { ...(await followBatch(client, batchId, onEvent, onAsks, say)), reason: "settled" };
    const result = await follow(client, ids, { ...(timeoutSec ? { timeoutMs: timeoutSec * 1000 } : {}), onEvent, onConnection: connectionSay(say) });
    onAsks(result.workers);
    return { workers: result.workers, summary: null, reason: result.reason };
  } finally {
    asker?.close();
  }
}

export function parseBatch(file: string): { tasks: BatchTaskInput[]; integration?: IntegrationSpec; name?: string } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      `cannot read the batch file ${file}: ${code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : (err as Error).message}`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // JSON.parse's own words ("Unexpected token…") say where, not what the file should be. They quote the file's text,
    // line breaks included: an error is printed up to its first line, which cut the message there ("…"nope").
    const why = (err as Error).message.replace(/\s+/g, " ").trim();
    throw new CliError(`the batch file ${file} is not valid JSON (${why}): write a JSON array of tasks, or {"tasks": [...]}`);
  }
  const parsed = BatchFile.safeParse(raw);
  if (!parsed.success) {
    // The union's own message says little: the issue of the form the file is closest to.
    const asObject = raw !== null && typeof raw === "object" && !Array.isArray(raw);
    const again = asObject ? BatchFile.options[1].safeParse(raw) : BatchFile.options[0].safeParse(raw);
    const i = (again.success ? parsed.error : again.error).issues[0]!;
    const at = asObject && i.path[0] === "tasks" ? i.path.slice(1) : asObject ? null : i.path;
    // The file's shape itself is wrong (one task object, a string, "tasks" not a list): what it should hold, not zod's
    // "expected array, received undefined".
    const oneTask = '(one task too: [{"task": …, "dir": …}])';
    if (asObject && !("tasks" in (raw as object)))
      throw new CliError(`batch file ${file}: no "tasks" array: write a JSON array of tasks, or {"tasks": [...]} ${oneTask}`);
    if (asObject && !Array.isArray((raw as { tasks?: unknown }).tasks))
      throw new CliError(`batch file ${file}: "tasks" must be an array of tasks: {"tasks": [{"task": …, "dir": …}, …]}`);
    if (!asObject && !Array.isArray(raw)) throw new CliError(`batch file ${file}: write a JSON array of tasks, or {"tasks": [...]} ${oneTask}`);
    const where =
      at === null
        ? i.path.length
          ? `${i.path.join(".")}: `
          : ""
        : at.length
          ? `task ${Number(at[0]) + 1}${at.length > 1 ? "." + at.slice(1).join(".") : ""}: `
          : "";
    throw new CliError(`batch file ${file}: ${where}${i.message}`);
  }
  const base = path.dirname(path.resolve(file));
  const { tasks, integration, name } = Array.isArray(parsed.data) ? { tasks: parsed.data, integration: undefined, name: undefined } : parsed.data;
  return {
    name,
    tasks: tasks.map(({ dir, after, id, ...t }) => ({
      ...t,
      ...(id ? { id } : {}),
      ...(after.length ? { after } : {}),
      directory: path.resolve(base, (dir ?? t.directory)!),
    })),
    integration,
  };
}

async function runCommand(o: RunOptions): Promise<void> {
  checkFollowOptions(o);
  if (o.attempts !== undefined && !(Number.isInteger(o.attempts) && o.attempts >= 1 && o.attempts <= MAX_ATTEMPTS))
    throw new CliError(`--attempts must be a whole number from 1 to ${MAX_ATTEMPTS}`);
  if (o.target.length && o.endpoint) throw new CliError("--target names a saved target; --endpoint/--model make one: give one or the other");
  if (o.allAttempts && o.attempts === undefined && o.target.length < 2) throw new CliError("--all-attempts goes with --attempts N (or several --target flags)");
  // Attempts: --attempts N, or several --target flags (N defaults to their number); one --target alone is a plain run on it.
  const attemptsMode = o.attempts !== undefined || o.target.length > 1;
  if (o.fixRounds !== undefined && !(Number.isInteger(o.fixRounds) && o.fixRounds >= 0 && o.fixRounds <= 10))
    throw new CliError("--fix-rounds must be a whole number from 0 to 10");
  let specs: (WorkerSpecInput & { id?: string; after?: string[]; attempts?: number; targets?: string[]; allAttempts?: boolean })[];
  let integration: IntegrationSpec | undefined;
  let batchName: string | undefined;
  if (o.name !== undefined && !o.batch) throw new CliError("--name names a batch: give it with --batch <file>");
  if (o.name !== undefined) {
    const n = BatchName.safeParse(o.name);
    if (!n.success) throw new CliError(`--name: ${n.error.issues[0]?.message}`);
  }
  if (o.batch) {
    if (o.task || o.dir) throw new CliError("--batch cannot be combined with --task/--dir");
    if (o.attempts !== undefined || o.target.length || o.allAttempts)
      throw new CliError("in a batch file, give `attempts` (and `targets`, `allAttempts`) per task instead of --attempts/--target");
    ({ tasks: specs, integration, name: batchName } = parseBatch(o.batch));
    if (o.name !== undefined) batchName = o.name.trim();
  } else {
    if (!o.dir) throw new CliError("--dir is required: the git repository the task works on");
    // `--dir "~/src/repo"` (quoted, or from a config file): no shell expanded it, and it resolved under this folder.
    if (/^~(\/|$)/.test(o.dir) && !existsSync(path.resolve(o.dir)))
      throw new CliError(
        `--dir ${o.dir}: a quoted ~ is not your home folder (the shell expands it only unquoted): give --dir "$HOME${o.dir.slice(1)}" or an absolute path`,
      );
    if (o.task === undefined) throw new CliError("--task is required: say what the worker should do (or give several tasks with --batch FILE)");
    if (!o.task.trim()) throw new CliError("--task is empty: say what the worker should do");
    // An empty value (`--scope ""`, an unset shell variable) was refused by the engine in zod's words ("scope.0: Too small…").
    if (o.check.some((c) => !c.trim()))
      throw new CliError('--check is empty: give a shell command that exits 0 when the task is done, e.g. --check "npm test"');
    if (o.scope.some((g) => !g.trim())) throw new CliError('--scope is empty: give a glob of the files the worker may change, e.g. --scope "src/**"');
    if (o.protect.some((g) => !g.trim()))
      throw new CliError('--protect is empty: give a glob of the files the worker must not change, e.g. --protect "test/**"');
    if (o.heldBack && !o.check.length) throw new CliError("--held-back needs at least one --check that uses its files");
    const files = o.heldBack ? path.resolve(o.heldBack) : undefined;
    const checks: CheckSpec[] = o.check.map((run) => (files ? { run, files } : { run }));
    specs = [{ task: o.task, directory: path.resolve(o.dir), checks, scope: o.scope, protect: o.protect }];
  }
  // Every directory is checked by the engine (workers.inspect) before anything is saved or started.
  const checkDirectories = async (client: EngineClient) => {
    for (const [n, s] of specs.entries()) {
      await client.workers.inspect.query({ directory: s.directory }).catch((err) => {
        throw new CliError(specs.length > 1 ? `task ${n + 1}: ${(err as Error).message}` : (err as Error).message);
      });
    }
  };
  if (o.timeout) specs = specs.map((s) => ({ ...s, budget: { ...s.budget, wallSec: o.timeout } }));
  if (o.fixRounds !== undefined) specs = specs.map((s) => ({ ...s, fixRounds: o.fixRounds }));

  // Its warnings (a --model the endpoint does not list) are said once the run starts: a refused run says only why.
  const { client, targetId, warnings } = await connectWithTarget(o, "cli:ocw run", checkDirectories);
  if (targetId) specs = specs.map((s) => (s.targets?.length ? s : { ...s, targetId }));
  if (!o.batch && o.target.length === 1 && !attemptsMode) specs = [{ ...specs[0]!, targetId: o.target[0] }];

  let ids: string[];
  let batchId: string | null = null;
  let groupId: string | null = null;
  // As delegate warns over MCP: what the person has not committed stays behind. Read beside the engine's start (git's
  // optional locks off), so that following the workers starts at once after it.
  const dirty = Promise.all([...new Set(specs.map((s) => path.resolve(s.directory)))].map(async (dir) => ({ dir, warning: await uncommitted(dir) })));
  try {
    if (attemptsMode) {
      const r = await client.workers.startAttempts.mutate({
        ...specs[0]!,
        attempts: o.attempts,
        ...(o.target.length ? { targets: o.target } : {}),
        allAttempts: !!o.allAttempts,
      } as never);
      ids = r.workerIds;
      groupId = r.groupId;
    } else if (specs.length === 1 && !o.batch) ids = [(await client.workers.start.mutate(specs[0]! as never)).workerId];
    else {
      const r = await client.workers.startBatch.mutate({
        tasks: specs as never,
        ...(integration ? { integration } : {}),
        ...(batchName ? { name: batchName } : {}),
      });
      ids = r.workerIds;
      batchId = r.batchId;
    }
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  detachOnInterrupt(ids);
  process.stderr.write(
    `ocw: started ${ids.join(", ")}${batchId ? ` (batch ${batchId}${batchName ? ` "${batchName}"` : ""})` : ""}${groupId ? ` (${ids.length} attempts, group ${groupId})` : ""}\n`,
  );
  for (const w of warnings) process.stderr.write(`ocw: warning: ${w}\n`);
  for (const { dir, warning } of await dirty) if (warning) process.stderr.write(`ocw: warning: ${dir}: ${warning}\n`);

  const result = await followAndAnswer(client, ids, o.approve, undefined, batchId ?? undefined);
  const finalWorkers = result.workers;
  const summary = result.summary;
  if (summary) ids = summary.workerIds;

  const outputs = await Promise.all(
    ids.map(async (id) =>
      workerResult(finalWorkers.get(id) ?? (await client.workers.get.query({ workerId: id })), await client.workers.events.query({ workerId: id })),
    ),
  );
  const hung = outputs.flatMap((r) => r.timedOutChecks);
  let payload: unknown;
  let built: boolean;
  const finalList = await Promise.all(ids.map(async (id) => finalWorkers.get(id) ?? (await client.workers.get.query({ workerId: id }))));
  const groupsOf = () => [...new Set(finalList.map((w) => w.attempt?.groupId).filter((g): g is string => !!g))].map((g) => attemptGroup(g, finalList));
  if (groupId) {
    const g = attemptGroup(groupId, finalList);
    const winner = g.winner ? outputs[ids.indexOf(g.winner)]!.json : null;
    payload = { groupId, ...attemptsJson(g), mergeHint: winner?.mergeHint ?? null, workers: outputs.map((r) => r.json) };
    built = g.winner !== null;
    if (!o.json) process.stderr.write(attemptsSummary(g) + "\n");
  } else if (batchId && summary) {
    const groups = groupsOf();

    const integ = summary.integration?.result ?? null;
    payload = {
      batchId,
      workers: outputs.map((r) => r.json),
      tasks: summary.tasks,
      skipped: summary.skipped,
      ...(summary.integration ? { integration: integrationJson(integ) } : {}),
      builtRate: summary.builtRate,
      honestRate: summary.honestRate,
      verdict: summary.verdict,
      ...(groups.length ? { groups: groups.map((g) => ({ groupId: g.groupId, ...attemptsJson(g) })) } : {}),
    };
    built = summary.verdict === "built" && !summary.skipped.length && (!summary.integration || !!integ?.passed);
  } else {
    payload = outputs[0]!.json;
    built = outputs[0]!.json.verdict === "built";
  }
  if (o.json) process.stdout.write(jsonForTerminal(payload) + "\n");
  else {
    for (const r of outputs) process.stderr.write(r.summary + "\n");
    for (const s of summary?.skipped ?? []) process.stderr.write(`task ${s.id}: skipped — ${s.reason}\n`);
    if (batchId && summary && !summary.integration) process.stderr.write(batchEndLine(summary) + "\n");
    const integ = summary?.integration?.result;
    if (integ) {
      process.stderr.write(
        `integration: ${integ.passed ? "passed" : "failed"}${integ.commit ? ` (${integ.commit.slice(0, 12)})` : ""}${integ.reason ? ` — ${showUntrusted(integ.reason, { max: 800, lines: false })}` : ""}\n`,
      );
      for (const c of integ.checks) process.stderr.write(`  ${c.passed ? "pass" : "fail"} ${showUntrusted(c.name, { max: 200, lines: false })}\n`);
      if (integ.passed) process.stderr.write(`  land it: ocw merge --batch ${batchId}  (or push it: ocw push --batch ${batchId} --remote R --pr)\n`);
      else
        process.stderr.write(
          `  follow up: a targeted fix — ocw continue WORKER_ID --message TEXT (say what failed), or a new task (a batch file's task can come "after" the built ones); ocw show ${batchId}\n`,
        );
    }
  }
  if (hung.length) {
    process.stderr.write(`ocw: check "${hung[0]}" hung and was killed at its timeout: fix the command or give it a larger timeoutSec\n`);
    process.exit(2);
  }
  process.exit(built ? 0 : 1);
}

function progress(event: EngineEvent, say: (line: string) => void = (l) => process.stderr.write(l + "\n")): void {
  const w = "workerId" in event ? event.workerId : "";
  switch (event.type) {
    case "worker.state":
      say(
        `ocw: ${w} ${event.state === "honest-failure" ? "failed" : event.state}${event.reason ? ` — ${showUntrusted(event.reason, { max: 500, lines: false })}` : ""}`,
      );
      break;
    case "part":
      if (event.part.kind === "tool" && event.part.status !== "running")
        say(`ocw: ${w} ${showUntrusted(event.part.tool ?? "tool", { max: 100, lines: false })} ${event.part.status}`);
      else if (event.part.kind === "text" && event.part.text)
        for (const line of event.part.text.split("\n").filter((l) => /^(MILESTONE|OUTCOME):/.test(l.trim())))
          say(`ocw: ${w} says (worker text, untrusted): ${showUntrusted(line.trim(), { max: 500 })}`);
      break;
    case "retry":
      say(`ocw: ${w} model retry ${event.attempt}: ${showUntrusted(event.message, { max: 500, lines: false })}`);
      break;
    case "verdict":
      say(
        `ocw: ${w} verdict ${outcomeWord(event.verdict.verdict)}${event.verdict.weakEvidence ? " (weak evidence: every check already passed before any change)" : ""} (${claimWords(event.verdict)})${event.verdict.reason ? ` — ${showUntrusted(event.verdict.reason, { max: 1000, lines: false })}` : ""}`,
      );
      break;
    case "worker.baseline": {
      const warning = baselineWarning(event.baseline);
      if (warning) say(`ocw: ${w} warning: ${warning}`);
      break;
    }
    case "round.started":
      say(`ocw: ${w} round ${event.round} (${event.kind})`);
      break;
  }
}

/**
 * The contract's `integration: {passed, commit, checks: [{name, passed, exitCode?, output}]}`. When the commits did not
 * combine (or nothing was built) no check ran: one failed "combine" entry says why, naming the conflicting files.
 */
function integrationJson(integ: IntegrationResult | null) {
  if (!integ) return { passed: false, commit: null, checks: [{ name: "combine", passed: false, output: "the integration did not run" }] };
  const checks = integ.checks.map((c) => ({
    name: c.name,
    passed: c.passed,
    ...(c.exitCode !== undefined && c.exitCode !== null ? { exitCode: c.exitCode } : {}),
    output: c.output,
  }));
  if (!integ.commit) checks.unshift({ name: "combine", passed: false, output: integ.reason ?? "the built workers' commits did not combine" });
  return { passed: integ.passed, commit: integ.commit, checks };
}

/**
 * Follows a batch to its end: its workers (tasks that come after others appear as they start), the tasks skipped, and
 * the integration. Event driven: between workers' ends, the batch's own events say when to look again.
 */
async function followBatch(
  client: EngineClient,
  batchId: string,
  onEvent: (e: EngineEvent, w: Map<string, Worker>) => void,
  onAsks: (w: Map<string, Worker>) => void,
  say: (l: string) => void,
): Promise<{ workers: Map<string, Worker>; summary: BatchSummary }> {
  const all = new Map<string, Worker>();
  const announced = new Set<string>();
  for (;;) {
    const cursor = (await client.health.query()).cursor;
    const summary = await client.workers.batch.query({ batchId });
    for (const t of summary.tasks) {
      if (t.workerId && t.after.length && !announced.has(t.id)) say(`ocw: task ${t.id} (after ${t.after.join(", ")}) started as ${t.workerId}`);
      if (t.skipped && !announced.has(t.id)) say(`ocw: task ${t.id} skipped — ${t.skipped}`);
      if (t.workerId || t.skipped) announced.add(t.id);
    }
    if (summary.done) {
      for (const id of summary.workerIds) if (!all.has(id)) all.set(id, await client.workers.get.query({ workerId: id }));
      return { workers: all, summary };
    }
    const active = summary.workerIds.filter((id) => !isAtRest(summary.states[id]!));
    let changed = false;
    if (active.length) {
      const r = await follow(client, active, {
        onEvent: (e, ws) => {
          if ((e.type === "batch" && e.batchId === batchId) || (e.type === "worker.created" && e.batchId === batchId)) changed = true;
          onEvent(e, ws);
        },
        // Called on the first picture too: asks already open when this follow began are answered.
        until: (ws) => (onAsks(ws), changed),
        onConnection: connectionSay(say),
      });
      onAsks(r.workers);
      for (const [k, v] of r.workers) all.set(k, v);
    } else {
      if (summary.integration?.state === "running") say(`ocw: batch ${batchId}: integration checks running`);
      await nextEvent(
        client,
        cursor,
        (e) => e.type === "reset" || (e.type === "batch" && e.batchId === batchId) || (e.type === "worker.created" && e.batchId === batchId),
      );
    }
  }
}

/** The attempts part of `ocw run --json` (the contract: `{attempts: [{workerId, target, verdict, honest}], winner}`). */
function attemptsJson(g: AttemptGroup) {
  return {
    attempts: g.attempts.map((a) => ({
      workerId: a.workerId,
      target: a.target,
      verdict: a.verdict,
      honest: a.honest,
      claim: a.claim,
      state: a.state,
      changedLines: a.changedLines,
      tokens: a.tokens,
      durationSec: a.durationSec,
      noop: a.noop,
      weakEvidence: a.weakEvidence,
      stoppedForWinner: a.stoppedForWinner,
      lostTo: a.lostTo,
    })),
    winner: g.winner,
  };
}

export function attemptsSummary(g: AttemptGroup): string {
  const rows = g.attempts.map(
    (a) =>
      `  ${a.workerId === g.winner ? "*" : " "} ${a.index}. ${a.workerId} on ${a.target ?? "?"}: ${a.verdict ?? a.state}${a.changedLines !== null ? `, ${counted(a.changedLines, "changed line")}` : ""}${a.lostTo ? ` (stopped: ${a.lostTo} was built)` : ""}`,
  );
  return [`attempts (${g.groupId}): ${g.winner ? `winner ${g.winner}` : "no built, honest attempt"}`, ...rows].join("\n");
}

/**
 * The last line of `ocw run --batch` without integration checks: the batch by its id (named once, on the first line, before
 * the workers' output), how many were built, and how to land them (`ocw merge --batch` was named nowhere).
 */
export function batchEndLine(b: BatchSummary): string {
  const name = b.name ? ` "${showUntrusted(b.name, { max: 80, lines: false })}"` : "";
  const head = `batch ${b.id}${name}: built ${b.built}/${b.tasks.length || b.workerIds.length}`;
  return b.built > 0 ? `${head} · land the built ones: ocw merge --batch ${b.id} · ocw show ${b.id}` : `${head} · ocw show ${b.id}`;
}

/** The `--json` result of one worker (the CLI contract). */
export function workerResult(w: Worker, events: WorkerEvent[]) {
  const v = w.verdict;
  const json = {
    workerId: w.id,
    sessionId: w.sessionId,
    state: w.state,
    reason: v?.reason ?? w.stateReason,
    verdict: v?.verdict ?? (w.state === "built" ? "built" : "honest-failure"),
    claim: v?.claim ?? null,
    honest: v?.honest ?? false,
    checks: (v?.checks ?? []).map((c) => ({ name: c.name, passed: c.passed, ...(c.exitCode !== undefined ? { exitCode: c.exitCode } : {}), output: c.output })),
    scope: { passed: v?.scope.passed ?? false, violations: v?.scope.violations ?? [] },
    approvals: w.asks.map((a) => ({ tool: a.tool, what: a.what, decision: a.decision ?? null, by: a.by ?? null, status: a.status })),
    branch: w.branch,
    worktree: w.worktree,
    mergeHint: v?.mergeHint ?? null,
    /** Which checks already passed on the base commit before any change (null until they ran there). */
    baseline: w.baseline ? { passedOnBase: w.baseline.passedOnBase } : null,
    /** Built, but every check already passed on the base: the checks prove nothing about this change. */
    weakEvidence: v?.weakEvidence ?? false,
    warnings: [baselineWarning(w.baseline)].filter((x): x is string => !!x),
    events,
  };
  const flagged = v?.flags?.length
    ? `\n  flagged (merge needs --accept-flagged): ${v.flags.map((f) => `${showUntrusted(f.path, { max: 300, lines: false })} (${showUntrusted(f.detail, { max: 300, lines: false })})`).join("; ")}`
    : "";
  // No verdict (an error, a stop): "not built", never "failed", which is the checks' word for an honest failure.
  const summary = `${w.id}: ${v ? outcomeWord(v.verdict) : w.state === "built" ? "built" : "not built"}${json.weakEvidence ? " — weak evidence: every check already passed before any change" : ""} (state ${w.state === "honest-failure" ? "failed" : w.state}${w.stateReason ? `: ${showUntrusted(w.stateReason, { max: 500, lines: false })}` : ""}; ${v ? claimWords(v) : "no claim"})${flagged}${v?.mergeHint ? `\n  merge: ocw merge ${w.id}${v.flags?.length ? " --accept-flagged" : ""}   (or by hand: ${v.mergeHint})` : ""}${v?.checks.some((c) => !c.passed) ? `\n  why: ocw show ${w.id} (each failed check's output) · ocw logs ${w.id}` : ""}`;
  return { json, summary, timedOutChecks: (v?.checks ?? []).filter((c) => c.timedOut).map((c) => c.name) };
}

/**
 * An ask `ocw run --approve` answers by itself, as the terminal shows it: what it asks made visible as at the prompt
 * (askText), the tool's name as the engine's word only when it is a plain name (toolWord), and the answer sent.
 */
export function unattendedAskLine(ask: PermissionAsk, decision: DecisionKind, askedAlways: boolean): string {
  const v = askView(ask);
  const note = askedAlways && decision === "once" ? ` → once ("always" is not offered: ${v.alwaysWhy})` : ` → ${decision} (--approve)`;
  return `ocw: ${ask.workerId} asks ${toolWord(ask.tool)}: ${v.what}${v.workdir ? ` (in folder ${v.workdir})` : ""}${v.flags.map((f) => `\n  ⚑ ${f}`).join("")}\n ${note}`;
}

const CANCELLED = Symbol("answered elsewhere");

/**
 * An ask as the terminal shows it: the asked text made visible (shared/untrusted.ts: no escape sequence reaches the
 * terminal, a line break shows as ⏎ and a new line, bidi and zero-width characters as ⟪U+XXXX⟫, a long command as head
 * and tail with the cut length), the engine's flags, what "always" would grant, and the diff's first 40 lines, made safe.
 */
export function askText(ask: PermissionAsk): string {
  const v = askView(ask);
  const indent = (s: string) => s.split("\n").join("\n    ");
  let out = `\nocw: ${ask.workerId} asks ${toolWord(ask.tool)}: ${indent(v.what)}\n`;
  if (v.workdir) out += `  in folder: ${v.workdir}\n`;
  if (v.cut) out += `  (${v.cut} characters cut from the middle: "always" is not offered)\n`;
  for (const f of v.flags) out += `  ⚑ ${f}\n`;
  if (ask.kind === "permission")
    out += v.always ? `  "always" grants exactly: ${v.always.map((p) => `[${p}]`).join(" ")}\n` : `  "always" is not offered: ${v.alwaysWhy}\n`;
  if (ask.diff && diffChangesNothing(ask.diff)) out += `  ${UNCHANGED_DIFF}\n`;
  // Behind a bar: a line break in a file name (the diff's header lines) never starts a line that reads as the engine's.
  else if (ask.diff) out += `  the change (the worker's, untrusted):\n${showUntrustedBlock(ask.diff, { maxLines: 40, lineMax: 400, bar: "  │ " })}\n`;
  return out;
}

/** Every ask the terminal holds (shown or waiting its turn) that a worker's picture says is no longer pending: said and dropped. */
export function settleAnsweredElsewhere(asker: Pick<TerminalAsker, "holds" | "resolved">, workers: Map<string, Worker>): void {
  for (const w of workers.values())
    for (const a of w.asks) if (a.status !== "pending" && asker.holds(a.id)) asker.resolved(a.id, a.status, a.decision, a.by, a.message);
}

/**
 * `--approve ask`: one question at a time on the terminal; y = once, a = always, n = reject. Every ask is announced
 * when it arrives (a batch may have several waiting); one answered elsewhere leaves the prompt or the line at once.
 */
export class TerminalAsker {
  private readonly queue: PermissionAsk[] = [];
  private busy = false;
  private readonly rl: readline.Interface;
  private readonly lines: string[] = [];
  private waiting: ((l: string | null | typeof CANCELLED) => void) | null = null;
  private current: PermissionAsk | null = null;
  private readonly settled = new Set<string>();
  private closed = false;
  private ending = false;

  constructor(
    private readonly client: Pick<EngineClient, "approvals">,
    input: NodeJS.ReadableStream = process.stdin,
    private readonly out: NodeJS.WritableStream = process.stderr,
  ) {
    this.echoes = (input as { isTTY?: boolean }).isTTY === true;
    this.rl = readline.createInterface({ input, output: out, terminal: false });
    this.rl.on("line", (l) => {
      const w = this.waiting;
      if (w) {
        this.waiting = null;
        w(l);
      } else this.lines.push(l);
    });
    this.rl.on("close", () => {
      this.closed = true;
      const w = this.waiting;
      this.waiting = null;
      w?.(null);
    });
  }

  /** True while a question is on the terminal and its answer is awaited. */
  private prompting = false;
  private readonly held: string[] = [];
  private readonly echoes: boolean;

  /** A status line: printed now, or, while a prompt waits for its answer, right after the answer (never onto its line). */
  status(line: string): void {
    if (this.prompting) this.held.push(line);
    else this.out.write(line + "\n");
  }

  private flushHeld(): void {
    const was = this.prompting;
    this.prompting = false;
    // A terminal echoes the answer and its newline; piped input does not, and the prompt's line is still open.
    if (was && this.held.length && !this.echoes) this.out.write("\n");
    for (const l of this.held.splice(0)) this.out.write(l + "\n");
  }

  enqueue(ask: PermissionAsk): void {
    if (this.settled.has(ask.id)) return;
    this.queue.push(ask);
    if (this.busy)
      this.out.write(
        `\nocw: ${ask.workerId} asks ${ask.tool}: ${askView(ask, { lines: false }).what} (waiting: ${this.queue.length} ahead of it at this prompt; or answer it in the GUI)\n`,
      );
    void this.drain();
  }

  /** Whether this ask is at the prompt or waiting its turn here (not yet answered here or elsewhere). */
  holds(askId: string): boolean {
    return !this.settled.has(askId) && (this.current?.id === askId || this.queue.some((a) => a.id === askId));
  }

  /** The engine says an ask was answered or cancelled (perhaps by someone else): said, and dropped here. */
  resolved(askId: string, status: "decided" | "cancelled", decision?: DecisionKind, by?: DecidedBy, message?: string): void {
    if (this.settled.has(askId)) return;
    this.settled.add(askId);
    const who = by ? showUntrusted(`${by.kind}${by.name ? ` ${by.name}` : ""}`, { lines: false, max: 200 }) : null;
    const why = message ? ` (${showUntrusted(message, { lines: false, max: 500 })})` : "";
    const what =
      status === "cancelled"
        ? `was cancelled${who ? ` by ${who}` : ""}${why}`
        : `was answered elsewhere${who ? ` (by ${who})` : ""}: ${decision ?? "answer not known"}`;
    const queued = this.queue.findIndex((a) => a.id === askId);
    if (queued >= 0) {
      const [ask] = this.queue.splice(queued, 1);
      this.out.write(`\nocw: ${ask!.workerId}'s ${ask!.tool} ask ${what}\n`);
    } else if (this.current?.id === askId) {
      this.out.write(`\nocw: ${this.current.workerId}'s ${this.current.tool} ask ${what}; no answer needed here, going on\n`);
      this.current = null;
      const w = this.waiting;
      this.waiting = null;
      w?.(CANCELLED);
    }
  }

  private async readLine(): Promise<string | null | typeof CANCELLED> {
    if (this.lines.length) return this.lines.shift()!;
    if (this.closed) return null;
    this.prompting = true;
    try {
      return await new Promise<string | null | typeof CANCELLED>((r) => (this.waiting = r));
    } finally {
      this.flushHeld();
    }
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    while (this.queue.length) {
      const ask = this.queue.shift()!;
      if (this.settled.has(ask.id)) continue;
      this.current = ask;
      this.out.write(askText(ask));
      const answer = ask.kind === "question" ? await this.askQuestion(ask) : await this.askPermission(ask);
      if (answer === CANCELLED) continue;
      this.current = null;
      if (answer === null) {
        // stdin ended: the asks not answered here stay with the GUI / MCP (said once, and only if still open).
        const open = [ask, ...this.queue].filter((a) => !this.settled.has(a.id));
        if (open.length && !this.ending)
          this.out.write(
            `\nocw: no terminal input; ${open.length === 1 ? "the ask stays" : `${open.length} asks stay`} pending (answer with \`ocw asks\` and \`ocw approve ASK_ID\`, in the GUI, or run with --approve)\n`,
          );
        this.queue.length = 0;
        break;
      }
      this.settled.add(ask.id);
      await this.client.approvals.decide
        .mutate({ askId: ask.id, ...answer })
        .catch((err) => this.out.write(`ocw: ${showUntrusted((err as Error).message, { lines: false, max: 2000 })}\n`));
    }
    this.busy = false;
  }

  private async askPermission(ask: PermissionAsk): Promise<{ decision: DecisionKind } | null | typeof CANCELLED> {
    const always = askView(ask).always !== null;
    for (;;) {
      this.out.write(always ? `allow? [y]es once / [a]lways / [n]o: ` : `allow? [y]es once / [n]o: `);
      const line = await this.readLine();
      if (line === null || line === CANCELLED) return line;
      const decision = ({ y: "once", a: always ? "always" : undefined, n: "reject" } as const)[line.trim().toLowerCase()[0] as "y" | "a" | "n"];
      if (decision) return { decision };
      if (!always && line.trim().toLowerCase().startsWith("a")) this.out.write(`"always" is not offered for this ask\n`);
    }
  }

  /**
   * One line per question: an option's number, or free text; an empty line dismisses the question. Bounded whatever the
   * worker sent (questionsView): at most QUESTIONS_SHOWN questions with OPTIONS_SHOWN options each are shown, and an
   * ask with more questions than that is only dismissed here (with a note to the worker to ask fewer).
   */
  private async askQuestion(ask: PermissionAsk): Promise<{ decision: DecisionKind; answers?: string[][]; message?: string } | null | typeof CANCELLED> {
    const qv = questionsView(ask);
    if (qv.questionsCut) {
      this.out.write(
        `${qv.questions.map((q) => `${q.question}\n`).join("")}(${qv.cutNote})\npress Enter to dismiss it (the worker is told to ask at most ${QUESTIONS_SHOWN} at a time): `,
      );
      const line = await this.readLine();
      if (line === null || line === CANCELLED) return line;
      return { decision: "reject", message: TOO_MANY_QUESTIONS };
    }
    const answers: string[][] = [];
    for (const [i, q] of qv.questions.entries()) {
      const full = ask.questions![i]!;
      // One line each: a line break in a description would start a line that reads as another option.
      const t = (x: string, max = 2000) => showUntrusted(x, { max, lines: false });
      const more = q.optionsCut ? `\n  (${q.optionsCut} more options not shown: type one's text)` : "";
      this.out.write(
        `${q.question}\n${q.options.map((label, j) => `  ${j + 1}) ${label}${full.options[j]!.description ? ` — ${t(full.options[j]!.description!, 500)}` : ""}`).join("\n")}${more}\nanswer (number or text; empty dismisses): `,
      );
      const line = await this.readLine();
      if (line === null || line === CANCELLED) return line;
      const text = line.trim();
      if (!text) return { decision: "reject" };
      const n = Number(text);
      answers.push([Number.isInteger(n) && n >= 1 && n <= q.options.length ? full.options[n - 1]!.label : text]);
    }
    return { decision: "once", answers };
  }

  /** The run is over: nothing is pending any more, so closing stdin here is not "no terminal input". */
  close(): void {
    this.ending = true;
    this.flushHeld();
    this.rl.close();
  }
}
