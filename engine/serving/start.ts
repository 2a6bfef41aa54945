/**
 * Start a model on this machine, for real, by phases (issue 13): plan → runtime binary → download (every shard, with
 * bytes, speed, ETA, resume, checksum and a disk-space check first) → load → warm-up → verify → placement. Each phase
 * is timed; a failure names the phase, the root cause (the server's own log line, not a supervisor's exit code) and
 * what to do. The launch is the planner's command (engine/models/plan.ts) with only the model file, port and alias
 * filled in — a MoE pick starts with its `--n-cpu-moe` exactly as `ocw fit` printed it.
 * The engine runs it for setup.start (progress as `setup` events); `ocw setup` runs it in-process and logs the phases.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statfsSync, statSync } from "node:fs";
import path from "node:path";
import type { FitPick } from "../../shared/fit";
import { SetupJob, type SetupPhase, type SetupPhaseName, type SetupPlacement, SetupStartInput } from "../../shared/setup";
import { type Target, type TargetBench, type TargetCheck, targetSlug } from "../../shared/target";
import { detectHardware, type HardwareReport, listLlamaDevices } from "../hardware";
import {
  commandWords,
  devicesFromHardware,
  DownloadError,
  downloadFile,
  findCatalog,
  hubEndpoint,
  type HubFile,
  hubHeaders,
  isSetupError,
  listRepoFiles,
  localPathFor,
  parseRepoRef,
  resolveUrl,
  shellQuote,
} from "../models";
import { describeFetchError } from "../net";
import { config } from "../config";
import { stateDir } from "../store";
import { planFit } from "./fit-service";
import { installPrebuilt } from "./get-llama";
import { httpJson } from "./http";
import { generateKey, keyFilePath, storeKey } from "./keys";
import { processStartTime } from "../process";
import { findLlamaServer, freePort, parseServerLog, startLlamaServer } from "./llama-server";
import { patchServing, putServing, type ServingRecord, startSupervised, stopServing, supervisorCommand } from "./setup";
import { type VerifyResult, verifyEndpoint } from "./verify";
import { runOtherRuntime } from "./start-runtimes";
import {
  benchPhase,
  classifyDownload,
  confirmPhase,
  classifyLog,
  type PhaseOps,
  type RunningGroup,
  planReplacing,
  runningGroups,
  saveTarget,
  type StartCtx,
  StartError,
  type StartJobOptions,
  withFreed,
} from "./start-common";
import { counted } from "../../shared/words";

export { classifyDownload, classifyLog, type PhaseOps, type RunningGroup, runningGroups, type StartCtx, StartError, type StartJobOptions, withFreed };

const PHASES: SetupPhaseName[] = ["plan", "runtime", "download", "load", "warmup", "verify", "placement", "bench"];
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

interface ModelFiles {
  /** What to launch with -m (the first shard of a split model). */
  local: string;
  downloads: { url: string; dest: string; size: number | null; sha256: string | null; name: string }[];
}

const SHARD = /-(\d{5})-of-(\d{5})\.gguf$/i;

/** Whether a Hub path holds the quant (a file or folder named for it; `Q4_K_M` is not `UD-Q4_K_M`). */
export function pathHasQuant(p: string, quant: string): boolean {
  const q = quant.toUpperCase();
  const segs = p
    .replace(SHARD, ".gguf")
    .replace(/\.gguf$/i, "")
    .toUpperCase()
    .split("/");
  const base = segs.at(-1)!;
  const dirs = segs.slice(0, -1);
  const endsWith = (s: string) =>
    s === q || (s.endsWith(q) && /[-_.]$/.test(s.slice(0, -q.length)) && !(!q.startsWith("UD-") && /UD[-_.]$/.test(s.slice(0, -q.length))));
  return endsWith(base) || dirs.some((d) => d === q);
}

/** The files behind the pick's model argument: local, a Hub repo:QUANT (every shard), hf:… or an URL. */
async function modelFiles(modelArg: { flag: string; value: string }, env: NodeJS.ProcessEnv = process.env): Promise<ModelFiles> {
  const { flag, value } = modelArg;
  const root = stateDir();
  if (flag === "-m") {
    if (!existsSync(value))
      throw new StartError({ kind: "not-found", cause: `no model file at ${value}`, logLine: null, remedy: "pass an existing .gguf path, or a Hub repo" });
    const m = SHARD.exec(value);
    if (m) {
      const n = Number(m[2]);
      const missing = Array.from({ length: n }, (_, i) => value.replace(SHARD, `-${String(i + 1).padStart(5, "0")}-of-${m[2]}.gguf`)).filter(
        (f) => !existsSync(f),
      );
      if (missing.length)
        throw new StartError({
          kind: "not-found",
          cause: `${path.basename(value)} is shard 1 of ${n}, but ${missing.map((f) => path.basename(f)).join(", ")} ${missing.length > 1 ? "are" : "is"} missing next to it`,
          logLine: null,
          remedy: "put every shard in the same folder (llama-server loads them from the first)",
        });
    }
    return { local: value, downloads: [] };
  }
  let repo: string;
  let rev = "main";
  let files: HubFile[];
  const hfm = /^hf:([\w.-]+\/[\w.-]+)\/(.+?\.gguf)(?:@([\w.\-/]+))?$/i.exec(value);
  if (hfm) {
    repo = hfm[1]!;
    rev = hfm[3] ?? "main";
    const listed = await listRepoFiles(repo, rev, fetch, env).catch(() => null);
    const want = hfm[2]!;
    const m = SHARD.exec(want);
    const names = m ? Array.from({ length: Number(m[2]) }, (_, i) => want.replace(SHARD, `-${String(i + 1).padStart(5, "0")}-of-${m[2]}.gguf`)) : [want];
    files = names.map((n) => listed?.find((f) => f.path === n) ?? { path: n, size: 0, sha256: null });
  } else if (/^https?:\/\//i.test(value)) {
    const u = new URL(value);
    const m = SHARD.exec(u.pathname);
    const urls = m
      ? Array.from({ length: Number(m[2]) }, (_, i) => value.replace(/-\d{5}-of-(\d{5})\.gguf/i, `-${String(i + 1).padStart(5, "0")}-of-$1.gguf`))
      : [value];
    const downloads = urls.map((url) => {
      const name = path.basename(new URL(url).pathname);
      return { url, dest: path.join(root, "models", "url", name), size: null, sha256: null, name };
    });
    return { local: downloads[0]!.dest, downloads };
  } else {
    const ref = parseRepoRef(value);
    if (!ref)
      throw new StartError({
        kind: "not-found",
        cause: `cannot tell which file "${value}" is`,
        logLine: null,
        remedy: "pass owner/repo:QUANT, hf:owner/repo/file.gguf, an URL or a local .gguf",
      });
    repo = ref.repo;
    rev = ref.rev;
    const listed = await listRepoFiles(repo, rev, fetch, env);
    const ggufs = listed.filter((f) => /\.gguf$/i.test(f.path) && !/mmproj/i.test(f.path));
    const quant = ref.quant ?? (value.includes(":") ? value.split(":").pop()! : null);
    files = quant ? ggufs.filter((f) => pathHasQuant(f.path, quant)) : ggufs.slice(0, 1);
    if (!files.length)
      throw new StartError({
        kind: "not-found",
        cause: `${repo} has no ${quant ?? "GGUF"} file`,
        logLine: null,
        remedy: `pick one of its quants: ${[...new Set(ggufs.map((f) => f.path.split("/").pop()))].slice(0, 8).join(", ")}`,
      });
    // one quant: its shards (a single file, or -00001-of-N … -N-of-N; an incomplete set is an error)
    const first = files.find((f) => SHARD.exec(f.path)?.[1] === "00001") ?? files[0]!;
    const m = SHARD.exec(first.path);
    if (m) {
      const stem = first.path.replace(SHARD, "");
      files = files.filter((f) => f.path.replace(SHARD, "") === stem).sort((a, b) => a.path.localeCompare(b.path));
      if (files.length !== Number(m[2]))
        throw new StartError({
          kind: "not-found",
          cause: `${repo} lists ${files.length} of the ${Number(m[2])} shards of ${path.basename(stem)}`,
          logLine: null,
          remedy: "the repository is incomplete (an upload in progress?): try again later or another quant",
        });
    } else files = [first];
  }
  const downloads = files.map((f) => ({
    url: resolveUrl(repo, f.path, rev, env),
    dest: localPathFor(root, repo, f.path),
    size: f.size || null,
    sha256: f.sha256,
    name: path.basename(f.path),
  }));
  return { local: downloads[0]!.dest, downloads };
}

