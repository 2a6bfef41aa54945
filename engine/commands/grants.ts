import type { Command } from "commander";
import { grantShown, grantsInView } from "../../shared/grants";
import { jsonForTerminal, showUntrusted } from "../../shared/untrusted";
import { counted } from "../../shared/words";

const terminalSafe = (t: string) => showUntrusted(t, { lines: false, max: 1000 });
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
          console.log(o.json ? jsonForTerminal(g, 0) : `revoked ${g.id}: ${g.tool} ${terminalSafe(g.pattern)} (worker ${g.workerId})`);
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
          console.log(
            `${g.id}  worker ${g.workerId}  ${g.tool} ${terminalSafe(grantShown(g.pattern, worktrees.get(g.workerId)))}  (by ${g.by.kind}${g.by.name ? " " + g.by.name : ""})`,
          );
        if (note) console.log(note);
      } catch (err) {
        fail(err);
      }
    });
}
