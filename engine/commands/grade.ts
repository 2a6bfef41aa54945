import type { Command } from "commander";
import { jsonForTerminal } from "../../shared/untrusted";
import { pendingAsks, type Worker } from "../../shared/worker";
import { follow } from "../api/follow";
import { CliError, fail, unattendedDecision } from "./errors";
import { connectWithTarget, type TargetFlags } from "./target-flags";

interface GradeOptions extends TargetFlags {
  samples: number;
  json?: boolean;
}

export function registerGradeCommand(program: Command): void {
  program
    .command("grade")
    .description(
      "run the five-rung ladder against a target and write packs/<target-slug>/grade.json (asks are approved once: the ladder's repos are throwaway)",
    )
    .option("--endpoint <url>", "an OpenAI-compatible endpoint instead of the active target")
    .option("--model <id>", "the model id at --endpoint")
    .option("--api-key-env <var>", "environment variable holding the endpoint's key")
    .option("--samples <n>", "samples per rung (1–12)", (v) => Number(v), 1)
    .option("--json", "print the grade as JSON on stdout")
    .action((o: GradeOptions) => gradeCommand(o).catch(fail));
}

async function gradeCommand(o: GradeOptions): Promise<void> {
  if (!Number.isInteger(o.samples) || o.samples < 1 || o.samples > 12) throw new CliError("--samples must be a whole number from 1 to 12");
  const { client, targetId, warnings } = await connectWithTarget(o, "cli:ocw grade");
  for (const w of warnings) process.stderr.write(`ocw: warning: ${w}\n`);
  const target = targetId ? (await client.targets.list.query()).targets.find((t) => t.id === targetId) : (await client.status.query()).activeTarget;
  if (!target) throw new CliError("no active target: run `ocw setup`, or pass --endpoint URL --model ID");

  // the ladder's repositories are made, and its batch started, by the engine (ladder.start)
  const { batchId, workerIds } = await client.ladder.start.mutate({ targetId: target.id, samples: o.samples });
  process.stderr.write(`ocw: ladder batch ${batchId}: ${workerIds.length} workers on ${target.id}\n`);
  const answered = new Set<string>();
  const approve = (workers: Map<string, Worker>) => {
    for (const w of workers.values())
      for (const a of pendingAsks(w))
        if (!answered.has(a.id)) {
          answered.add(a.id);
          void client.approvals.decide.mutate(unattendedDecision(a, "once")).catch(() => undefined);
        }
  };
  // until every worker is graded (follow ends then), its asks answered once as they come
  await follow(client, workerIds, {
    onEvent: (e, ws) => {
      approve(ws);
      if (e.type === "verdict") process.stderr.write(`ocw: ${e.workerId} ${e.verdict.verdict}${e.verdict.honest ? "" : " (dishonest claim)"}\n`);
    },
    until: (ws) => (approve(ws), false),
  });
  const { grade, file } = await client.ladder.finish.mutate({ targetId: target.id, samples: o.samples, workerIds });
  if (o.json) process.stdout.write(jsonForTerminal({ ...grade, file }) + "\n");
  else {
    for (const r of grade.rungs)
      process.stderr.write(
        `rung ${r.rung} ${r.name.padEnd(30)} built ${(r.builtRate * 100).toFixed(0)}%  honest ${(r.honestRate * 100).toFixed(0)}%  (n=${r.samples})\n`,
      );
    process.stderr.write(`ocw: grade written to ${file}\n`);
  }
}
