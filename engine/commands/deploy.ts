/**
 * `ocw deploy k8s` (issue 16): Kubernetes manifests for vLLM or SGLang, sized by the planner for one node's GPUs, as a
 * plain Deployment + Service or a KServe LLMInferenceService (llm-d's scheduler in front); to stdout or `-o DIR`;
 * `--apply` applies them with the person's kubectl and current context; then it prints how to capture the service as
 * a pool or router target (`ocw setup --capture URL`).
 *
 * A verb of its own rather than `ocw setup --k8s`: setup starts or captures a server and verifies it before saving a
 * target, in one run on this machine; a cluster deployment is generated here, applied there, becomes ready minutes
 * later (image pull, weights download) and is reached through a port-forward or a gateway — its capture is the
 * separate, verified `ocw setup --capture` step this command prints.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { detectHardware } from "../hardware";
import { listRepoFiles } from "../models/hf";
import { applyManifests, type ApplyResult } from "../serving/k8s-apply";
import {
  captureSteps,
  defaultName,
  type GpuVendor,
  K8sInputError,
  k8sName,
  type K8sNode,
  KSERVE_API_VERSION,
  type ManifestKind,
  manifests,
  type ManifestOptions,
  parseNodeSpec,
  planK8s,
  toYaml,
} from "../serving/k8s";

export interface DeployK8sOptions {
  runtime?: string;
  kind?: string;
  model?: string;
  slots?: string;
  ctx?: string;
  gpus?: string;
  vendor?: string;
  tp?: string;
  dataParallel?: string;
  replicas?: string;
  name?: string;
  namespace?: string;
  apiKeySecret?: string;
  hfTokenSecret?: string;
  image?: string;
  toolCallParser?: string;
  /** The model cache: an existing PersistentVolumeClaim, or the size / storage class of the one ocw writes. */
  cachePvc?: string;
  cacheSize?: string;
  storageClass?: string;
  output?: string;
  apply?: boolean;
  json?: boolean;
}

export interface DeployOutput {
  code: number;
  stdout: string;
  stderr: string;
}

function int(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new K8sInputError(`${flag} must be an integer ≥ 1 (got "${v}")`);
  return n;
}

/** Safetensors bytes of a Hub repo, or null (offline, gated, missing) within 8 s. */
async function hubWeights(repo: string): Promise<number | null> {
  const timed: typeof fetch = (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(8000) });
  // a repo the Hub does not list (or a gated one) is null: the next variant is asked; no answer at all (offline) throws
  const files = await listRepoFiles(repo, "main", timed).catch((e: Error) => {
    if (/no Hugging Face repo|gated/.test(e.message)) return null;
    throw e;
  });
  const bytes = files?.filter((f) => /\.safetensors$/.test(f.path)).reduce((a, f) => a + f.size, 0) ?? 0;
  return bytes || null;
}

async function nodeFrom(o: DeployK8sOptions): Promise<K8sNode> {
  if (o.vendor !== undefined && o.vendor !== "nvidia" && o.vendor !== "amd") throw new K8sInputError(`--vendor must be nvidia or amd (got "${o.vendor}")`);
  if (o.gpus) return parseNodeSpec(o.gpus, (o.vendor as GpuVendor | undefined) ?? "nvidia");
  const hw = await detectHardware({});
  const gpus = hw.gpus.filter((g) => g.vendor === "nvidia" || g.vendor === "amd");
  if (!gpus.length)
    throw new K8sInputError(
      "this machine has no NVIDIA or AMD GPU to size the deployment by; describe a cluster node's GPUs with --gpus, e.g. --gpus 4x80G (and --vendor amd for amd.com/gpu)",
    );
  const min = gpus.reduce((a, g) => (g.totalBytes < a.totalBytes ? g : a));
  return { gpus: gpus.length, gpuBytes: min.totalBytes, gpuName: min.name, vendor: (o.vendor as GpuVendor | undefined) ?? (min.vendor as GpuVendor) };
}

