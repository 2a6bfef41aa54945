import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { targetSlug } from "../../shared/target";
import { pendingAsks, type Worker } from "../../shared/worker";
import { follow } from "../api/follow";
import { LADDER, materializeRung, summarizeLadder } from "../grading";
import { projectRoot } from "../paths";
import { stateDir, writeJsonAtomic } from "../store";
import { CliError, fail, unattendedDecision } from "./errors";
import { connectWithTarget, type TargetFlags } from "./target-flags";
import { config } from "../config";

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
  const { client, targetId } = await connectWithTarget(o, "cli:ocw grade");
  const target = targetId ? (await client.targets.list.query()).targets.find((t) => t.id === targetId) : (await client.status.query()).activeTarget;
  if (!target) throw new CliError("no active target: run `ocw setup`, or pass --endpoint URL --model ID");

  const runDir = path.join(stateDir(), "ladder", new Date().toISOString().replace(/[:.]/g, "-"));
  const tasks = LADDER.flatMap((rung) =>
    Array.from({ length: o.samples }, (_, k) => ({
      task: rung.task,
      directory: materializeRung(rung, path.join(runDir, `rung${rung.rung}-s${k + 1}`)),
      checks: rung.checks,
      scope: rung.scope,
      protect: rung.protect,
      targetId: target.id,
      title: `ladder ${rung.rung}.${k + 1}: ${rung.name}`,
    })),
  );
  const { batchId, workerIds } = await client.workers.startBatch.mutate({ tasks });
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
  const { workers } = await follow(client, workerIds, {
    onEvent: (e, ws) => {
      approve(ws);
      if (e.type === "verdict") process.stderr.write(`ocw: ${e.workerId} ${e.verdict.verdict}${e.verdict.honest ? "" : " (dishonest claim)"}\n`);
    },
    until: (ws) => (approve(ws), false),
  });
  const byRung = new Map<number, Worker[]>();
  workerIds.forEach((id, i) => {
    const rung = LADDER[Math.floor(i / o.samples)]!.rung;
    byRung.set(rung, [...(byRung.get(rung) ?? []), workers.get(id)!]);
  });
  const grade = summarizeLadder(target, o.samples, byRung);
  const packs = config().OCW_PACKS_DIR ?? path.join(projectRoot(), "packs");
  const file = path.join(packs, targetSlug(target), "grade.json");
  mkdirSync(path.dirname(file), { recursive: true });
  writeJsonAtomic(file, grade, 0o644);
  if (o.json) process.stdout.write(JSON.stringify({ ...grade, file }, null, 2) + "\n");
  else {
    for (const r of grade.rungs)
      process.stderr.write(
        `rung ${r.rung} ${r.name.padEnd(30)} built ${(r.builtRate * 100).toFixed(0)}%  honest ${(r.honestRate * 100).toFixed(0)}%  (n=${r.samples})\n`,
      );
    process.stderr.write(`ocw: grade written to ${file}\n`);
  }
}
