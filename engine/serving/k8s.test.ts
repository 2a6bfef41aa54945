// Kubernetes manifests for vLLM / SGLang (issue 16): the plan's tensor/data parallel sizing, the manifests checked
// against the Kubernetes schemas (kubernetes-models) and KServe's LLMInferenceService CRD (vendored, strict), the key
// only ever in a Secret, the SGLang key wrapper run by a real shell, and the YAML read back by a real YAML parser.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { afterAll, describe, expect, it } from "vitest";
import { LLMISVC, validateLlmisvc, validateManifest } from "../../test/fixtures/k8s/validate";
import { GiB } from "../models/estimate";
import { commandWords } from "../models/plan";
import { parallelDevices, proposeParallel } from "./parallel";
import {
  captureSteps,
  deploymentManifests,
  K8sInputError,
  k8sName,
  kserveManifest,
  type ManifestOptions,
  parseNodeSpec,
  planK8s,
  secretManifest,
  serverArgs,
  toYaml,
} from "./k8s";

const node = (spec: string, vendor: "nvidia" | "amd" = "nvidia") => parseNodeSpec(spec, vendor);
const opts = (kind: ManifestOptions["kind"], extra: Partial<ManifestOptions> = {}): ManifestOptions => ({
  kind,
  name: "ocw-test",
  namespace: "models",
  apiKeySecret: "ocw-test-api-key",
  ...extra,
});
const tmp: string[] = [];
afterAll(() => tmp.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("plan", () => {
  it("takes the smallest tensor-parallel size whose share fits 90 % of one GPU, from the catalog's architecture", async () => {
    const big = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("1x80G") });
    // an 80 GB (datacenter) GPU: the maker's FP8 weights from the catalog (issue 27)
    expect(big).toMatchObject({
      model: "Qwen/Qwen3.6-27B-FP8",
      dtype: "fp8",
      catalogId: "qwen3.6-27b",
      tensorParallel: 1,
      gpusPerPod: 1,
      weightsSource: "estimate",
      gpuResource: "nvidia.com/gpu",
      toolCallParser: "qwen3_coder",
    });
    const small = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("8x24G") });
    // 27.8 B × 2 bytes + KV ≈ 60 GiB: 2 × 24 GiB is too little per GPU, 4 fit
    expect(small.tensorParallel).toBe(4);
    expect(small.perGpuBytes).toBeLessThanOrEqual(24 * GiB * 0.9);
    expect(small.reason).toMatch(/tensor parallel 4/);
  });

  it("uses the Hub's safetensors size when it has one, and data parallel multiplies a pod's GPUs", async () => {
    const p = await planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("4xL4=24G"), dataParallel: 2, slots: 8, sizeOf: async () => 13.8e9 });
    expect(p).toMatchObject({
      model: "openai/gpt-oss-20b",
      weightsSource: "hub",
      weightsBytes: 13.8e9,
      tensorParallel: 1,
      dataParallel: 2,
      gpusPerPod: 2,
      toolCallParser: "openai",
    });
    const { args } = serverArgs(p);
    expect(args).toEqual(expect.arrayContaining(["--data-parallel-size", "2"]));
    expect(args[args.indexOf("--max-num-seqs") + 1]).toBe("4");
  });

  it("with no --model walks the catalog by rank and says what did not fit", async () => {
    const p = await planK8s({ runtime: "vllm", node: node("2x48G") });
    expect(p.catalogId).toBeTruthy();
    expect(p.perGpuBytes).toBeLessThanOrEqual(48 * GiB * 0.9);
    await expect(planK8s({ runtime: "vllm", node: node("1x4G") })).rejects.toThrow(/no catalog model fits 4 sequences × 32768 tokens on 1 × 4\.0 GiB/);
  });

  it("refuses what cannot work, saying what to do", async () => {
    await expect(planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("1x24G") })).rejects.toThrow(/does not fit 1 GPU of 24\.0 GiB.*--gpus/);
    await expect(planK8s({ runtime: "vllm", model: "not a repo", node: node("1x80G") })).rejects.toThrow(K8sInputError);
    await expect(planK8s({ runtime: "vllm", model: "someone/private-model", node: node("1x80G"), sizeOf: async () => null })).rejects.toThrow(/pass --tp N/);
    await expect(planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("2x80G"), dataParallel: 4 })).rejects.toThrow(
      /--data-parallel 4 needs at least 4 GPUs/,
    );
    await expect(planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("1x80G"), ctxPerSlot: 200_000 })).rejects.toThrow(/trained for 131072/);
    expect(() => parseNodeSpec("lots", "nvidia")).toThrow(/4x80G/);
    expect(parseNodeSpec("A100=40G,A100=80G", "amd")).toMatchObject({ gpus: 2, gpuBytes: 40 * GiB, gpuName: "A100", vendor: "amd" });
    expect(k8sName("9 Qwen/Qwen3.6 27B!")).toBe("qwen-qwen3-6-27b");
  });
});

