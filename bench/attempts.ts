// Attempts: a batch of tasks run once each against the same batch with 3 attempts per task (best-of-N, the checks pick
// the winner and the rest are stopped once one is built), on a paced scripted model that solves a task with a fixed
// probability (seeded, so both sides meet the same odds). Wall time and built rate side by side.
import { startScriptedModel, writeFile, type ScriptContext, type Step } from "../test/fixtures/scripted-model";
import { cleanup, makeRepo, scriptedTarget, settle, startEngine } from "../test/helpers";
import { log, round, spread, type Spread } from "./stats";

export interface AttemptsBench {
  tasks: number;
  reps: number;
  /** Silence before each model turn's first token (a paced model, as a fast API model answers). */
  pacedMs: number;
  /** The chance that one attempt solves its task (the model's pass@1 by construction). */
  solveP: number;
  slots: number;
  one: { wallMs: Spread; builtRate: Spread; tokens: Spread };
  three: { wallMs: Spread; builtRate: Spread; tokens: Spread; stoppedForWinner: number };
  /** three ÷ one wall time, per repetition. */
  wallRatio: Spread;
}

/** A small seeded PRNG (mulberry32): the same draws for the same seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function attemptsBench(o: { reps: number; tasks: number; pacedMs?: number; solveP?: number }): Promise<AttemptsBench> {
  const pacedMs = o.pacedMs ?? 1000;
  const solveP = o.solveP ?? 0.4;
  const slots = o.tasks * 3;
  const one: number[][] = [[], [], []];
  const three: number[][] = [[], [], []];
  const ratio: number[] = [];
  let stoppedForWinner = 0;
  for (let rep = 0; rep < o.reps; rep++) {
    let draw = prng(1000 + rep);
    /** Each attempt draws once, on its first model call, whether it solves the task; its next call reads what it wrote. */
    const script = (c: ScriptContext): Step => {
      if (c.turnStep === 0) return { ...writeFile("answer.txt", draw() < solveP ? "right\n" : "wrong\n"), silentMs: pacedMs };
      const wrote = JSON.stringify(c.messages.filter((m) => m?.role === "assistant").at(-1) ?? {});
      return { text: wrote.includes("right") ? "OUTCOME: built" : "OUTCOME: honest-failure — not sure it is right", silentMs: pacedMs };
    };
    const model = await startScriptedModel({ fallback: script });
    const engine = await startEngine();
    const dirs: string[] = [];
    try {
      await engine.client.targets.save.mutate({ target: scriptedTarget(model.url, slots), activate: true });
      await engine.client.policies.set.mutate({ rules: [{ tool: "edit", pattern: "*", decision: "once" }] });
      const side = async (attempts: 1 | 3) => {
        draw = prng(1000 + rep * 7 + attempts);
        const dir = makeRepo();
        dirs.push(dir);
        const t0 = performance.now();
        const tasks = Array.from({ length: o.tasks }, (_, i) => ({
          task: `BENCH-ATT ${i}: make answer.txt right`,
          directory: dir,
          checks: [{ run: "grep -qx right answer.txt" }],
          scope: ["answer.txt"],
          ...(attempts > 1 ? { attempts } : {}),
        }));
        const { batchId, workerIds } = await engine.client.workers.startBatch.mutate({ tasks });
        const ws = await settle(engine.client, workerIds, undefined, 600_000);
        const wallMs = performance.now() - t0;
        const b = await engine.client.workers.batch.query({ batchId });
        const tokens = [...ws.values()].reduce((s, w) => s + w.usage.input + w.usage.output + w.usage.reasoning, 0);
        const stopped = [...ws.values()].filter((w) => w.state === "stopped").length;
        return { wallMs, builtRate: b.builtRate ?? 0, tokens, stopped };
      };
      // The sides take turns going first.
      const order: (1 | 3)[] = rep % 2 ? [3, 1] : [1, 3];
      const got: Record<number, Awaited<ReturnType<typeof side>>> = {};
      for (const n of order) got[n] = await side(n);
      one[0]!.push(got[1]!.wallMs);
      one[1]!.push(got[1]!.builtRate);
      one[2]!.push(got[1]!.tokens);
      three[0]!.push(got[3]!.wallMs);
      three[1]!.push(got[3]!.builtRate);
      three[2]!.push(got[3]!.tokens);
      stoppedForWinner += got[3]!.stopped;
      ratio.push(got[3]!.wallMs / got[1]!.wallMs);
      log(
        `  attempts run ${rep + 1}/${o.reps}: one attempt ${round(got[1]!.wallMs / 1000)} s, built ${round(got[1]!.builtRate * 100, 0)} % | 3 attempts ${round(got[3]!.wallMs / 1000)} s, built ${round(got[3]!.builtRate * 100, 0)} %, ${got[3]!.stopped} stopped for a winner`,
      );
    } finally {
      await engine.kill();
      await model.close();
      cleanup(engine.stateDir, ...dirs);
    }
  }
  return {
    tasks: o.tasks,
    reps: o.reps,
    pacedMs,
    solveP,
    slots,
    one: { wallMs: spread(one[0]!, 0), builtRate: spread(one[1]!, 2), tokens: spread(one[2]!, 0) },
    three: { wallMs: spread(three[0]!, 0), builtRate: spread(three[1]!, 2), tokens: spread(three[2]!, 0), stoppedForWinner },
    wallRatio: spread(ratio, 2),
  };
}
