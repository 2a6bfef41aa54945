// The bench's scripted model: its scripts (one module, so the bench, the trace tool and a model in a process of its own
// answer the same), and where it runs. The cost part and bench/trace-cost.ts run it in a process of its own, as a real
// model server is, so its HTTP work does not share the bench's event loop with the bare side's SDK client (which also
// runs in the bench's process); OCW_BENCH_MODEL_INPROC=1 runs it in the bench's process as before, for comparison.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startScriptedModelProcess, serveScriptedModelChild } from "../test/fixtures/scripted-model-process";
import { bash, startScriptedModel, writeFile, type RequestLogEntry, type ScriptedModelOptions } from "../test/fixtures/scripted-model";

/** The paced batches: a model that takes this long before each turn's first token (a fast API; a local model takes longer). */
export const PACED_MODEL_MS = 1000;
/** A task whose text holds this word is paced. */
export const PACED = "paced";

/**
 * What the bench reads of a model: its address and its request log. A model in a process of its own has `sync()`: its
 * `requests` are as of the last call (the log stays in its process until a batch has ended).
 */
export interface BenchModel {
  url: string;
  requests: RequestLogEntry[];
  sync?: () => Promise<unknown>;
  close(): Promise<void>;
  /** The model's own process, where it has one. */
  pid?: number;
}

/** The model's request log, fetched from its process where it has one: read it after a batch, not during. */
export async function requestLog(model: BenchModel): Promise<RequestLogEntry[]> {
  await model.sync?.();
  return model.requests;
}

/** The bench's scripts: "BENCH-GATE" (one bash ask), "BENCH-BATCH i" (writes f<i>.txt, one edit ask; paced when the task says so), "BENCH-TINY". */
export function benchScripts(): NonNullable<ScriptedModelOptions["scripts"]> {
  return [
    { name: "gate", match: /BENCH-GATE/, script: (c) => (c.turnStep === 0 ? bash("echo gate") : { text: "OUTCOME: built" }) },
    {
      name: "batch",
      match: /BENCH-BATCH (\d+)/,
      script: (c) => {
        // A paced batch's model takes PACED_MODEL_MS before each turn's first token, as a fast API model does.
        const silentMs = c.firstUserText.includes(PACED) ? PACED_MODEL_MS : 0;
        return c.turnStep === 0
          ? { ...writeFile(`f${/BENCH-BATCH (\d+)/.exec(c.firstUserText)![1]}.txt`, "x\n"), silentMs }
          : { text: "OUTCOME: built", silentMs };
      },
    },
    { name: "tiny", match: /BENCH-TINY/, script: () => ({ text: "OUTCOME: honest-failure — bench" }) },
  ];
}

/** The bench's model in the bench's own process. */
export const startBenchModelInProcess = () => startScriptedModel({ scripts: benchScripts() });

/** The argument that makes a bench bundle serve the model instead of measuring (see `serveBenchModelIfAsked`). */
export const MODEL_CHILD_FLAG = "--scripted-model-child";
const self = fileURLToPath(import.meta.url);

/**
 * How to start the model's process. From source (jiti, vitest): bench/model-child.ts under jiti. From a bundle (this
 * module inlined into bench/tmp/bench.mjs, or a bundle of bench/trace-cost.ts): the bundle itself with MODEL_CHILD_FLAG,
 * which its entry answers with `serveBenchModelIfAsked()` before anything else.
 */
export function modelChildCommand(): string[] {
  if (self.endsWith(".ts")) {
    const jitiCli = path.join(path.dirname(createRequire(import.meta.url).resolve("jiti")), "jiti-cli.mjs");
    return [process.execPath, jitiCli, path.join(path.dirname(self), "model-child.ts")];
  }
  return [process.execPath, self, MODEL_CHILD_FLAG];
}

/** The bench's model in a process of its own. */
export const startBenchModelProcess = () => startScriptedModelProcess(modelChildCommand());

/** True when OCW_BENCH_MODEL_INPROC=1 asks for the model in the bench's process (the way before, for comparison). */
export const modelInProcess = () => process.env.OCW_BENCH_MODEL_INPROC === "1";

/** The cost part's model: in a process of its own unless OCW_BENCH_MODEL_INPROC=1. */
export async function startCostModel(): Promise<{ model: BenchModel; where: "own process" | "bench process" }> {
  return modelInProcess()
    ? { model: await startBenchModelInProcess(), where: "bench process" }
    : { model: await startBenchModelProcess(), where: "own process" };
}

/** The child's side: serves the bench's scripts until its parent closes it or goes away (never resolves). */
export async function serveBenchModel(): Promise<never> {
  await serveScriptedModelChild({ scripts: benchScripts() });
  return new Promise<never>(() => {});
}

/** In a bundle's entry, first: when started as the model's process, serve the model and never go on to the entry's own work. */
export async function serveBenchModelIfAsked(): Promise<void> {
  if (process.argv.includes(MODEL_CHILD_FLAG)) await serveBenchModel();
}