/** Buffers the server logged per device (MiB), the planned bytes per device, and whether they agree. */
export function checkPlacement(
  pick: Pick<FitPick, "devices" | "placement">,
  logText: string,
  smi?: { before: { name: string; usedBytes: number | null }[]; after: { name: string; usedBytes: number | null }[] } | null,
): SetupPlacement {
  const logged = parseServerLog(logText).modelMiB;
  const evidence: string[] = [];
  const names = Object.keys(logged);
  evidence.push(
    names.length ? `log: model buffers ${names.map((n) => `${n} ${logged[n]!.toFixed(0)} MiB`).join(", ")}` : "log: no model buffer lines (run with -lv 4)",
  );
  const cpuLoaded = names.filter((n) => /^CPU/i.test(n)).reduce((a, n) => a + logged[n]!, 0) * MiB;
  const devices: SetupPlacement["devices"] = [];
  let passed = names.length > 0;
  for (const d of pick.devices) {
    const planned = d.breakdown?.weightsBytes ?? d.plannedBytes;
    if (d.name === "cpu") {
      devices.push({ name: d.name, plannedBytes: planned, loadedBytes: names.length ? cpuLoaded : null });
      continue;
    }
    const id = d.name.split(" ")[0]!;
    const onIt = names.filter((n) => n === id || n.startsWith(`${id}_`)).reduce((a, n) => a + logged[n]!, 0) * MiB;
    devices.push({ name: d.name, plannedBytes: planned, loadedBytes: names.length ? onIt : null });
    // the plan put weights here: at least half of them must be here (catalog sizes are estimates, the log is exact)
    if (planned > 0 && onIt < planned * 0.5) {
      passed = false;
      evidence.push(
        `${id}: ${(onIt / GiB).toFixed(2)} GiB of weights loaded where the plan put ${(planned / GiB).toFixed(2)} GiB — the weights went to RAM (a CPU build, or the GPU was not usable)`,
      );
    }
  }
  if (pick.placement === "gpu" && names.length) {
    const gpuWeights = pick.devices.filter((d) => d.name !== "cpu").reduce((a, d) => a + (d.breakdown?.weightsBytes ?? 0), 0);
    // whole-on-GPU: RAM holds at most the input embeddings (llama.cpp keeps token_embd on the CPU)
    if (cpuLoaded > Math.max(gpuWeights * 0.2, 512 * MiB)) {
      passed = false;
      evidence.push(
        `RAM holds ${(cpuLoaded / GiB).toFixed(2)} GiB of weights although the plan put every layer on the ${pick.devices.filter((d) => d.name !== "cpu").length === 1 ? "GPU" : "GPUs"}`,
      );
    }
  }
  if (smi) {
    for (const a of smi.after) {
      const b = smi.before.find((x) => x.name === a.name);
      if (a.usedBytes === null || b?.usedBytes == null) continue;
      const delta = a.usedBytes - b.usedBytes;
      evidence.push(
        `device memory: ${a.name} ${(a.usedBytes / GiB).toFixed(1)} GiB used (${delta >= 0 ? "+" : ""}${(delta / GiB).toFixed(1)} GiB since before the start)`,
      );
      const planned = pick.devices.find((d) => d.name.endsWith(a.name));
      if (planned && (planned.breakdown?.weightsBytes ?? 0) > 0 && delta < planned.breakdown!.weightsBytes * 0.5) {
        passed = false;
        evidence.push(
          `${a.name}: the vendor tool shows ${(delta / GiB).toFixed(1)} GiB more in use, less than half of the ${(planned.breakdown!.weightsBytes / GiB).toFixed(1)} GiB of weights planned there`,
        );
      }
    }
  }
  if (passed) evidence.push(pick.placement === "cpu" ? "the weights are in RAM, as planned (CPU only)" : "the weights are where the plan put them");
  return { passed, devices, evidence };
}

