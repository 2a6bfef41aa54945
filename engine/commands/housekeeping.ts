import type { Command } from "commander";
import { ERROR_MAP } from "../../shared/errors";
import { jsonForTerminal, showUntrusted } from "../../shared/untrusted";

const terminalSafe = (t: string) => showUntrusted(t, { lines: false, max: 1000 });
import { connect } from "../api/client";
import { ensureEngine, stateDir } from "../api/launcher";
import { CliError, fail } from "./errors";
import { expectId } from "./hints";
import { startedHint } from "./workers";
import { counted } from "../../shared/words";

/**
 * `ocw retry ID` runs a finished, not built worker's task again as a new worker (fresh workspace, same target);
 * `ocw merge ID` merges one built worker's graded commit into its base branch; `ocw merge --batch ID` merges every
 * built worker of a batch one by one in submission order and stops at the first refused merge (exit 1, with why);
 * `ocw publish ID` puts a built worker's graded commit into the person's repository as branch ocw/<id>.
 */
export function registerHousekeepingCommands(program: Command): void {
  program
    .command("retry")
    .description("run a failed, stopped or errored worker's task again as a new worker (fresh workspace, same target)")
    .argument("<workerId>", "the worker to retry (see `ocw run` output or the dashboard)")
    .option("--json", "print JSON")
    .action(async (workerId: string, o: { json?: boolean }) => {
      try {
        expectId(workerId, "worker", `\`ocw show ${workerId}\` lists its workers; \`ocw retry\` takes one of them`);
        const client = connect(await ensureEngine(stateDir()), "cli:ocw retry");
        const r = await client.workers.retry.mutate({ workerId });
        console.log(o.json ? jsonForTerminal(r, 0) : `retry of ${r.retryOf} started as ${r.workerId}\n${startedHint(r.workerId)}`);
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("merge")
    .description(
      "land a built worker's graded commit on its base branch (flagged files need --accept-flagged), or a batch (--batch ID): its integration commit when it has integration checks, else each built worker, stopping at a conflict",
    )
    .argument("[workerId]", "the built worker to merge")
    .option(
      "--batch <batchId>",
      "merge a batch: its integration commit when it has integration checks (only once they passed), else each built worker one by one in submission order, stopping at the first conflict",
    )
    .option(
      "--accept-flagged",
      "merge even though the change holds flagged files (symlinks, executables, .gitattributes/.lfsconfig/.gitmodules, tool configuration): review them first",
    )
    .option("--json", "print JSON")
    .action(async (workerId: string | undefined, o: { batch?: string; json?: boolean; acceptFlagged?: boolean }) => {
      try {
        if (!workerId === !o.batch) throw new CliError("give a worker id, or --batch BATCH_ID (not both)");
        if (workerId) expectId(workerId, "worker", `merge a batch with \`ocw merge --batch ${workerId}\``);
        if (o.batch) expectId(o.batch, "batch", `merge that worker with \`ocw merge ${o.batch}\``);
        const client = connect(await ensureEngine(stateDir()), "cli:ocw merge");
        if (workerId) {
          const m = await client.workers.merge.mutate({ workerId, acceptFlagged: !!o.acceptFlagged });
          if (o.json) console.log(jsonForTerminal({ workerId, ...m }, 0));
          else if (m.alreadyIn)
            console.log(`${workerId} was already in ${m.into} (it came in with a worker that started from it): recorded as merged, nothing changed`);
          else
            console.log(
              `merged ${workerId} into ${m.into} (${m.commit.slice(0, 12)})${m.alsoLanded.length ? `; it started from ${m.alsoLanded.join(", ")}'s graded work, which came in with it (recorded as merged)` : ""}`,
            );
          return;
        }
        const r = await client.workers.mergeBatch.mutate({ batchId: o.batch!, acceptFlagged: !!o.acceptFlagged });
        if (o.json) console.log(jsonForTerminal(r));
        else if (r.integration)
          console.log(
            `merged batch ${r.batchId}'s integration commit ${r.integration.commit.slice(0, 12)} into ${r.integration.into} (${r.integration.merge.slice(0, 12)}): ${r.merged.map((m) => m.workerId).join(", ")}`,
          );
        else {
          for (const m of r.merged) console.log(`merged ${m.workerId} into ${m.into} (${m.commit.slice(0, 12)})`);
          if (r.stopped) {
            console.log(`stopped at ${r.stopped.workerId}: ${terminalSafe(r.stopped.reason)}`);
            if (r.notTried.length) console.log(`not tried: ${r.notTried.join(", ")}`);
          }
          for (const s of r.skipped) console.log(`skipped ${s.workerId}: ${s.reason}`);
          if (!r.merged.length && !r.stopped) console.log(`batch ${r.batchId}: no built worker left to merge`);
        }
        if (r.stopped) process.exit(ERROR_MAP[r.stopped.code].exit);
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("publish")
    .description(
      "put a built worker's graded commit into your repository as branch ocw/<id>, to review or merge it with your own git tools (grading puts nothing there; merge and push do this themselves)",
    )
    .argument("<workerId>", "the built worker whose branch to publish")
    .option("--json", "print JSON")
    .action(async (workerId: string, o: { json?: boolean }) => {
      try {
        expectId(workerId, "worker", `\`ocw show ${workerId}\` lists its workers; \`ocw publish\` takes one of them`);
        const client = connect(await ensureEngine(stateDir()), "cli:ocw publish");
        const p = await client.workers.publish.mutate({ workerId });
        console.log(
          o.json
            ? jsonForTerminal({ workerId, ...p }, 0)
            : `published ${p.branch} at ${p.commit.slice(0, 12)} in ${p.repo} (${counted(p.objects, "object")} copied): review it with git, merge it with \`git merge --no-ff ${p.branch}\` or \`ocw merge ${workerId}\``,
        );
      } catch (err) {
        fail(err);
      }
    });
}
