/**
 * vLLM and SGLang started by setup (issue 13), when installed: the `vllm` binary or Python's `sglang` package on this
 * machine, else their official container image through docker or podman. The key never appears in argv: vLLM reads
 * it from VLLM_API_KEY, SGLang from a 0600 `--config` YAML file (in a container: `-e VLLM_API_KEY` names the variable,
 * the config file is mounted read-only). Both are recorded in serving.json like llama-server and run under the same supervisor
 * (`ocw serving supervise`, engine/process/supervisor.ts), and verified.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { SetupPlacement } from "../../shared/setup";
import { type Target, targetSlug } from "../../shared/target";
import { detectHardware, type HardwareReport } from "../hardware";
import { processStartTime } from "../process";
import { stateDir } from "../store";
import { httpJson } from "./http";
import { generateKey, keyFilePath, storeKey } from "./keys";
import { freePort } from "./llama-server";
import { patchServing, putServing, type ServingRecord, startSupervised, stopServing, supervisorCommand } from "./setup";
import { startRuntimeProcess } from "./runtime-process";
import { benchPhase, classifyLog, confirmPhase, planReplacing, type RunningGroup, saveTarget, type StartCtx, StartError } from "./start-common";
import type { TargetBench } from "../../shared/target";
import type { VerifyResult } from "./verify";
import { findRuntime, imageFor, installedVersion, versionProblem } from "./runtime-adapters";
import { commandWords, isSetupError, shellQuote } from "../models";
import type { FitPick } from "../../shared/fit";
import { planFit } from "./fit-service";
import { parallelDevices } from "./parallel";
import { verifyEndpoint } from "./verify";

export { findRuntime, SGLANG_IMAGE, VLLM_IMAGE } from "./runtime-adapters";

interface RuntimeLaunch {
  how: "binary" | "container";
  /** What runs: the binary (or docker/podman) and its argv — never the key. */
  cmd: string;
  args: string[];
  /** Environment additions (the key lives here for vLLM). */
  env: Record<string, string>;
  /** Where it will listen. */
  port: number;
  /** The file holding the key for SGLang (0600), if any. */
  configFile: string | null;
}

/**
 * The launch of the planner's vLLM / SGLang command (`ocw fit --runtime … --json`'s pick): its words with only the
 * port, the host (0.0.0.0 inside a container) and SGLang's key file filled in; its environment (CUDA_VISIBLE_DEVICES
 * when it uses fewer GPUs than the machine has) kept; the key in VLLM_API_KEY or the 0600 config file.
 */
export function buildLaunch(o: {
  runtime: "vllm" | "sglang";
  found: { how: "binary" | "container"; bin: string };
  command: string;
  port: number;
  key: string;
  configDir: string;
  env?: NodeJS.ProcessEnv;
  /** The model (catalog id / repo) whose family picks the pinned image. */
  family?: string;
}): RuntimeLaunch {
  const env = o.env ?? process.env;
  const words = commandWords(o.command);
  const inner = o.found.how === "container" ? 8000 : o.port;
  const host = o.found.how === "container" ? "0.0.0.0" : "127.0.0.1";
  const args = [...words.args];
  const set = (flag: string, v: string) => {
    const i = args.indexOf(flag);
    if (i >= 0) args[i + 1] = v;
    else args.push(flag, v);
  };
  set("--port", String(inner));
  set("--host", host);
  const extraEnv: Record<string, string> = Object.fromEntries(
    words.env.filter((w) => !/^(VLLM_API_KEY|LLAMA_API_KEY)=/.test(w)).map((w) => [w.slice(0, w.indexOf("=")), w.slice(w.indexOf("=") + 1)]),
  );
  let configFile: string | null = null;
  if (o.runtime === "vllm") extraEnv.VLLM_API_KEY = o.key;
  else {
    // SGLang takes the key as --api-key only: it goes in a 0600 config file instead of argv
    mkdirSync(o.configDir, { recursive: true, mode: 0o700 });
    configFile = path.join(o.configDir, "sglang.yaml");
    writeFileSync(configFile, `api-key: ${JSON.stringify(o.key)}\n`, { mode: 0o600 });
    chmodSync(configFile, 0o600);
    set("--config", o.found.how === "container" ? "/ocw/sglang.yaml" : configFile);
  }
  if (o.found.how === "binary") return { how: "binary", cmd: o.found.bin, args, env: extraEnv, port: o.port, configFile };
  const image = imageFor(o.runtime, o.family ?? o.command, env);
  const hfCache = env.HF_HOME || path.join(os.homedir(), ".cache", "huggingface");
  const servedName = args[args.indexOf("--served-model-name") + 1] ?? o.runtime;
  const run = [
    "run",
    "--rm",
    "--name",
    `ocw-${servedName}`.slice(0, 60),
    "--gpus",
    "all",
    "--ipc=host",
    "-p",
    `127.0.0.1:${o.port}:8000`,
    "-v",
    `${hfCache}:/root/.cache/huggingface`,
    // names only: the container engine copies the values from its own environment
    ...Object.keys(extraEnv).flatMap((k) => ["-e", k]),
    ...(env.HF_TOKEN ? ["-e", "HF_TOKEN"] : []),
    ...(configFile ? ["-v", `${configFile}:/ocw/sglang.yaml:ro`] : []),
    // vLLM's image has had two entrypoints: `python3 -m vllm.entrypoints.openai.api_server`, where a positional model
    // is not the model (it serves the image's default, Qwen/Qwen3-0.6B: vllm#32292), and later `vllm serve`. Naming
    // the entrypoint runs `vllm serve MODEL …` under either (and under an OCW_VLLM_IMAGE of either age).
    ...(o.runtime === "vllm" ? ["--entrypoint", "vllm"] : []),
    image,
    ...(o.runtime === "vllm" ? args : ["python3", ...args]),
  ];
  return { how: "container", cmd: o.found.bin, args: run, env: extraEnv, port: o.port, configFile };
}

