// Setup time (issue 13): time to a verified target with the model on disk (`setup.start`: plan, runtime, load,
// warm-up, verify, placement) against llama-server's own load time (the same binary, model and arguments, spawn →
// /health 200). Goal: ≤ 1.2×. Verify sends real requests (a coding task, a tool-call round trip, the concurrency burst
// and the KV-pool fill), so the report splits the start into its phases: what setup adds around the load, and what
// verify costs. Needs a llama-server (LLAMA_SERVER or the build cache) and its test vocabularies; returns null without.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { findLlamaServer, freePort, startLlamaServer, stopPid } from "../engine/serving/llama-server";
import { vocabDirFor, writeTinyModels } from "../test/fixtures/gguf/writer";
import { median, round } from "./stats";

export interface SetupBench {
  model: string;
  slots: number;
  ctxPerSlot: number;
  reps: number;
  /** llama-server alone, same args: spawn → /health 200 (ms, per repetition). */
  llamaLoadMs: number[];
  /** setup.start with the model on disk: job start → target saved (ms, per repetition). */
  setupMs: number[];
  /** Median ms per phase of the setup runs. */
  phases: Record<string, number>;
  /** median(setup) ÷ median(llama load). */
  ratio: number;
  /** The same without the verify phase (what setup adds around the load besides the requests it sends). */
  ratioWithoutVerify: number;
  outcome: string;
  note: string;
}

/**
 * `reps` alternating pairs (setup first, then llama-server alone, or the reverse every other time: order effects on a
 * loaded machine split evenly). Each run gets a fresh state dir; servers are stopped before the next.
 */
export async function setupBench(o: { reps?: number; slots?: number; ctx?: number; log?: (l: string) => void } = {}): Promise<SetupBench | null> {
  const bin = (() => {
    try {
      return findLlamaServer();
    } catch {
      return null;
    }
  })();
  const vocab = vocabDirFor(bin ?? undefined);
  if (!bin || !vocab) return null;
  const reps = o.reps ?? 3;
  const slots = o.slots ?? 2;
  // at least MIN_SLOT_CTX (7168): a smaller slot cannot take OpenCode's first request and verify fails it
  const ctx = o.ctx ?? 8192;
  const log = o.log ?? (() => {});
  const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-bench-setup-"));
  const prevState = process.env.OCW_STATE_DIR;
  const prevSup = process.env.OCW_SUPERVISE;
  const { runStartJob } = await import("../engine/serving/start");
  const { stopServing } = await import("../engine/serving/setup");
  const { TargetStore } = await import("../engine/store/targets");
  const setupMs: number[] = [];
  const llamaLoadMs: number[] = [];
  const phaseRuns: Record<string, number[]> = {};
  let outcome = "";
  let args: string[] | null = null;
  try {
    mkdirSync(path.join(dir, "models"), { recursive: true });
    const model = (await writeTinyModels(path.join(dir, "models"), vocab)).llama;
    // a server of ocw's own is what setup starts (no `ocw serving supervise` from a bench process)
    process.env.OCW_SUPERVISE = "0";
    const runSetup = async (k: number) => {
      process.env.OCW_STATE_DIR = path.join(dir, `state-${k}`);
      const job = await runStartJob({ input: { runtime: "llama.cpp", model, slots, ctx }, store: new TargetStore(), llamaServer: bin });
      await stopServing();
      if (!job.result) throw new Error(`setup failed: ${job.failure?.phase} ${job.failure?.cause}`);
      outcome = job.result.outcome;
      args = job.servers?.[0]?.args ?? null;
      setupMs.push(job.ms!);
      for (const p of job.phases) (phaseRuns[p.name] ??= []).push(p.ms ?? 0);
      log(`setup ${k + 1}/${reps}: ${job.ms} ms (${job.phases.map((p) => `${p.name} ${p.ms}`).join(", ")})`);
    };
    const runLoad = async (k: number) => {
      if (!args) throw new Error("no launch arguments from setup yet");
      const port = await freePort();
      const a = [...args];
      a[a.indexOf("--port") + 1] = String(port);
      const s = await startLlamaServer({ bin, args: a, apiKey: "bench-key", logFile: path.join(dir, `load-${k}.log`), port });
      llamaLoadMs.push(s.readyMs);
      await stopPid(s.pid);
      log(`llama-server alone ${k + 1}/${reps}: ${Math.round(s.readyMs)} ms`);
    };
    await runSetup(0); // the first setup also gives the arguments; it counts as repetition 1 (setup first)
    await runLoad(0);
    for (let k = 1; k < reps; k++) {
      if (k % 2) {
        await runLoad(k);
        await runSetup(k);
      } else {
        await runSetup(k);
        await runLoad(k);
      }
    }
  } finally {
    if (prevState === undefined) delete process.env.OCW_STATE_DIR;
    else process.env.OCW_STATE_DIR = prevState;
    if (prevSup === undefined) delete process.env.OCW_SUPERVISE;
    else process.env.OCW_SUPERVISE = prevSup;
    rmSync(dir, { recursive: true, force: true });
  }
  const phases = Object.fromEntries(Object.entries(phaseRuns).map(([k, v]) => [k, round(median(v), 0)]));
  const load = median(llamaLoadMs);
  const total = median(setupMs);
  return {
    model: "tiny llama-gqa (random weights, generated)",
    slots,
    ctxPerSlot: ctx,
    reps,
    llamaLoadMs: llamaLoadMs.map((x) => round(x, 0)),
    setupMs,
    phases,
    ratio: round(total / load, 2),
    ratioWithoutVerify: round((total - (phases.verify ?? 0)) / load, 2),
    outcome,
    note: "verify sends real requests (coding task, tool-call round trip, concurrency burst, KV-pool fill); on a tiny model they dominate, on a real model the load does",
  };
}