function newJob(jobId: string, runtime: SetupJob["runtime"]): SetupJob {
  return {
    jobId,
    state: "running",
    runtime,
    model: null,
    quant: null,
    slots: null,
    ctxPerSlot: null,
    plannedCommand: null,
    launchedCommand: null,
    phases: PHASES.map((name) => ({ name, status: "pending", ms: null, detail: "", progress: null })),
    checks: [],
    placement: null,
    failure: null,
    result: null,
    startedAt: new Date().toISOString(),
    ms: null,
  };
}

/** The download phase: every file of the model (all shards), the disk checked first, progress, resume, checksums. */
async function downloadPhase(modelArg: { flag: string; value: string }, ops: PhaseOps, signal?: AbortSignal): Promise<ModelFiles> {
  const files = await modelFiles(modelArg).catch((e) => {
    if (e instanceof StartError) throw new StartError({ ...e.failure, phase: "download" });
    const c = classifyDownload((e as Error).message);
    throw new StartError({ phase: "download", kind: c.kind, cause: describeFetchError(e, hubEndpoint()), logLine: null, remedy: c.remedy });
  });
  if (!files.downloads.length) ops.skip("download", `local file ${files.local}`);
  else {
    ops.begin("download", `${counted(files.downloads.length, "file")} to ${path.dirname(files.downloads[0]!.dest)}`);
    const total = files.downloads.every((d) => d.size) ? files.downloads.reduce((a, d) => a + d.size!, 0) : null;
    const onDisk = (d: ModelFiles["downloads"][number]) =>
      existsSync(d.dest) ? statSync(d.dest).size : existsSync(`${d.dest}.part`) ? statSync(`${d.dest}.part`).size : 0;
    if (total !== null) {
      const need = files.downloads.reduce((a, d) => a + Math.max(0, d.size! - onDisk(d)), 0);
      const dir = path.dirname(files.downloads[0]!.dest);
      mkdirSync(dir, { recursive: true });
      const fs = statfsSync(dir);
      const free = Number(fs.bavail) * Number(fs.bsize);
      if (need > free) {
        throw new StartError({
          kind: "disk",
          cause: `the model needs ${(need / GiB).toFixed(1)} GiB more on disk (${counted(files.downloads.length, "file")}) but ${dir} has ${(free / GiB).toFixed(1)} GiB free`,
          logLine: null,
          remedy: classifyDownload("GiB free").remedy,
        });
      }
    }
    let doneBefore = 0;
    let resumed = 0;
    const tStart = performance.now();
    const verified: string[] = [];
    for (const [i, d] of files.downloads.entries()) {
      ops.cancelled();
      const r = await downloadFile({
        url: d.url,
        dest: d.dest,
        expectedSize: d.size,
        sha256: d.sha256,
        headers: hubHeaders(),
        signal,
        onProgress: (p) => {
          const done = doneBefore + p.received;
          const rate = (done - resumed - (i === 0 ? p.resumedFrom : 0)) / Math.max(0.001, (performance.now() - tStart) / 1000);
          ops.phase("download").progress = {
            done,
            total,
            bytesPerSec: Math.max(0, rate),
            etaSec: total !== null && rate > 0 ? Math.max(0, (total - done) / rate) : null,
            file: d.name,
            fileIndex: i,
            files: files.downloads.length,
            resumedBytes: resumed + p.resumedFrom,
          };
          ops.emit(false);
        },
      }).catch((e) => {
        const msg = (e as Error).message;
        const c = e instanceof DownloadError ? classifyDownload(msg) : classifyDownload(msg);
        throw new StartError({ kind: c.kind, cause: describeFetchError(e, d.url), logLine: null, remedy: c.remedy });
      });
      resumed += r.resumedFrom;
      doneBefore += r.bytes;
      verified.push(`${d.name} ${r.verified}${r.resumedFrom ? ` (resumed at ${(r.resumedFrom / MiB).toFixed(0)} MiB)` : ""}`);
      ops.phase("download").progress = {
        done: doneBefore,
        total,
        bytesPerSec: null,
        etaSec: total !== null ? 0 : null,
        file: d.name,
        fileIndex: i,
        files: files.downloads.length,
        resumedBytes: resumed,
      };
      ops.emit();
    }
    const secs = (performance.now() - tStart) / 1000;
    ops.end(
      `${counted(files.downloads.length, "file")}, ${(doneBefore / GiB).toFixed(2)} GiB (${verified.join("; ")})${doneBefore > resumed ? `, ${((doneBefore - resumed) / MiB / Math.max(secs, 0.001)).toFixed(1)} MiB/s` : ", already on disk"}`,
    );
  }
  return files;
}

/** The llama.cpp plan: the pick, its model argument, the runtime binary (null until installed), the hardware, the server it replaces. */
export interface LlamaPlan {
  bin: string | null;
  hw: HardwareReport;
  pick: FitPick;
  entry: ReturnType<typeof findCatalog>;
  modelArg: { flag: string; value: string };
  replacing: RunningGroup | null;
  /** Plans again (the runtime phase: on what the installed build lists). */
  planOn: (h: HardwareReport, llamaServer?: string | null, nvcc?: boolean) => Promise<Awaited<ReturnType<typeof planFit>>>;
}

interface Replica {
  i: number;
  words: ReturnType<typeof commandWords>;
  slots: number;
  ctxPerSlot: number;
  devices: string[] | null;
}

/** The servers the load phase started (one per replica of a pool), with what the later phases need of them. */
export interface Launched {
  alias: string;
  id: string;
  replicas: Replica[];
  pooled: boolean;
  key: string;
  keyFile: string;
  /** The hardware as the vendor tool showed it before the load. */
  before: HardwareReport;
  servers: NonNullable<SetupJob["servers"]>;
  readLog: (k?: number) => string;
}

/** The model argument of the plan's command (-m FILE, -hf REPO:QUANT). */
function modelArgOf(pick: FitPick): { flag: string; value: string } {
  const words = commandWords(pick.pool ? pick.pool.endpoints[0]!.command : pick.command);
  const mi = words.args.findIndex((a) => a === "-m" || a === "-hf");
  if (mi < 0)
    throw new StartError({
      kind: "other",
      cause: `the plan's command has no model argument: ${pick.command}`,
      logLine: null,
      remedy: "report this (ocw fit --json shows the command)",
    });
  return { flag: words.args[mi]!, value: words.args[mi + 1]! };
}

