/**
 * `ocw deploy k8s` on the engine's API (setup.k8s, issue 31): the flags checked, the node's GPUs (given, or this
 * machine's), the plan sized from the Hub's listing, the manifests and how to capture the service. Writing the files
 * and `--apply` (the person's kubectl and context) stay with the command.
 */
import { DeployK8sInput } from "../../shared/deploy";
import { detectHardware } from "../hardware";
import { listRepoFiles } from "../models";
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
} from "./k8s";

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

async function nodeFrom(o: DeployK8sInput): Promise<K8sNode> {
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

/** The plan and manifests of `ocw deploy k8s` for these flags; bad input is a K8sInputError (kind "k8s"). */
export async function deployK8s(input: DeployK8sInput) {
  const o = DeployK8sInput.parse(input);
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
    mtp: o.mtp,
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
  return {
    plan,
    kind,
    name,
    namespace,
    apiKeySecret,
    manifests: docs,
    yaml: `# ocw deploy k8s: ${plan.reason}\n` + toYaml(docs),
    /** How to turn the deployed service into an ocw target, once it runs. */
    captureSteps: captureSteps(plan, mo),
    what: kind === "kserve" ? `LLMInferenceService ${name} (${KSERVE_API_VERSION})` : `Deployment + Service ${name} (apps/v1, v1)`,
  };
}
