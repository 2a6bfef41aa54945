// Fit on CUDA: the estimator (engine/models/estimate.ts) against what a CUDA llama-server logged on an NVIDIA H200
// (test/fixtures/llama-logs/cuda-h200/, recorded by the fit matrix of bench/fit.ts with -ngl 999 plus partial offload),
// per device and per buffer, and the GPU memory nvidia-smi saw in use while each server was loaded.
// Run: node_modules/.bin/jiti bench/fit-cuda.ts   (prints the tables that bench/fit-cuda.md holds)
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { type DeviceBudget, estimate, type Estimate, type EstimateOptions, MiB } from "../engine/models/estimate";
import { tensorBytes } from "../engine/models/ggml-types";
import type { GgufTensorInfo } from "../engine/models/gguf";
import { hparamsFromMetadata } from "../engine/models/hparams";
import { modelLayout, type ModelSpec } from "../test/fixtures/gguf/writer";
import { estimateOptionsFromFlags, type MatrixModel } from "../test/fixtures/fit-matrix";
import { round } from "./stats";

// The tiny models the logs came from (test/fixtures/gguf/writer.ts writeTinyModels, llama-spm vocab of 32000), as in bench/fit.ts.
const SPECS: Record<MatrixModel, ModelSpec> = {
  llama: { arch: "llama", nVocab: 32000 },
  gemma3: { arch: "gemma3", nLayer: 6, nHead: 4, nHeadKv: 1, headDim: 64, swa: 512, swaPattern: 3, nVocab: 32000 },
  lfm2: { arch: "lfm2", nLayer: 6, nHead: 8, nHeadKv: [0, 0, 2, 0, 0, 2], nVocab: 32000 },
};
const FILE_MODEL: Record<string, MatrixModel> = { "llama-gqa": "llama", "gemma3-swa": "gemma3", "lfm2-hybrid": "lfm2" };

/** The H200 as engine/hardware/detect.ts sees it (test/fixtures/hardware/nvidia-smi-h200-recorded.csv). */
export const H200: DeviceBudget = { id: "nvidia0", name: "NVIDIA H200", kind: "gpu", freeBytes: 143156 * MiB, totalBytes: 143771 * MiB };

export const BUFFERS = [
  "gpu.weights",
  "gpu.kv",
  "gpu.recurrent",
  "gpu.compute",
  "host.weights",
  "host.kv",
  "host.recurrent",
  "host.compute",
  "host.output",
] as const;
export type Buffer = (typeof BUFFERS)[number];

/** A CUDA llama-server log (-v) with the recorder's `#` lines (flags, nvidia-smi samples). */
export interface CudaLog {
  id: string;
  model: MatrixModel;
  flags: string[];
  /** Flash attention as the server resolved it (auto → enabled / disabled). */
  flashAttn: "on" | "off";
  /** MiB per buffer, summed over the buffer types of each side (CUDA0 | CPU, CPU_Mapped, CUDA_Host). */
  mib: Record<Buffer, number>;
  /** memory.used (MiB) before the server started and once it was ready; the server process's own used_memory. */
  smiBefore: number | null;
  smiReady: number | null;
  smiProcess: number | null;
  /** llama.cpp's exit-time memory breakdown for CUDA0 (MiB): self = model + context + compute; unaccounted = the rest in use. */
  breakdown: { total: number; free: number; self: number; unaccounted: number } | null;
}

const HOST_BUFT = /^(CPU|CPU_Mapped|CUDA_Host)$/;

