/**
 * Kubernetes manifests for the established serving stack (issue 16, "Clusters, on existing engines"): vLLM or SGLang
 * as the server, sized by the planner for one node's GPUs, as
 *   - a plain Deployment + Service (apps/v1, v1), or
 *   - a KServe LLMInferenceService (serving.kserve.io/v1alpha2, KServe v0.20): vLLM in llm-d's image behind llm-d's
 *     inference scheduler (the Gateway API Inference Extension's endpoint picker), which routes by prefix cache and
 *     load. KServe's presets start `vllm serve`, so this form is vLLM only.
 * The API key is never in the manifests nor in argv: it lives in a Secret and reaches the server through the
 * environment (vLLM reads VLLM_API_KEY; SGLang takes a key only as --api-key, so a shell wrapper writes it from the
 * environment into a 0600 --config file before exec'ing SGLang). Readiness is /health; /metrics (Prometheus) is on
 * the same port, announced with prometheus.io/* annotations. No router or scheduler of ours: a Service, or llm-d's.
 */
import { API_KEY_ENTRY, KSERVE_API_VERSION, secretManifest } from "../../shared/deploy";
import { targetSlug } from "../../shared/target";
import {
  CATALOG,
  type CatalogEntry,
  DEFAULT_MIN_CTX,
  findCatalog,
  GiB,
  hasFp8,
  makerRepo,
  MTP_OFF,
  type ParallelModel,
  type ParallelPlan,
  type PlanDevices,
  runtimeFamily,
  servedBy,
  SetupError,
  type SetupErrorData,
  sglangMtpArgs,
  sizeParallel,
  vllmMtpArgs,
} from "../models";
import { catalogModels } from "./parallel";
import { buildSglangArgs, buildVllmArgs } from "./runtimes";
import { parseVersion, reasoningParser, SGLANG_IMAGE, toolParser, versionProblem, VLLM_IMAGE } from "./runtime-adapters";
import { counted } from "../../shared/words";

export { toolParser };

export class K8sInputError extends SetupError {
  constructor(message: string, data: SetupErrorData = {}) {
    super("k8s", message, data);
    this.name = "K8sInputError";
  }
}

export type GpuVendor = "nvidia" | "amd";
export type ManifestKind = "deployment" | "kserve";

/** One cluster node's GPUs, as the plan sees them. */
export interface K8sNode {
  gpus: number;
  /** Memory of each GPU (the smallest, when they differ). */
  gpuBytes: number;
  gpuName: string;
  vendor: GpuVendor;
}

interface K8sPlanOptions {
  runtime: "vllm" | "sglang";
  /** Catalog id or Hugging Face repo with safetensors weights; absent = the best catalog model that fits. */
  model?: string;
  slots?: number;
  ctxPerSlot?: number;
  node: K8sNode;
  tensorParallel?: number;
  dataParallel?: number;
  replicas?: number;
  toolCallParser?: string;
  /** Bytes of a repo's *.safetensors files (the Hub's listing); null when it lists none; rejects when offline. */
  sizeOf?: (repo: string) => Promise<number | null>;
  /** false (`--no-mtp`): no speculative decoding with the model's own MTP head; absent: on where the weights carry one. */
  mtp?: boolean;
}

interface K8sPlan {
  runtime: "vllm" | "sglang";
  /** Hugging Face repo the server loads. */
  model: string;
  catalogId: string | null;
  servedName: string;
  /** Sequences the deployment serves at once (per pod), and the context each gets. */
  slots: number;
  ctxPerSlot: number;
  tensorParallel: number;
  dataParallel: number;
  replicas: number;
  gpusPerPod: number;
  vendor: GpuVendor;
  gpuResource: "nvidia.com/gpu" | "amd.com/gpu";
  weightsBytes: number;
  weightsSource: "hub" | "estimate";
  kvBytes: number;
  /** What one GPU holds: weights and KV shares plus runtime overhead, against what it has. */
  perGpuBytes: number;
  gpuBytes: number;
  /** Sequences per data-parallel rank: vLLM's --max-num-seqs and SGLang's --max-running-requests. */
  perRank: number;
  /** bf16 / fp8 / mxfp4 of the catalog's variant, null for a repo outside it. */
  dtype: string | null;
  toolCallParser: string;
  /** The family's reasoning parser (thinking out of `content`), or null. */
  reasoningParser: string | null;
  /**
   * Tokens the model's own MTP head drafts a step (speculative decoding), from the planner's model (`catalogModels`:
   * the catalog says the safetensors carry the head, engine/models/mtp.ts) — the same as the local vLLM / SGLang
   * start's; null: no speculative flags (no head, or switched off: `--no-mtp`, and the reason says "MTP off (asked)").
   */
  mtpDraft: number | null;
  reason: string;
}