export async function runDeployK8s(o: DeployK8sOptions, env: NodeJS.ProcessEnv = process.env): Promise<DeployOutput> {
  try {
    const runtime = o.runtime ?? "vllm";
    if (runtime !== "vllm" && runtime !== "sglang")
      throw new K8sInputError(`--runtime must be vllm or sglang (got "${runtime}"); llama.cpp targets are made with \`ocw setup\``);
    const kind = (o.kind ?? "deployment") as ManifestKind;
    if (kind !== "deployment" && kind !== "kserve") throw new K8sInputError(`--kind must be deployment or kserve (got "${o.kind}")`);
    if (kind === "kserve" && runtime !== "vllm")
      throw new K8sInputError("KServe's LLMInferenceService runs vLLM (its presets start `vllm serve`); use --runtime vllm, or --kind deployment for SGLang");
    const namespace = o.namespace ?? "default";
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace))
      throw new K8sInputError(`--namespace ${namespace} is not a Kubernetes namespace name (lower case letters, digits, '-')`);
    if (o.name !== undefined && k8sName(o.name) !== o.name)
      throw new K8sInputError(`--name ${o.name} is not a valid name; use lower case letters, digits and '-', starting with a letter (e.g. ${k8sName(o.name)})`);
    const node = await nodeFrom(o);
    const plan = await planK8s({
      runtime,
      model: o.model,
      slots: int(o.slots, "--slots"),
      ctxPerSlot: int(o.ctx, "--ctx"),
      node,
      tensorParallel: int(o.tp, "--tp"),
      dataParallel: int(o.dataParallel, "--data-parallel"),
      replicas: int(o.replicas, "--replicas"),
      toolCallParser: o.toolCallParser,
      sizeOf: hubWeights,
    });
    const name = o.name ?? defaultName(plan);
    const apiKeySecret = o.apiKeySecret ?? `${name}-api-key`;
    if (k8sName(apiKeySecret) !== apiKeySecret) throw new K8sInputError(`--api-key-secret ${apiKeySecret} is not a valid Secret name`);
    if (o.cachePvc !== undefined && k8sName(o.cachePvc) !== o.cachePvc) throw new K8sInputError(`--cache-pvc ${o.cachePvc} is not a valid claim name`);
    const mo: ManifestOptions = {
      kind,
      name,
      namespace,
      apiKeySecret,
      hfTokenSecret: o.hfTokenSecret ?? null,
      image: o.image ?? null,
      modelCache: { claim: o.cachePvc ?? null, sizeGi: int(o.cacheSize, "--cache-size") ?? null, storageClass: o.storageClass ?? null },
    };
    const docs = manifests(plan, mo);
    const yaml = `# ocw deploy k8s: ${plan.reason}\n` + toYaml(docs);
    let file: string | null = null;
    if (o.output || o.apply) {
      const dir = o.output ? path.resolve(o.output) : mkdtempSync(path.join(os.tmpdir(), "ocw-k8s-"));
      mkdirSync(dir, { recursive: true });
      file = path.join(dir, `${name}${kind === "kserve" ? ".llmisvc" : ""}.yaml`);
      writeFileSync(file, yaml);
    }
    let applied: ApplyResult | null = null;
    if (o.apply) applied = applyManifests(file!, mo, env);
    const secretStep = `openssl rand -hex 32 | tr -d '\\n' | kubectl -n ${namespace} create secret generic ${apiKeySecret} --from-file=api-key=/dev/stdin`;
    const steps = [...(applied ? [] : [secretStep, `kubectl apply -f ${file ?? `${name}.yaml`}`]), ...captureSteps(plan, mo)];
    const what = kind === "kserve" ? `LLMInferenceService ${name} (${KSERVE_API_VERSION})` : `Deployment + Service ${name} (apps/v1, v1)`;
    if (o.json) {
      return {
        code: 0,
        stdout:
          JSON.stringify(
            {
              plan,
              kind,
              name,
              namespace,
              apiKeySecret,
              file,
              manifests: docs,
              applied: applied && { context: applied.context, secret: applied.secret, commands: applied.runs.map((r) => ["kubectl", ...r.args].join(" ")) },
              next: steps,
            },
            null,
            2,
          ) + "\n",
        stderr: "",
      };
    }
    const summary =
      [
        `${what}: ${plan.runtime} serving ${plan.model} as "${plan.servedName}", ${plan.slots} sequence(s) × ${plan.ctxPerSlot} tokens, tensor parallel ${plan.tensorParallel}` +
          `${plan.dataParallel > 1 ? `, data parallel ${plan.dataParallel}` : ""}, ${plan.replicas} replica(s), ${plan.gpusPerPod} ${plan.gpuResource} per pod`,
        `  ${plan.reason}`,
        `  the API key comes from Secret ${apiKeySecret} (key api-key) through the environment; readiness /health; Prometheus /metrics on port 8000`,
        ...(file ? [`wrote ${file}`] : []),
        ...(applied
          ? [
              `applied with kubectl (context ${applied.context}); Secret ${apiKeySecret} ${applied.secret === "created" ? "created with a new key" : "already there, kept"}`,
            ]
          : []),
        "next:",
        ...steps.map((s) => `  ${s}`),
      ].join("\n") + "\n";
    // Without -o the manifests are stdout (pipe them to kubectl) and the plan goes to stderr.
    if (!o.output && !o.apply) return { code: 0, stdout: yaml, stderr: summary };
    return { code: 0, stdout: summary, stderr: "" };
  } catch (err) {
    if (err instanceof K8sInputError) return { code: 2, stdout: "", stderr: `ocw: ${err.message.split("\n")[0]}\n` };
    throw err;
  }
}