/** plan: the same planner as `ocw fit` (planFit), with a running server this start replaces counted free. */
async function planLlamaPhase(c: StartCtx): Promise<LlamaPlan> {
  const { o, input, job } = c;
  const { end } = c.ops;
  let bin: string | null;
  try {
    bin = findLlamaServer(o.llamaServer);
  } catch (e) {
    throw new StartError({
      kind: "not-found",
      cause: (e as Error).message,
      logLine: null,
      remedy: "pass an existing llama-server, or leave it out to use the prebuilt build",
    });
  }
  const hw = o.hardware ?? (await detectHardware({ llamaServer: bin }));
  // the KV cache type of the plan the person saw is kept (one KV type from plan to start); when it no longer fits
  // (free memory changed) the start plans freely and says so
  let keepCache = input.cacheType;
  let cacheNote = "";
  const planOnce = (h: HardwareReport, llamaServer: string | null, nvcc: boolean | undefined, cacheType: SetupStartInput["cacheType"]) =>
    planFit(
      {
        model: input.model,
        slots: input.slots,
        minCtx: input.minCtx,
        ctxPerSlot: input.ctx,
        cacheType,
        runtime: "llama.cpp",
        allowSlow: input.allowSlow,
        mtp: input.mtp,
      },
      h,
      {
        llamaServer,
        store: o.store,
        nvcc,
      },
    ).catch((e) => {
      if (isSetupError(e, "input"))
        throw new StartError({ kind: "input", cause: e.message, logLine: null, remedy: "fix the model, slots or context and start again" });
      throw e;
    });
  const planOn = async (h: HardwareReport, llamaServer: string | null = bin, nvcc?: boolean) => {
    const r = await planOnce(h, llamaServer, nvcc, keepCache);
    if (r.pick || !keepCache) return r;
    const free = await planOnce(h, llamaServer, nvcc, undefined);
    if (free.pick) {
      cacheNote = `; the ${keepCache} KV cache of the plan shown no longer fits (free memory changed): ${free.pick.cacheType ?? "another"} instead`;
      keepCache = undefined;
    }
    return free;
  };
  const { fit, replacing } = await planReplacing(
    hw,
    await planOn(hw),
    (h) => planOn(h),
    input.id,
    (pick, g) => replaces(pick, g, input.id),
  );
  if (!fit.pick)
    throw new StartError({
      kind: "no-fit",
      cause: input.model ? (fit.problem ?? `${input.model} does not fit this machine`) : `nothing in the catalog fits this machine: ${fit.problem}`,
      logLine: null,
      remedy: "fewer slots, a shorter minimum context, a smaller model, or an API provider",
    });
  const pick = fit.pick;
  const entry = findCatalog(pick.model);
  Object.assign(job, { model: pick.model, quant: pick.quant, slots: pick.slots, ctxPerSlot: pick.ctxPerSlot, plannedCommand: pick.command, pick });
  const modelArg = modelArgOf(pick);
  const held = replacing
    ? `; the running server of target ${replacing.id} (pid ${replacing.recs.map((r) => r.pid).join(", ")}) holds ${([...replacing.bytes.values()].reduce((a, b) => a + b, 0) / GiB).toFixed(1)} GiB of GPU memory: counted as free, it is stopped before the load (setup replaces it)`
    : "";
  end(`${entry?.name ?? pick.model}${pick.quant ? ` ${pick.quant}` : ""}: ${pick.reason}${held}${cacheNote}`);
  return { bin, hw, pick, entry, modelArg, replacing, planOn };
}

/** runtime: the llama-server found, or the pinned prebuilt installed — and then planned again on what it lists. */
async function runtimeLlamaPhase(c: StartCtx, plan: LlamaPlan): Promise<LlamaPlan> {
  const { job } = c;
  const { begin, end, emit, phase } = c.ops;
  begin("runtime", "looking for llama-server");
  const { hw, replacing, planOn } = plan;
  let { bin, pick } = plan;
  if (bin) end(`llama-server at ${bin}${hw.llamaDevices ? ` (devices: ${hw.llamaDevices.map((d) => d.id).join(", ") || "CPU only"})` : ""}`);
  else {
    phase("runtime").detail = "downloading the prebuilt llama.cpp release for this machine";
    const got = await installPrebuilt({
      root: path.join(stateDir(), "llama"),
      gpus: hw.gpus,
      onBuildLine: (line) => {
        phase("runtime").detail = `building llama.cpp with CUDA here (nvcc; llama.cpp publishes no Linux CUDA build): ${line.slice(0, 160)}`;
        emit(false);
      },
      onProgress: (asset, p) => {
        phase("runtime").progress = {
          done: p.received,
          total: p.total,
          bytesPerSec: p.bytesPerSec,
          etaSec: p.total && p.bytesPerSec ? (p.total - p.received) / p.bytesPerSec : null,
          file: asset,
          fileIndex: 0,
          files: 1,
          resumedBytes: p.resumedFrom,
        };
        emit(false);
      },
    }).catch((e) => {
      throw new StartError({
        kind: "runtime",
        // the remedy says how to build one: not twice in the line
        cause: `the prebuilt llama.cpp could not be fetched: ${describeFetchError(e, config().OCW_LLAMA_RELEASES_URL ?? "https://github.com").replace(/; build from source with scripts\/build-llama-server\.sh$/, "")}`,
        logLine: null,
        remedy:
          "pass a llama-server you have (--llama-server PATH, or LLAMA_SERVER=PATH where `ocw setup` runs), or build one with scripts/build-llama-server.sh (git, cmake and a C++ compiler; it takes llama.cpp's source from the npm package node-llama-cpp, not from GitHub; ≈ 10 minutes on 2 cores)",
      });
    });
    bin = got.bin;
    // plan again on what the installed build itself lists (its --list-devices): a Vulkan build names Vulkan0,
    // not CUDA0, and a build that sees no GPU gets a CPU plan — never a flag the binary refuses
    const listed = await listLlamaDevices(bin);
    const base = replacing ? withFreed(hw, replacing.bytes) : hw;
    // a build that cannot list its devices is planned by what it is (a Vulkan build names Vulkan0 …)
    const again = listed ? await planOn({ ...base, llamaDevices: listed }, bin) : await planOn({ ...base, llamaDevices: null }, null, got.variant === "cuda");
    if (!again.pick)
      throw new StartError({
        kind: "no-fit",
        cause: `the installed llama.cpp ${got.variant} build lists ${listed?.length ? listed.map((d) => d.id).join(", ") : "no GPU"}, and on that nothing fits: ${again.problem}`,
        logLine: null,
        remedy:
          "install a build for the GPU (CUDA: the CUDA toolkit's nvcc for a source build), pass --llama-server, or choose fewer slots / a shorter context",
      });
    const changed = again.pick.command !== pick.command;
    if (changed) {
      pick = again.pick;
      Object.assign(job, { model: pick.model, quant: pick.quant, slots: pick.slots, ctxPerSlot: pick.ctxPerSlot, plannedCommand: pick.command, pick });
    }
    hw.llamaDevices = listed;
    end(
      `installed llama.cpp ${got.tag} (${got.variant}, ${got.verified}) → ${got.bin}; ${listed === null ? `its --list-devices did not answer (planned as a ${got.variant} build)` : `it lists ${listed.length ? listed.map((d) => d.id).join(", ") : "no GPU"}`}${changed ? `; planned again for it: ${pick.command}` : ""}`,
    );
  }
  return { ...plan, bin, pick, entry: findCatalog(pick.model), modelArg: modelArgOf(pick) };
}