const UTILIZATION = 0.9;
const PORT = 8000;
/** Images, pinned. KServe's are those of its v0.20.0 presets and samples (llm-d 0.8). */
const IMAGES = {
  vllm: { nvidia: VLLM_IMAGE, amd: "docker.io/rocm/vllm:rocm7.0.0_vllm_0.11.1_20251103" },
  sglang: { nvidia: SGLANG_IMAGE, amd: null as string | null },
  kserve: { nvidia: null as string | null, amd: "ghcr.io/llm-d/llm-d-rocm:v0.8.0" },
};
export { KSERVE_API_VERSION };

const gib = (b: number) => `${(b / GiB).toFixed(1)} GiB`;

/** The node's GPUs as the planner sees them: all free (a pod gets whole GPUs). */
function nodeGpus(node: K8sNode): PlanDevices["gpus"] {
  return Array.from({ length: node.gpus }, (_, i) => ({
    id: `${node.vendor}${i}`,
    name: node.gpuName,
    kind: "gpu" as const,
    freeBytes: node.gpuBytes,
    totalBytes: node.gpuBytes,
    runtimeId: `${node.vendor === "amd" ? "ROCm" : "CUDA"}${i}`,
    index: i,
    vendor: node.vendor,
  }));
}

/**
 * Sizes the deployment with the planner's own sizer (`sizeParallel`, plan.ts — the one `ocw fit --runtime vllm|sglang`
 * uses; issue 27): the model's safetensors weights (the catalog's variants — FP8 first on datacenter GPUs — sized by the
 * Hub's listing when it answers), the KV of a rank's sequences at the context, over the smallest tensor-parallel size
 * whose per-GPU share fits the runtime's 90 %. Data parallel multiplies the GPUs of a pod; replicas multiply pods.
 */
