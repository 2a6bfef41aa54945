/**
 * Argument builders for the other runtimes. vLLM / SGLang are the path when a model needs several GPUs or a
 * cluster; ollama is captured or driven through its API. Keys are passed by environment, never argv, where
 * the runtime allows it (vLLM reads VLLM_API_KEY).
 */
interface VllmPlan {
  model: string;
  servedName?: string;
  host?: string;
  port: number;
  maxModelLen: number;
  maxNumSeqs: number;
  gpuMemoryUtilization?: number;
  tensorParallel?: number;
  /** Independent engines (each with its own scheduler and max-num-seqs), tensorParallel GPUs each. */
  dataParallel?: number;
  pipelineParallel?: number;
  kvCacheDtype?: "auto" | "fp8" | "fp8_e5m2" | "fp8_e4m3";
  toolCallParser?: string;
  /** The family's reasoning parser (`--reasoning-parser qwen3` …): without it the thinking lands in `content`. */
  reasoningParser?: string | null;
}

/**
 * `vllm serve MODEL …`; the key goes in VLLM_API_KEY (the server takes `args.api_key or [envs.VLLM_API_KEY]`, the same
 * from the old api_server.py to v0.31's middleware/register.py). Flag names are EngineArgs' / the OpenAI server's
 * (vllm-project/vllm vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py); --kv-cache-dtype's values are
 * vllm/config/cache.py's CacheDType (auto, fp8, fp8_e4m3, fp8_e5m2 in every version from v0.9.0's docs to commit
 * 002f10e0). The v0.19.0 tag's own files were not stored in the index: read at newer commits and older tagged docs.
 */
export function buildVllmArgs(p: VllmPlan): { cmd: string; args: string[]; keyEnv: string } {
  const a = [
    "serve",
    p.model,
    "--host",
    p.host ?? "127.0.0.1",
    "--port",
    String(p.port),
    "--max-model-len",
    String(p.maxModelLen),
    "--max-num-seqs",
    String(p.maxNumSeqs),
  ];
  a.push("--gpu-memory-utilization", String(p.gpuMemoryUtilization ?? 0.9));
  if (p.servedName) a.push("--served-model-name", p.servedName);
  if ((p.tensorParallel ?? 1) > 1) a.push("--tensor-parallel-size", String(p.tensorParallel));
  if ((p.dataParallel ?? 1) > 1) a.push("--data-parallel-size", String(p.dataParallel));
  if ((p.pipelineParallel ?? 1) > 1) a.push("--pipeline-parallel-size", String(p.pipelineParallel));
  if (p.kvCacheDtype && p.kvCacheDtype !== "auto") a.push("--kv-cache-dtype", p.kvCacheDtype);
  if (p.toolCallParser) a.push("--enable-auto-tool-choice", "--tool-call-parser", p.toolCallParser);
  if (p.reasoningParser) a.push("--reasoning-parser", p.reasoningParser);
  return { cmd: "vllm", args: a, keyEnv: "VLLM_API_KEY" };
}

interface SglangPlan {
  model: string;
  servedName?: string;
  host?: string;
  port: number;
  contextLength: number;
  maxRunningRequests: number;
  memFractionStatic?: number;
  tensorParallel?: number;
  /** Data-parallel workers (--dp-size), each with --max-running-requests of its own. */
  dataParallel?: number;
  apiKey: string;
}

/**
 * `python -m sglang.launch_server …` (SGLang takes the key only as --api-key, or an `api-key:` entry of a .yaml
 * `--config`: server_args_config_parser.py turns keys into flags, older versions as `--api-key`, newer by `-` → `_`).
 * --max-running-requests is per data-parallel worker without --enable-dp-attention: ModelRunner takes
 * `server_args.dp_size if server_args.enable_dp_attention else 1` as its dp_size and divides by it
 * (sgl-project/sglang python/sglang/srt/model_executor/model_runner.py, commit 0005834c; the v0.5.10.post1 tag's own
 * files were not stored in the index).
 */
export function buildSglangArgs(p: SglangPlan): { cmd: string; args: string[] } {
  const a = ["-m", "sglang.launch_server", "--model-path", p.model, "--host", p.host ?? "127.0.0.1", "--port", String(p.port)];
  a.push("--context-length", String(p.contextLength), "--max-running-requests", String(p.maxRunningRequests));
  if (p.memFractionStatic) a.push("--mem-fraction-static", String(p.memFractionStatic));
  if ((p.tensorParallel ?? 1) > 1) a.push("--tp-size", String(p.tensorParallel));
  if ((p.dataParallel ?? 1) > 1) a.push("--dp-size", String(p.dataParallel));
  if (p.servedName) a.push("--served-model-name", p.servedName);
  // Prometheus /metrics, which admission reads (sglang:num_running_reqs …): SGLang adds the route only with this flag
  a.push("--enable-metrics");
  a.push("--api-key", p.apiKey);
  return { cmd: "python3", args: a };
}
