// `ocw deploy k8s` (issue 16, clusters on existing engines) through the real CLI bundle: manifests for vLLM / SGLang
// written to a folder or stdout and validated offline against the Kubernetes schemas and KServe's LLMInferenceService
// CRD; sized from a stand-in Hugging Face Hub's safetensors listing; `--apply` with a fake kubectl on PATH that
// records every call (argv and stdin): the key's Secret only through stdin, then `kubectl apply -f FILE`, then how to
// capture the service as a pool or router target.
import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateManifest } from "../fixtures/k8s/validate";
import { BUNDLE, cleanup, stopDetachedEngine, tempDir } from "../helpers";

const dirs: string[] = [];
// `ocw deploy k8s` asks the engine for the plan (setup.k8s): one engine for this file, in a state dir of its own
const state = tempDir("k8s-state");
let hub: Server;
let hubUrl = "";
const hubHits: string[] = [];

/** A fake kubectl: appends {argv, stdin} to $FAKE_KUBECTL_LOG and answers like kubectl for the calls ocw makes. */
function fakeKubectl(dir: string): string {
  const bin = path.join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  const file = path.join(bin, "kubectl");
  writeFileSync(
    file,
    `#!${process.execPath}
const fs = require("node:fs");
const args = process.argv.slice(2);
let stdin = "";
if (args[0] === "apply" && args[2] === "-") stdin = fs.readFileSync(0, "utf8");
fs.appendFileSync(process.env.FAKE_KUBECTL_LOG, JSON.stringify({ args, stdin }) + "\\n");
const out = (s, code = 0) => { process.stdout.write(s); process.exit(code); };
const err = (s, code = 1) => { process.stderr.write(s); process.exit(code); };
if (args[0] === "config" && args[1] === "current-context") return process.env.FAKE_NO_CONTEXT ? err("error: current-context is not set\\n") : out("kind-ocw\\n");
if (args[0] === "get" && args[1] === "crd") return process.env.FAKE_NO_CRD ? err('Error from server (NotFound): customresourcedefinitions.apiextensions.k8s.io "' + args[2] + '" not found\\n') : out("customresourcedefinition.apiextensions.k8s.io/" + args[2] + "\\n");
if (args[2] === "get" && args[3] === "secret") return process.env.FAKE_SECRET_EXISTS ? out("secret/" + args[4] + "\\n") : err('Error from server (NotFound): secrets "' + args[4] + '" not found\\n');
if (args[0] === "apply" && args[2] === "-") { const o = JSON.parse(stdin); return out(o.kind.toLowerCase() + "/" + o.metadata.name + " created\\n"); }
if (args[0] === "apply" && args[1] === "-f") { fs.copyFileSync(args[2], process.env.FAKE_KUBECTL_LOG + ".applied.yaml"); return out("applied " + args[2] + "\\n"); }
err("fake kubectl: unexpected " + args.join(" ") + "\\n", 3);
`,
  );
  chmodSync(file, 0o755);
  return bin;
}