export async function planK8s(o: K8sPlanOptions): Promise<K8sPlan> {
  const slots = o.slots ?? 4;
  const ctx = o.ctxPerSlot ?? DEFAULT_MIN_CTX;
  const dp = o.dataParallel ?? 1;
  const replicas = o.replicas ?? 1;
  for (const [v, flag] of [
    [slots, "--slots"],
    [ctx, "--ctx"],
    [dp, "--data-parallel"],
    [replicas, "--replicas"],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new K8sInputError(`${flag} must be an integer ≥ 1 (got ${v})`);
  }
  if (o.tensorParallel !== undefined && (!Number.isInteger(o.tensorParallel) || o.tensorParallel < 1))
    throw new K8sInputError(`--tp must be an integer ≥ 1 (got ${o.tensorParallel})`);
  if (!(o.node.gpus >= 1) || !(o.node.gpuBytes > 0)) throw new K8sInputError("the node needs at least one GPU with memory: pass --gpus like 4x80G");
  if (dp > o.node.gpus)
    throw new K8sInputError(`--data-parallel ${dp} needs at least ${dp} GPUs on one node; the node has ${o.node.gpus} (use --replicas for more pods instead)`);
  if (o.tensorParallel && o.tensorParallel * dp > o.node.gpus)
    throw new K8sInputError(`--tp ${o.tensorParallel} × --data-parallel ${dp} needs ${o.tensorParallel * dp} GPUs on one node; it has ${o.node.gpus}`);
  // FP8 on GPUs that run it natively, and on any ≥ 80 GB (datacenter) GPU: vLLM / SGLang load the maker's FP8 there
  const fp8First = hasFp8(o.node.gpuName) || o.node.gpuBytes >= 75 * GiB;
  // sizeOf: null when the Hub does not list the repo, a rejection when it does not answer (then it is not asked again)
  let offline = false;
  const sizer = {
    size: async (repo: string): Promise<number | null> => {
      if (offline || !o.sizeOf) return null;
      return await o.sizeOf(repo).catch(() => {
        offline = true;
        return null;
      });
    },
  };
  const gpus = nodeGpus(o.node);
  const size = (m: ParallelModel) => sizeParallel(m, gpus, slots, ctx, Math.ceil(ctx / 256) * 256, { tp: o.tensorParallel, dp });
  const finish = (e: CatalogEntry | undefined, m: ParallelModel, p: ParallelPlan): K8sPlan => {
    const vendor = o.node.vendor;
    const repo = m.source;
    const parser = o.toolCallParser ?? toolParser(o.runtime, e, repo);
    const kvNote = m.hparams ? "KV cache" : "a KV allowance of 25 % of the weights";
    const src = m.weightsSource === "hub" ? ", from the Hub's listing" : e ? `, ${m.dtype} from the catalog` : "";
    return {
      runtime: o.runtime,
      model: repo,
      catalogId: e?.id ?? null,
      servedName: m.servedName,
      slots,
      ctxPerSlot: ctx,
      tensorParallel: p.tp,
      dataParallel: p.dp,
      replicas,
      gpusPerPod: p.tp * p.dp,
      vendor,
      gpuResource: vendor === "amd" ? "amd.com/gpu" : "nvidia.com/gpu",
      weightsBytes: Math.round(m.weightsBytes),
      weightsSource: m.weightsSource === "hub" ? "hub" : "estimate",
      kvBytes: Math.round(p.kvPerGpu * p.tp),
      perGpuBytes: Math.round(p.needPerGpu),
      gpuBytes: o.node.gpuBytes,
      perRank: p.perRank,
      dtype: m.dtype,
      toolCallParser: parser,
      reasoningParser: m.reasoningParser ?? reasoningParser(o.runtime, e, repo),
      mtpDraft: m.mtpDraft ?? null,
      reason:
        `${repo} (${gib(m.weightsBytes)} of weights${src}) + ${kvNote} for ${counted(p.perRank, "sequence")} × ${ctx} tokens per rank` +
        ` over tensor parallel ${p.tp}: ${gib(p.needPerGpu)} per GPU of ${gib(o.node.gpuBytes)} (${o.node.gpuName})` +
        `${p.dp > 1 ? `; data parallel ${p.dp} (${p.tp * p.dp} GPUs per pod, ${p.perRank} sequences per rank)` : ""}${replicas > 1 ? `; ${replicas} pods` : ""}` +
        (m.mtpDraft ? `; speculative decoding with the model's own MTP head (${m.mtpDraft} draft tokens a step)` : m.mtpOff ? `; ${MTP_OFF}` : "") +
        " (sized by the planner's sizer, as ocw fit --runtime vllm|sglang)",
    };
  };

  if (o.model) {
    const e =
      findCatalog(o.model) ??
      CATALOG.find((c) => c.weights?.some((w) => w.repo.toLowerCase() === o.model!.toLowerCase()) || makerRepo(c)?.toLowerCase() === o.model!.toLowerCase());
    if (!e && !/^[\w.-]+\/[\w.-]+$/.test(o.model))
      throw new K8sInputError(`--model ${o.model} is neither a catalog id nor a Hugging Face repo (owner/name) with safetensors weights`);
    if (e && ctx > e.contextLength) throw new K8sInputError(`${e.id} was trained for ${e.contextLength} tokens of context; --ctx ${ctx} is beyond it`);
    let ms: ParallelModel[];
    if (e) {
      const all = await catalogModels(e, o.runtime, sizer, fp8First, o.mtp !== false);
      const exact = all.filter((m) => m.source.toLowerCase() === o.model!.toLowerCase());
      ms = exact.length ? exact : all;
    } else {
      const bytes = await sizer.size(o.model);
      if (!bytes)
        throw new K8sInputError(
          `cannot size ${o.model}: the Hub did not list its safetensors files (offline?) and it is not in the catalog; pass --tp N (GPUs per replica) to size it yourself`,
        );
      ms = [
        {
          model: o.model,
          source: o.model,
          dtype: null,
          weightsBytes: bytes,
          weightsSource: "hub",
          nHead: null,
          nHeadKv: null,
          hparams: null,
          contextLength: Math.max(ctx, 32768),
          toolParser: toolParser(o.runtime, undefined, o.model),
          reasoningParser: reasoningParser(o.runtime, undefined, o.model),
          servedName: targetSlug({ model: o.model.split("/").pop()!, quant: null }),
        },
      ];
    }
    for (const m of ms) {
      const p = size(m);
      if (p) return finish(e, m, p);
    }
    const m = ms.at(-1)!;
    throw new K8sInputError(
      `${m.source} needs ${gib(m.weightsBytes)} of weights + KV for ${Math.ceil(slots / dp)} × ${ctx} per rank and does not fit ${counted(Math.floor(o.node.gpus / dp), "GPU")} of ${gib(o.node.gpuBytes)} per data-parallel rank${o.tensorParallel ? ` at --tp ${o.tensorParallel}` : ""}; use a node with more or larger GPUs (--gpus), fewer --slots or a smaller --ctx`,
    );
  }
  const tried: string[] = [];
  for (const e of CATALOG.filter((c) => c.autoPick && servedBy(c, o.runtime))) {
    if (ctx > e.contextLength) continue;
    for (const m of await catalogModels(e, o.runtime, sizer, fp8First, o.mtp !== false)) {
      const p = size(m);
      if (p) return finish(e, m, p);
      tried.push(`${e.id} ${m.dtype ?? ""} ${gib(m.weightsBytes)}`.replace("  ", " "));
    }
  }
  throw new K8sInputError(
    `no catalog model fits ${counted(slots, "sequence")} × ${ctx} tokens on ${o.node.gpus} × ${gib(o.node.gpuBytes)} (${tried.join(", ")}); pass --gpus for a larger node, fewer --slots, or --model`,
  );
}

export interface ManifestOptions {
  kind: ManifestKind;
  name: string;
  namespace: string;
  /** Secret holding the API key (key `api-key`). */
  apiKeySecret: string;
  /** Secret with a Hugging Face token (key `token`) for gated repos; optional. */
  hfTokenSecret?: string | null;
  image?: string | null;
  /**
   * The model cache (HF_HOME) on a PersistentVolumeClaim, so a restarted or rescheduled pod does not download the
   * weights again (issue 27: it was an emptyDir): an existing claim by name, else one ocw writes (NAME-models) of
   * `sizeGi` (default: the weights + 20 %, + 10 GiB), with `storageClass` (default: the cluster's).
   */
  modelCache?: { claim?: string | null; sizeGi?: number | null; storageClass?: string | null };
}

/** The claim the Deployment mounts as its model cache, and the PVC to create when it is ocw's own. */
function modelCacheClaim(plan: K8sPlan, o: ManifestOptions): { claimName: string; pvc: Obj | null } {
  if (o.modelCache?.claim) return { claimName: o.modelCache.claim, pvc: null };
  const claimName = k8sName(`${o.name}-models`);
  const sizeGi = o.modelCache?.sizeGi ?? Math.ceil((plan.weightsBytes * 1.2) / GiB) + 10;
  return {
    claimName,
    pvc: {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name: claimName, namespace: o.namespace, labels: { ...labels(plan, o.name), "app.kubernetes.io/component": "model-cache" } },
      spec: {
        // pods of several replicas may run on several nodes at once: they share the cache only on a ReadWriteMany class
        accessModes: [plan.replicas > 1 ? "ReadWriteMany" : "ReadWriteOnce"],
        resources: { requests: { storage: `${sizeGi}Gi` } },
        ...(o.modelCache?.storageClass ? { storageClassName: o.modelCache.storageClass } : {}),
      },
    },
  };
}