/** load: the planner's command(s) — one per replica of a pool — with the local file, a free port and the alias. */
async function launchLlamaPhase(c: StartCtx, plan: LlamaPlan, files: ModelFiles): Promise<Launched> {
  const { o, input, job } = c;
  const { begin, end } = c.ops;
  const { pick, entry, hw, replacing } = plan;
  const bin = plan.bin!;
  // ── load: the planner's command(s) — one per replica of a pool — with the local file, a free port and the alias
  const alias = targetSlug({
    model:
      entry?.name ??
      path
        .basename(files.local)
        .replace(SHARD, "")
        .replace(/\.gguf$/i, ""),
    quant: pick.quant,
  });
  const id = input.id ?? `llamacpp-${alias}`;
  const replicas: Replica[] = pick.pool
    ? pick.pool.endpoints.map((e, i) => ({ i, words: commandWords(e.command), slots: e.slots, ctxPerSlot: e.ctxPerSlot, devices: e.devices }))
    : [{ i: 0, words: commandWords(pick.command), slots: pick.slots, ctxPerSlot: pick.ctxPerSlot, devices: null }];
  const pooled = replicas.length > 1;
  begin("load", pooled ? `starting ${replicas.length} llama-servers (one per GPU group)` : "starting llama-server");
  // one key for the target: every replica requires it (0600 file, handed over in the environment, never argv)
  const keyFile = keyFilePath(id);
  const key = generateKey();
  storeKey(keyFile, key);
  await stopServing(id);
  c.setLaunched(id);
  // the vendor tool's figures before this start (the replaced server's memory is free again)
  const before = replacing ? ((await detectHardware({}).catch(() => null)) ?? hw) : hw;
  const sup = supervisorCommand();
  const launched: string[] = [];
  const servers: NonNullable<SetupJob["servers"]> = [];
  const logs: { file: string; start: number }[] = [];
  const readLog = (k = 0) => {
    const l = logs[k];
    return l && existsSync(l.file) ? readFileSync(l.file, "utf8").slice(l.start) : "";
  };
  const startOne = async (r: (typeof replicas)[number]) => {
    const port = await freePort();
    const args = [...r.words.args];
    const ri = args.findIndex((x) => x === "-m" || x === "-hf");
    args.splice(ri, 2, "-m", path.resolve(files.local));
    const pi = args.indexOf("--port");
    if (pi >= 0) args[pi + 1] = String(port);
    else args.push("--port", String(port));
    if (!args.includes("--alias")) args.push("--alias", alias);
    if (!args.includes("-fit")) args.push("-fit", "off");
    if (!args.includes("-lv")) args.push("-lv", "4");
    // the plan's environment (a replica's CUDA_VISIBLE_DEVICES …), never the key: that goes in LLAMA_API_KEY
    const env = Object.fromEntries(
      r.words.env.filter((w) => !w.startsWith("LLAMA_API_KEY=")).map((w) => [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)]),
    );
    launched[r.i] =
      `${[...Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`), "LLAMA_API_KEY=…"].join(" ")} ${shellQuote(bin!)} ${args.map(shellQuote).join(" ")}`;
    job.launchedCommand = launched.filter(Boolean).join("\n");
    const recId = pooled ? `${id}@${r.i + 1}` : id;
    const file = path.join(stateDir(), "logs", `${recId}.log`);
    mkdirSync(path.dirname(file), { recursive: true });
    logs[r.i] = { file, start: existsSync(file) ? statSync(file).size : 0 };
    if (r.i === 0) c.setLog(file);
    const record: ServingRecord = {
      targetId: recId,
      ...(pooled ? { replicaOf: id } : {}),
      pid: 0,
      supervisorPid: null,
      port,
      bin: bin!,
      args,
      env,
      logFile: file,
      keyFile,
      startedAt: new Date().toISOString(),
    };
    let started: { pid: number; readyMs: number };
    try {
      if (sup) {
        putServing(record);
        try {
          started = await startSupervised(sup, record, o.readyTimeoutMs ?? 600_000);
        } catch (e) {
          await stopServing(recId);
          throw e;
        }
      } else {
        started = await startLlamaServer({
          bin: bin!,
          args,
          env,
          apiKey: key,
          logFile: file,
          port,
          detached: true,
          readyTimeoutMs: o.readyTimeoutMs ?? 600_000,
        });
        putServing({ ...record, pid: started.pid, startTime: processStartTime(started.pid) });
      }
    } catch (e) {
      const c = classifyLog(readLog(r.i), bin);
      const msg = (e as Error).message;
      throw new StartError({
        kind: c?.kind ?? (/did not become healthy/.test(msg) ? "timeout" : "other"),
        cause: `${pooled ? `replica ${r.i + 1} (${r.devices?.join("+")}): ` : ""}${c?.logLine ? `llama-server failed to start: ${c.logLine}` : msg.replace(/: .*$/, "")}`,
        logLine: c?.logLine ?? null,
        logFile: file,
        remedy:
          c?.remedy ??
          (/did not become healthy/.test(msg)
            ? "loading took longer than allowed: a slow disk or a huge model; start again (the file is on disk now)"
            : "read the log file; `ocw doctor` checks the runtime"),
      });
    }
    servers[r.i] = {
      pid: started.pid,
      port,
      url: `http://127.0.0.1:${port}/v1`,
      readyMs: Math.round(started.readyMs),
      args,
      logFile: file,
      env: Object.keys(env).map((k) => `${k}=${env[k]}`),
    };
  };
  // The port freePort chose can be taken by another program before llama-server binds it (it is free only when
  // chosen): then the start is tried again on a new port, twice at most, and only for that failure.
  const startOnNewPortIfTaken = async (r: (typeof replicas)[number]) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await startOne(r);
      } catch (e) {
        if (!(e instanceof StartError) || e.failure.kind !== "port" || attempt >= 2) throw e;
      }
    }
  };
  try {
    // replicas load side by side (each on its own GPUs); a failed one stops the others
    await Promise.all(replicas.map(startOnNewPortIfTaken));
  } catch (e) {
    if (pooled) await stopServing(id);
    throw e;
  }
  job.launchedCommand = launched.join("\n");
  job.servers = servers;
  end(
    servers
      .map(
        (x, k) =>
          `${pooled ? `replica ${k + 1} (${replicas[k]!.devices!.join("+")}): ` : ""}llama-server pid ${x.pid} on 127.0.0.1:${x.port}, healthy in ${(x.readyMs / 1000).toFixed(1)} s`,
      )
      .join("; ") + (sup ? " (supervised: restarted if it crashes)" : ""),
  );
  return { alias, id, replicas, pooled, key, keyFile, before, servers, readLog };
}