function ocw(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [BUNDLE, ...args],
      { env: { ...process.env, OCW_HF_ENDPOINT: hubUrl, OCW_STATE_DIR: state, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const docsOf = (text: string) =>
  parseAllDocuments(text).map((d) => {
    expect(d.errors).toEqual([]);
    return d.toJS() as any;
  });
const log = (file: string) =>
  readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { args: string[]; stdin: string });

beforeAll(async () => {
  // a stand-in Hub: Qwen/Qwen3.6-27B's tree lists 2 × 27 GB of safetensors, its -FP8 repo 2 × 14.5 GB; any other
  // repo is unknown (404)
  hub = createServer((req, res) => {
    hubHits.push(req.url ?? "");
    const listed = req.url?.startsWith("/api/models/Qwen/Qwen3.6-27B/tree/main")
      ? 27e9
      : req.url?.startsWith("/api/models/Qwen/Qwen3.6-27B-FP8/tree/main")
        ? 14.5e9
        : 0;
    if (listed) {
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify(
          [1, 2]
            .map((i) => ({ type: "file", path: `model-0000${i}-of-00002.safetensors`, size: 135, lfs: { oid: "0".repeat(64), size: listed } }))
            .concat([{ type: "file", path: "config.json", size: 2000 } as any]),
        ),
      );
    } else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise<void>((r) => hub.listen(0, "127.0.0.1", r));
  hubUrl = `http://127.0.0.1:${(hub.address() as { port: number }).port}`;
});

afterAll(async () => {
  await stopDetachedEngine(state);
  await new Promise((r) => hub.close(r));
  cleanup(state, ...dirs);
});

const realKubectl = process.env.PATH?.split(path.delimiter)
  .map((d) => path.join(d, "kubectl"))
  .find((f) => existsSync(f));

describe("ocw deploy k8s", () => {
  it("writes a Deployment + Service for vLLM sized from the Hub's listing, valid against the Kubernetes schemas", async () => {
    const out = tempDir("k8s-out");
    dirs.push(out);
    const r = await ocw([
      "deploy",
      "k8s",
      "--model",
      "qwen3.6-27b",
      "--gpus",
      "8xL40S=48G",
      "--slots",
      "8",
      "--replicas",
      "2",
      "--namespace",
      "models",
      "-o",
      out,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // L40S runs FP8 natively: the catalog's FP8 repo, sized by the Hub (issue 27)
    expect(hubHits.some((u) => u.startsWith("/api/models/Qwen/Qwen3.6-27B-FP8/tree/main"))).toBe(true);
    const file = path.join(out, "ocw-qwen3-6-27b-fp8.yaml");
    expect(r.stdout).toContain(`wrote ${file}`);
    expect(r.stdout).toMatch(/Qwen\/Qwen3\.6-27B-FP8 \(27\.0 GiB of weights, from the Hub's listing/);
    const docs = docsOf(readFileSync(file, "utf8"));
    expect(docs.map((d) => `${d.apiVersion} ${d.kind}`)).toEqual(["apps/v1 Deployment", "v1 Service", "v1 PersistentVolumeClaim"]);
    for (const d of docs) expect(validateManifest(d)).toEqual([]);
    const c = docs[0].spec.template.spec.containers[0];
    expect(c.args).toEqual(expect.arrayContaining(["--tensor-parallel-size", "2", "--max-num-seqs", "8", "--served-model-name", "qwen3.6-27b-fp8"]));
    expect(c.resources.limits["nvidia.com/gpu"]).toBe("2");
    expect(docs[0].metadata.namespace).toBe("models");
    // the next steps: create the Secret from stdin, apply, then capture the pods as a pool (or the Service as a router)
    expect(r.stdout).toContain("kubectl -n models create secret generic ocw-qwen3-6-27b-fp8-api-key --from-file=api-key=/dev/stdin");
    expect(r.stdout).toContain(`kubectl apply -f ${file}`);
    expect(r.stdout).toMatch(/ocw setup \$caps --api-key-env OCW_K8S_API_KEY --slots 8/);
  });

  it("without -o prints the manifests on stdout (plan on stderr); KServe LLMInferenceService v1alpha2 validates against the CRD", async () => {
    const r = await ocw(["deploy", "k8s", "--kind", "kserve", "--model", "gpt-oss-20b", "--gpus", "4x80G", "--data-parallel", "2"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/LLMInferenceService ocw-gpt-oss-20b \(serving\.kserve\.io\/v1alpha2\)/);
    expect(r.stderr).toMatch(/mxfp4 from the catalog/); // the stand-in Hub does not know openai/gpt-oss-20b: the catalog's size
    const [doc, ...rest] = docsOf(r.stdout);
    expect(rest).toEqual([]);
    expect(validateManifest(doc)).toEqual([]);
    expect(doc.spec).toMatchObject({ model: { uri: "hf://openai/gpt-oss-20b" }, replicas: 2, parallelism: { tensor: 1 } });
    expect(doc.spec.template.containers[0].args).toEqual(expect.arrayContaining(["--tool-call-parser", "openai"]));
  });

  it("SGLang on AMD with --image: amd.com/gpu, the key from the Secret through the environment, valid", async () => {
    const r = await ocw([
      "deploy",
      "k8s",
      "--runtime",
      "sglang",
      "--model",
      "gpt-oss-20b",
      "--gpus",
      "2x192G",
      "--vendor",
      "amd",
      "--image",
      "docker.io/lmsysorg/sglang:v0.5.3-rocm630-mi30x",
      "--json",
    ]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    for (const d of j.manifests) expect(validateManifest(d)).toEqual([]);
    const c = j.manifests[0].spec.template.spec.containers[0];
    expect(c.resources.limits).toMatchObject({ "amd.com/gpu": "1" });
    expect(c.command[0]).toBe("/bin/sh");
    expect(c.env[0]).toEqual({ name: "OCW_API_KEY", valueFrom: { secretKeyRef: { name: "ocw-gpt-oss-20b-api-key", key: "api-key" } } });
  });

  it("--apply: checks the context, creates the missing Secret from stdin (never argv), applies the file, prints the capture", async () => {
    const dir = tempDir("k8s-apply");
    dirs.push(dir);
    const bin = fakeKubectl(dir);
    const logFile = path.join(dir, "kubectl.log");
    const out = path.join(dir, "out");
    const env = { PATH: `${bin}:${process.env.PATH}`, FAKE_KUBECTL_LOG: logFile };
    const r = await ocw(["deploy", "k8s", "--model", "gpt-oss-20b", "--gpus", "1x80G", "--kind", "kserve", "--name", "coder", "-o", out, "--apply"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const calls = log(logFile);
    expect(calls.map((c) => c.args.join(" "))).toEqual([
      "config current-context",
      "get crd llminferenceservices.serving.kserve.io -o name",
      "-n default get secret coder-api-key -o name",
      "apply -f -",
      `apply -f ${path.join(out, "coder.llmisvc.yaml")}`,
    ]);
    const secret = JSON.parse(calls[3]!.stdin);
    expect(validateManifest(secret)).toEqual([]);
    const key: string = secret.stringData["api-key"];
    expect(key).toMatch(/^ocw-[\w-]{32}$/);
    expect(calls.some((c) => c.args.join(" ").includes(key))).toBe(false);
    expect(readFileSync(path.join(out, "coder.llmisvc.yaml"), "utf8")).not.toContain(key);
    expect(r.stdout).not.toContain(key);
    expect(readFileSync(`${logFile}.applied.yaml`, "utf8")).toBe(readFileSync(path.join(out, "coder.llmisvc.yaml"), "utf8"));
    expect(r.stdout).toMatch(/applied with kubectl \(context kind-ocw\); Secret coder-api-key created with a new key/);
    expect(r.stdout).toMatch(/kubectl -n default wait llminferenceservice\/coder --for=condition=Ready/);
    expect(r.stdout).toMatch(/ocw setup --capture "\$URL\/v1" --api-key-env OCW_K8S_API_KEY --slots 4/);

    // an existing Secret is kept; a Deployment applies to a temporary file when no -o is given
    writeFileSync(logFile, "");
    const again = await ocw(["deploy", "k8s", "--model", "gpt-oss-20b", "--gpus", "1x80G", "--name", "coder", "--apply", "--json"], {
      ...env,
      FAKE_SECRET_EXISTS: "1",
    });
    expect(again.code).toBe(0);
    const j = JSON.parse(again.stdout);
    expect(j.applied).toMatchObject({ context: "kind-ocw", secret: "exists" });
    expect(log(logFile).map((c) => (c.args[0] === "apply" ? c.args.slice(0, 2).join(" ") : c.args.join(" ")))).toEqual([
      "config current-context",
      "-n default get secret coder-api-key -o name",
      "apply -f",
    ]);
    expect(existsSync(j.file)).toBe(true);
    expect(j.next.join("\n")).toMatch(
      /port-forward service\/coder 8000:8000[\s\S]*ocw setup --capture http:\/\/127\.0\.0\.1:8000\/v1 --api-key-env OCW_K8S_API_KEY --slots 4/,
    );
  });

  it("refuses with what to do: no context, no CRD, no kubectl, and bad input", async () => {
    const dir = tempDir("k8s-refuse");
    dirs.push(dir);
    const bin = fakeKubectl(dir);
    const env = { PATH: `${bin}:${process.env.PATH}`, FAKE_KUBECTL_LOG: path.join(dir, "kubectl.log") };
    const base = ["deploy", "k8s", "--model", "gpt-oss-20b", "--gpus", "1x80G", "-o", path.join(dir, "out"), "--apply"];
    const noCtx = await ocw(base, { ...env, FAKE_NO_CONTEXT: "1" });
    expect(noCtx.code).toBe(2);
    expect(noCtx.stderr).toMatch(/^ocw: kubectl has no current context \(error: current-context is not set\); pick one with `kubectl config use-context NAME`/);
    const noCrd = await ocw([...base, "--kind", "kserve"], { ...env, FAKE_NO_CRD: "1" });
    expect(noCrd.code).toBe(2);
    expect(noCrd.stderr).toMatch(/no LLMInferenceService CRD .* use --kind deployment/);
    const emptyBin = path.join(dir, "empty");
    mkdirSync(emptyBin);
    const noKubectl = await ocw(base, { PATH: emptyBin });
    expect(noKubectl.code).toBe(2);
    expect(noKubectl.stderr).toMatch(/--apply needs kubectl on PATH/);
    for (const [args, msg] of [
      [["--runtime", "llama.cpp"], /--runtime must be vllm or sglang/],
      [["--runtime", "sglang", "--kind", "kserve"], /LLMInferenceService runs vLLM/],
      [["--gpus", "1x8G"], /does not fit 1 GPU of 8\.0 GiB/],
      [["--gpus", "eight"], /cannot read --gpus "eight"/],
      [["--slots", "0"], /--slots must be an integer ≥ 1/],
      [["--name", "Bad_Name"], /--name Bad_Name is not a valid name/],
    ] as const) {
      const r = await ocw(["deploy", "k8s", "--model", "gpt-oss-20b", "--gpus", "1x80G", ...args]);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toMatch(msg);
      expect(r.stdout).toBe("");
    }
  });

  it.skipIf(!realKubectl)("the real kubectl with an empty kubeconfig: no context, nothing applied (skipped where kubectl is not installed)", async () => {
    const dir = tempDir("k8s-real");
    dirs.push(dir);
    writeFileSync(path.join(dir, "kubeconfig"), "apiVersion: v1\nkind: Config\n");
    const r = await ocw(["deploy", "k8s", "--model", "gpt-oss-20b", "--gpus", "1x80G", "-o", path.join(dir, "out"), "--apply"], {
      KUBECONFIG: path.join(dir, "kubeconfig"),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^ocw: kubectl has no current context \(.*current-context is not set.*\); pick one with `kubectl config use-context NAME`, or leave out --apply/,
    );
  });
});