export { API_KEY_ENTRY };
const KEY_ENV = "OCW_API_KEY";

/** A DNS-1035 label (Service names): lower case, digits and '-', starting with a letter, at most 63 characters. */
export function k8sName(raw: string): string {
  const n = raw
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .replace(/-+$/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return n || "ocw-model";
}

export function defaultName(plan: K8sPlan): string {
  return k8sName(`ocw-${plan.servedName}`.slice(0, 52));
}

/** The server's argv for the plain Deployment (no key in it). */
export function serverArgs(plan: K8sPlan): { command: string[]; args: string[] } {
  const perRank = plan.perRank ?? Math.ceil(plan.slots / plan.dataParallel);
  if (plan.runtime === "vllm") {
    const b = buildVllmArgs({
      model: plan.model,
      servedName: plan.servedName,
      host: "0.0.0.0",
      port: PORT,
      maxModelLen: plan.ctxPerSlot,
      maxNumSeqs: perRank,
      tensorParallel: plan.tensorParallel,
      toolCallParser: plan.toolCallParser,
      reasoningParser: plan.reasoningParser,
    });
    return {
      command: ["vllm"],
      // speculative decoding with the model's own MTP head, where the plan has one (as the local start: parallel.ts)
      args: [...b.args, ...(plan.dataParallel > 1 ? ["--data-parallel-size", String(plan.dataParallel)] : []), ...vllmMtpArgs(plan.mtpDraft)],
    };
  }
  const b = buildSglangArgs({
    model: plan.model,
    servedName: plan.servedName,
    host: "0.0.0.0",
    port: PORT,
    contextLength: plan.ctxPerSlot,
    // per data-parallel rank, as vLLM's --max-num-seqs (issue 27: it was the pod's total)
    maxRunningRequests: perRank,
    tensorParallel: plan.tensorParallel,
    apiKey: "-",
  });
  const ki = b.args.indexOf("--api-key");
  const args = [
    ...b.args.slice(0, ki),
    ...b.args.slice(ki + 2),
    ...(plan.dataParallel > 1 ? ["--dp-size", String(plan.dataParallel)] : []),
    "--tool-call-parser",
    plan.toolCallParser,
    ...(plan.reasoningParser ? ["--reasoning-parser", plan.reasoningParser] : []),
    // argv words as the rest ("$@" in the wrapper below), before its --config as in the local command
    ...sglangMtpArgs(plan.mtpDraft),
  ];
  // SGLang reads a key only from --api-key or a --config file: the key goes from the environment into a private file
  // (printf is a shell builtin: the key is in no process's argv), then SGLang replaces the shell.
  const script = [
    `case "$${KEY_ENV}" in ""|*[!A-Za-z0-9._~+/=-]*) echo "ocw: the ${API_KEY_ENTRY} in the Secret must be non-empty and use only A-Z a-z 0-9 . _ ~ + / = -" >&2; exit 1;; esac`,
    "umask 077",
    `printf 'api-key: "%s"\\n' "$${KEY_ENV}" > /tmp/ocw-sglang.yaml`,
    'exec python3 "$@" --config /tmp/ocw-sglang.yaml',
  ].join("\n");
  return { command: ["/bin/sh", "-c", script, "sglang"], args };
}

type Obj = Record<string, unknown>;

function labels(plan: K8sPlan, name: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": name,
    "app.kubernetes.io/component": "model-server",
    "app.kubernetes.io/managed-by": "ocw",
    "ocw.dev/runtime": plan.runtime,
  };
}