/** warm-up: one short completion per server (first-use costs out of verify's timings). */
async function warmupLlamaPhase(c: StartCtx, l: Launched, bin: string): Promise<void> {
  const { begin, end } = c.ops;
  const { servers, alias, key, readLog, pooled } = l;
  begin("warmup", `one short completion${pooled ? " per replica" : ""}`);
  const warm: string[] = [];
  for (const [k, x] of servers.entries()) {
    const w = await httpJson<{ choices?: unknown[] }>(`${x.url}/chat/completions`, {
      headers: { authorization: `Bearer ${key}` },
      body: { model: alias, messages: [{ role: "user", content: "Say OK." }], max_tokens: 4, temperature: 0 },
      timeoutMs: 300_000,
    });
    if (w.status !== 200) {
      const c = classifyLog(readLog(k), bin);
      throw new StartError({
        kind: c?.kind ?? "other",
        cause: `the first completion${pooled ? ` of replica ${k + 1}` : ""} failed: ${w.status || w.error} ${w.text.slice(0, 200)}`,
        logLine: c?.logLine ?? null,
        remedy: c?.remedy ?? "read the log file",
      });
    }
    warm.push(`${(w.ms / 1000).toFixed(2)} s`);
  }
  end(`first completion in ${warm.join(", ")}`);
}

/** verify: the checklist, live — every replica like a single server (one after the other: their timings). */
async function verifyLlamaPhase(c: StartCtx, l: Launched): Promise<VerifyResult> {
  const { job } = c;
  const { begin, end, emit } = c.ops;
  const { servers, alias, key, replicas, pooled } = l;
  begin("verify", "reachable, auth, slots (and the KV pool), concurrency, capability, tools");
  const verdicts: VerifyResult[] = [];
  for (const [k, x] of servers.entries()) {
    const v = await verifyEndpoint({
      url: x.url,
      model: alias,
      key,
      engine: "llama.cpp",
      slots: replicas[k]!.slots,
      perSlotCtx: replicas[k]!.ctxPerSlot,
      onCheck: (_c: TargetCheck, done: TargetCheck[]) => {
        job.checks = pooled
          ? [
              ...verdicts.flatMap((d, j) => d.checks.map((c) => ({ ...c, evidence: `replica ${j + 1}: ${c.evidence}` }))),
              ...done.map((c) => ({ ...c, evidence: `replica ${k + 1}: ${c.evidence}` })),
            ]
          : done;
        emit();
      },
    });
    verdicts.push(v);
  }
  const v = pooled ? poolVerdict(verdicts) : verdicts[0]!;
  job.checks = v.checks;
  end(`${v.outcome}: ${v.summary}`, v.outcome === "cannot-build" ? "failed" : "done");
  return v;
}

