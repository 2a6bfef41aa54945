// "Build one" from the wizard: scripts/build-llama-server.sh (OCW_LLAMA_BUILD_SCRIPT overrides it) run by the engine
// as a job, its stderr streamed as progress (`llama-build` events), its last stdout line the binary — checked to run
// `--version` before the job says done. One build at a time; a second start while one runs answers the running one.
import { accessSync, constants } from "node:fs";
import { execa, type ResultPromise } from "execa";
import { InputError } from "../../shared/errors";
import { newId, quotedId } from "../../shared/ids";
import type { LlamaBuildJob } from "../../shared/llama-build";
import { buildScript, findNvcc } from "./get-llama";

const KEEP_LINES = 200;
const MAX_LINE = 500;
let job: LlamaBuildJob | null = null;
let proc: ResultPromise | null = null;

/** The running or last build, or null. */
export function llamaBuildJob(jobId?: string): LlamaBuildJob | null {
  if (jobId && job?.jobId !== jobId) throw new InputError(`unknown build job ${quotedId(jobId)}`, "not-found");
  return job;
}

/** The cause a failed build gives: its own `error:` line (the script's `die`), else its last line, else the exit. */
export function buildFailureCause(lines: readonly string[], exit: string): string {
  const err = [...lines].reverse().find((l) => /\berror\b/i.test(l));
  return (err ?? lines.at(-1) ?? exit).replace(/^build-llama-server:\s*/, "");
}

/** `[12/345]` (ninja, cmake's make output as `[ 12%]`) → steps done and in all. */
export function progressOf(line: string): { done: number; total: number } | null {
  const m = /^\[(\d+)\/(\d+)\]/.exec(line);
  if (m) return { done: Number(m[1]), total: Number(m[2]) };
  const pct = /^\[\s*(\d+)%\]/.exec(line);
  return pct ? { done: Number(pct[1]), total: 100 } : null;
}

export function startLlamaBuild(publish: (job: LlamaBuildJob) => void, env: NodeJS.ProcessEnv = process.env): LlamaBuildJob {
  if (job?.state === "running") return job;
  const script = buildScript(env);
  if (!script)
    throw new InputError(
      "scripts/build-llama-server.sh is not part of this install (or OCW_LLAMA_BUILD_SCRIPT names no file): give a llama-server path instead",
      "unavailable",
    );
  const cuda = findNvcc(env) !== null;
  const j: LlamaBuildJob = {
    jobId: newId("b"),
    state: "running",
    variant: cuda ? "cuda" : "cpu",
    startedAt: Date.now(),
    ms: null,
    lines: [],
    progress: null,
    path: null,
    failure: null,
  };
  job = j;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const emit = (now = false) => {
    if (now) {
      if (timer) clearTimeout(timer);
      timer = null;
      return publish({ ...j, lines: [...j.lines] });
    }
    timer ??= setTimeout(() => {
      timer = null;
      publish({ ...j, lines: [...j.lines] });
    }, 200);
  };
  const p = execa("bash", [script], {
    reject: false,
    stdin: "ignore",
    env: { ...env, ...(cuda ? { GGML_CUDA: "1" } : {}) },
    timeout: 3 * 3600_000,
    detached: true,
    killSignal: "SIGTERM",
  });
  proc = p;
  // A build never outlives the engine that started it (its whole process group ends with the engine).
  const endWithEngine = () => {
    try {
      if (p.pid) process.kill(-p.pid, "SIGTERM");
    } catch {
      /* already gone */
    }
  };
  process.once("exit", endWithEngine);
  let partial = "";
  p.stderr?.on("data", (d: Buffer) => {
    const text = partial + String(d);
    const parts = text.split(/\r?\n|\r/);
    partial = parts.pop() ?? "";
    for (const raw of parts) {
      const l = raw.trimEnd().slice(0, MAX_LINE);
      if (!l.trim()) continue;
      j.lines.push(l);
      if (j.lines.length > KEEP_LINES) j.lines.splice(0, j.lines.length - KEEP_LINES);
      j.progress = progressOf(l.trim()) ?? j.progress;
    }
    emit();
  });
  void p.then(async (r) => {
    proc = null;
    process.off("exit", endWithEngine);
    if (partial.trim()) j.lines.push(partial.trim().slice(0, MAX_LINE));
    j.ms = Date.now() - j.startedAt;
    if (j.state === "cancelled") return emit(true);
    const bin = String(r.stdout ?? "")
      .trim()
      .split("\n")
      .at(-1)
      ?.trim();
    const exit = r.timedOut ? "the build ran over 3 hours" : r.signal ? `the build was ended by ${r.signal}` : `the build exited with ${r.exitCode}`;
    if (r.exitCode !== 0 || !bin) {
      j.state = "failed";
      j.failure = {
        cause: r.exitCode === 0 ? "the build printed no llama-server path" : buildFailureCause(j.lines, exit),
        remedy:
          "install what the cause names (the build needs git, cmake, a C++ compiler and npm), then build again, or give the path of a llama-server you have",
      };
      return emit(true);
    }
    const problem = await runs(bin, env);
    if (problem) {
      j.state = "failed";
      j.failure = { cause: `the built ${bin} does not run: ${problem}`, remedy: "look at the build's last lines, or give the path of a llama-server you have" };
      return emit(true);
    }
    j.state = "done";
    j.path = bin;
    j.progress = j.progress ? { done: j.progress.total, total: j.progress.total } : null;
    emit(true);
  });
  emit(true);
  return j;
}

async function runs(bin: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    return "it is missing or not executable";
  }
  const r = await execa(bin, ["--version"], { reject: false, stdin: "ignore", timeout: 20_000, env });
  return r.exitCode === 0
    ? null
    : `\`--version\` exited with ${r.exitCode ?? r.signal}: ${
        String(r.stderr || r.stdout)
          .trim()
          .split("\n")
          .at(-1) ?? ""
      }`;
}

/** Stops the running build (its whole process group). */
export function cancelLlamaBuild(jobId: string): LlamaBuildJob {
  if (!job || job.jobId !== jobId) throw new InputError(`unknown build job ${quotedId(jobId)}`, "not-found");
  if (job.state !== "running") return job;
  job.state = "cancelled";
  const pid = proc?.pid;
  if (pid)
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      proc?.kill("SIGTERM");
    }
  return job;
}