function keyEnv(plan: K8sPlan, o: ManifestOptions): Obj[] {
  const secretRef = (name: string, key: string, optional?: boolean) => ({ secretKeyRef: { name, key, ...(optional ? { optional } : {}) } });
  return [
    { name: plan.runtime === "vllm" ? "VLLM_API_KEY" : KEY_ENV, valueFrom: secretRef(o.apiKeySecret, API_KEY_ENTRY) },
    ...(o.hfTokenSecret ? [{ name: "HF_TOKEN", valueFrom: secretRef(o.hfTokenSecret, "token", true) }] : []),
  ];
}

function podResources(plan: K8sPlan): Obj {
  // host memory: the weights pass through RAM while loading, plus the runtime itself
  const memGi = Math.max(16, Math.ceil(plan.weightsBytes / plan.gpusPerPod / GiB) + 8);
  const gpus = String(plan.gpusPerPod);
  return {
    requests: { cpu: String(Math.max(2, 2 * plan.gpusPerPod)), memory: `${memGi}Gi`, [plan.gpuResource]: gpus },
    limits: { memory: `${memGi * 2}Gi`, [plan.gpuResource]: gpus },
  };
}

const tolerations = (plan: K8sPlan): Obj[] => [{ key: plan.gpuResource, operator: "Exists", effect: "NoSchedule" }];

