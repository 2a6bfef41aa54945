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
import { type DeployK8sInput, KSERVE_API_VERSION } from "../../shared/deploy";
import { type ApiOutputs, connect } from "../api/client";
import { ensureEngine, stateDir } from "../api/launcher";
import { SetupError } from "../models/errors";
import { applyManifests, type ApplyResult } from "./k8s-apply";
import { counted } from "../../shared/words";

interface DeployK8sOptions {
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
  /** commander's `--no-mtp`: false — no speculative decoding with the model's own MTP head (default true). */
  mtp?: boolean;
  output?: string;
  apply?: boolean;
  json?: boolean;
}

interface DeployOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/** The plan and manifests for these flags: the engine's (setup.k8s); tests pass the engine's function itself. */
type DeployPlanner = (input: DeployK8sInput) => Promise<ApiOutputs["setup"]["k8s"]>;

const enginePlanner: DeployPlanner = async (input) => connect(await ensureEngine(stateDir()), "cli:ocw deploy k8s").setup.k8s.query(input);

export async function runDeployK8s(o: DeployK8sOptions, env: NodeJS.ProcessEnv = process.env, planner: DeployPlanner = enginePlanner): Promise<DeployOutput> {
  try {
    const { output, apply, json, ...flags } = o;
    const d = await planner(flags);
    const { plan, kind, name, namespace, apiKeySecret, manifests: docs, yaml } = d;
    let file: string | null = null;
    if (output || apply) {
      const dir = output ? path.resolve(output) : mkdtempSync(path.join(os.tmpdir(), "ocw-k8s-"));
      mkdirSync(dir, { recursive: true });
      file = path.join(dir, `${name}${kind === "kserve" ? ".llmisvc" : ""}.yaml`);
      writeFileSync(file, yaml);
    }
    let applied: ApplyResult | null = null;
    if (apply) applied = applyManifests(file!, { kind, namespace, apiKeySecret }, env);
    const secretStep = `openssl rand -hex 32 | tr -d '\\n' | kubectl -n ${namespace} create secret generic ${apiKeySecret} --from-file=api-key=/dev/stdin`;
    const steps = [...(applied ? [] : [secretStep, `kubectl apply -f ${file ?? `${name}.yaml`}`]), ...d.captureSteps];
    const what = d.what;
    if (json) {
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
        `${what}: ${plan.runtime} serving ${plan.model} as "${plan.servedName}", ${counted(plan.slots, "sequence")} × ${plan.ctxPerSlot} tokens, tensor parallel ${plan.tensorParallel}` +
          `${plan.dataParallel > 1 ? `, data parallel ${plan.dataParallel}` : ""}, ${counted(plan.replicas, "replica")}, ${plan.gpusPerPod} ${plan.gpuResource} per pod`,
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
    if (!output && !apply) return { code: 0, stdout: yaml, stderr: summary };
    return { code: 0, stdout: summary, stderr: "" };
  } catch (err) {
    // a refusal with what to do: the engine's (its ocwKind "k8s") or kubectl's here (a SetupError of kind "k8s")
    const kindOf = err instanceof SetupError ? err.kind : (err as { data?: { ocwKind?: string } } | null)?.data?.ocwKind;
    if (kindOf === "k8s") return { code: 2, stdout: "", stderr: `ocw: ${String((err as Error).message).split("\n")[0]}\n` };
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
    .option(
      "--no-mtp",
      "no speculative decoding with the model's own MTP head (on by default where the model ships one: faster for one worker; at many workers at once it can lower total throughput)",
    )
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
