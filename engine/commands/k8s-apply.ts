/**
 * Applies generated manifests with the person's own `kubectl` and current context (issue 16). The API key's Secret is
 * created only when it is missing, from stdin (never argv, never a file); an existing Secret is kept (no rotation
 * behind the person's back). Everything else is `kubectl apply -f FILE`. On the client's side (issue 31): the person's
 * kubectl, environment and context, and a key generated here that never reaches the engine.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { secretManifest } from "../../shared/deploy";
import { SetupError } from "../models/errors";

/** A refusal with what to do (kind "k8s", exit 2), as the engine's plan refuses bad flags. */
class K8sInputError extends SetupError {
  constructor(message: string) {
    super("k8s", message);
    this.name = "K8sInputError";
  }
}

/** What applying needs of the manifests' options. */
interface ManifestOptions {
  kind: "deployment" | "kserve";
  namespace: string;
  apiKeySecret: string;
}

/** A new API key, in the engine's form (engine/serving/keys.ts). */
const generateKey = () => `ocw-${randomBytes(24).toString("base64url")}`;

interface KubectlRun {
  args: string[];
  code: number;
  stdout: string;
  stderr: string;
}

function findKubectl(env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    const p = dir && path.join(dir, "kubectl");
    if (p && existsSync(p)) return p;
  }
  return null;
}

function kubectl(bin: string, args: string[], env: NodeJS.ProcessEnv, input?: string): KubectlRun {
  const r = spawnSync(bin, args, { env, input, encoding: "utf8", timeout: 120_000 });
  if (r.error) throw new K8sInputError(`cannot run ${bin}: ${r.error.message}`);
  return { args, code: r.status ?? 1, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

export interface ApplyResult {
  context: string;
  secret: "created" | "exists";
  runs: KubectlRun[];
}

/** Checks kubectl and its context, makes the key's Secret if missing, then `kubectl apply -f file`. */
export function applyManifests(file: string, o: ManifestOptions, env: NodeJS.ProcessEnv = process.env): ApplyResult {
  const bin = findKubectl(env);
  if (!bin)
    throw new K8sInputError("--apply needs kubectl on PATH (https://kubernetes.io/docs/tasks/tools/); or leave out --apply and apply the files yourself");
  const runs: KubectlRun[] = [];
  const run = (args: string[], input?: string) => {
    const r = kubectl(bin, args, env, input);
    runs.push(r);
    return r;
  };
  const ctx = run(["config", "current-context"]);
  const context = ctx.stdout.trim();
  if (ctx.code !== 0 || !context) {
    throw new K8sInputError(
      `kubectl has no current context (${ctx.stderr.trim().split("\n")[0] || "none set"}); pick one with \`kubectl config use-context NAME\`, or leave out --apply`,
    );
  }
  if (o.kind === "kserve") {
    const crd = run(["get", "crd", "llminferenceservices.serving.kserve.io", "-o", "name"]);
    if (crd.code !== 0)
      throw new K8sInputError(
        `the cluster of context ${context} has no LLMInferenceService CRD (KServe v0.20+ with llm-d is not installed there); install KServe's LLMInferenceService, or use --kind deployment`,
      );
  }
  let secret: ApplyResult["secret"] = "exists";
  const has = run(["-n", o.namespace, "get", "secret", o.apiKeySecret, "-o", "name"]);
  if (has.code !== 0) {
    if (!/not ?found/i.test(has.stderr))
      throw new K8sInputError(`kubectl could not read secret ${o.apiKeySecret} in ${o.namespace}: ${has.stderr.trim().split("\n")[0]}`);
    const made = run(["apply", "-f", "-"], JSON.stringify(secretManifest(o.apiKeySecret, o.namespace, generateKey())));
    if (made.code !== 0) throw new K8sInputError(`kubectl could not create secret ${o.apiKeySecret}: ${made.stderr.trim().split("\n")[0]}`);
    secret = "created";
  }
  const applied = run(["apply", "-f", file]);
  if (applied.code !== 0) throw new K8sInputError(`kubectl apply -f ${file} failed: ${applied.stderr.trim().split("\n")[0]}`);
  return { context, secret, runs };
}