/** An image older than the first runtime release that loads the model's family is refused before anything is applied. */
function imageLoadsModel(plan: K8sPlan, image: string): void {
  const p = versionProblem(plan.runtime, `${plan.catalogId ?? ""} ${plan.model}`, {
    version: parseVersion(image.split(":").pop() ?? ""),
    from: `image ${image}`,
  });
  if (p) throw new K8sInputError(`${p.cause}; pass --image with a newer ${plan.runtime === "vllm" ? "vLLM" : "SGLang"} build`);
}

/** Deployment + Service: one pod per replica, each a complete server on `gpusPerPod` GPUs. */
export function deploymentManifests(plan: K8sPlan, o: ManifestOptions): Obj[] {
  // NVIDIA: the image pinned for the model's family (DeepSeek-V4 needs vLLM ≥ 0.20); AMD: the ROCm build
  const image =
    o.image ?? (plan.vendor === "nvidia" ? runtimeFamily(`${plan.catalogId ?? ""} ${plan.model}`).image[plan.runtime] : IMAGES[plan.runtime][plan.vendor]);
  if (!image) throw new K8sInputError(`no pinned ${plan.runtime} image for ${plan.vendor} GPUs; pass --image (e.g. an SGLang ROCm build from lmsysorg/sglang)`);
  imageLoadsModel(plan, image);
  const lab = labels(plan, o.name);
  const cache = modelCacheClaim(plan, o);
  const { command, args } = serverArgs(plan);
  const probe = (extra: Obj) => ({ httpGet: { path: "/health", port: "http" }, ...extra });
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: o.name, namespace: o.namespace, labels: lab },
    spec: {
      replicas: plan.replicas,
      selector: { matchLabels: { "app.kubernetes.io/name": o.name } },
      // a model server holds whole GPUs: replace pods one at a time without a surge pod that cannot be scheduled
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      template: {
        metadata: {
          labels: lab,
          annotations: { "prometheus.io/scrape": "true", "prometheus.io/port": String(PORT), "prometheus.io/path": "/metrics" },
        },
        spec: {
          containers: [
            {
              name: plan.runtime,
              image,
              command,
              args,
              env: [...keyEnv(plan, o), { name: "HF_HOME", value: "/models" }],
              ports: [{ name: "http", containerPort: PORT, protocol: "TCP" }],
              resources: podResources(plan),
              // the weights download on first start: allow up to an hour before liveness counts
              startupProbe: probe({ periodSeconds: 10, failureThreshold: 360 }),
              readinessProbe: probe({ periodSeconds: 5, failureThreshold: 3 }),
              livenessProbe: probe({ periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 }),
              volumeMounts: [
                { name: "models", mountPath: "/models" },
                { name: "dshm", mountPath: "/dev/shm" },
              ],
            },
          ],
          tolerations: tolerations(plan),
          terminationGracePeriodSeconds: 60,
          volumes: [
            // the weights survive a restart or a reschedule: a PersistentVolumeClaim, not an emptyDir
            { name: "models", persistentVolumeClaim: { claimName: cache.claimName } },
            // tensor/data parallel ranks exchange tensors through shared memory
            { name: "dshm", emptyDir: { medium: "Memory", sizeLimit: `${Math.max(2, 4 * plan.gpusPerPod)}Gi` } },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: o.name, namespace: o.namespace, labels: lab },
    spec: {
      type: "ClusterIP",
      selector: { "app.kubernetes.io/name": o.name },
      ports: [{ name: "http", port: PORT, targetPort: "http", protocol: "TCP" }],
    },
  };
  // the claim after the objects that use it: kubectl creates all three, the pod waits for the claim to bind
  return [deployment, service, ...(cache.pvc ? [cache.pvc] : [])];
}

/** KServe LLMInferenceService (v1alpha2): vLLM on llm-d's image, llm-d's scheduler in front (prefix-cache aware). */
export function kserveManifest(plan: K8sPlan, o: ManifestOptions): Obj {
  if (plan.runtime !== "vllm")
    throw new K8sInputError("KServe's LLMInferenceService runs vLLM (its presets start `vllm serve`); use --runtime vllm, or --kind deployment for SGLang");
  const image = o.image ?? IMAGES.kserve[plan.vendor];
  // each data-parallel rank is a replica behind llm-d's scheduler: it serves its share of the pod's sequences
  const perRank = plan.perRank ?? Math.ceil(plan.slots / plan.dataParallel);
  return {
    apiVersion: KSERVE_API_VERSION,
    kind: "LLMInferenceService",
    metadata: { name: o.name, namespace: o.namespace, labels: { "app.kubernetes.io/managed-by": "ocw", "ocw.dev/runtime": "vllm" } },
    spec: {
      model: { uri: `hf://${plan.model}`, name: plan.servedName },
      // data parallel becomes replicas: each is a whole vLLM, and llm-d's scheduler spreads requests over them
      replicas: plan.replicas * plan.dataParallel,
      parallelism: { tensor: plan.tensorParallel },
      router: { scheduler: {}, route: {}, gateway: {} },
      template: {
        containers: [
          {
            name: "main",
            ...(image ? { image } : {}),
            // appended to KServe's `vllm serve /mnt/models --served-model-name … --port 8000 --tensor-parallel-size …`
            args: [
              "--max-model-len",
              String(plan.ctxPerSlot),
              "--max-num-seqs",
              String(perRank),
              "--gpu-memory-utilization",
              String(UTILIZATION),
              "--enable-auto-tool-choice",
              "--tool-call-parser",
              plan.toolCallParser,
              ...(plan.reasoningParser ? ["--reasoning-parser", plan.reasoningParser] : []),
              ...vllmMtpArgs(plan.mtpDraft),
            ],
            env: keyEnv(plan, o),
            resources: podResources({ ...plan, gpusPerPod: plan.tensorParallel }),
          },
        ],
        tolerations: tolerations(plan),
      },
    },
  };
}

export function manifests(plan: K8sPlan, o: ManifestOptions): Obj[] {
  return o.kind === "kserve" ? [kserveManifest(plan, o)] : deploymentManifests(plan, o);
}

/** The Secret for the API key (shared/deploy.ts: `--apply` makes it on the client's side). */
export { secretManifest };

/** How to turn the deployed service into an ocw target: a router target (the Service / gateway) or a pool of pods. */
export function captureSteps(plan: K8sPlan, o: ManifestOptions): string[] {
  const ns = o.namespace;
  const keyVar = "OCW_K8S_API_KEY";
  const key = `export ${keyVar}="$(kubectl -n ${ns} get secret ${o.apiKeySecret} -o jsonpath='{.data.${API_KEY_ENTRY}}' | base64 -d)"`;
  const slots = plan.slots;
  if (o.kind === "kserve") {
    const total = slots * plan.replicas * plan.dataParallel;
    return [
      `kubectl -n ${ns} wait llminferenceservice/${o.name} --for=condition=Ready --timeout=60m`,
      key,
      `URL="$(kubectl -n ${ns} get llminferenceservice ${o.name} -o jsonpath='{.status.url}')"`,
      `ocw setup --capture "$URL/v1" --api-key-env ${keyVar} --slots ${total}    # a router target: llm-d's scheduler spreads the ${total} sequences over ${counted(plan.replicas * plan.dataParallel, "replica")}`,
    ];
  }
  const steps = [`kubectl -n ${ns} rollout status deployment/${o.name} --timeout=60m`, key];
  if (plan.replicas === 1) {
    steps.push(
      `kubectl -n ${ns} port-forward service/${o.name} ${PORT}:${PORT} &    # or, with ocw inside the cluster: http://${o.name}.${ns}.svc.cluster.local:${PORT}/v1`,
      `ocw setup --capture http://127.0.0.1:${PORT}/v1 --api-key-env ${keyVar} --slots ${slots}`,
    );
  } else {
    steps.push(
      `# each pod as one endpoint of a pool (ocw admits by each one's /metrics and keeps a worker on its pod):`,
      `i=0; caps=""; for p in $(kubectl -n ${ns} get pods -l app.kubernetes.io/name=${o.name} -o name); do kubectl -n ${ns} port-forward "$p" $((${PORT + 1}+i)):${PORT} & caps="$caps --capture http://127.0.0.1:$((${PORT + 1}+i))/v1"; i=$((i+1)); done`,
      `ocw setup $caps --api-key-env ${keyVar} --slots ${slots}`,
      `# or the Service as one router target (kube-proxy spreads connections, no cache locality): ocw setup --capture http://${o.name}.${ns}.svc.cluster.local:${PORT}/v1 --api-key-env ${keyVar} --slots ${slots * plan.replicas}`,
    );
  }
  return steps;
}

// ---------------------------------------------------------------------------------------------------------------
// YAML: a small emitter for plain data (strings, numbers, booleans, arrays, objects). A string stays plain only when
// no YAML 1.1 or 1.2 reader (kubectl's included) could take it for anything else; otherwise it is double-quoted JSON,
// which is valid YAML.

const RESERVED = /^(y|yes|n|no|true|false|on|off|null|~)$/i;
function scalar(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  const s = String(v);
  return /^[A-Za-z_/][A-Za-z0-9_./-]*$/.test(s) && !RESERVED.test(s) ? s : JSON.stringify(s);
}
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const empty = (v: unknown) => (Array.isArray(v) && !v.length) || (isObj(v) && !Object.keys(v).length);

function emit(v: unknown, indent: string, out: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isObj(item) && !empty(item)) {
        const inner: string[] = [];
        emit(item, indent + "  ", inner);
        out.push(indent + "- " + inner[0]!.slice(indent.length + 2), ...inner.slice(1));
      } else if (Array.isArray(item) && item.length) {
        out.push(indent + "-");
        emit(item, indent + "  ", out);
      } else out.push(indent + "- " + (empty(item) ? (Array.isArray(item) ? "[]" : "{}") : scalar(item)));
    }
    return;
  }
  for (const [k, val] of Object.entries(v as Obj)) {
    if (val === undefined) continue;
    const key = scalar(k);
    if (empty(val)) out.push(`${indent}${key}: ${Array.isArray(val) ? "[]" : "{}"}`);
    else if (Array.isArray(val)) {
      out.push(`${indent}${key}:`);
      emit(val, indent, out);
    } else if (isObj(val)) {
      out.push(`${indent}${key}:`);
      emit(val, indent + "  ", out);
    } else out.push(`${indent}${key}: ${scalar(val)}`);
  }
}