export function registerDeployCommand(program: Command): void {
  const deploy = program.command("deploy").description("deploy the model server elsewhere (Kubernetes)");
  deploy
    .command("k8s")
    .description(
      "Kubernetes manifests for vLLM or SGLang sized for a node's GPUs (Deployment + Service, or KServe LLMInferenceService); --apply applies them with kubectl",
    )
    .option("--runtime <name>", "vllm or sglang", "vllm")
    .option(
      "--kind <kind>",
      `deployment (apps/v1 Deployment + v1 Service) or kserve (${KSERVE_API_VERSION} LLMInferenceService, vLLM with llm-d's scheduler)`,
      "deployment",
    )
    .option("--model <idOrRepo>", "catalog id or Hugging Face repo with safetensors weights (default: the best catalog model that fits the node)")
    .option("--slots <n>", "sequences served at once per pod (default 4)")
    .option("--ctx <n>", "context each sequence gets (default 32768)")
    .option("--gpus <spec>", "one node's GPUs: 4x80G, 8xH100=80GiB or 80G,80G (default: this machine's GPUs)")
    .option("--vendor <name>", "nvidia (nvidia.com/gpu) or amd (amd.com/gpu); default: the detected GPUs' or nvidia")
    .option("--tp <n>", "tensor parallel size (default: the smallest that fits)")
    .option("--data-parallel <n>", "data-parallel ranks per pod (Deployment) or extra replicas (KServe)")
    .option("--replicas <n>", "pods (default 1)")
    .option("--name <name>", "name of the Kubernetes objects (default ocw-MODEL)")
    .option("--namespace <ns>", "namespace (default: default)")
    .option("--api-key-secret <name>", "Secret holding the API key under key api-key (default NAME-api-key; --apply creates it when missing)")
    .option("--hf-token-secret <name>", "Secret with a Hugging Face token under key token, for gated repos")
    .option("--image <ref>", "server image (default: a pinned vLLM/SGLang image)")
    .option("--tool-call-parser <name>", "the runtime's tool-call parser (default: by the model's chat format)")
    .option("--cache-pvc <claim>", "mount this existing PersistentVolumeClaim as the model cache (default: write NAME-models)")
    .option("--cache-size <GiB>", "size of the model-cache claim ocw writes (default: the weights + 20 % + 10 GiB)")
    .option("--storage-class <name>", "storage class of the model-cache claim (ReadWriteMany with several --replicas)")
    .option("-o, --output <dir>", "write the manifests to DIR instead of stdout")
    .option("--apply", "apply them with kubectl and its current context")
    .option("--json", "print the plan, manifests and next steps as JSON")
    .action(async (opts: DeployK8sOptions) => {
      const r = await runDeployK8s(opts);
      if (r.stdout) process.stdout.write(r.stdout);
      if (r.stderr) process.stderr.write(r.stderr);
      process.exitCode = r.code;
    });
}