/** placement: the weights where the plan put them (each server's log, its /props, the vendor tool). */
async function placementLlamaPhase(c: StartCtx, plan: LlamaPlan, l: Launched): Promise<SetupPlacement> {
  const { job } = c;
  const { begin, end } = c.ops;
  const { pick, hw } = plan;
  const bin = plan.bin!;
  const { before, servers, key, pooled, replicas, readLog, id } = l;
  begin("placement", "reading llama-server's log and /props");
  const placements: SetupPlacement[] = [];
  const after = before.gpus.some((g) => g.usedBytes !== null) && pick.placement !== "cpu" ? await detectHardware({}).catch(() => null) : null;
  // the plan's device ids → the vendor tool's index (llama.cpp's CUDA0 is not always nvidia-smi's 0)
  const indexOf = new Map(devicesFromHardware(hw, bin).dev.gpus.map((g) => [g.runtimeId, g.index!]));
  for (const [k, x] of servers.entries()) {
    const props = await httpJson<{ total_slots?: number; model_path?: string; default_generation_settings?: { n_ctx?: number } }>(
      `${x.url.replace(/\/v1$/, "")}/props`,
      {
        headers: { authorization: `Bearer ${key}` },
        timeoutMs: 10_000,
        keep: { total_slots: true, model_path: true, default_generation_settings: { n_ctx: true } },
      },
    );
    // a replica sees its GPUs renumbered from 0 (the others are hidden): its log names them so
    const devices = pooled ? replicaDevices(pick, replicas[k]!.devices!, x.env.length > 0) : pick.devices;
    // this server's GPUs by the vendor tool's index: a replica's from its CUDA_VISIBLE_DEVICES (in its order)
    const visible = x.env
      .find((e) => /^(CUDA|HIP)_VISIBLE_DEVICES=/.test(e))
      ?.split("=")[1]
      ?.split(",")
      .map(Number);
    const planned = (pooled ? replicas[k]!.devices! : pick.devices.filter((d) => d.name !== "cpu").map((d) => d.name.split(" ")[0]!)).map((rid, j) => ({
      rid,
      index: visible?.[j] ?? indexOf.get(rid),
      device: devices.filter((d) => d.name !== "cpu")[j],
    }));
    let smi: Parameters<typeof checkPlacement>[2] = null;
    if (after) {
      // named as this server's devices, matched by index (GPUs of one model share a name)
      const fig = (h: HardwareReport) =>
        planned
          .filter((p) => p.device && p.index !== undefined)
          .map((p) => ({ name: p.device!.name, usedBytes: h.gpus.find((g) => g.index === p.index)?.usedBytes ?? null }));
      smi = { before: fig(before), after: fig(after) };
    }
    const pl = checkPlacement({ devices, placement: pick.placement }, readLog(k), smi);
    // what it holds, for a later setup that replaces it: measured, else planned
    const gpuBytes = planned
      .filter((p) => p.index !== undefined)
      .map((p) => {
        const b = before.gpus.find((g) => g.index === p.index)?.usedBytes;
        const a = after?.gpus.find((g) => g.index === p.index)?.usedBytes;
        const measured = a != null && b != null ? a - b : null;
        return { index: p.index!, bytes: Math.max(0, Math.round(measured !== null && measured > 0 ? measured : (p.device?.plannedBytes ?? 0))) };
      })
      .filter((g) => g.bytes > 0);
    const recId = pooled ? `${id}@${k + 1}` : id;
    if (gpuBytes.length) patchServing(recId, { gpuBytes });
    if (props.status === 200)
      pl.evidence.push(
        `/props: total_slots ${props.body?.total_slots}, n_ctx per slot ${props.body?.default_generation_settings?.n_ctx}${props.body?.model_path ? `, model ${path.basename(props.body.model_path)}` : ""}`,
      );
    placements.push(pooled ? { ...pl, evidence: pl.evidence.map((e) => `replica ${k + 1}: ${e}`) } : pl);
  }
  const placement: SetupPlacement = {
    passed: placements.every((p) => p.passed),
    devices: placements.flatMap((p) => p.devices),
    evidence: placements.flatMap((p) => p.evidence),
  };
  job.placement = placement;
  end(placement.evidence.join("; "), placement.passed ? "done" : "failed");
  return placement;
}

/** record: the target, saved as verify decided (the engine is its single writer); a pool is one target of its replicas. */
function recordLlamaPhase(c: StartCtx, plan: LlamaPlan, l: Launched, v: VerifyResult, placement: SetupPlacement, bench: TargetBench | null): void {
  const { job } = c;
  const { pick } = plan;
  const { id, alias, servers, replicas, keyFile } = l;
  const endpoints = servers.map((x, k) => ({ url: x.url, slots: replicas[k]!.slots }));
  const target: Target = {
    id,
    model: alias,
    quant: pick.quant,
    endpoint: servers[0]!.url,
    keyRef: "OCW_TARGET_API_KEY",
    keyFile,
    contextLimit: pick.ctxPerSlot,
    serving: { engine: "llama.cpp", endpoints, slots: pick.slots, perSlotCtx: pick.ctxPerSlot },
    checks: [],
    ...(bench ? { bench } : {}),
  };
  saveTarget(c, target, v, "llama.cpp", bench);
  if (!placement.passed) {
    job.failure = {
      phase: "placement",
      kind: "placement",
      cause: placement.evidence.filter((e) => /plan put|vendor tool|RAM holds/.test(e)).join("; ") || "the weights are not where the plan put them",
      logLine: null,
      logFile: l.servers[0]?.logFile ?? null,
      remedy:
        "the runtime did not use the GPU the plan counted on: install a build for it (CUDA for NVIDIA, ROCm or Vulkan for AMD) or check the driver with nvidia-smi; the server runs, but slowly",
    };
  }
}

