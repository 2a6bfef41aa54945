import { z } from "zod";
import { Price } from "./cost";

/** Name of an environment variable that holds a key. The key itself is never stored. */
export const EnvVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name (letters, digits, _), not the key itself");

export const ServingEngine = z.enum(["llama.cpp", "vllm", "sglang", "ollama", "capture", "api", "scripted"]);
export type ServingEngine = z.infer<typeof ServingEngine>;

export const ServingEndpoint = z.object({
  url: z.string().url(),
  slots: z.number().int().positive(),
});
export type ServingEndpoint = z.infer<typeof ServingEndpoint>;

export const TargetCheck = z.object({
  /**
   * `tools`: a tool-call round trip with OpenCode-like tool schemas (what every worker turn needs). `reasoning`: the
   * model's thinking stays out of `content` (a server without the family's reasoning parser returns `<think>…</think>`
   * as the answer).
   */
  name: z.enum(["reachable", "auth", "slots", "concurrency", "capability", "tools", "reasoning"]),
  passed: z.boolean(),
  evidence: z.string(),
});
export type TargetCheck = z.infer<typeof TargetCheck>;

/**
 * What the model server measured right after setup (issue 27): a short benchmark over its OpenAI-compatible endpoint,
 * one stream alone and then `slots` streams at once. Tokens/s come from the server's own `timings` where it reports
 * them (llama-server), else from the stream's arrival times (`source`). `warning` when a stream at full load decodes
 * too slowly for an agent.
 */
export const TargetBench = z.object({
  at: z.string(),
  /** Wall time the benchmark took, seconds. */
  sec: z.number().nonnegative(),
  /** Prompt tokens per request (the prefill measured), completion tokens asked per request. */
  promptTokens: z.number().int().nonnegative().nullable(),
  maxTokens: z.number().int().positive(),
  /** One stream alone: prompt processing and generation, tokens/s. */
  prefillTps1: z.number().nonnegative().nullable(),
  decodeTps1: z.number().nonnegative().nullable(),
  /** `slots` streams at once: generation tokens/s of all of them together, and of one stream (what a worker gets). */
  slots: z.number().int().positive(),
  decodeTpsN: z.number().nonnegative().nullable(),
  decodeTpsPerStreamN: z.number().nonnegative().nullable(),
  /** Prompt processing of one stream while the others run, tokens/s. */
  prefillTpsN: z.number().nonnegative().nullable(),
  /** Where the figures come from: the server's own timings, or the client's clock on the stream. */
  source: z.enum(["timings", "stream"]),
  requests: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  warning: z.string().nullable(),
});
export type TargetBench = z.infer<typeof TargetBench>;

/** The benchmark in one line for people (`ocw setup`, `ocw targets`, the wizard). */
export function benchText(b: TargetBench): string {
  const f = (x: number | null) => (x === null ? "?" : String(Math.round(x)));
  const warning = b.warning ? ` — ${b.warning}` : "";
  // one slot: one stream is the slot at full load, so there is no "in all" to add
  if (b.slots === 1) return `measured: prefill ${f(b.prefillTps1)} tok/s, decode ${f(b.decodeTps1)} tok/s (1 stream, the only slot)${warning}`;
  return `measured: prefill ${f(b.prefillTps1)} tok/s, decode ${f(b.decodeTps1)} tok/s (1 stream); ${f(b.decodeTpsN)} tok/s in all, ${f(b.decodeTpsPerStreamN)} per stream (${b.slots} streams)${warning}`;
}

/**
 * The id a client may give a target it saves (`targets.save`): printable, one word, as the engine's own ids are (a
 * model slug and port, `adhoc-…`). A control character or a newline would reach `ocw targets`, the GUI and Claude as
 * written, and a slash would read as a path wherever the id keys a file.
 */
export const SavedTargetId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$/,
    "a target id of letters, digits, '.', '_', ':', '@', '+' or '-' (at most 200), starting with a letter or digit",
  );