/** The plan of a vLLM / SGLang start: the pick (tensor × data parallel), the runtime found, the server it replaces. */
interface OtherPlan {
  runtime: "vllm" | "sglang";
  name: string;
  hw: HardwareReport;
  pick: FitPick;
  slots: number;
  ctx: number;
  model: string;
  found: ReturnType<typeof findRuntime>;
  replacing: RunningGroup | null;
  idOf: (p: FitPick) => string;
  /** What picks the family (minimum version, image): the catalog id and the repo. */
  familyOf: string;
}

/** The started vLLM / SGLang server, with what the later phases need of it. */
interface OtherLaunched {
  id: string;
  servedName: string;
  port: number;
  key: string;
  keyFile: string;
  before: HardwareReport;
  indexOf: Map<string, number>;
  launch: RuntimeLaunch;
  logFile: string;
  readLog: () => string;
  url: string;
}

/** plan: the same planner as `ocw fit --runtime vllm|sglang`, with a running server this start replaces counted free. */
async function planOtherPhase(c: StartCtx): Promise<OtherPlan> {
  const { o, input, job, ops } = c;
  const runtime = input.runtime as "vllm" | "sglang";
  const name = runtime === "vllm" ? "vLLM" : "SGLang";
  const hw = o.hardware ?? (await detectHardware({}));
  // the same planner as `ocw fit --runtime vllm|sglang`: safetensors weights, tensor × data parallel over the GPUs
  const planOn = (h: typeof hw) =>
    planFit({ runtime, model: input.model, slots: input.slots, minCtx: input.minCtx, ctxPerSlot: input.ctx, mtp: input.mtp }, h, { store: o.store }).catch(
      (e) => {
        if (isSetupError(e, "input"))
          throw new StartError({ kind: "input", cause: e.message, logLine: null, remedy: "fix the model, slots or context and start again" });
        throw e;
      },
    );
  const idOf = (p: FitPick) => {
    const w = commandWords(p.command).args;
    return input.id ?? `${runtime}-${w[w.indexOf("--served-model-name") + 1]}`;
  };
  const { fit, replacing } = await planReplacing(hw, await planOn(hw), planOn, input.id, (pick, g) => idOf(pick) === g.id);
  if (!fit.pick)
    throw new StartError({
      kind: "no-fit",
      cause: fit.problem ?? `${input.model ?? "nothing in the catalog"} does not fit this machine with ${name}`,
      logLine: null,
      remedy: "fewer slots, a shorter context, --runtime llama.cpp, or an API provider",
    });
  const pick = fit.pick;
  const slots = pick.slots;
  const ctx = pick.ctxPerSlot;
  const model = commandWords(pick.command).args[runtime === "vllm" ? 1 : 3]!;
  Object.assign(job, { model: pick.model, quant: pick.quant, slots, ctxPerSlot: ctx, plannedCommand: pick.command, pick });
  const found = findRuntime(runtime);
  ops.end(
    pick.reason +
      (replacing
        ? `; the running server of target ${replacing.id} (pid ${replacing.recs.map((r) => r.pid).join(", ")}) holds ${([...replacing.bytes.values()].reduce((a, b) => a + b, 0) / 1024 ** 3).toFixed(1)} GiB of GPU memory: counted as free, it is stopped before the load (setup replaces it)`
        : ""),
  );
  return { runtime, name, hw, pick, slots, ctx, model, found, replacing, idOf, familyOf: `${pick.model} ${model}` };
}