export function parseCudaLog(text: string): CudaLog {
  const mib = Object.fromEntries(BUFFERS.map((b) => [b, 0])) as Record<Buffer, number>;
  const side = (buft: string) => (HOST_BUFT.test(buft) ? "host" : "gpu");
  const add = (buft: string, what: string, v: number) => {
    mib[`${side(buft)}.${what}` as Buffer] += v;
  };
  let id = "";
  let file = "";
  let flags: string[] = [];
  let fa: "on" | "off" | "auto" = "auto";
  let smiBefore: number | null = null;
  let smiReady: number | null = null;
  let smiProcess: number | null = null;
  let breakdown: CudaLog["breakdown"] = null;
  const compute: Record<string, number> = {};
  const precise: Record<string, number> = {};
  const num = (s: string | undefined) => (s && /^\d+$/.test(s) ? Number(s) : null);
  for (const line of text.split(/\r?\n/)) {
    let m: RegExpExecArray | null;
    if (line.startsWith("#")) {
      const f = line.split("\t");
      if (f[0] === "#case") [id, file, flags] = [f[1]!, f[2]!, f[3]!.split(" ").filter(Boolean)];
      else if (f[0] === "#smi_before") smiBefore = num(f[1]);
      else if (f[0] === "#smi_ready") smiReady = num(f[1]);
      else if (f[0] === "#smi_apps") smiProcess = num(f[1]?.split(";")[0]?.split(",")[1]);
    } else if ((m = /load_tensors:\s+(\S+) model buffer size =\s+([\d.]+) MiB/.exec(line))) add(m[1]!, "weights", Number(m[2]));
    else if ((m = /llama_kv_cache:\s+(\S+) KV buffer size =\s+([\d.]+) MiB/.exec(line))) add(m[1]!, "kv", Number(m[2]));
    else if ((m = /llama_memory_recurrent:\s+(\S+) RS buffer size =\s+([\d.]+) MiB/.exec(line))) add(m[1]!, "recurrent", Number(m[2]));
    else if ((m = /sched_reserve:\s+(\S+) compute buffer size =\s+([\d.]+) MiB/.exec(line))) compute[m[1]!] = Number(m[2]);
    else if ((m = /~llama_context:\s+(\S+) compute buffer size is\s+([\d.]+) MiB/.exec(line))) precise[m[1]!] = Number(m[2]);
    else if ((m = /llama_context:\s+(\S+)\s+output buffer size =\s+([\d.]+) MiB/.exec(line))) add(m[1]!, "output", Number(m[2]));
    else if ((m = /llama_context: flash_attn\s+= (\w+)/.exec(line))) fa = m[1] === "enabled" ? "on" : m[1] === "disabled" ? "off" : "auto";
    else if (/Flash Attention not supported, set to disabled/.test(line)) fa = "off";
    else if (/resolve_fused_ops: Flash Attention enabled/.test(line)) fa = "on";
    else if ((m = /memory_breakdown_print: \|\s+- CUDA0 \([^)]*\)\s+\|\s+(\d+) =\s+(\d+) \+ \(\s*(\d+) =.*\+\s+(\d+) \|/.exec(line))) {
      breakdown = { total: Number(m[1]), free: Number(m[2]), self: Number(m[3]), unaccounted: Number(m[4]) };
    }
  }
  for (const [buft, v] of Object.entries({ ...compute, ...precise })) add(buft, "compute", v);
  const model = FILE_MODEL[file];
  if (!model) throw new Error(`unknown model ${file} in ${id}`);
  return { id, model, flags, flashAttn: fa === "auto" ? "on" : fa, mib, smiBefore, smiReady, smiProcess, breakdown };
}

/** The estimator's options for a llama-server command line, with the GPU placement (-ngl) on the H200. */
export function optionsFor(flags: string[]): EstimateOptions {
  const i = flags.indexOf("-ngl");
  const ngl = i >= 0 ? Number(flags[i + 1]) : -1;
  const rest = i >= 0 ? [...flags.slice(0, i), ...flags.slice(i + 2)] : flags;
  return { ...estimateOptionsFromFlags(rest), gpus: [H200], nGpuLayers: ngl >= 999 ? -1 : ngl };
}

async function estimateFor(model: MatrixModel, o: EstimateOptions): Promise<Estimate> {
  const { kvs, tensors } = await modelLayout(SPECS[model]);
  const meta = Object.fromEntries(kvs.map((k) => [k.key, k.value]));
  const infos: GgufTensorInfo[] = tensors.map((t) => ({ name: t.name, shape: t.shape, type: t.type, offset: 0, bytes: tensorBytes(t.type, t.shape) }));
  return estimate(hparamsFromMetadata(meta), infos, o);
}

function perBuffer(e: Estimate): Record<Buffer, number> {
  const g = e.perDevice.find((d) => d.kind === "gpu")!;
  const h = e.perDevice.find((d) => d.kind === "cpu")!;
  return {
    "gpu.weights": (g.weightsBytes ?? 0) / MiB,
    "gpu.kv": g.kvBytes / MiB,
    "gpu.recurrent": g.recurrentBytes / MiB,
    "gpu.compute": g.computeBytes / MiB,
    "host.weights": (h.weightsBytes ?? 0) / MiB,
    "host.kv": h.kvBytes / MiB,
    "host.recurrent": h.recurrentBytes / MiB,
    "host.compute": h.computeBytes / MiB,
    "host.output": h.outputBytes / MiB,
  };
}

export interface CudaFitCase {
  log: CudaLog;
  /** MiB per buffer: the estimate as the app asks for it (flags as given, -fa auto) and with flash attention as the server resolved it. */
  est: Record<Buffer, number>;
  estFa: Record<Buffer, number>;
  /** The estimator's whole-GPU figure (buffers + its per-GPU overhead) in MiB, for -fa auto and as resolved. */
  estGpuTotal: number;
  estGpuTotalFa: number;
  /** memory.used while loaded − before, and the part of it the logged CUDA0 buffers do not explain. */
  usedDelta: number | null;
  overhead: number | null;
}

export interface CudaFitResult {
  cases: CudaFitCase[];
  byBuffer: Record<Buffer, { n: number; maxErrPct: number; meanErrPct: number; maxErrPctFa: number; meanErrPctFa: number }>;
  overheadMiB: { min: number; max: number; mean: number };
}

export const errPct = (est: number, logged: number) => (logged > 0 ? ((est - logged) / logged) * 100 : est > 0.005 ? Infinity : 0);