/** A verified model endpoint the workers run on. `serving.slots` caps how many workers run at once. */
export const Target = z.object({
  id: z.string().min(1),
  model: z.string().min(1),
  quant: z.string().nullable().optional(),
  /** OpenAI-compatible base URL: the part before /chat/completions, usually ending in /v1 (Gemini's …/v1beta/openai). */
  endpoint: z.string().url(),
  /** Environment variable that holds the endpoint's key; null when the endpoint needs none. */
  keyRef: EnvVarName.nullable().optional(),
  /** Managed servers: path of the 0600 file in the state dir that holds the generated key (handed out via `keyRef`). */
  keyFile: z.string().nullable().optional(),
  /** "keychain": the key a person typed in is in the OS keychain (engine/serving/keys.ts), under this target's id. */
  keyStore: z.enum(["keychain"]).nullable().optional(),
  contextLimit: z.number().int().positive().optional(),
  outputLimit: z.number().int().positive().optional(),
  serving: z.object({
    engine: ServingEngine,
    endpoints: z.array(ServingEndpoint).default([]),
    slots: z.number().int().positive(),
    perSlotCtx: z.number().int().positive().nullable().optional(),
    /**
     * How long a model request may go without a byte from the server before it is given up (modelSilenceMs): a server
     * of one's own sends nothing while it processes a long prompt, minutes on a CPU. Default: 1800 s for one's own
     * server, 300 s (opencode's own) for an API provider.
     */
    silenceSec: z
      .number()
      .int()
      .positive()
      .max(24 * 3600)
      .optional(),
  }),
  outcome: z.enum(["built", "underpowered", "cannot-build"]).optional(),
  verifiedAt: z.string().nullable().optional(),
  checks: z.array(TargetCheck).default([]),
  /** The benchmark after setup (absent: none ran — a provider, an older ocw, OCW_SETUP_BENCH_SEC=0). */
  bench: TargetBench.nullable().optional(),
  /** API targets: dollars per million tokens (from the provider's model list or set by the person); costs use it. */
  price: Price.nullable().optional(),
});
export type Target = z.infer<typeof Target>;

/** The endpoints of a target: its pool, or its one endpoint with the target's slots. */
export function endpointsOf(target: Target): ServingEndpoint[] {
  return target.serving.endpoints.length ? target.serving.endpoints : [{ url: target.endpoint, slots: target.serving.slots }];
}

/** A target served by more than one endpoint (a pool): workers are placed on an endpoint each. */
export const isPool = (target: Target) => target.serving.endpoints.length > 1;

/** A filesystem- and URL-safe slug of a target, used to key its pack in packs/<slug>/. */
export function targetSlug(target: Pick<Target, "model" | "quant">): string {
  const raw = [target.model, target.quant].filter(Boolean).join("-");
  return (
    raw
      .toLowerCase()
      .replace(/[^a-z0-9.]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 80) || "target"
  );
}

/** The id prefix of a target `ocw run --endpoint URL --model ID` saved (one per URL, model and key variable). */
export const ADHOC_PREFIX = "adhoc-";
/**
 * A target `ocw run --endpoint` saved: its id is the prefix and 10 hex digits of a hash (engine/commands/target-flags.ts
 * adhocTarget), on an API endpoint. The prefix alone is not enough: a person may name a target of their own
 * "adhoc-gpu" in Setup, and `ocw target remove --ad-hoc` removed it with its kept key.
 */
export const isAdhocTarget = (t: Pick<Target, "id"> & { serving?: { engine: string } }) =>
  new RegExp(`^${ADHOC_PREFIX}[0-9a-f]{10}$`).test(t.id) && (t.serving === undefined || t.serving.engine === "api");

/**
 * Which ad-hoc targets `ocw target remove --ad-hoc` removes: those no worker needs any more. A worker needs its target
 * while it can still run on it — queued, running, and also at rest but resumable or continuable (a follow-up runs on the
 * same target) — so only its merge or discard lets the target go. The active target stays too.
 */
export function adhocUnused(
  targets: (Pick<Target, "id"> & { serving?: { engine: string } })[],
  active: string | null,
  workers: { id: string; targetId?: string | null; merged?: unknown; discarded?: boolean }[],
): { remove: string[]; kept: { id: string; active: boolean; workers: string[] }[] } {
  const remove: string[] = [];
  const kept: { id: string; active: boolean; workers: string[] }[] = [];
  for (const t of targets.filter(isAdhocTarget)) {
    const users = workers.filter((w) => w.targetId === t.id && !w.merged && !w.discarded).map((w) => w.id);
    if (users.length || t.id === active) kept.push({ id: t.id, active: t.id === active, workers: users });
    else remove.push(t.id);
  }
  return { remove, kept };
}