describe("manifests against the schemas", () => {
  it("Deployment + Service (vLLM, NVIDIA): valid apps/v1 and v1, GPUs requested, key from the Secret, /health and /metrics", async () => {
    const plan = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("8x24G"), replicas: 2 });
    const docs = deploymentManifests(plan, opts("deployment", { hfTokenSecret: "hf" }));
    for (const d of docs) expect(validateManifest(d)).toEqual([]);
    const [dep, svc] = docs as [any, any];
    const c = dep.spec.template.spec.containers[0];
    expect(dep.spec.replicas).toBe(2);
    expect(c.resources.limits["nvidia.com/gpu"]).toBe("4");
    expect(c.resources.requests["nvidia.com/gpu"]).toBe("4");
    expect(c.args.slice(0, 2)).toEqual(["serve", "Qwen/Qwen3.6-27B"]);
    expect(c.args).toEqual(
      expect.arrayContaining(["--tensor-parallel-size", "4", "--max-model-len", "32768", "--max-num-seqs", "4", "--reasoning-parser", "qwen3"]),
    );
    // the pinned image is new enough for Qwen3.6 (vLLM ≥ 0.19)
    expect(c.image).toBe("docker.io/vllm/vllm-openai:v0.19.0");
    expect(c.env).toContainEqual({ name: "VLLM_API_KEY", valueFrom: { secretKeyRef: { name: "ocw-test-api-key", key: "api-key" } } });
    expect(c.env).toContainEqual({ name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token", optional: true } } });
    expect(JSON.stringify([c.args, c.command])).not.toMatch(/api-key|API_KEY/);
    expect(c.readinessProbe.httpGet).toEqual({ path: "/health", port: "http" });
    expect(dep.spec.template.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/path": "/metrics",
      "prometheus.io/port": "8000",
    });
    expect(svc.spec.ports[0]).toMatchObject({ name: "http", port: 8000, targetPort: "http" });
    expect(svc.spec.selector).toEqual(dep.spec.selector.matchLabels);
    // two pods: a pool of port-forwarded pods (ocw admits by each one's /metrics) or the Service as a router target
    expect(captureSteps(plan, opts("deployment")).join("\n")).toMatch(
      /ocw setup \$caps --api-key-env OCW_K8S_API_KEY --slots 4[\s\S]*--capture http:\/\/ocw-test\.models\.svc\.cluster\.local:8000\/v1 .*--slots 8/,
    );
  });

  it("AMD GPUs are requested as amd.com/gpu with a ROCm image; SGLang has no pinned ROCm image and says so", async () => {
    const plan = await planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("2x64G", "amd") });
    const [dep] = deploymentManifests(plan, opts("deployment")) as [any];
    const c = dep.spec.template.spec.containers[0];
    expect(Object.keys(c.resources.limits)).toEqual(["memory", "amd.com/gpu"]);
    expect(c.image).toMatch(/rocm/);
    expect(validateManifest(dep)).toEqual([]);
    const sg = await planK8s({ runtime: "sglang", model: "gpt-oss-20b", node: node("2x64G", "amd") });
    expect(() => deploymentManifests(sg, opts("deployment"))).toThrow(/pass --image/);
    expect(validateManifest(deploymentManifests(sg, opts("deployment", { image: "example.com/sglang:rocm" }))[0])).toEqual([]);
  });

  it("an image older than the model family's minimum is refused before any manifest (Qwen3.6 needs vLLM ≥ 0.19, SGLang ≥ 0.5.10)", async () => {
    const amd = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("2x192G", "amd") });
    // the pinned ROCm vLLM build is 0.11.1
    expect(() => deploymentManifests(amd, opts("deployment"))).toThrow(/vLLM 0\.11\.1 .*older than 0\.19\.0.*pass --image/);
    const sg = await planK8s({ runtime: "sglang", model: "qwen3.6-27b", node: node("8x80G") });
    expect(() => deploymentManifests(sg, opts("deployment", { image: "docker.io/lmsysorg/sglang:v0.5.3-cu129" }))).toThrow(
      /SGLang 0\.5\.3 .*older than 0\.5\.10/,
    );
    const [dep] = deploymentManifests(sg, opts("deployment")) as [any];
    expect(dep.spec.template.spec.containers[0].image).toBe("docker.io/lmsysorg/sglang:v0.5.10.post1");
  });

  it("KServe LLMInferenceService (serving.kserve.io/v1alpha2, KServe v0.20.0 CRD): valid, tensor parallel in spec.parallelism, data parallel as replicas", async () => {
    expect(LLMISVC).toMatchObject({ kserveVersion: "v0.20.0", version: "v1alpha2", kind: "LLMInferenceService" });
    const plan = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("8x40G"), dataParallel: 2, replicas: 2 });
    const doc = kserveManifest(plan, opts("kserve")) as any;
    expect(validateManifest(doc)).toEqual([]);
    expect(doc.spec).toMatchObject({
      model: { uri: "hf://Qwen/Qwen3.6-27B", name: "qwen3.6-27b" },
      replicas: 4,
      parallelism: { tensor: plan.tensorParallel },
      router: { scheduler: {}, route: {}, gateway: {} },
    });
    const c = doc.spec.template.containers[0];
    expect(c.name).toBe("main");
    expect(c.resources.limits["nvidia.com/gpu"]).toBe(String(plan.tensorParallel));
    expect(c.env[0]).toEqual({ name: "VLLM_API_KEY", valueFrom: { secretKeyRef: { name: "ocw-test-api-key", key: "api-key" } } });
    expect(captureSteps(plan, opts("kserve")).join("\n")).toMatch(
      /jsonpath='\{\.status\.url\}'[\s\S]*ocw setup --capture "\$URL\/v1" --api-key-env OCW_K8S_API_KEY --slots 16/,
    );
    expect(() => kserveManifest({ ...plan, runtime: "sglang" }, opts("kserve"))).toThrow(/runs vLLM/);
  });

  it("the validators can fail: a wrong type, a misspelt field, replicas with scaling, an unknown container field", async () => {
    const plan = await planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("1x80G") });
    const doc = kserveManifest(plan, opts("kserve")) as any;
    expect(validateLlmisvc({ ...doc, spec: { ...doc.spec, parallelism: { tensr: 2 } } }).join()).toMatch(/tensr/);
    expect(validateLlmisvc({ ...doc, spec: { ...doc.spec, replicas: "two" } }).join()).toMatch(/replicas must be integer/);
    expect(validateLlmisvc({ ...doc, spec: { ...doc.spec, scaling: { maxReplicas: 2, wva: { hpa: {} } } } }).join()).toMatch(/mutually exclusive/);
    const [dep, svc] = deploymentManifests(plan, opts("deployment")) as [any, any];
    const bad = structuredClone(dep);
    bad.spec.template.spec.containers[0].readinesProbe = bad.spec.template.spec.containers[0].readinessProbe;
    expect(validateManifest(bad).join()).toMatch(/readinesProbe/);
    expect(validateManifest({ ...svc, spec: { ...svc.spec, ports: [{ port: "http" }] } }).join()).toMatch(/port/);
    expect(validateManifest(secretManifest("k", "models", "ocw-abc"))).toEqual([]);
  });
});

