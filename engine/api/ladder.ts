/**
 * `ocw grade` on the engine's API (issue 31): the ladder's throwaway repositories made in the engine's state dir and
 * started as one batch (ladder.start), and once its workers are graded, the summary written to
 * packs/<target-slug>/grade.json (ladder.finish). The command follows the batch and answers its asks in between.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { StartBatchInput } from "../../shared/api";
import { targetSlug } from "../../shared/target";
import type { Worker } from "../../shared/worker";
import { config } from "../config";
import { LADDER, materializeRung, summarizeLadder } from "../grading";
import { projectRoot } from "../paths";
import { stateDir, writeJsonAtomic } from "../store";
import { InputError } from "../../shared/errors";
import type { Engine } from "../workers";

export const LadderStartInput = z.object({ targetId: z.string().min(1).max(200), samples: z.number().int().min(1).max(12) });
export const LadderFinishInput = LadderStartInput.extend({ workerIds: z.array(z.string().min(1).max(200)).max(LADDER.length * 12) });

function targetOf(engine: Engine, id: string) {
  const target = engine.targets.get(id);
  if (!target) throw new InputError(`no target "${id}". Run \`ocw targets\` to list them.`);
  return target;
}

/** Each rung `samples` times, in a fresh folder each, as one batch on the target; rung by rung in the ids' order. */
export async function ladderStart(engine: Engine, i: z.infer<typeof LadderStartInput>) {
  const target = targetOf(engine, i.targetId);
  const runDir = path.join(stateDir(), "ladder", new Date().toISOString().replace(/[:.]/g, "-"));
  const tasks = LADDER.flatMap((rung) =>
    Array.from({ length: i.samples }, (_, k) => ({
      task: rung.task,
      directory: materializeRung(rung, path.join(runDir, `rung${rung.rung}-s${k + 1}`)),
      checks: rung.checks,
      scope: rung.scope,
      protect: rung.protect,
      targetId: target.id,
      title: `ladder ${rung.rung}.${k + 1}: ${rung.name}`,
    })),
  );
  // as workers.startBatch takes them (the contract's defaults filled in)
  return await engine.startBatch(StartBatchInput.parse({ tasks }).tasks);
}

/** The ladder's grade from its workers (ids as ladder.start gave them), written to packs/<target-slug>/grade.json. */
export function ladderFinish(engine: Engine, i: z.infer<typeof LadderFinishInput>) {
  const target = targetOf(engine, i.targetId);
  const byRung = new Map<number, Worker[]>();
  i.workerIds.forEach((id, n) => {
    const rung = LADDER[Math.floor(n / i.samples)]?.rung;
    if (rung === undefined) throw new InputError(`more workers than the ladder's ${LADDER.length} rungs × ${i.samples} samples`);
    byRung.set(rung, [...(byRung.get(rung) ?? []), engine.get(id)]);
  });
  const grade = summarizeLadder(target, i.samples, byRung);
  const packs = config().OCW_PACKS_DIR ?? path.join(projectRoot(), "packs");
  const file = path.join(packs, targetSlug(target), "grade.json");
  mkdirSync(path.dirname(file), { recursive: true });
  writeJsonAtomic(file, grade, 0o644);
  return { grade, file };
}