type Found = Extract<ReturnType<typeof findRuntime>, { how: "binary" | "container" }>;

/** runtime: the runtime found, its version against the family's minimum (catalog), before anything is launched. */
function runtimeOtherPhase(c: StartCtx, p: OtherPlan): Found {
  const { ops } = c;
  const { runtime, name, found, familyOf } = p;
  if (!found.how) throw new StartError({ phase: "runtime", kind: "runtime", cause: found.why, logLine: null, remedy: found.why.replace(/^.*?; /, "") });
  ops.begin("runtime", `looking for ${name}`);
  // the family's minimum version (catalog), checked before anything is launched: an old runtime fails late and obscurely
  const version = installedVersion(runtime, found, familyOf);
  const tooOld = versionProblem(runtime, familyOf, version);
  if (tooOld) throw new StartError({ phase: "runtime", kind: "runtime-version", cause: tooOld.cause, logLine: null, remedy: tooOld.remedy });
  ops.end(
    `${found.how === "binary" ? `${name} at ${found.bin}` : `${name} in a container through ${found.bin} (${imageFor(runtime, familyOf)})`}${version.version ? `, version ${version.version}` : ", version not reported"}`,
  );
  ops.skip("download", `${name} downloads the weights itself while loading (into the Hugging Face cache)`);
  return found;
}

/** load: the planner's command with the port, host and key file filled in, under the supervisor. */
async function launchOtherPhase(c: StartCtx, p: OtherPlan, found: Found): Promise<OtherLaunched> {
  const { o, job, ops } = c;
  const { runtime, name, pick, hw, replacing, idOf, familyOf, model } = p;
  ops.begin("load", `starting ${name}`);
  const words = commandWords(pick.command);
  const servedName = words.args[words.args.indexOf("--served-model-name") + 1] ?? targetSlug({ model: model.split("/").pop()!, quant: null });
  const id = idOf(pick);
  const port = await freePort();
  const key = generateKey();
  const keyFile = keyFilePath(id);
  storeKey(keyFile, key);
  await stopServing(id);
  c.setLaunched(id);
  // the vendor tool's figures before this start (a replaced server's memory is free again)
  const before = replacing ? ((await detectHardware({}).catch(() => null)) ?? hw) : hw;
  const launch = buildLaunch({ runtime, found, command: pick.command, port, key, configDir: path.join(stateDir(), "runtime", id), family: familyOf });
  // vLLM / SGLang claim their share of each GPU up front (--gpu-memory-utilization): that is what a replacement frees
  const indexOf = new Map(parallelDevices(hw).dev.gpus.map((g) => [g.runtimeId, g.index!]));
  const held = pick.devices
    .map((d) => ({ index: indexOf.get(d.name.split(" ")[0]!), bytes: d.budgetBytes }))
    .filter((x): x is { index: number; bytes: number } => x.index !== undefined);
  job.launchedCommand = `${[...Object.entries(launch.env).map(([k, v]) => (k === "VLLM_API_KEY" ? `${k}=…` : `${k}=${shellQuote(v)}`))].join(" ")}${Object.keys(launch.env).length ? " " : ""}${shellQuote(launch.cmd)} ${launch.args.map(shellQuote).join(" ")}`;
  const logFile = path.join(stateDir(), "logs", `${id}.log`);
  c.setLog(logFile);
  mkdirSync(path.dirname(logFile), { recursive: true, mode: 0o700 });
  const logStart = existsSync(logFile) ? statSync(logFile).size : 0;
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, "utf8").slice(logStart) : "");
  // recorded like llama-server's, with its runtime (the supervisor hands the key over as the runtime takes it)
  const record: ServingRecord = {
    targetId: id,
    runtime,
    pid: 0,
    startTime: null,
    supervisorPid: null,
    port,
    bin: launch.cmd,
    args: launch.args,
    env: Object.fromEntries(Object.entries(launch.env).filter(([k]) => k !== "VLLM_API_KEY")),
    logFile,
    keyFile,
    startedAt: new Date().toISOString(),
    gpuBytes: held,
    container: launch.how === "container" ? launch.args[launch.args.indexOf("--name") + 1]! : null,
  };
  // under the one supervisor (engine/process/supervisor.ts, through `ocw serving supervise`): restarted after a crash,
  // as llama-server is; unsupervised (detached) only where no supervisor command exists (OCW_SUPERVISE=0)
  const sup = supervisorCommand();
  let pid: number;
  let readyMs: number;
  try {
    if (sup) {
      putServing(record);
      try {
        ({ pid, readyMs } = await startSupervised(sup, record, o.readyTimeoutMs ?? 1_800_000));
      } catch (e) {
        await stopServing(id);
        throw e;
      }
    } else {
      ({ pid, readyMs } = await startRuntimeProcess({
        cmd: launch.cmd,
        args: launch.args,
        env: launch.env,
        logFile,
        port,
        key,
        readyTimeoutMs: o.readyTimeoutMs ?? 1_800_000,
        detached: true,
      }));
      putServing({ ...record, pid, startTime: processStartTime(pid) });
    }
  } catch (e) {
    const c = classifyLog(readLog(), launch.cmd);
    throw new StartError({
      kind: c?.kind ?? "other",
      cause: c?.logLine ? `${name} failed to start: ${c.logLine}` : `${name} ${(e as Error).message}`,
      logLine: c?.logLine ?? null,
      remedy: c?.remedy ?? "read the log file",
      logFile,
    });
  }
  ops.end(`${name} pid ${pid} on 127.0.0.1:${port}, ready in ${(readyMs / 1000).toFixed(1)} s${sup ? " (supervised: restarted if it crashes)" : ""}`);
  return { id, servedName, port, key, keyFile, before, indexOf, launch, logFile, readLog, url: `http://127.0.0.1:${port}/v1` };
}

