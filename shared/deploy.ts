// `ocw deploy k8s` (issue 16) on the engine's API (issue 31): the command's options as it got them (the engine checks
// each and says what is wrong, as the command did), and the parts of the manifests a client needs on its own side —
// the KServe API version its help names, and the API key's Secret, which `--apply` makes with the person's kubectl
// from a key generated there (never sent to the engine, never on disk).
import { z } from "zod";

export const KSERVE_API_VERSION = "serving.kserve.io/v1alpha2";
/** The key of the API key inside its Secret. */
export const API_KEY_ENTRY = "api-key";

/** The Secret for the API key (applied from stdin by `--apply`, never written to disk by ocw). */
export function secretManifest(name: string, namespace: string, key: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "ocw" } },
    type: "Opaque",
    stringData: { [API_KEY_ENTRY]: key },
  };
}

const Flag = z.string().max(1000).optional();
/** `ocw deploy k8s` flags, as given (numbers as text): the engine checks them with the command's own messages. */
export const DeployK8sInput = z.object({
  runtime: Flag,
  kind: Flag,
  model: Flag,
  slots: Flag,
  ctx: Flag,
  gpus: Flag,
  vendor: Flag,
  tp: Flag,
  dataParallel: Flag,
  replicas: Flag,
  name: Flag,
  namespace: Flag,
  apiKeySecret: Flag,
  hfTokenSecret: Flag,
  image: Flag,
  toolCallParser: Flag,
  cachePvc: Flag,
  cacheSize: Flag,
  storageClass: Flag,
  /** `--no-mtp`: false — no speculative decoding with the model's own MTP head (absent or true: on where it has one). */
  mtp: z.boolean().optional(),
});
export type DeployK8sInput = z.infer<typeof DeployK8sInput>;
