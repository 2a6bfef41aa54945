// What workers cost, per worker, batch and repository (unit-tested in cost.test.ts): money for API targets, tokens for
// a model of one's own. Money is what the provider reported (opencode's `cost`) when it reported any, else the tokens
// at the target's price (per million tokens, set from the provider's model list or by the person), else unknown.
import { z } from "zod";
import type { Worker } from "./worker";

/** A target's price in US dollars per million tokens (output includes reasoning). */
export const Price = z
  .object({
    inputPerMTok: z.number().nonnegative().max(10_000),
    outputPerMTok: z.number().nonnegative().max(10_000),
  })
  .strict();
export type Price = z.infer<typeof Price>;

/** The price a provider's model list gives for one model, when it gives one; null otherwise. */
export function priceFromListing(m: unknown): Price | null {
  const o = (m ?? {}) as { pricing?: Record<string, unknown> };
  const p = o.pricing;
  if (!p || typeof p !== "object") return null;
  const num = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN);
  // OpenRouter: {prompt, completion} in dollars per token (strings). Together: {input, output} in dollars per million.
  const perToken = [num(p.prompt), num(p.completion)];
  if (perToken.every((x) => Number.isFinite(x) && x >= 0)) return clean(perToken[0]! * 1e6, perToken[1]! * 1e6);
  const perM = [num(p.input), num(p.output)];
  if (perM.every((x) => Number.isFinite(x) && x >= 0)) return clean(perM[0]!, perM[1]!);
  return null;
}

function clean(i: number, o: number): Price | null {
  const r = (x: number) => Math.round(x * 1e6) / 1e6;
  const parsed = Price.safeParse({ inputPerMTok: r(i), outputPerMTok: r(o) });
  return parsed.success ? parsed.data : null;
}

/** What a target needs to be known for costs: whether it is an API (money) and its price. */
export interface CostTarget {
  id: string;
  serving: { engine: string };
  price?: Price | null;
}

interface Spend {
  tokens: number;
  /** Dollars for workers on API targets whose cost is known; 0 when none is. */
  usd: number;
  /** Tokens on API targets (money) and on models of one's own (tokens only). */
  apiTokens: number;
  localTokens: number;
  /** Workers on API targets. */
  apiWorkers: number;
  /** Workers on API targets whose cost is unknown (no provider report, no price): their tokens are counted, not priced. */
  unpriced: number;
  workers: number;
}

const NO_SPEND: Spend = { tokens: 0, usd: 0, apiTokens: 0, localTokens: 0, apiWorkers: 0, unpriced: 0, workers: 0 };

/** A worker's spend. A target that is gone (deleted) counts as one's own model unless the provider reported a cost. */
export function workerSpend(w: Pick<Worker, "usage" | "targetId">, target: CostTarget | undefined): Spend {
  const u = w.usage;
  const tokens = u.input + u.output + u.reasoning;
  const api = target?.serving.engine === "api" || u.cost > 0;
  if (!api) return { ...NO_SPEND, tokens, localTokens: tokens, workers: 1 };
  const price = target?.price ?? null;
  const usd = u.cost > 0 ? u.cost : price ? (u.input * price.inputPerMTok + (u.output + u.reasoning) * price.outputPerMTok) / 1e6 : null;
  return { ...NO_SPEND, tokens, apiTokens: tokens, apiWorkers: 1, usd: usd ?? 0, unpriced: usd === null ? 1 : 0, workers: 1 };
}

function addSpend(a: Spend, b: Spend): Spend {
  return {
    tokens: a.tokens + b.tokens,
    usd: a.usd + b.usd,
    apiTokens: a.apiTokens + b.apiTokens,
    localTokens: a.localTokens + b.localTokens,
    apiWorkers: a.apiWorkers + b.apiWorkers,
    unpriced: a.unpriced + b.unpriced,
    workers: a.workers + b.workers,
  };
}

/** The spend of `workers`, grouped by `key` (a batch id, a repository), in first-seen order. */
export function spendBy(workers: Pick<Worker, "usage" | "targetId">[], targets: CostTarget[], key?: (w: Worker) => string): Map<string, Spend> {
  const byId = new Map(targets.map((t) => [t.id, t]));
  const out = new Map<string, Spend>();
  for (const w of workers) {
    const k = key ? key(w as Worker) : "";
    out.set(k, addSpend(out.get(k) ?? NO_SPEND, workerSpend(w, byId.get(w.targetId ?? ""))));
  }
  return out;
}

/** Dollars in a few characters: $0.0042, $0.42, $12.30, $1,234. */
export function dollars(usd: number): string {
  if (usd === 0) return "$0";
  // Under a cent: two significant digits (unless they round up to a cent: 0.00998 reads $0.01, not $0.010).
  if (Number(usd.toPrecision(2)) < 0.01) return `$${usd.toPrecision(2)}`;
  if (usd < 1000) return `$${usd.toFixed(2)}`;
  return `$${Math.round(usd).toLocaleString("en-US")}`;
}

/**
 * One line for a spend: money where API targets ran ("+ N unpriced" for API workers with no price), tokens for models
 * of one's own; `tok` formats a token count.
 */
export function spendText(s: Spend, tok: (n: number) => string): string {
  const parts: string[] = [];
  if (s.apiWorkers > 0) {
    if (s.unpriced < s.apiWorkers) parts.push(`${dollars(s.usd)}${s.unpriced ? ` + ${s.unpriced} unpriced` : ""}`);
    else parts.push(`${tok(s.apiTokens)} tok (API, no price)`);
  }
  if (s.localTokens > 0 || !parts.length) parts.push(`${tok(s.localTokens)} tok${s.apiWorkers ? " local" : ""}`);
  return parts.join(" · ");
}
