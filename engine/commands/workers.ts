import { existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { BatchSummary } from "../../shared/batch";
import { jsonForTerminal, quoteUntrusted, quoteUntrustedList, showUntrusted } from "../../shared/untrusted";
import { toolWord } from "../../shared/wait";
import { claimWords, outcomeWord, verdictLine } from "../../shared/vocabulary";
import { isAtRest, WorkerState, type TranscriptPart, type Worker, type WorkerEvent, workerTitle } from "../../shared/worker";
import { connect, type EngineClient } from "../api/client";
import { nextEvent } from "../api/follow";
import { ensureEngine, stateDir } from "../api/launcher";
import { CliError, fail } from "./errors";
import { expectId } from "./hints";
import { attemptsSummary } from "./run";
import { askWhat } from "../mcp/format";

/**
 * The CLI for every day: list workers, show one, read (and follow) its transcript, discard it, stop it; revert a merge
 * the engine made, prune merged ocw/ branches, push a graded commit and open a pull request.
 */
const client = async (name: string): Promise<EngineClient> => connect(await ensureEngine(stateDir()), `cli:ocw ${name}`);
/** Text a worker may have written (or named): control characters, bidi and zero-width marks made visible. */
const safe = (t: string) => showUntrusted(t, { lines: false, max: 4000 });
const stateWord = (s: Worker["state"]) => (s === "honest-failure" ? "failed" : s);
const age = (ts: number, now = Date.now()) => {
  const s = Math.max(0, Math.round((now - ts) / 1000));
  return s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : s < 172800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86400)}d`;
};

/**
 * `ocw list` as text: a header naming the columns (the time is how long ago the worker was created), then two lines a
 * worker: id, state, created, task; its verdict, merge / batch, repository.
 */
export function listText(ws: Worker[], names: Record<string, string> = {}, now = Date.now()): string {
  const ago = (ts: number) => `${age(ts, now)} ago`;
  const idWidth = Math.max(2, ...ws.map((w) => w.id.length));
  const lines = [`${"ID".padEnd(idWidth)}  ${"STATE".padEnd(16)} ${"CREATED".padStart(8)}  TASK`];
  for (const w of ws) {
    const v = w.verdict ? verdictLine(w.verdict) : stateWord(w.state);
    const extra = [
      w.merged ? `merged into ${w.merged.into}` : null,
      w.reverted ? "reverted" : null,
      w.discarded ? "discarded" : null,
      w.batchId ? `batch ${names[w.batchId] ? `"${safe(names[w.batchId]!)}" ` : ""}${w.batchId}${w.taskId ? `/${w.taskId}` : ""}` : null,
    ]
      .filter(Boolean)
      .join(", ");
    lines.push(
      `${w.id.padEnd(idWidth)}  ${stateWord(w.state).padEnd(16)} ${ago(w.createdAt).padStart(8)}  ${safe(workerTitle(w.spec, 60))}\n    ${v}${extra ? ` · ${extra}` : ""} · ${safe(w.repo)}`,
    );
  }
  return lines.join("\n") + "\n";
}

export function registerWorkerCommands(program: Command): void {
  program
    .command("list")
    .description("list workers (newest last): state, verdict, repository, batch; filter with --state, --repo, --batch")
    .option(
      "--state <states>",
      "only these states, comma-separated (queued, running, waiting-approval, built, honest-failure, stopped, …; 'failed' = honest-failure)",
    )
    .option("--repo <dir>", "only workers on this repository (or a folder inside it)")
    .option("--batch <batchId>", "only this batch's workers")
    .option("--json", "print JSON")
    .action(async (o: { state?: string; repo?: string; batch?: string; json?: boolean }) => {
      try {
        const states = o.state
          ?.split(",")
          .map((s) => s.trim())
          .filter(Boolean)
          .map((s) => (s === "failed" ? "honest-failure" : s));
        if (o.batch) expectId(o.batch, "batch", `\`ocw show ${o.batch}\` shows that worker`);
        for (const s of states ?? [])
          if (!WorkerState.safeParse(s).success) throw new CliError(`unknown state "${s}": one of ${WorkerState.options.join(", ")} (or failed)`);
        const c = await client("list");
        const ws = await c.workers.list.query({
          ...(o.batch ? { batchId: o.batch } : {}),
          ...(states ? { states: states as Worker["state"][] } : {}),
          ...(o.repo ? { repo: path.resolve(o.repo) } : {}),
        });
        // A filter that names nothing there is is said as such, not as "no workers match" (exit 0): a batch id the engine does
        // not know, a --repo that is no folder here. A folder gone since its workers ran still lists them.
        if (!ws.length && o.batch) await c.workers.batch.query({ batchId: o.batch });
        if (!ws.length && o.repo && !existsSync(path.resolve(o.repo)))
          throw new CliError(`no folder ${path.resolve(o.repo)} here: give --repo the repository's folder, as \`ocw run --dir\` took it`);
        if (o.json) return console.log(jsonForTerminal(ws));
        if (!ws.length) return console.log("no workers" + (o.state || o.repo || o.batch ? " match" : " yet: start one with `ocw run`"));
        // Batch names are read instead of ids (an engine from before names has none).
        const names: Record<string, string> = ws.some((w) => w.batchId) ? await c.workers.batchNames.query().catch(() => ({})) : {};
        process.stdout.write(listText(ws, names));
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("batch")
    .description('a batch: its name, workers and built count; --name renames it ("" takes the name away), shown instead of its id')
    .argument("<batchId>", "a batch id (b-…)")
    .option("--name <text>", "the batch's new name (one line, at most 80 characters)")
    .option("--json", "print JSON")
    .action(async (batchId: string, o: { name?: string; json?: boolean }) => {
      try {
        expectId(batchId, "batch", `\`ocw show ${batchId}\` shows that worker`);
        const c = await client("batch");
        if (o.name !== undefined) {
          try {
            await c.workers.nameBatch.mutate({ batchId, name: o.name });
          } catch (err) {
            throw new CliError((err as Error).message);
          }
        }
        let b: BatchSummary;
        try {
          b = await c.workers.batch.query({ batchId });
        } catch (err) {
          throw new CliError((err as Error).message);
        }
        if (o.json) return console.log(jsonForTerminal(b));
        console.log(batchText(b));
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("show")
    .description(
      "one worker: task, state, verdict card (checks, claim, flagged files), branch, what to do next (a batch id: its tasks, skipped ones and integration verdict; an attempts group id: its attempts and winner)",
    )
    .argument("<id>", "a worker id (w-…), a batch id (b-…) or an attempts group id (a-…, from `ocw run --attempts`)")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      try {
        const c = await client("show");
        if (id.startsWith("b-")) {
          const b = await c.workers.batch.query({ batchId: id });
          if (o.json) return console.log(jsonForTerminal(b));
          return console.log(batchText(b));
        }
        // `ocw run --attempts` names its group (a-…): its attempts, the winner marked.
        if (id.startsWith("a-")) {
          const g = await c.workers.attempts.query({ groupId: id });
          if (o.json) return console.log(jsonForTerminal(g));
          return console.log(attemptsSummary(g));
        }
        const w = await c.workers.get.query({ workerId: id });
        if (o.json) return console.log(jsonForTerminal(w));
        console.log(showText(w));
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("logs")
    .description(
      "a worker's transcript as text: model text (marked untrusted), tool calls, asks and decisions, steers, states, the verdict; --follow keeps printing until it ends",
    )
    .argument("<workerId>")
    .option("-f, --follow", "keep printing new events until the worker ends")
    .action(async (id: string, o: { follow?: boolean }) => {
      try {
        expectId(id, "worker", `\`ocw show ${id}\` lists its workers; \`ocw logs\` takes one of them`);
        const c = await client("logs");
        const cursor = (await c.health.query()).cursor;
        const events = await c.workers.events.query({ workerId: id });
        const printer = new LogPrinter((l) => process.stdout.write(l + "\n"));
        printer.replay(events);
        // At rest by the events printed: done. Not by a fresh read of the worker: a stop landing between the two reads
        // ended it without its last state printed; the stream, replayed from the cursor read first, brings that.
        const lastState = events.findLast((e) => e.type === "worker.state");
        if (!o.follow || (lastState?.type === "worker.state" && isAtRest(lastState.state))) return;
        const last = events.at(-1)?.seq ?? -1;
        // Printed as they come; the worker's state at rest ends it.
        await nextEvent(
          c,
          cursor,
          (e) => {
            if (!("workerId" in e) || e.workerId !== id || !("seq" in e) || e.seq <= last) return false;
            printer.event(e as WorkerEvent, true);
            return e.type === "worker.state" && isAtRest(e.state);
          },
          {
            // It said nothing while the engine was gone: the follow seemed to hang.
            onConnection: (state, detail) =>
              process.stderr.write(
                state === "lost"
                  ? `ocw: the engine is unreachable (${detail || "connection closed"}); waiting for it to come back (\`ocw gui --url\` starts it again: ${id} then shows as interrupted, \`ocw resume ${id}\` goes on), Ctrl-C stops following\n`
                  : "ocw: the engine is back\n",
              ),
          },
        );
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("cancel")
    .description("stop a worker (it can be resumed later; its pending asks are cancelled)")
    .argument("<workerId>")
    .option("--json", "print the worker as JSON (what `ocw show --json` prints)")
    .action(async (id: string, o: { json?: boolean }) => {
      try {
        expectId(id, "worker", `\`ocw show ${id}\` lists its workers; \`ocw cancel\` takes one of them`);
        const w = await (await client("cancel")).workers.stop.mutate({ workerId: id, reason: "cancelled with ocw cancel" });
        if (o.json) return console.log(jsonForTerminal(w));
        console.log(`${w.id} is ${stateWord(w.state)}${isAtRest(w.state) && w.state !== "stopped" ? " (it had already ended)" : ""}`);
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("discard")
    .description("remove a finished worker's workspace and branch, unmerged work included (its record and log stay)")
    .argument("<workerId>")
    .option("--json", "print the worker as JSON (what `ocw show --json` prints)")
    .action(async (id: string, o: { json?: boolean }) => {
      try {
        expectId(id, "worker", `\`ocw show ${id}\` lists its workers; \`ocw discard\` takes one of them`);
        const c = await client("discard");
        // A discard is idempotent at the engine: a second one is said as what it is, not as a removal done again.
        const already = !!(await c.workers.get.query({ workerId: id })).discarded;
        const w = await c.workers.discard.mutate({ workerId: id });
        if (o.json) return console.log(jsonForTerminal(w));
        console.log(discardText(w, already));
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("rebase")
    .description(
      "continue a built worker whose merge conflicts on the new base: its task again as a new worker from the current HEAD, told which files conflicted",
    )
    .argument("<workerId>")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      try {
        expectId(id, "worker", `\`ocw show ${id}\` lists its workers; \`ocw rebase\` takes one of them`);
        const r = await (await client("rebase")).workers.onNewBase.mutate({ workerId: id });
        console.log(
          o.json
            ? jsonForTerminal(r, 0)
            : `${id} continues on the new base as ${r.workerId}${r.files.length ? ` (told about ${quoteUntrustedList(r.files, "file names from its change")})` : ""}; discard ${id} once you no longer need it\n${startedHint(r.workerId)}`,
        );
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("revert")
    .description("revert a merge the engine made (a worker's, or --batch ID's integration commit) as a new commit; refuses cleanly on conflict")
    .argument("[workerId]")
    .option("--batch <batchId>", "revert this batch's landed integration commit")
    .option("--json", "print JSON")
    .action(async (id: string | undefined, o: { batch?: string; json?: boolean }) => {
      try {
        if (!id === !o.batch) throw new CliError("give a worker id, or --batch BATCH_ID (not both)");
        if (id) expectId(id, "worker", `revert a batch's integration commit with \`ocw revert --batch ${id}\``);
        if (o.batch) expectId(o.batch, "batch", `revert that worker's merge with \`ocw revert ${o.batch}\``);
        const r = await (await client("revert")).workers.revert.mutate(id ? { workerId: id } : { batchId: o.batch! });
        console.log(o.json ? jsonForTerminal(r, 0) : `reverted ${r.reverted} on ${r.into} (${r.commit.slice(0, 12)})`);
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("prune")
    .description("delete merged ocw/ branches of a repository (keeps built work not merged yet, and running workers' branches)")
    .option("--dir <dir>", "the repository (default: the current folder)")
    .option("--json", "print JSON")
    .action(async (o: { dir?: string; json?: boolean }) => {
      try {
        const r = await (await client("prune")).workers.prune.mutate({ directory: path.resolve(o.dir ?? ".") });
        if (o.json) return console.log(jsonForTerminal(r));
        // Branch names and checkout paths are the repository's, not the engine's: a bidi control or an escape in one is shown marked.
        const shown = (text: string) => showUntrusted(text, { lines: false });
        for (const d of r.deleted) console.log(`deleted ${shown(d.branch)} (was ${d.commit.slice(0, 12)})`);
        for (const k of r.kept) console.log(`kept ${shown(k.branch)}: ${shown(k.reason)}`);
        if (!r.deleted.length && !r.kept.length) console.log("no ocw/ branches");
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("push")
    .description(
      "push a built worker's graded commit (or --batch ID's integration commit) to a branch on a remote; never forced, never the default branch; --pr opens a pull request with gh",
    )
    .argument("[workerId]")
    .option("--batch <batchId>", "push this batch's passed integration commit")
    .requiredOption("--remote <remote>", "a remote's name (see `git remote`) or its URL")
    .option("--branch <branch>", "the branch on the remote (default ocw/<id>)")
    .option("--pr", "open a pull request with gh (when installed and signed in), the verdict card as its body")
    .option("--title <title>", "the pull request's title")
    .option("--accept-flagged", "push a change that holds flagged files (workflows, hooks, tool configuration), after reviewing them")
    .option("--json", "print JSON")
    .action(
      async (
        id: string | undefined,
        o: { batch?: string; remote: string; branch?: string; pr?: boolean; title?: string; json?: boolean; acceptFlagged?: boolean },
      ) => {
        try {
          if (!id === !o.batch) throw new CliError("give a worker id, or --batch BATCH_ID (not both)");
          if (id) expectId(id, "worker", `push a batch's integration commit with \`ocw push --batch ${id} --remote ${o.remote}\``);
          if (o.batch) expectId(o.batch, "batch", `push that worker with \`ocw push ${o.batch} --remote ${o.remote}\``);
          const r = await (await client("push")).workers.push.mutate({
            ...(id ? { workerId: id } : { batchId: o.batch! }),
            remote: o.remote,
            ...(o.branch ? { branch: o.branch } : {}),
            pr: !!o.pr,
            ...(o.title ? { title: o.title } : {}),
            acceptFlagged: !!o.acceptFlagged,
          });
          if (o.json) return console.log(jsonForTerminal(r));
          console.log(
            `pushed ${r.commit.slice(0, 12)} to ${r.remote} ${r.branch}${r.replaced ? ` (in place of ${o.batch ? "its earlier integration commit" : "the earlier round's"} ${r.replaced.slice(0, 12)})` : ""}`,
          );
          if (r.pr) console.log(`pull request${r.pr.existing ? " (already open)" : ""}: ${r.pr.url}`);
          if (r.prProblem) console.log(`no pull request: ${r.prProblem}`);
        } catch (err) {
          fail(err);
        }
      },
    );
}

/**
 * What to do with a worker that `ocw retry` or `ocw rebase` started and does not follow: it runs in the engine, and its
 * asks wait for an answer (they said only "started as w-…", and the new worker sat in waiting-approval unseen).
 */
export function startedHint(workerId: string): string {
  return `  it runs in the engine: follow it with \`ocw logs ${workerId} --follow\`; its asks: \`ocw asks --worker ${workerId}\` (or the GUI); its verdict: \`ocw show ${workerId}\``;
}

/** `ocw discard`'s line: a merge that was reverted since no longer "stays merged". */
export function discardText(w: Worker, already = false): string {
  const merged = w.merged && !w.reverted ? `; its work stays merged in ${w.merged.into}` : w.merged ? `; its merge into ${w.merged.into} was reverted` : "";
  return `${already ? `${w.id} was already discarded` : `discarded ${w.id}`}: its workspace and branch are gone${merged}`;
}

function batchText(b: BatchSummary): string {
  const lines = [`batch ${b.id}${b.name ? ` "${safe(b.name)}"` : ""}: built ${b.built}/${b.tasks.length || b.workerIds.length}${b.done ? " · done" : ""}`];
  if (b.tasks.length)
    for (const t of b.tasks)
      lines.push(
        `  ${t.id}${t.after.length ? ` (after ${t.after.join(", ")})` : ""}: ${t.workerId ? `${t.workerId} ${stateWord(b.states[t.workerId] ?? "queued")}` : t.skipped ? `skipped — ${safe(t.skipped)}` : "waiting"}`,
      );
  else for (const id of b.workerIds) lines.push(`  ${id} ${stateWord(b.states[id]!)}`);
  const i = b.integration;
  if (i) {
    const r = i.result;
    lines.push(
      `integration: ${r ? (r.passed ? "passed" : "failed") : i.state}${r?.commit ? ` (${r.commit.slice(0, 12)})` : ""}${r?.reason ? ` — ${safe(r.reason)}` : ""}${r?.landed ? ` · landed on ${r.landed.into}` : ""}`,
    );
    for (const c of r?.checks ?? [])
      lines.push(`  ${c.passed ? "pass" : "fail"} ${safe(c.name)}${c.exitCode !== undefined && c.exitCode !== null ? ` (exit ${c.exitCode})` : ""}`);
    if (r?.passed && !r.landed) lines.push(`next: ocw merge --batch ${b.id} · ocw push --batch ${b.id} --remote R --pr`);
  }
  return lines.join("\n");
}

/**
 * A failed check's last lines of output under it in `ocw show` (only `--json` had them: the text said "fail npm test
 * (exit 1)" and no why). The worker's code ran in the check: each line made safe and cut, the block marked untrusted.
 */
function outputTail(output: string | undefined, max = 12): string[] {
  // trimEnd, not `/\s+$/`: that took quadratic time on a run of spaces inside the text (64 KiB of them, 1.6 s).
  const all = (output ?? "").trimEnd().split("\n");
  if (!all.join("").trim()) return [];
  const shown = all.slice(-max);
  return [
    `    output (untrusted: the worker's code ran in it)${all.length > max ? `, its last ${max} of ${all.length} lines` : ""}:`,
    ...shown.map((l) => `    │ ${showUntrusted(l, { lines: false, max: 300 })}`),
  ];
}

export function showText(w: Worker): string {
  const v = w.verdict;
  const lines = [
    `${w.id}  ${stateWord(w.state)}${w.stateReason ? ` — ${safe(w.stateReason)}` : ""}`,
    `task: ${safe(workerTitle(w.spec, Number.POSITIVE_INFINITY))}`,
    `repository: ${safe(w.repo)}${w.baseBranch ? ` (from ${safe(w.baseBranch)}${w.baseCommit && !w.startFrom ? ` at ${w.baseCommit.slice(0, 12)}` : ""})` : ""}`,
  ];
  if (w.batchId)
    lines.push(
      `batch: ${w.batchId}${w.taskId ? ` (task ${w.taskId})` : ""}${w.startFrom ? `, started from ${w.startFrom.slice(0, 12)}: the graded work of the tasks it comes after (its diff is its own; merged alone, it brings theirs in too)` : ""}`,
    );
  if (w.asks.some((a) => a.status === "pending"))
    lines.push(
      `waiting for: ${w.asks
        .filter((a) => a.status === "pending")
        // What the worker asks (a command, a path) is its text: quoted and labelled, not only made safe.
        .map((a) => `${toolWord(a.tool)} ${quoteUntrusted(askWhat(a, w.worktree), "what the worker asks", 120)}`)
        .join("; ")}`,
    );
  if (v) {
    lines.push(`verdict: ${outcomeWord(v.verdict)} (held-back checks) · ${claimWords(v)}`);
    for (const c of v.checks) {
      lines.push(`  ${c.passed ? "pass" : "fail"} ${safe(c.name)}${c.exitCode !== undefined && c.exitCode !== null ? ` (exit ${c.exitCode})` : ""}`);
      if (!c.passed) lines.push(...outputTail(c.output));
    }
    // Each violation names a file the worker chose: quoted and labelled, as in the state's reason.
    lines.push(`  scope ${v.scope.passed ? "ok" : `violated ${quoteUntrustedList(v.scope.violations, "violations naming the worker's files")}`}`);
    // The paths (and a symlink's target in the detail) are the worker's: quoted and labelled, never raw.
    if (v.flags?.length)
      lines.push(
        `flagged (merge needs --accept-flagged): ${quoteUntrustedList(
          v.flags.map((f) => `${f.path} (${f.detail})`),
          "files of the worker's change, with why each is flagged",
        )}`,
      );
    if (v.diffStat) lines.push("  diff stat (file names the worker chose, untrusted):", ...v.diffStat.split("\n").map((l) => `  │ ${safe(l)}`));
    if (v.commit) lines.push(`graded commit: ${v.commit}`);
    // What these checks cannot rule out, the grading's own words (a file name in them is one a held-back test imports).
    if (v.caveats?.length) lines.push("what these checks cannot rule out:", ...v.caveats.map((c) => `  - ${safe(c)}`));
  }
  if (w.merged)
    lines.push(`merged into ${safe(w.merged.into)} (${w.merged.commit.slice(0, 12)})${w.reverted ? `; reverted (${w.reverted.commit.slice(0, 12)})` : ""}`);
  // Discarded: its workspace and branch are gone, so resume, continue, merge and discard again have nothing to act on.
  if (w.discarded) lines.push("discarded: its workspace and branch are gone");
  const waiting = w.asks.find((a) => a.status === "pending");
  const next = waiting
    ? `next: ocw approve ${safe(waiting.id)} (once; --always, --reject) · ocw asks --worker ${w.id} · ocw cancel ${w.id}`
    : w.discarded
      ? w.merged && !w.reverted
        ? `next: ocw revert ${w.id} undoes the merge`
        : ["honest-failure", "stopped", "interrupted", "error"].includes(w.state)
          ? `next: ocw retry ${w.id} (its task again as a new worker)`
          : null
      : w.state === "built" && !w.merged && !w.discarded
        ? `next: ocw merge ${w.id}${v?.flags?.length ? " --accept-flagged" : ""} · ocw push ${w.id} --remote R --pr · ocw publish ${w.id} (its branch, to review with git) · ocw discard ${w.id}`
        : w.state === "honest-failure"
          ? `next: ocw logs ${w.id} · ocw continue ${w.id} --message TEXT · ocw retry ${w.id} · ocw discard ${w.id}`
          : ["stopped", "interrupted", "error"].includes(w.state)
            ? `next: ocw resume ${w.id} · ocw retry ${w.id} · ocw discard ${w.id}`
            : !isAtRest(w.state)
              ? `next: ocw logs ${w.id} --follow · ocw cancel ${w.id}`
              : w.merged && !w.reverted
                ? `next: ocw revert ${w.id} undoes the merge`
                : null;
  if (next) lines.push(next);
  return lines.join("\n");
}

/**
 * Worker events as lines, each part printed once in its latest form: text where it began, a tool call where it ended
 * (after the ask and the decision that let it run, with the time it ended).
 */
export class LogPrinter {
  private readonly parts = new Map<string, { ts: number; part: TranscriptPart }>();
  private readonly printed = new Set<string>();
  /** The worker's workspace (its worker.workspace event): an ask's path in it is shown relative, as `ocw run` shows it. */
  private worktree: string | null = null;

  constructor(private readonly out: (line: string) => void) {}

  /** A log read whole: each part in its final form, where `--follow` prints it live. */
  replay(events: WorkerEvent[]): void {
    const finals = new Map<string, { part: TranscriptPart; index: number; ts: number }>();
    events.forEach((e, index) => {
      if (e.type === "part") finals.set(e.part.partId, { part: e.part, index, ts: e.ts });
    });
    events.forEach((e, index) => {
      if (e.type !== "part") return this.event(e, false);
      const final = finals.get(e.part.partId)!;
      const tool = final.part.kind === "tool";
      if (tool ? index !== final.index : this.parts.has(e.part.partId)) return;
      this.parts.set(e.part.partId, { ts: tool ? final.ts : e.ts, part: final.part });
      this.printPart(e.part.partId);
    });
  }

  event(e: WorkerEvent, live = false): void {
    const at = new Date(e.ts).toISOString().slice(11, 19);
    if (e.type === "part") {
      const had = this.parts.get(e.part.partId);
      this.parts.set(e.part.partId, { ts: e.part.kind === "tool" ? e.ts : (had?.ts ?? e.ts), part: e.part });
      // Live: a tool part once it finished, a text part once (its latest text when the next event comes).
      if (live && e.part.kind === "tool" && (e.part.status === "completed" || e.part.status === "error")) this.printPart(e.part.partId);
      return;
    }
    // A tool call still waiting (for its ask's answer) is printed when it ends, or as it stands once the worker ends.
    if (live) this.flushParts(e.type === "worker.state" && isAtRest(e.state));
    switch (e.type) {
      case "worker.created":
        return this.out(
          `[${at}] created: ${safe(workerTitle(e.spec, Number.POSITIVE_INFINITY))}${e.batchId ? ` (batch ${e.batchId}${e.taskId ? `, task ${e.taskId}` : ""})` : ""}`,
        );
      case "worker.state":
        return this.out(`[${at}] state ${stateWord(e.state)}${e.reason ? ` — ${safe(e.reason)}` : ""}`);
      case "worker.workspace":
        this.worktree = e.worktree;
        return;
      case "ask.opened":
        return this.out(`[${at}] ask ${e.ask.id}: ${toolWord(e.ask.tool)} ${quoteUntrusted(askWhat(e.ask, this.worktree), "what the worker asks", 4000)}`);
      case "ask.resolved":
        return this.out(
          `[${at}] decision on ${e.askId}: ${e.status === "cancelled" ? "cancelled" : (e.decision ?? "decided")}${e.by ? ` by ${e.by.kind}${e.by.name ? ` ${e.by.name}` : ""}` : ""}${e.message ? ` — ${safe(e.message)}` : ""}`,
        );
      case "steer.sent":
        return this.out(`[${at}] steer by ${e.by.kind}: ${safe(e.text)}`);
      case "verdict":
        return this.out(`[${at}] verdict ${verdictLine(e.verdict)}`);
      case "merged":
        return this.out(`[${at}] merged into ${e.into} (${e.commit.slice(0, 12)})`);
      case "reverted":
        return this.out(`[${at}] merge reverted on ${e.into} (${e.commit.slice(0, 12)})`);
      case "discarded":
        return this.out(`[${at}] discarded`);
      case "stalled":
        return this.out(`[${at}] no activity for ${e.idleSec}s`);
      default:
        return;
    }
  }

  /** Prints the parts not printed yet; `all: false` leaves tool calls that have not ended. */
  flushParts(all = true): void {
    for (const [id, { part }] of this.parts) if (all || part.kind !== "tool" || part.status === "completed" || part.status === "error") this.printPart(id);
  }

  private printPart(id: string): void {
    if (this.printed.has(id)) return;
    const p = this.parts.get(id);
    if (!p) return;
    this.printed.add(id);
    const at = new Date(p.ts).toISOString().slice(11, 19);
    const { part } = p;
    const block = (text: string, max = 40) => {
      const ls = text.split("\n");
      return ls
        .slice(0, max)
        .map((l) => `  │ ${safe(l)}`)
        .concat(ls.length > max ? [`  │ … ${ls.length - max} more lines`] : []);
    };
    if (part.kind === "text" && part.text?.trim()) this.out([`[${at}] worker says (untrusted text):`, ...block(part.text)].join("\n"));
    else if (part.kind === "reasoning" && part.text?.trim()) this.out([`[${at}] worker thinks (untrusted text):`, ...block(part.text, 8)].join("\n"));
    else if (part.kind === "tool") {
      const input = part.input === undefined ? "" : safe(JSON.stringify(part.input)).slice(0, 300);
      // The call's input and what it printed are the worker's (its model's, its commands'): labelled, made safe.
      const said = [input ? "input" : "", part.error || part.output ? "output" : ""].filter(Boolean).join(" and ");
      const lines = [`[${at}] tool ${safe(part.tool ?? "?")} ${part.status ?? ""}${said ? ` (untrusted ${said})${input ? `: ${input}` : ""}` : ""}`];
      if (part.error) lines.push(...block(`error: ${part.error}`, 5));
      else if (part.output) lines.push(...block(part.output, 10));
      this.out(lines.join("\n"));
    } else if (part.kind === "user" && part.text?.trim()) this.out([`[${at}] prompt:`, ...block(part.text, 6)].join("\n"));
  }
}