/** warm-up: one short completion. */
async function warmupOtherPhase(c: StartCtx, l: OtherLaunched): Promise<void> {
  const { ops } = c;
  const { url, servedName, key, readLog, launch, logFile } = l;
  ops.begin("warmup", "one short completion");
  const w = await httpJson(`${url}/chat/completions`, {
    headers: { authorization: `Bearer ${key}` },
    body: { model: servedName, messages: [{ role: "user", content: "Say OK." }], max_tokens: 4, temperature: 0 },
    timeoutMs: 300_000,
  });
  if (w.status !== 200) {
    const c = classifyLog(readLog(), launch.cmd);
    throw new StartError({
      kind: c?.kind ?? "other",
      cause: `the first completion failed: ${w.status || w.error} ${w.text.slice(0, 200)}`,
      logLine: c?.logLine ?? null,
      remedy: c?.remedy ?? "read the log file",
      logFile,
    });
  }
  ops.end(`first completion in ${(w.ms / 1000).toFixed(2)} s`);
}

/** verify: the checklist, live (no llama.cpp extensions). */
async function verifyOtherPhase(c: StartCtx, p: OtherPlan, l: OtherLaunched): Promise<VerifyResult> {
  const { job, ops } = c;
  const { runtime, slots, ctx } = p;
  const { url, servedName, key } = l;
  ops.begin("verify", "reachable, auth, slots, concurrency, capability, tools");
  const v = await verifyEndpoint({
    url,
    model: servedName,
    key,
    engine: runtime,
    slots,
    perSlotCtx: ctx,
    llamaExtensions: false,
    onCheck: (_c, done) => {
      job.checks = done;
      ops.emit();
    },
  });
  job.checks = v.checks;
  ops.end(`${v.outcome}: ${v.summary}`, v.outcome === "cannot-build" ? "failed" : "done");
  return v;
}