export function toYaml(docs: Obj[]): string {
  return docs
    .map((d) => {
      const out: string[] = [];
      emit(d, "", out);
      return out.join("\n") + "\n";
    })
    .join("---\n");
}

/**
 * One node's GPUs: `4x80G`, `8xH100=80GiB`, or a list of sizes (`80G,80G`, `A100=40G,A100=40G`) as `ocw fit --gpus`
 * reads them; the smallest GPU bounds a tensor-parallel share.
 */
export function parseNodeSpec(spec: string, vendor: GpuVendor): K8sNode {
  const unit = (n: string, u: string | undefined) => Number(n) * ({ B: 1, K: 1024, M: 1024 ** 2, G: GiB, T: 1024 * GiB }[(u ?? "G").toUpperCase()[0]!] ?? GiB);
  const m = /^\s*(\d+)\s*[x×]\s*(?:([^=:]+)[=:])?\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\s*$/i.exec(spec);
  if (m) {
    const n = Number(m[1]);
    if (n < 1) throw new K8sInputError(`--gpus ${spec}: a node needs at least one GPU`);
    return { gpus: n, gpuBytes: unit(m[3]!, m[4]), gpuName: m[2]?.trim() || `${unit(m[3]!, m[4]) / GiB} GiB GPU`, vendor };
  }
  const parts = spec.split(",").map((p) => /^\s*(?:([^=:]+)[=:])?\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?)?\s*$/i.exec(p));
  if (!spec.trim() || parts.some((p) => !p))
    throw new K8sInputError(`cannot read --gpus "${spec}"; describe one node's GPUs like 4x80G, 8xH100=80GiB or 80G,80G`);
  const sizes = parts.map((p) => unit(p![2]!, p![3]));
  const min = Math.min(...sizes);
  return { gpus: sizes.length, gpuBytes: min, gpuName: parts[sizes.indexOf(min)]![1]?.trim() || `${(min / GiB).toFixed(0)} GiB GPU`, vendor };
}
