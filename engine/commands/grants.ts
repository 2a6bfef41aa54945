import type { Command } from "commander";
import { grantShown, grantsInView } from "../../shared/grants";
import type { Grant } from "../../shared/permission";
import { jsonForTerminal, showUntrusted } from "../../shared/untrusted";
import { toolWord } from "../../shared/wait";
import { counted } from "../../shared/words";
import { connect } from "../api/client";
import { ensureEngine, stateDir } from "../api/launcher";
import { fail } from "./errors";

/**
 * `ocw grants [--json]` lists the "always" answers the engine holds (per worker: tool + pattern, who granted it);
 * `ocw grants --revoke ID` takes one back: later matching asks go to a person again.
 */
export function registerGrantsCommand(program: Command): void {
  program
    .command("grants")
    .description('list the "always" answers the engine holds, or revoke one (--revoke ID)')
    .option("--revoke <grantId>", "revoke this grant: later matching asks of its worker go to a person again")
    .option("--json", "print JSON")
    .action(async (o: { revoke?: string; json?: boolean }) => {
      try {
        const client = connect(await ensureEngine(stateDir()), "cli:ocw grants");
        if (o.revoke) {
          const g = await client.approvals.revokeGrant.mutate({ grantId: o.revoke });
          console.log(o.json ? jsonForTerminal(g, 0) : `revoked ${g.id}: ${grantWords(g)} (worker ${g.workerId})`);
          return;
        }
        const grants = await client.approvals.grants.query();
        if (o.json) return console.log(jsonForTerminal(grants));
        // As the approvals screen shows them: those in force, a path in the workspace as the repository's.
        const { shown, expired } = grantsInView(grants);
        const note = expired ? `${counted(expired, "expired grant")} not shown (their workers' runs ended)` : "";
        if (!shown.length) return console.log(`no grants in force: nothing is answered "always"${note ? `; ${note}` : ""}`);
        const worktrees = new Map<string, string | null>();
        for (const id of new Set(shown.map((g) => g.workerId)))
          worktrees.set(id, (await client.workers.get.query({ workerId: id }).catch(() => null))?.worktree ?? null);
        for (const g of shown)
          console.log(`${g.id}  worker ${g.workerId}  ${grantWords(g, worktrees.get(g.workerId))}  (by ${g.by.kind}${g.by.name ? " " + g.by.name : ""})`);
        if (note) console.log(note);
      } catch (err) {
        fail(err);
      }
    });
}

/**
 * A grant as the terminal shows it: its tool as `ocw asks` names an ask's (toolWord: a name that is not plain is quoted
 * and labelled as the model's), its pattern made safe, a path in the workspace as the repository's.
 */
export function grantWords(g: Pick<Grant, "tool" | "pattern">, worktree?: string | null): string {
  return `${toolWord(g.tool)} ${showUntrusted(grantShown(g.pattern, worktree ?? null), { lines: false, max: 1000 })}`;
}