/** placement: every GPU of the plan gained at least half its share of the weights (the vendor tool, by index). */
async function placementOtherPhase(c: StartCtx, p: OtherPlan, l: OtherLaunched): Promise<string | null> {
  const { job, ops } = c;
  const { name, pick } = p;
  const { readLog, before, indexOf, id } = l;
  const loaded = readLog()
    .split("\n")
    .filter((l) => /Model loading took|model weights took|Load weight end|KV Cache is allocated|GPU KV cache size/i.test(l))
    .map((l) => l.trim().slice(0, 200));
  // placement: every GPU of the plan gained at least half its share of the weights (the vendor tool, by index)
  let placementFailed: string | null = null;
  if (before.gpus.some((g) => g.usedBytes !== null)) {
    ops.begin("placement", "reading the vendor tool's memory per GPU");
    const after = await detectHardware({}).catch(() => null);
    const evidence = [...(loaded.length ? [`log: ${loaded.join("; ")}`] : [])];
    const devices: SetupPlacement["devices"] = [];
    const measured: { index: number; bytes: number }[] = [];
    for (const d of pick.devices) {
      const index = indexOf.get(d.name.split(" ")[0]!);
      const b = before.gpus.find((g) => g.index === index)?.usedBytes;
      const a = after?.gpus.find((g) => g.index === index)?.usedBytes;
      const weights = d.breakdown?.weightsBytes ?? 0;
      if (index === undefined || a == null || b == null) continue;
      const delta = a - b;
      devices.push({ name: d.name, plannedBytes: weights, loadedBytes: Math.max(0, delta) });
      evidence.push(
        `device memory: ${d.name} ${(a / 1024 ** 3).toFixed(1)} GiB used (${delta >= 0 ? "+" : ""}${(delta / 1024 ** 3).toFixed(1)} GiB since before the start)`,
      );
      if (delta > 0) measured.push({ index, bytes: delta });
      if (delta < weights * 0.5) {
        placementFailed = `${d.name}: the vendor tool shows ${(delta / 1024 ** 3).toFixed(1)} GiB more in use, less than half of the ${(weights / 1024 ** 3).toFixed(1)} GiB of weights planned there`;
        evidence.push(placementFailed);
      }
    }
    if (!placementFailed && devices.length) evidence.push("the weights are where the plan put them");
    job.placement = { passed: !placementFailed, devices, evidence };
    if (measured.length) patchServing(id, { gpuBytes: measured });
    ops.end(evidence.join("; ") || "no figures", placementFailed ? "failed" : "done");
  } else {
    ops.skip(
      "placement",
      loaded.length
        ? `${name} placed the weights itself (all on GPU): ${loaded.join("; ")}`
        : `${name} keeps every layer on the GPU(s); its log shows no loading figures`,
    );
  }
  return placementFailed;
}

/** record: the target, saved as verify decided, with the benchmark. */
function recordOtherPhase(c: StartCtx, p: OtherPlan, l: OtherLaunched, v: VerifyResult, bench: TargetBench | null, placementFailed: string | null): void {
  const { job } = c;
  const { runtime, name, slots, ctx } = p;
  const { id, servedName, url, keyFile, logFile } = l;
  const target: Target = {
    id,
    model: servedName,
    quant: null,
    endpoint: url,
    keyRef: "OCW_TARGET_API_KEY",
    keyFile,
    contextLimit: ctx,
    serving: { engine: runtime, endpoints: [{ url, slots }], slots, perSlotCtx: ctx },
    checks: [],
  };
  if (bench) target.bench = bench;
  saveTarget(c, target, v, runtime, bench);
  if (placementFailed) {
    job.failure = {
      phase: "placement",
      kind: "placement",
      cause: placementFailed,
      logLine: null,
      logFile,
      remedy: `${name} did not load onto the GPUs the plan counted on: check CUDA_VISIBLE_DEVICES and nvidia-smi (another process may hold them); the server runs`,
    };
  }
}

/** The phases for vLLM / SGLang: plan, runtime, (download: the runtime's own), load, warm-up, verify, placement, bench, record. */
export async function runOtherRuntime(c: StartCtx): Promise<void> {
  const p = await planOtherPhase(c);
  c.ops.cancelled();
  await confirmPhase(c);
  const found = runtimeOtherPhase(c, p);
  c.ops.cancelled();
  const l = await launchOtherPhase(c, p, found);
  await warmupOtherPhase(c, l);
  const v = await verifyOtherPhase(c, p, l);
  const placementFailed = await placementOtherPhase(c, p, l);
  const bench = await benchPhase(c, { url: l.url, model: l.servedName, key: l.key, engine: p.runtime, slots: p.slots, perSlotCtx: p.ctx }, v);
  recordOtherPhase(c, p, l, v, bench, placementFailed);
}