describe("SGLang's key", () => {
  it("goes from the environment into a private --config file in a real shell; argv never holds it; a bad key stops the pod", async () => {
    const plan = await planK8s({ runtime: "sglang", model: "gpt-oss-20b", node: node("2x80G"), tensorParallel: 2 });
    const { command, args } = serverArgs(plan);
    expect(args).toEqual(
      expect.arrayContaining([
        "-m",
        "sglang.launch_server",
        "--tp-size",
        "2",
        "--enable-metrics",
        "--tool-call-parser",
        "gpt-oss",
        "--context-length",
        "32768",
        "--max-running-requests",
        "4",
      ]),
    );
    expect(args).not.toContain("--api-key");
    const [dep] = deploymentManifests(plan, opts("deployment")) as [any];
    expect(dep.spec.template.spec.containers[0].env[0]).toEqual({
      name: "OCW_API_KEY",
      valueFrom: { secretKeyRef: { name: "ocw-test-api-key", key: "api-key" } },
    });
    // a stand-in python3 records its argv and the config it was given
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-k8s-sh-"));
    tmp.push(dir);
    writeFileSync(
      path.join(dir, "python3"),
      `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/argv"\nfor a in "$@"; do last="$a"; done\ncat "$last" > "${dir}/config"\nls -l "$last" | cut -c1-10 > "${dir}/mode"\n`,
    );
    chmodSync(path.join(dir, "python3"), 0o755);
    const key = "ocw-Ab_9-x.y~z+/=";
    const env = { PATH: `${dir}:/usr/bin:/bin`, OCW_API_KEY: key };
    execFileSync(command[0]!, [...command.slice(1), ...args], { env });
    const argv = readFileSync(path.join(dir, "argv"), "utf8");
    expect(argv.split("\n").slice(0, 2)).toEqual(["-m", "sglang.launch_server"]);
    expect(argv).toMatch(/--config\n\/tmp\/ocw-sglang\.yaml/);
    expect(argv).not.toContain(key);
    expect(readFileSync(path.join(dir, "config"), "utf8")).toBe(`api-key: "${key}"\n`);
    expect(readFileSync(path.join(dir, "mode"), "utf8").trim()).toBe("-rw-------");
    const bad = spawnSync(command[0]!, [...command.slice(1), ...args], { env: { ...env, OCW_API_KEY: 'x" --evil' }, encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/must be non-empty/);
  });
});

describe("issue 27: one sizer with the planner, FP8 from the catalog, a persistent model cache, per-rank sequence limits", () => {
  it("the k8s plan is the planner's sizing: the same tensor parallel, weights and per-GPU bytes as ocw fit --runtime vllm", async () => {
    const k = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("2x24G"), slots: 4, ctxPerSlot: 32768 });
    const n = node("2x24G");
    const gpus = Array.from({ length: 2 }, (_, i) => ({
      id: `nvidia${i}`,
      name: n.gpuName,
      kind: "gpu" as const,
      freeBytes: n.gpuBytes,
      totalBytes: n.gpuBytes,
      runtimeId: `CUDA${i}`,
      index: i,
      vendor: "nvidia",
    }));
    const fit = await proposeParallel({
      runtime: "vllm",
      dev: { gpus, hostFreeBytes: 64 * GiB },
      slots: 4,
      minCtx: 32768,
      maxCtxPerSlot: 32768,
      model: "qwen3.6-27b",
      verified: () => false,
      hub: false,
    });
    const p = fit.pick!;
    // bf16 (≈ 54 GB) cannot fit two 24 GB cards; the catalog's FP8 repo at tensor parallel 2 does — in both
    expect([k.model, k.tensorParallel, k.perRank]).toEqual(["Qwen/Qwen3.6-27B-FP8", p.parallel!.tensor, 4]);
    expect(k.perGpuBytes).toBe(p.devices[0]!.plannedBytes);
  });

  it("datacenter GPUs get the maker's FP8 weights from the catalog: Qwen3.5-397B-A17B on 8 × H100 at tensor parallel 8", async () => {
    const p = await planK8s({ runtime: "sglang", model: "qwen3.5-397b-a17b", node: node("8xH100=80G"), slots: 8 });
    expect([p.model, p.dtype, p.tensorParallel]).toEqual(["Qwen/Qwen3.5-397B-A17B-FP8", "fp8", 8]);
    const { args } = serverArgs(p);
    expect(args[args.indexOf("--model-path") + 1] ?? args[args.indexOf("--model") + 1]).toBe("Qwen/Qwen3.5-397B-A17B-FP8");
  });

  it("the model cache is a PersistentVolumeClaim (sized from the weights, valid), never an emptyDir; an existing claim is used as is", async () => {
    const plan = await planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("1x80G") });
    const docs = deploymentManifests(plan, opts("deployment")) as any[];
    const pvc = docs.find((d) => d.kind === "PersistentVolumeClaim");
    expect(validateManifest(pvc)).toEqual([]);
    expect(pvc.metadata.name).toBe("ocw-test-models");
    expect(pvc.spec.accessModes).toEqual(["ReadWriteOnce"]);
    expect(Number.parseInt(pvc.spec.resources.requests.storage, 10)).toBeGreaterThanOrEqual(Math.ceil(plan.weightsBytes / GiB));
    const dep = docs.find((d) => d.kind === "Deployment");
    const vols = dep.spec.template.spec.volumes;
    expect(vols.find((v: any) => v.name === "models")).toEqual({ name: "models", persistentVolumeClaim: { claimName: "ocw-test-models" } });
    expect(dep.spec.template.spec.containers[0].env).toContainEqual({ name: "HF_HOME", value: "/models" });
    // two pods share it only on a ReadWriteMany class; a claim of the person's is mounted and none is written
    const two = deploymentManifests({ ...plan, replicas: 2 }, opts("deployment", { modelCache: { storageClass: "nfs" } })) as any[];
    expect(two.find((d) => d.kind === "PersistentVolumeClaim").spec).toMatchObject({ accessModes: ["ReadWriteMany"], storageClassName: "nfs" });
    const own = deploymentManifests(plan, opts("deployment", { modelCache: { claim: "hf-cache" } })) as any[];
    expect(own.some((d) => d.kind === "PersistentVolumeClaim")).toBe(false);
    expect(own[0].spec.template.spec.volumes[0]).toEqual({ name: "models", persistentVolumeClaim: { claimName: "hf-cache" } });
  });

  it("a family that needs a newer runtime gets its pinned image: DeepSeek-V4-Flash on 4 × H200 runs vllm-openai v0.20.0 (≥ 0.20)", async () => {
    const p = await planK8s({ runtime: "vllm", model: "deepseek-v4-flash", node: node("4xH200=141G"), slots: 8 });
    expect(p.model).toBe("deepseek-ai/DeepSeek-V4-Flash");
    const [dep] = deploymentManifests(p, opts("deployment")) as [any];
    expect(dep.spec.template.spec.containers[0].image).toBe("docker.io/vllm/vllm-openai:v0.20.0");
    expect(() => deploymentManifests(p, opts("deployment", { image: "docker.io/vllm/vllm-openai:v0.19.0" }))).toThrow(/older than 0\.20\.0/);
  });

  it("per-rank sequence limits: SGLang's --max-running-requests and KServe's --max-num-seqs are the pod's slots ÷ data-parallel ranks", async () => {
    const sg = await planK8s({ runtime: "sglang", model: "gpt-oss-20b", node: node("2x80G"), dataParallel: 2, slots: 8 });
    const { args } = serverArgs(sg);
    expect([args[args.indexOf("--dp-size") + 1], args[args.indexOf("--max-running-requests") + 1]]).toEqual(["2", "4"]);
    const v = await planK8s({ runtime: "vllm", model: "gpt-oss-20b", node: node("2x80G"), dataParallel: 2, slots: 8 });
    const ks = kserveManifest(v, opts("kserve")) as any;
    const ka = ks.spec.template.containers[0].args as string[];
    expect(ka[ka.indexOf("--max-num-seqs") + 1]).toBe("4");
    expect(ks.spec.replicas).toBe(2);
  });

  it("parser names in argv are the runtimes' registered ones: GLM-4.7 → glm47 (both), DeepSeek-V4 on SGLang → deepseekv4", async () => {
    const flag = (args: string[], f: string) => args[args.indexOf(f) + 1];
    // vLLM tool_parsers/__init__.py and SGLang function_call_parser.py register glm47 apart from glm45 (GLM-4.7 drops the newline)
    for (const runtime of ["vllm", "sglang"] as const) {
      const g = await planK8s({ runtime, model: "glm-4.7-flash", node: node("2x80G"), slots: 2 });
      expect(flag(serverArgs(g).args, "--tool-call-parser")).toBe("glm47");
      expect(flag(serverArgs(g).args, "--reasoning-parser")).toBe("glm45");
    }
    const ds = await planK8s({ runtime: "sglang", model: "deepseek-v4-flash", node: node("4xH200=141G"), slots: 8 });
    expect(flag(serverArgs(ds).args, "--tool-call-parser")).toBe("deepseekv4");
    expect(flag(serverArgs(ds).args, "--reasoning-parser")).toBe("deepseek-v4");
  });
});

