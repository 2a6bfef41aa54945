// Fit: the estimator (engine/models/estimate.ts) against buffer sizes a real llama-server logged, and the time the
// real hardware detection takes on this machine.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { detectHardware } from "../engine/hardware/detect";
import { estimate, MiB } from "../engine/models/estimate";
import { tensorBytes } from "../engine/models/ggml-types";
import type { GgufTensorInfo } from "../engine/models/gguf";
import { hparamsFromMetadata } from "../engine/models/hparams";
import { findLlamaServer, freePort, parseServerLog, startLlamaServer, stopPid } from "../engine/serving/llama-server";
import { modelLayout, vocabDirFor, writeTinyModels, type ModelSpec } from "../test/fixtures/gguf/writer";
import { estimateOptionsFromFlags, FIT_MATRIX, flagsFromLogName, type MatrixModel } from "../test/fixtures/fit-matrix";
import { cleanup, tempDir } from "../test/helpers";
import { round } from "./stats";

type ModelName = MatrixModel;

// The tiny models the recorded logs came from (test/fixtures/gguf/writer.ts writeTinyModels, llama-spm vocab of 32000).
const SPECS: Record<ModelName, ModelSpec> = {
  llama: { arch: "llama", nVocab: 32000 },
  gemma3: { arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3, nVocab: 32000 },
  lfm2: { arch: "lfm2", nLayer: 6, nHead: 8, nHeadKv: [0, 0, 2, 0, 0, 2], nVocab: 32000 },
};
const LOG_MODEL: Record<string, ModelName> = { "llama-gqa": "llama", "gemma3-swa": "gemma3", "lfm2-hybrid": "lfm2" };

const BUFFERS = ["kv", "recurrent", "weights", "output", "compute"] as const;
type Buffer = (typeof BUFFERS)[number];

export interface FitCase {
  model: ModelName;
  flags: string;
  /** MiB per buffer: [logged by llama-server, estimated]. */
  mib: Record<Buffer, [number, number]>;
  totalErrPct: number;
}

export interface FitResult {
  source: string;
  cases: FitCase[];
  /** Over every buffer llama-server logged (non-zero) in every case. */
  maxErrPct: number;
  meanErrPct: number;
  /** The whole server's memory (sum of the buffers) per case. */
  totalMaxErrPct: number;
  totalMeanErrPct: number;
  byBuffer: Record<Buffer, { maxErrPct: number; meanErrPct: number; n: number }>;
}

async function estimateFor(model: ModelName, flags: string[]) {
  const { kvs, tensors } = await modelLayout(SPECS[model]);
  const meta = Object.fromEntries(kvs.map((k) => [k.key, k.value]));
  const infos: GgufTensorInfo[] = tensors.map((t) => ({ name: t.name, shape: t.shape, type: t.type, offset: 0, bytes: tensorBytes(t.type, t.shape) }));
  return estimate(hparamsFromMetadata(meta), infos, estimateOptionsFromFlags(flags));
}

function compare(model: ModelName, flags: string[], logText: string, e: Awaited<ReturnType<typeof estimateFor>>): FitCase {
  const log = parseServerLog(logText);
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  // The log prints MiB with two decimals: compare at that precision.
  const m2 = (bytes: number) => round(bytes / MiB, 2);
  const mib: FitCase["mib"] = {
    kv: [
      round(
        log.kv.reduce((a, k) => a + k.MiB, 0),
        2,
      ),
      m2(e.kvBytes),
    ],
    recurrent: [
      round(
        log.recurrent.reduce((a, r) => a + r.MiB, 0),
        2,
      ),
      m2(e.recurrentBytes),
    ],
    weights: [round(sum(log.modelMiB), 2), m2(e.weightsBytes ?? 0)],
    output: [round(sum(log.outputMiB), 2), m2(e.outputBytes)],
    compute: [round(sum(log.computeMiB), 2), m2(e.computeBytes)],
  };
  const logged = BUFFERS.reduce((a, b) => a + mib[b][0], 0);
  const est = BUFFERS.reduce((a, b) => a + mib[b][1], 0);
  return { model, flags: flags.join(" "), mib, totalErrPct: round(((est - logged) / logged) * 100, 2) };
}

function summarize(source: string, cases: FitCase[]): FitResult {
  const errs = (b: Buffer) => cases.filter((c) => c.mib[b][0] > 0).map((c) => Math.abs(((c.mib[b][1] - c.mib[b][0]) / c.mib[b][0]) * 100));
  const all = BUFFERS.flatMap(errs);
  const totals = cases.map((c) => Math.abs(c.totalErrPct));
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  return {
    source,
    cases,
    maxErrPct: round(Math.max(...all), 2),
    meanErrPct: round(mean(all), 2),
    totalMaxErrPct: round(Math.max(...totals), 2),
    totalMeanErrPct: round(mean(totals), 2),
    byBuffer: Object.fromEntries(
      BUFFERS.map((b) => [b, { maxErrPct: round(Math.max(0, ...errs(b)), 2), meanErrPct: round(mean(errs(b)), 2), n: errs(b).length }]),
    ) as FitResult["byBuffer"],
  };
}

/** The recorded logs of real llama-server runs (test/fixtures/llama-logs/<model>-c<ctx>-np<n>[-kvu][-ub<n>][-faoff][-q8_0|-q4_0].log). */
export async function fitRecorded(root: string): Promise<FitResult> {
  const dir = path.join(root, "test", "fixtures", "llama-logs");
  const cases: FitCase[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith(".log"))
    .sort()) {
    const key = Object.keys(LOG_MODEL).find((k) => name.startsWith(`${k}-`));
    if (!key) continue;
    const model = LOG_MODEL[key]!;
    const flags = flagsFromLogName(name.slice(key.length));
    cases.push(compare(model, flags, readFileSync(path.join(dir, name), "utf8"), await estimateFor(model, flags)));
  }
  return summarize("recorded logs (test/fixtures/llama-logs)", cases);
}

/** The 19-server matrix against a real llama-server; null where none (with its test vocabularies) is found. */
export async function fitLive(): Promise<FitResult | null> {
  const bin = findLlamaServer();
  const vocab = bin ? vocabDirFor(bin) : null;
  if (!bin || !vocab) return null;
  const tmp = tempDir("bench-fit");
  try {
    const files = await writeTinyModels(tmp, vocab);
    const cases: FitCase[] = [];
    for (const { model, flags } of FIT_MATRIX) {
      const port = await freePort();
      const logFile = path.join(tmp, `${model}-${flags.join("_")}.log`);
      const s = await startLlamaServer({
        bin,
        args: ["-m", files[model], "--host", "127.0.0.1", "--port", String(port), "-fit", "off", "-lv", "4", ...flags],
        apiKey: null,
        logFile,
        port,
      });
      await stopPid(s.pid);
      cases.push(compare(model, flags, readFileSync(logFile, "utf8"), await estimateFor(model, flags)));
    }
    return summarize(`live llama-server (${bin})`, cases);
  } finally {
    cleanup(tmp);
  }
}

/** The real detection call (vendor tools, sysfs, CPU/RAM, llama-server --list-devices when a binary is known). */
export async function timeDetection(): Promise<{ ms: number; gpus: number; probes: string }> {
  const t0 = performance.now();
  const r = await detectHardware({ llamaServer: findLlamaServer() });
  return { ms: performance.now() - t0, gpus: r.gpus.length, probes: r.probes.map((p) => `${p.name} ${p.ms} ms (${p.note})`).join(", ") };
}