/** Runs a whole start, phase by phase; never throws: a failure is the job's `failure` (state "failed"). */
export async function runStartJob(o: StartJobOptions): Promise<SetupJob> {
  const input = SetupStartInput.parse(o.input);
  const job = newJob(o.jobId ?? randomBytes(6).toString("hex"), input.runtime);
  const t0 = performance.now();
  let lastEmit = 0;
  const emit = (force = true) => {
    const now = performance.now();
    if (!force && now - lastEmit < 250) return;
    lastEmit = now;
    o.onUpdate?.(SetupJob.parse(structuredClone(job)));
  };
  const phase = (name: SetupPhaseName) => job.phases.find((p) => p.name === name)!;
  let current: { p: SetupPhase; t: number } | null = null;
  const begin = (name: SetupPhaseName, detail: string) => {
    const p = phase(name);
    p.status = "running";
    p.detail = detail;
    current = { p, t: performance.now() };
    emit();
  };
  const end = (detail?: string, status: SetupPhase["status"] = "done") => {
    if (!current) return;
    current.p.status = status;
    current.p.ms = Math.round(performance.now() - current.t);
    if (detail !== undefined) current.p.detail = detail;
    current = null;
    emit();
  };
  const skip = (name: SetupPhaseName, detail: string) => {
    const p = phase(name);
    p.status = "skipped";
    p.detail = detail;
    p.ms = 0;
  };
  const cancelled = () => {
    if (o.signal?.aborted)
      throw new StartError({
        kind: "cancelled",
        cause: "cancelled by the person",
        logLine: null,
        remedy: "start again: a download resumes from the bytes on disk",
      });
  };

  let logFile: string | null = null;
  let launched: string | null = null;
  const ops: PhaseOps = { begin, end, skip, emit, cancelled, phase };
  const c: StartCtx = { o, input, job, ops, setLog: (f) => (logFile = f), setLaunched: (id) => (launched = id) };
  try {
    begin("plan", "detecting the hardware and planning");
    if (input.runtime !== "llama.cpp") await runOtherRuntime(c);
    else {
      let plan = await planLlamaPhase(c);
      cancelled();
      await confirmPhase(c);
      plan = await runtimeLlamaPhase(c, plan);
      cancelled();
      const files = await downloadPhase(plan.modelArg, ops, o.signal);
      cancelled();
      const l = await launchLlamaPhase(c, plan, files);
      cancelled();
      await warmupLlamaPhase(c, l, plan.bin!);
      cancelled();
      const v = await verifyLlamaPhase(c, l);
      const placement = await placementLlamaPhase(c, plan, l);
      const first = l.servers[0]!;
      const r0 = l.replicas[0]!;
      const bench = await benchPhase(
        c,
        {
          url: first.url,
          model: l.alias,
          key: l.key,
          engine: "llama.cpp",
          slots: r0.slots,
          perSlotCtx: r0.ctxPerSlot,
          pooled: l.pooled ? l.replicas.length : undefined,
        },
        v,
      );
      recordLlamaPhase(c, plan, l, v, placement, bench);
    }
    job.state = "done";
  } catch (e) {
    const f =
      e instanceof StartError
        ? e.failure
        : { kind: "other", cause: describeFetchError(e), logLine: null, remedy: "read the log file; `ocw doctor` checks the runtime" };
    // outside any phase (saving the target after the last one): the phase that ran last, not "plan"
    const failedPhase =
      f.phase ?? (current as { p: SetupPhase } | null)?.p.name ?? [...job.phases].reverse().find((p) => p.status !== "pending")?.name ?? "plan";
    if (current) end(f.cause, "failed");
    else if (f.kind !== "not-confirmed") phase(failedPhase).status = "failed";
    job.failure = { phase: failedPhase, kind: f.kind, cause: f.cause, logLine: f.logLine ?? null, remedy: f.remedy, logFile: f.logFile ?? logFile };
    job.state = f.kind === "cancelled" ? "cancelled" : "failed";
    for (const p of job.phases) if (p.status === "pending") p.status = "skipped";
  }
  // A start that failed after its launch (warm-up, verify, a cancel) or ended cannot-build stops what it started: a server
  // no target can use is not left running (and holding its memory) after the setup has ended.
  if (launched && (job.state !== "done" || job.result?.outcome === "cannot-build")) await stopLaunched(job, launched);
  job.ms = Math.round(performance.now() - t0);
  if (job.result) job.result.ms = job.ms;
  emit();
  return job;
}

/** Stops the model server(s) a failed start launched under `targetId`, and says so in the job's verdict or failure. */
async function stopLaunched(job: SetupJob, targetId: string): Promise<void> {
  const r = await stopServing(targetId).catch((e: Error) => e);
  const gone = r instanceof Error ? [] : r.stopped;
  const said =
    r instanceof Error
      ? `the model server this setup started could not be stopped (${r.message}): \`ocw serving stop --target ${targetId}\` stops it`
      : gone.length
        ? `the model server this setup started was stopped (pid ${gone.map((s) => s.pid).join(", ")})`
        : null;
  if (!said) return;
  if (job.result) job.result.summary = `${job.result.summary}; ${said}`;
  else if (job.failure) job.failure.remedy = `${job.failure.remedy} (${said})`;
}

/**
 * Whether starting this pick stops that running target (setup stops the target it saves before loading): the same
 * id — the one asked, or the one setup derives from the model (catalog name + quant, else the model file's alias).
 */
export function replaces(pick: FitPick, g: RunningGroup, inputId?: string): boolean {
  if (inputId) return g.id === inputId;
  const entry = findCatalog(pick.model);
  if (entry) return g.id === `llamacpp-${targetSlug({ model: entry.name, quant: pick.quant })}`;
  const args = g.recs[0]!.args;
  const alias = args[args.indexOf("--alias") + 1];
  const file = args[args.indexOf("-m") + 1];
  if (!alias || !file || g.id !== `llamacpp-${alias}`) return false;
  const w = commandWords(pick.pool ? pick.pool.endpoints[0]!.command : pick.command).args;
  const mi = w.findIndex((a) => a === "-m" || a === "-hf");
  if (mi < 0) return false;
  const value = w[mi + 1]!;
  if (w[mi] === "-m") return path.resolve(value) === path.resolve(file);
  const [repo, quant] = value.split(":");
  const dir = path.join(stateDir(), "models", repo!.replace("/", "__"));
  return file.startsWith(dir + path.sep) && (!quant || pathHasQuant(path.relative(dir, file), quant));
}

/** A pool's verdict: its weakest replica's outcome, every replica's checks (named), slots summed. */
function poolVerdict(vs: VerifyResult[]): VerifyResult {
  const rank = { built: 0, underpowered: 1, "cannot-build": 2 } as const;
  const worst = vs.reduce((a, x) => (rank[x.outcome] > rank[a.outcome] ? x : a));
  const k = vs.indexOf(worst);
  return {
    outcome: worst.outcome,
    checks: vs.flatMap((x, j) => x.checks.map((c) => ({ ...c, evidence: `replica ${j + 1}: ${c.evidence}` }))),
    observed: {
      totalSlots: vs.every((x) => x.observed.totalSlots !== null) ? vs.reduce((a, x) => a + x.observed.totalSlots!, 0) : null,
      perSlotCtx: vs.every((x) => x.observed.perSlotCtx !== null) ? Math.min(...vs.map((x) => x.observed.perSlotCtx!)) : null,
      overlap: null,
    },
    summary: `${vs.length} replicas; ${worst.outcome === "built" ? worst.summary : `replica ${k + 1}: ${worst.summary}`}`,
  };
}

/** A replica's planned devices as its own llama-server names them (renumbered from 0 when the others are hidden). */
function replicaDevices(pick: FitPick, ids: string[], isolated: boolean): FitPick["devices"] {
  return ids.map((id, k) => {
    const d = pick.devices.find((x) => x.name.split(" ")[0] === id)!;
    return isolated ? { ...d, name: `${id.replace(/\d+$/, "")}${k} ${d.name.split(" ").slice(1).join(" ")}` } : d;
  });
}