describe("MTP: the same speculative-decoding flags as the local vLLM / SGLang start", () => {
  // the flags from --speculative-… on, each with its value, in order
  const spec = (args: string[]) => args.flatMap((a, i) => (a.startsWith("--speculative-") ? [a, args[i + 1]!] : []));
  const local = async (runtime: "vllm" | "sglang", model: string) => {
    const dev = parallelDevices({
      gpus: [{ index: 0, vendor: "nvidia", name: "NVIDIA H100 80GB HBM3", totalBytes: 80 * GiB, freeBytes: 80 * GiB }],
      ram: { freeBytes: 256 * GiB },
    }).dev;
    const r = await proposeParallel({ runtime, dev, slots: 4, minCtx: 32768, maxCtxPerSlot: 32768, model, verified: () => false, hub: false });
    return commandWords(r.pick!.command).args;
  };

  it("vLLM: Qwen3.6's head (in its safetensors) → --speculative-config method mtp in the Deployment's and KServe's args", async () => {
    const plan = await planK8s({ runtime: "vllm", model: "qwen3.6-27b", node: node("1xH100=80G") });
    const want = ["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}'];
    expect(spec(await local("vllm", "qwen3.6-27b"))).toEqual(want);
    expect(spec(serverArgs(plan).args)).toEqual(want);
    const [dep] = deploymentManifests(plan, opts("deployment")) as [any];
    expect(spec(dep.spec.template.spec.containers[0].args)).toEqual(want);
    expect(validateManifest(dep)).toEqual([]);
    const ks = kserveManifest(plan, opts("kserve")) as any;
    expect(spec(ks.spec.template.containers[0].args)).toEqual(want);
    expect(validateManifest(ks)).toEqual([]);
    // the JSON survives the YAML
    const back = parseAllDocuments(toYaml([dep]), { version: "1.1" })[0]!.toJS();
    expect(spec(back.spec.template.spec.containers[0].args)).toEqual(want);
  });

  it("SGLang: NEXTN with the head's draft steps, before the wrapper's --config, as argv words (no shell re-quoting)", async () => {
    const plan = await planK8s({ runtime: "sglang", model: "qwen3.6-27b", node: node("1xH100=80G") });
    const want = ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3"];
    const words = await local("sglang", "qwen3.6-27b");
    expect(spec(words)).toEqual(want);
    const { command, args } = serverArgs(plan);
    expect(spec(args)).toEqual(want);
    // after the parsers and before --config, where the local command has them
    expect(words.slice(words.indexOf("--speculative-algorithm") - 2, words.indexOf("--speculative-algorithm"))).toEqual(["--reasoning-parser", "qwen3"]);
    expect(args.slice(-want.length - 2)).toEqual(["--reasoning-parser", "qwen3", ...want]);
    expect(command.at(-2)).toMatch(/exec python3 "\$@" --config/);
    // through the real wrapper shell: the words reach python3 as they are, then the key's --config
    const dir = mkdtempSync(path.join(os.tmpdir(), "ocw-k8s-mtp-"));
    tmp.push(dir);
    writeFileSync(path.join(dir, "python3"), `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/argv"\n`);
    chmodSync(path.join(dir, "python3"), 0o755);
    execFileSync(command[0]!, [...command.slice(1), ...args], { env: { PATH: `${dir}:/usr/bin:/bin`, OCW_API_KEY: "k" } });
    expect(
      readFileSync(path.join(dir, "argv"), "utf8")
        .trim()
        .split("\n")
        .slice(-want.length - 2),
    ).toEqual([...want, "--config", "/tmp/ocw-sglang.yaml"]);
    expect(plan.mtpDraft).toBe(2);
    expect(plan.reason).toMatch(/MTP head \(2 draft tokens a step\)/);
  });

  it("switched off (`mtp: false`, `ocw deploy k8s --no-mtp`): no speculative flags in the Deployment's, KServe's or SGLang's args; the reason says so", async () => {
    for (const runtime of ["vllm", "sglang"] as const) {
      const off = await planK8s({ runtime, model: "qwen3.6-27b", node: node("1xH100=80G"), mtp: false });
      expect(off.mtpDraft).toBeNull();
      expect(off.reason).toMatch(/MTP off \(asked\)/);
      expect(off.reason).not.toMatch(/draft tokens a step/);
      expect(spec(serverArgs(off).args)).toEqual([]);
      const [dep] = deploymentManifests(off, opts("deployment")) as [any];
      expect(spec(dep.spec.template.spec.containers[0].args)).toEqual([]);
      expect(JSON.stringify(dep)).not.toMatch(/speculative/);
      if (runtime === "vllm") expect(JSON.stringify(kserveManifest(off, opts("kserve")))).not.toMatch(/speculative/);
      // the default keeps the head
      const on = await planK8s({ runtime, model: "qwen3.6-27b", node: node("1xH100=80G") });
      expect(on.mtpDraft).toBe(2);
      expect(on.reason).not.toMatch(/MTP off/);
    }
    // the catalog's pick (no --model) too
    const best = await planK8s({ runtime: "vllm", node: node("1xH100=80G"), mtp: false });
    expect(best.mtpDraft).toBeNull();
  });

  it("a model without a head gets none: gpt-oss on vLLM and SGLang", async () => {
    for (const runtime of ["vllm", "sglang"] as const) {
      const plan = await planK8s({ runtime, model: "gpt-oss-20b", node: node("1xH100=80G") });
      expect(spec(serverArgs(plan).args)).toEqual([]);
      expect(spec(await local(runtime, "gpt-oss-20b"))).toEqual([]);
    }
  });
});

describe("YAML", () => {
  it("reads back, by a real YAML parser, as exactly the objects (tricky strings quoted, YAML 1.1 booleans too)", async () => {
    const plan = await planK8s({ runtime: "sglang", model: "gpt-oss-20b", node: node("2x80G") });
    const docs: any[] = [
      ...deploymentManifests(plan, opts("deployment")),
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "x" },
        data: { a: "on", b: "8000", c: "", d: "a: b # c", e: "- x", f: "line1\nline2", g: "yes", h: "1e3", "weird key": "null", i: "~" },
        list: [[1, 2], [], {}, { k: [] }],
      },
    ];
    const text = toYaml(docs);
    for (const version of ["1.1", "1.2"] as const) {
      const back = parseAllDocuments(text, { version }).map((d) => {
        expect(d.errors).toEqual([]);
        return d.toJS();
      });
      expect(back).toEqual(docs);
    }
  });
});
