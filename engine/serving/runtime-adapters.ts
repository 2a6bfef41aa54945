/**
 * One adapter per server runtime other than llama.cpp (vLLM, SGLang): where it is (binary, Python package or
 * container image), which version it is, the parsers a model family needs (tool calls and reasoning), and whether the
 * installed version loads the model at all — checked before launch. A leaf of engine/serving/: it imports no start,
 * CLI or planning module, so the planner, the start job and the k8s sizer can all use it.
 */
import { config } from "../config";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { type CatalogEntry, DEFAULT_IMAGES, runtimeFamily } from "../models";

type ParallelRuntime = "vllm" | "sglang";

/** Container images, pinned (the newest family minimum in the catalog); OCW_VLLM_IMAGE / OCW_SGLANG_IMAGE override them. */
export const VLLM_IMAGE = DEFAULT_IMAGES.vllm;
export const SGLANG_IMAGE = DEFAULT_IMAGES.sglang;

export function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    const p = dir && path.join(dir, name);
    if (p && existsSync(p)) return p;
  }
  return null;
}

/** How this machine can run the runtime: its binary / Python package, else a container engine; null with why not. */
export function findRuntime(
  runtime: ParallelRuntime,
  env: NodeJS.ProcessEnv = process.env,
  o: { binaryOnly?: boolean } = {},
): { how: "binary" | "container"; bin: string } | { how: null; why: string } {
  if (runtime === "vllm") {
    const bin = config(env).OCW_VLLM_BIN || onPath("vllm", env);
    if (bin) return { how: "binary", bin };
  } else {
    const py = config(env).OCW_PYTHON || onPath("python3", env) || onPath("python", env);
    if (py) {
      const r = spawnSync(py, ["-c", "import importlib.util,sys; sys.exit(0 if importlib.util.find_spec('sglang') else 3)"], {
        env,
        timeout: 20_000,
        stdio: "ignore",
      });
      if (r.status === 0) return { how: "binary", bin: py };
    }
  }
  const ce = o.binaryOnly ? null : config(env).OCW_CONTAINER_ENGINE || onPath("podman", env) || onPath("docker", env);
  if (ce) return { how: "container", bin: ce };
  return {
    how: null,
    why:
      runtime === "vllm"
        ? "vLLM is not installed here (no `vllm` on PATH) and there is no docker or podman for its image; `pip install vllm`, or install docker, or use llama.cpp"
        : "SGLang is not installed here (python3 cannot import sglang) and there is no docker or podman for its image; `pip install sglang`, or install docker, or use llama.cpp",
  };
}

/**
 * The tool-call parser each runtime needs for the model's chat format (OpenCode works through tool calls). Names as
 * registered: vllm-project/vllm vllm/tool_parsers/__init__.py (_TOOL_PARSERS_TO_REGISTER: openai, mistral, glm45,
 * glm47, deepseek_v4, qwen3_coder, hermes) and sgl-project/sglang python/sglang/srt/function_call/function_call_parser.py
 * (ToolCallParserEnum: gpt-oss, mistral, glm45, glm47, deepseekv4, qwen3_coder, qwen25), both read at the index's
 * newest stored commit (vllm 0064cc9c, sglang 00828e56); the tags' own files were not stored.
 */
export function toolParser(runtime: ParallelRuntime, e: CatalogEntry | undefined, repo: string): string {
  const t = `${e?.toolCalling.template ?? ""} ${e?.id ?? ""} ${repo}`.toLowerCase();
  if (/harmony|gpt-oss/.test(t)) return runtime === "vllm" ? "openai" : "gpt-oss";
  if (/mistral|devstral/.test(t)) return "mistral";
  // GLM-4.7 dropped the newline after the function name (sglang#15333 added glm47 for it; vLLM kept glm45 and glm47
  // apart until vllm#45915's consolidation, after v0.20): GLM-4.7 and GLM-5 take glm47, GLM-4.5 / 4.6 glm45
  if (/glm-?(4\.7|5)/.test(t)) return "glm47";
  if (/glm/.test(t)) return "glm45";
  // V4's DSML tool calls: vLLM's deepseek_v4, SGLang's deepseekv4 (DeepSeekV4Detector)
  if (/deepseek-v4/.test(t)) return runtime === "vllm" ? "deepseek_v4" : "deepseekv4";
  if (/qwen3[.-]?(5|6)|qwen3-coder|xml tool/.test(t)) return "qwen3_coder";
  return runtime === "vllm" ? "hermes" : "qwen25";
}