export async function fitCuda(root: string): Promise<CudaFitResult> {
  const dir = path.join(root, "test", "fixtures", "llama-logs", "cuda-h200");
  const cases: CudaFitCase[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => /^\d+-.*\.log$/.test(n))
    .sort()) {
    const log = parseCudaLog(readFileSync(path.join(dir, name), "utf8"));
    const o = optionsFor(log.flags);
    const e = await estimateFor(log.model, o);
    const eFa = await estimateFor(log.model, { ...o, flashAttn: log.flashAttn });
    const gpuLogged = log.mib["gpu.weights"] + log.mib["gpu.kv"] + log.mib["gpu.recurrent"] + log.mib["gpu.compute"];
    const usedDelta = log.smiReady !== null && log.smiBefore !== null ? log.smiReady - log.smiBefore : null;
    cases.push({
      log,
      est: perBuffer(e),
      estFa: perBuffer(eFa),
      estGpuTotal: e.perDevice[0]!.totalBytes / MiB,
      estGpuTotalFa: eFa.perDevice[0]!.totalBytes / MiB,
      usedDelta,
      overhead: usedDelta === null ? null : round(usedDelta - gpuLogged, 2),
    });
  }
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const byBuffer = Object.fromEntries(
    BUFFERS.map((b) => {
      const with_ = cases.filter((c) => c.log.mib[b] > 0);
      const e1 = with_.map((c) => Math.abs(errPct(c.est[b], c.log.mib[b])));
      const e2 = with_.map((c) => Math.abs(errPct(c.estFa[b], c.log.mib[b])));
      return [
        b,
        {
          n: with_.length,
          maxErrPct: round(Math.max(0, ...e1), 2),
          meanErrPct: round(mean(e1), 2),
          maxErrPctFa: round(Math.max(0, ...e2), 2),
          meanErrPctFa: round(mean(e2), 2),
        },
      ];
    }),
  ) as CudaFitResult["byBuffer"];
  const ov = cases.map((c) => c.overhead).filter((x): x is number => x !== null);
  return { cases, byBuffer, overheadMiB: { min: Math.min(...ov), max: Math.max(...ov), mean: round(mean(ov), 1) } };
}

const f2 = (x: number) => x.toFixed(2);
const pct = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? "+" : ""}${x.toFixed(1)}` : "n/a");

/** Markdown tables: per case and buffer, the summary by buffer, and memory.used against the logged CUDA0 buffers. */
export function formatCudaFit(r: CudaFitResult): string {
  const out: string[] = [];
  out.push(
    "| case | flags | FA | buffer | logged MiB | est (-fa auto) | err % | est (FA as resolved) | err % |",
    "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const c of r.cases) {
    for (const b of BUFFERS) {
      const l = c.log.mib[b];
      if (l === 0 && c.est[b] < 0.005 && c.estFa[b] < 0.005) continue;
      out.push(
        `| ${c.log.id} | ${c.log.flags.join(" ")} | ${c.log.flashAttn} | ${b} | ${f2(l)} | ${f2(c.est[b])} | ${pct(errPct(c.est[b], l))} | ${f2(c.estFa[b])} | ${pct(errPct(c.estFa[b], l))} |`,
      );
    }
  }
  out.push(
    "",
    "| buffer | cases | max err % (-fa auto) | mean err % | max err % (FA as resolved) | mean err % |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const b of BUFFERS) {
    const s = r.byBuffer[b];
    out.push(`| ${b} | ${s.n} | ${s.maxErrPct} | ${s.meanErrPct} | ${s.maxErrPctFa} | ${s.meanErrPctFa} |`);
  }
  out.push(
    "",
    "| case | flags | memory.used before → loaded | Δ MiB | process MiB | logged CUDA0 MiB | Δ − logged (context etc.) | llama.cpp 'unaccounted' | est GPU total (-fa auto) | err % | est GPU total (FA as resolved) | err % |",
  );
  out.push("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const c of r.cases) {
    const g = c.log.mib["gpu.weights"] + c.log.mib["gpu.kv"] + c.log.mib["gpu.recurrent"] + c.log.mib["gpu.compute"];
    const d = c.usedDelta;
    out.push(
      `| ${c.log.id} | ${c.log.flags.join(" ")} | ${c.log.smiBefore} → ${c.log.smiReady} | ${d ?? "n/a"} | ${c.log.smiProcess ?? "n/a"} | ${f2(g)} | ${c.overhead ?? "n/a"} | ${c.log.breakdown?.unaccounted ?? "n/a"} | ${f2(c.estGpuTotal)} | ${d ? pct(errPct(c.estGpuTotal, d)) : "n/a"} | ${f2(c.estGpuTotalFa)} | ${d ? pct(errPct(c.estGpuTotalFa, d)) : "n/a"} |`,
    );
  }
  out.push("", `memory.used − logged CUDA0 buffers: min ${r.overheadMiB.min}, max ${r.overheadMiB.max}, mean ${r.overheadMiB.mean} MiB`);
  return out.join("\n");
}

if (process.argv[1] && /fit-cuda\.ts$/.test(process.argv[1])) {
  fitCuda(path.resolve(__dirname, "..")).then(
    (r) => console.log(formatCudaFit(r)),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
