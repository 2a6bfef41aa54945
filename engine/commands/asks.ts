import type { Command } from "commander";
import type { PermissionAsk } from "../../shared/permission";
import { connect } from "../api/client";
import { ensureEngine, stateDir } from "../api/launcher";
import { askWhat } from "../mcp/format";
import { CliError, fail } from "./errors";
import { expectId } from "./hints";
import { askText } from "./run";
import { jsonForTerminal } from "../../shared/untrusted";
import { toolWord } from "../../shared/wait";

/**
 * `ocw asks` and `ocw approve ASK_ID`: the asks a worker waits on, answered from the command line. A run that was
 * detached (Ctrl-C) or an `ocw resume`d worker left its asks to the dashboard or MCP alone; a newcomer who typed
 * `ocw approve` got "unknown command". The ask is shown as `ocw run`'s prompt shows it (made safe, the diff cut).
 */
export function registerAskCommands(program: Command): void {
  program
    .command("asks")
    .description("the asks workers wait on (oldest first): what each wants to do, shown as `ocw run` shows it; answer one with `ocw approve ASK_ID`")
    .option("--worker <workerId>", "only this worker's asks")
    .option("--json", "print JSON")
    .action(async (o: { worker?: string; json?: boolean }) => {
      try {
        if (o.worker) expectId(o.worker, "worker", `\`ocw show ${o.worker}\` lists its workers`);
        const c = connect(await ensureEngine(stateDir()), "cli:ocw asks");
        // An unknown id is said as every other command says it (it was "no asks waiting on w-…", exit 0).
        if (o.worker) await c.workers.get.query({ workerId: o.worker });
        const asks = (await c.approvals.list.query()).filter((a) => !o.worker || a.workerId === o.worker);
        if (o.json) return console.log(jsonForTerminal(asks));
        if (!asks.length) return console.log(`no asks waiting${o.worker ? ` on ${o.worker}` : ""}`);
        // Paths in the worker's workspace as `ocw run` shows them: relative to it (the private path never shown).
        const worktrees = new Map((await c.workers.list.query()).map((w) => [w.id, w.worktree]));
        for (const a of asks) {
          const wt = worktrees.get(a.workerId);
          const shown = { ...a, what: askWhat(a, wt), ...(a.diff ? { diff: askWhat({ what: a.diff }, wt) } : {}) };
          process.stdout.write(`${askText(shown).replace(/^\n/, "")}  answer: ${approveHint(a)}\n\n`);
        }
      } catch (err) {
        fail(err);
      }
    });

  program
    .command("approve")
    .description("answer a worker's ask (see `ocw asks`): allow it once (the default), --always (a grant for its worker), or --reject it")
    .argument("<askId>", "the ask's id (per_…, from `ocw asks`, `ocw show` or `ocw logs`)")
    .option("--always", 'allow it and every later ask of its worker that "always" covers (see `ocw asks`; revoke with `ocw grants --revoke`)')
    .option("--reject", "refuse it (a question: dismiss it)")
    .option("--message <text>", "with --reject: a note the worker reads")
    .option("--json", "print the decided ask as JSON")
    .action(async (askId: string, o: { always?: boolean; reject?: boolean; message?: string; json?: boolean }) => {
      try {
        if (o.always && o.reject) throw new CliError("give --always or --reject, not both");
        if (/^[wba]-/.test(askId)) throw new CliError(`"${askId}" is not an ask id: \`ocw asks\` lists the asks waiting, with their ids`);
        const c = connect(await ensureEngine(stateDir()), "cli:ocw approve");
        const decision = o.reject ? "reject" : o.always ? "always" : "once";
        const pending = (await c.approvals.list.query()).find((a) => a.id === askId);
        // A question needs answers, which a flag cannot give: the dashboard or MCP shows its options.
        if (pending?.kind === "question" && decision !== "reject")
          throw new CliError(
            `${askId} is a question: answer it in the dashboard (\`ocw gui\`) or over MCP, or dismiss it with \`ocw approve ${askId} --reject\``,
          );
        const a = await c.approvals.decide.mutate({ askId, decision, ...(o.message?.trim() ? { message: o.message } : {}) });
        if (o.json) return console.log(jsonForTerminal(a));
        console.log(
          `${a.id} (${a.workerId} ${toolWord(a.tool)}): ${decision === "reject" ? "rejected" : decision === "always" ? "allowed always" : "allowed once"}`,
        );
      } catch (err) {
        fail(err);
      }
    });
}

function approveHint(a: PermissionAsk): string {
  return a.kind === "question"
    ? `a question: the dashboard (\`ocw gui\`) or MCP; dismiss with \`ocw approve ${a.id} --reject\``
    : `ocw approve ${a.id} (once) · --always · --reject`;
}
