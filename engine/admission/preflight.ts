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
