import { endpointsOf, isPool, type Target } from "../../shared/target";
import { probeHealth } from "./capacity";
import { resolveKey } from "../serving";
import { InputError } from "../../shared/errors";

const ok = new Map<string, number>();

/**
 * Refuses work for an endpoint that cannot be reached, before anything is created: otherwise opencode retries
 * for ~68 s before it says so (notes/opencode.md §8). Any HTTP answer counts as reachable; successes are cached 30 s.
 */
export async function preflightEndpoint(target: Target, timeoutMs = 3000, given?: string): Promise<void> {
  let key: string | null = given ?? null;
  try {
    key ??= resolveKey(target);
  } catch (err) {
    throw new InputError((err as Error).message);
  }
  if ((target.keyRef || target.keyFile) && !key) {
    throw new InputError(
      `the key variable ${target.keyRef} for target ${target.id} is not set in the engine's environment: give the engine the key (\`ocw target key ${target.id} --from-env ${target.keyRef}\` where it is exported, or Setup's key field), or export ${target.keyRef}=… where the engine starts and restart it`,
    );
  }
  // Only reachability is cached: the key check above runs on every call.
  const cacheKey = target.endpoint;
  if ((ok.get(cacheKey) ?? 0) > Date.now()) return;
  const problem = await unreachable(target, key, timeoutMs);
  if (problem)
    throw new InputError(
      /^answers 503/.test(problem)
        ? `the model endpoint ${target.endpoint} ${problem}: try again once it is ready`
        : `cannot reach the model endpoint ${target.endpoint} (${problem}): start the model server or fix the URL`,
    );
  ok.set(cacheKey, Date.now() + 30_000);
}

/**
 * Whether an endpoint answers its model list with 401 when asked without a key: a keyless target there would start a
 * worker whose every model call is refused. Only asked without a key: a key that GET /models refuses may still chat
 * (OpenAI's restricted keys without the models scope answer it 401). No answer, or any other one, is false.
 */
export async function refusesWithoutKey(endpoint: string, timeoutMs = 3000): Promise<boolean> {
  try {
    const res = await fetch(`${endpoint.replace(/\/$/, "")}/models`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel().catch(() => undefined);
    return res.status === 401;
  } catch {
    return false;
  }
}

/** The first `max` bytes of a response's body as text (the rest is not read): enough to tell JSON from a web page. */
async function bodyStart(res: Response, max = 65_536): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, max);
}

/**
 * "HTTP 405", "HTTP 200 text/html": what a probe got, for the refusal. The content type is the endpoint's text: only its
 * printable ASCII is said (a header may carry Latin-1 bytes such as U+009B, a terminal's CSI, into the CLI's line).
 */
const answerOf = (res: Response) => {
  const type = (res.headers.get("content-type") ?? "")
    .split(";")[0]!
    .replace(/[^\x21-\x7e]/g, "?")
    .trim();
  return `HTTP ${res.status}${type ? ` ${type.slice(0, 60)}` : ""}`;
};
const looksJson = (res: Response, text: string) => /json/i.test(res.headers.get("content-type") ?? "") || /^\s*[[{]/.test(text);

/**
 * Why an endpoint that answers HTTP is not an OpenAI-compatible model API, or null when it is (or cannot be told): a
 * plain web server (a static file server, a web app) answers 200 with a page, or 404/405, and passed the reachability
 * check; the worker then failed on its first model call with "HTTP 405". An API answers GET /models with a JSON list;
 * one without that route still answers POST /chat/completions of an empty request with a JSON error (no model runs).
 * A 401/403 is an API that wants a key (refusesWithoutKey and the worker's key say the rest).
 */
export async function notModelApi(endpoint: string, key: string | null, timeoutMs = 3000): Promise<string | null> {
  const base = endpoint.replace(/\/+$/, "");
  const auth: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  let models: string;
  try {
    const res = await fetch(`${base}/models`, { headers: auth, signal: AbortSignal.timeout(timeoutMs) });
    const text = await bodyStart(res);
    if (res.status === 401 || res.status === 403) return null;
    if (res.ok && looksJson(res, text)) return null;
    models = `GET ${base}/models answered ${answerOf(res)}, not a JSON model list`;
  } catch {
    return null; // no answer now: the reachability check speaks for that
  }
  try {
    const res = await fetch(`${base}/chat/completions`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: "{}",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await bodyStart(res);
    if (![404, 405, 501].includes(res.status) && looksJson(res, text)) return null;
    return `${models}; POST ${base}/chat/completions answered ${answerOf(res)}`;
  } catch {
    return models;
  }
}

/** At most this many of an endpoint's model names are kept for the warning that the one asked for is not among them. */
const LISTED_SHOWN = 20;

/**
 * The models an endpoint lists when `model` is not among them, or null: listed, no JSON list to read, or a server that
 * serves its one model under any name (llama-server: its entries are `owned_by` "llamacpp"). vLLM, Ollama, LM Studio
 * and the providers answer a model they do not list with 404 on the worker's first call; a proxy (LiteLLM) may route a
 * name it does not list, so this is said, not refused. The names are the endpoint's words (untrusted), at most
 * LISTED_SHOWN of them.
 */
export async function unlistedModel(endpoint: string, key: string | null, model: string, timeoutMs = 3000): Promise<string[] | null> {
  let list: unknown;
  try {
    const res = await fetch(`${endpoint.replace(/\/+$/, "")}/models`, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await bodyStart(res, 4 * 1_048_576);
    if (!res.ok) return null;
    list = JSON.parse(text);
  } catch {
    return null; // no answer, or not whole JSON within its first 4 MiB: nothing to say
  }
  const data = (list as { data?: unknown })?.data;
  if (!Array.isArray(data)) return null;
  const entries = data.filter((m): m is { id: string; owned_by?: unknown } => typeof m?.id === "string");
  if (!entries.length || entries.some((m) => m.id === model || m.owned_by === "llamacpp")) return null;
  return entries.slice(0, LISTED_SHOWN).map((m) => m.id);
}

/** Why the target's endpoint cannot be reached right now (any HTTP answer counts as reachable), or null. */
export async function unreachable(target: Target, key: string | null = resolveKey(target), timeoutMs = 3000): Promise<string | null> {
  const problem = await probeHealth(target.endpoint, key, timeoutMs);
  if (problem) ok.delete(target.endpoint);
  return problem;
}

/** A target's endpoint reachable before work is accepted; for a pool, any one of its endpoints. */
export async function preflightTarget(target: Target): Promise<void> {
  if (!isPool(target)) return preflightEndpoint(target);
  const errors: string[] = [];
  for (const e of endpointsOf(target)) {
    try {
      return await preflightEndpoint({ ...target, endpoint: e.url });
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  throw new InputError(`no endpoint of the pool ${target.id} answers: ${errors.join("; ")}`);
}