/** The reasoning parser the model's family needs (its thinking stays out of `content`), or null. */
export function reasoningParser(runtime: ParallelRuntime, e: CatalogEntry | undefined, repo: string): string | null {
  return runtimeFamily(`${e?.id ?? ""} ${repo}`).reasoningParser[runtime];
}

/** The image for this model on this runtime: the override, else the family's pinned image. */
export function imageFor(runtime: ParallelRuntime, model: string, env: NodeJS.ProcessEnv = process.env): string {
  const o = runtime === "vllm" ? config(env).OCW_VLLM_IMAGE : config(env).OCW_SGLANG_IMAGE;
  return o || runtimeFamily(model).image[runtime];
}

/** "0.19.0" from "v0.19.0", "0.5.10.post1-cu130", "vllm 0.11.0+cu129" …; null when none. */
export function parseVersion(s: string): string | null {
  // a vendor's build tag names its own versions first (rocm7.0.0_vllm_0.11.1_20251103)
  const named = /(?:vllm|sglang)[_-]v?(\d+\.\d+(?:\.\d+)?)/i.exec(s)?.[1];
  if (named) return named;
  return /(?:^|[^\d.])v?(\d+\.\d+(?:\.\d+)?)/.exec(s)?.[1] ?? null;
}

/** a < b → negative (numeric per dot-separated part; missing parts are 0). */
function compareVersions(a: string, b: string): number {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d) return d;
  }
  return 0;
}

/** The installed runtime's version: the image's tag, `vllm --version`, or `import sglang; sglang.__version__`. */
export function installedVersion(
  runtime: ParallelRuntime,
  found: { how: "binary" | "container"; bin: string },
  model: string,
  env: NodeJS.ProcessEnv = process.env,
): { version: string | null; from: string } {
  if (found.how === "container") {
    const image = imageFor(runtime, model, env);
    return { version: parseVersion(image.split(":").pop() ?? ""), from: `image ${image}` };
  }
  const r =
    runtime === "vllm"
      ? spawnSync(found.bin, ["--version"], { env, timeout: 60_000, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
      : spawnSync(found.bin, ["-c", "import sglang; print(sglang.__version__)"], { env, timeout: 60_000, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const out = `${r.stdout ?? ""}\n${r.stderr ?? ""}`
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  // the last line with a version: vLLM prints warnings before it
  const line = [...out].reverse().find((l) => parseVersion(l));
  return { version: line ? parseVersion(line) : null, from: runtime === "vllm" ? `${found.bin} --version` : `${found.bin} -c 'import sglang'` };
}

/**
 * Whether the installed runtime loads this model: its version against the family's minimum (catalog). Null when it
 * does, or when its version cannot be read or no minimum is known; else what is wrong and what to do.
 */
export function versionProblem(
  runtime: ParallelRuntime,
  model: string,
  installed: { version: string | null; from: string },
): { cause: string; remedy: string } | null {
  const fam = runtimeFamily(model);
  const min = fam.minVersion[runtime];
  if (!min) return null;
  const name = runtime === "vllm" ? "vLLM" : "SGLang";
  const remedy =
    runtime === "vllm"
      ? `upgrade it (pip install -U 'vllm>=${min}'), or unset OCW_VLLM_IMAGE to use ${fam.image.vllm}`
      : `upgrade it (pip install -U 'sglang>=${min}'), or unset OCW_SGLANG_IMAGE to use ${fam.image.sglang}`;
  // a version we cannot read is not refused (a dev build, a vendor fork): the load phase will say if it cannot load it
  if (!installed.version) return null;
  if (compareVersions(installed.version, min) >= 0) return null;
  return { cause: `${name} ${installed.version} (${installed.from}) is older than ${min}, the first release that loads ${model} (${fam.family})`, remedy };
}
