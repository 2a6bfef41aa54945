/**
 * The benchmark after a model server starts or is captured (issue 27): prompt processing (prefill) and generation
 * (decode) tokens/s, one stream alone and then N streams at once (N = the target's slots), over the OpenAI-compatible
 * endpoint every worker uses. Bounded by a time budget (OCW_SETUP_BENCH_SEC, 30 s by default): the single-stream part takes
 * about a third of it, the N-stream rounds the rest; at least one request and one round always run. With one slot there is
 * no N: the single-stream requests take the whole budget, and their figures are the slot's at full load too.
 *
 * Figures: llama-server's own `timings` (prompt_per_second, predicted_per_second, in the last chunk of a stream) where
 * the server reports them; otherwise the client's clock — prefill = prompt tokens ÷ time to the first token, decode =
 * the tokens after the first ÷ the time after it. Each prompt starts with a fresh nonce and asks not to be cached, so
 * the prefill measured is a real one. Generation ignores end-of-sequence where the runtime allows (llama.cpp, vLLM,
 * SGLang), so every stream decodes the tokens asked.
 *
 * The warning threshold is the planner's (MIN_AGENT_TOK_PER_SEC, 8 tokens/s per slot): a worker's turn writes a few
 * hundred tokens (a tool call with an edit is often 300–800), so below 8 tokens/s one turn takes a minute or more and a
 * 20-turn task an hour; the estimate before start and the measurement after it then say the same thing.
 */
import { randomBytes } from "node:crypto";
import { benchText, type TargetBench } from "../../shared/target";
import { config } from "../config";
import { MIN_AGENT_TOK_PER_SEC } from "../models";
import { readBounded, sseData } from "../net";
import { STALE_CONNECTION } from "./http";
import type { ServedEndpoint } from "./verify";

/** The endpoint measured (its per-slot context keeps prompt + answer inside it) and how. */
interface BenchOptions extends ServedEndpoint {
  /** Time budget, seconds (default OCW_SETUP_BENCH_SEC). */
  budgetSec?: number;
  /** Prompt tokens per request (default: 1,024, at most a quarter of the per-slot context). */
  promptTokens?: number;
  /** Tokens generated per request (default 128). */
  maxTokens?: number;
  signal?: AbortSignal;
  /** The least time one request is given, ms (default: 60 s, or twice the budget); a round of N may get more (below). */
  minTimeoutMs?: number;
  /** Called after each request (for progress). */
  onProgress?: (done: number, note: string) => void;
}

/** One request's figures. */
interface One {
  ok: boolean;
  promptTokens: number | null;
  completionTokens: number | null;
  prefillTps: number | null;
  decodeTps: number | null;
  fromTimings: boolean;
  error?: string;
}

/** A request that failed: no figures, and why. */
const failed = (error: string): One => ({
  ok: false,
  promptTokens: null,
  completionTokens: null,
  prefillTps: null,
  decodeTps: null,
  fromTimings: false,
  error,
});

/** The budget from the environment (seconds; 0 = no benchmark). */
export function benchBudgetSec(env: NodeJS.ProcessEnv = process.env): number {
  return Math.max(0, config(env).OCW_SETUP_BENCH_SEC);
}

const WORDS = "the quick brown fox jumps over a lazy dog while seven engineers review pull requests about caching parsers schedulers and tests".split(" ");

/** A prompt of about `tokens` tokens (≈ one token per short English word), opened by a nonce so no cache serves it. */
export function benchPrompt(tokens: number, nonce = randomBytes(6).toString("hex")): string {
  const words: string[] = [];
  for (let i = 0; words.length < tokens; i++) words.push(WORDS[(i * 7 + (i >> 3)) % WORDS.length]!, ...(i % 12 === 11 ? [`${i}.`] : []));
  return `Request ${nonce}. Continue this text:\n${words.slice(0, Math.max(8, tokens - 16)).join(" ")}`;
}

const median = (xs: number[]): number | null => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round1 = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);

async function oneRequest(o: BenchOptions, promptTokens: number, maxTokens: number, timeoutMs: number): Promise<One> {
  const own = ["llama.cpp", "vllm", "sglang"].includes(o.engine);
  const body: Record<string, unknown> = {
    model: o.model,
    messages: [{ role: "user", content: benchPrompt(promptTokens) }],
    max_tokens: maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...(own ? { ignore_eos: true } : {}),
    ...(o.engine === "llama.cpp" ? { cache_prompt: false } : {}),
  };
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
  const onAbort = () => ctl.abort(o.signal?.reason);
  o.signal?.addEventListener("abort", onAbort);
  let t0 = performance.now();
  let tFirst: number | null = null;
  let tLast: number | null = null;
  let chunks = 0;
  let usage = null as { prompt_tokens?: number; completion_tokens?: number } | null;
  let timings = null as { prompt_n?: number; prompt_per_second?: number; predicted_n?: number; predicted_per_second?: number } | null;
  let bytes = 0;
  try {
    const post = () =>
      fetch(`${o.url.replace(/\/+$/, "")}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(o.key ? { authorization: `Bearer ${o.key}` } : {}) },
        body: JSON.stringify(body),
        signal: ctl.signal,
      });
    let res: Response;
    try {
      res = await post();
    } catch (e) {
      // A kept-alive connection the server closed while idle (llama-server closes them) fails the request sent on it at
      // once, before any answer: sent again, on a fresh connection, and timed from there. It was counted failed ("1 of
      // 10 requests failed (the first: UND_ERR_SOCKET)", seen in CI against the real llama-server).
      if (ctl.signal.aborted || !STALE_CONNECTION.test((e as { cause?: { code?: string } }).cause?.code ?? "")) throw e;
      t0 = performance.now();
      res = await post();
    }
    if (!res.ok || !res.body) {
      // An error answer is read to 64 KiB at most (its first 200 characters are shown).
      const text = (await readBounded(res, `${o.url}/chat/completions`, 64 * 1024).catch(() => "")).slice(0, 200);
      return failed(`HTTP ${res.status} ${text}`);
    }
    const counted = (async function* () {
      for await (const b of res.body as unknown as AsyncIterable<Uint8Array>) {
        bytes += b.length;
        if (bytes > 4 * 2 ** 20) throw new Error("the stream passed 4 MiB");
        yield b;
      }
    })();
    for await (const data of sseData(counted)) {
      if (data === "[DONE]") break;
      let j: {
        choices?: { delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null; tool_calls?: unknown } }[];
        usage?: { prompt_tokens?: number; completion_tokens?: number };
        timings?: { prompt_n?: number; prompt_per_second?: number; predicted_n?: number; predicted_per_second?: number };
        error?: { message?: string };
      };
      try {
        j = JSON.parse(data);
      } catch {
        continue;
      }
      if (j.error) throw new Error(j.error.message ?? "an error event in the stream");
      const d = j.choices?.[0]?.delta;
      if (d && (d.content || d.reasoning_content || d.reasoning || d.tool_calls)) {
        const now = performance.now();
        tFirst ??= now;
        tLast = now;
        chunks++;
      }
      if (j.usage) usage = j.usage;
      if (j.timings) timings = j.timings;
    }
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    return failed(ctl.signal.aborted ? String((ctl.signal.reason as Error)?.message ?? "aborted") : (err.cause?.code ?? err.message));
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener("abort", onAbort);
  }
  const prompt = usage?.prompt_tokens ?? timings?.prompt_n ?? null;
  const completion = usage?.completion_tokens ?? timings?.predicted_n ?? chunks;
  if (timings && (timings.predicted_per_second ?? 0) > 0) {
    return {
      ok: true,
      promptTokens: prompt,
      completionTokens: completion,
      prefillTps: timings.prompt_per_second && timings.prompt_per_second > 0 ? timings.prompt_per_second : null,
      decodeTps: timings.predicted_per_second!,
      fromTimings: true,
    };
  }
  if (tFirst === null || tLast === null)
    return { ok: false, promptTokens: prompt, completionTokens: 0, prefillTps: null, decodeTps: null, fromTimings: false, error: "no tokens came back" };
  const ttft = (tFirst - t0) / 1000;
  const decodeSec = (tLast - tFirst) / 1000;
  return {
    ok: true,
    promptTokens: prompt,
    completionTokens: completion,
    prefillTps: prompt && ttft > 0 ? prompt / ttft : null,
    decodeTps: completion > 1 && decodeSec > 0 ? (completion - 1) / decodeSec : null,
    fromTimings: false,
  };
}

const wholeOrNull = (x: number | null) => (x === null ? null : Math.round(x));

/** Runs the benchmark; never throws for a server that fails requests (they are counted), only for an abort. */
export async function benchmarkEndpoint(o: BenchOptions): Promise<TargetBench> {
  const budgetMs = (o.budgetSec ?? benchBudgetSec()) * 1000;
  const ctx = o.perSlotCtx ?? 4096;
  const maxTokens = o.maxTokens ?? Math.max(16, Math.min(128, Math.floor(ctx / 8)));
  // ≈ 1–1.6 tokens a word by vocabulary: a quarter of the context keeps prompt + answer inside one slot
  const promptTokens = o.promptTokens ?? Math.max(32, Math.min(1024, Math.floor(ctx / 4)));
  const slots = Math.max(1, o.slots);
  // a request may take longer than the budget on a slow machine (one always runs), but not forever
  const timeoutMs = o.minTimeoutMs ?? Math.max(60_000, budgetMs * 2);
  /** The slowest single-stream request, ms: what a round of N streams at once is given time by. */
  let slowestSingleMs = 0;
  const t0 = performance.now();
  const elapsed = () => performance.now() - t0;
  const all: One[] = [];
  const single: One[] = [];
  let n = 0;
  // one stream alone: until a third of the budget is spent (at least one request, at most 5); with one slot that is all
  // there is to measure, so the whole budget (a "round" of one stream would measure the same again)
  const oneSlot = slots === 1;
  do {
    if (o.signal?.aborted) throw o.signal.reason;
    const t = performance.now();
    const r = await oneRequest(o, promptTokens, maxTokens, timeoutMs);
    if (r.ok) slowestSingleMs = Math.max(slowestSingleMs, performance.now() - t);
    single.push(r);
    all.push(r);
    o.onProgress?.(++n, `1 stream: ${r.ok ? `${round1(r.decodeTps)} tokens/s` : r.error}`);
  } while (single.length < 5 && elapsed() < (oneSlot ? budgetMs : budgetMs / 3));
  // N streams at once: rounds until the budget is spent (at least one, at most 5); one slot: each request alone is a round
  const rounds: One[][] = oneSlot ? single.map((r) => [r]) : [];
  // N streams at once take up to N times one alone where the machine runs them one after another (a CPU shared with other
  // work: two llama-servers of 2 threads each on 2 cores took 9 times as long a round): each stream of a round is given
  // three times that (at most 10 minutes), never less than one request alone. At 60 s a slow but working server's round
  // read "no answer", and nothing was measured with N streams.
  const roundTimeoutMs = Math.max(timeoutMs, Math.min(600_000, Math.ceil(slowestSingleMs * slots * 3)));
  if (!oneSlot)
    do {
      if (o.signal?.aborted) throw o.signal.reason;
      const rs = await Promise.all(Array.from({ length: slots }, () => oneRequest(o, promptTokens, maxTokens, roundTimeoutMs)));
      rounds.push(rs);
      all.push(...rs);
      n += rs.length;
      o.onProgress?.(n, `${slots} streams: ${rs.filter((r) => r.ok).length} answered`);
    } while (rounds.length < 5 && elapsed() < budgetMs);
  const ok = (rs: One[]) => rs.filter((r) => r.ok);
  const okSingle = ok(single);
  // a round counts when every stream of it answered: its streams ran side by side
  const fullRounds = rounds.filter((rs) => ok(rs).length === rs.length);
  const perRoundTotal = fullRounds.map((rs) => rs.reduce((a, r) => a + (r.decodeTps ?? 0), 0));
  const perStream = fullRounds.flatMap((rs) => rs.map((r) => r.decodeTps).filter((x): x is number => x !== null));
  const decodeTpsPerStreamN = round1(median(perStream));
  const bench: TargetBench = {
    at: new Date().toISOString(),
    sec: Math.round(elapsed() / 100) / 10,
    // a whole number of tokens: the median of an even count may fall between two
    promptTokens: wholeOrNull(
      median(
        ok(all)
          .map((r) => r.promptTokens)
          .filter((x): x is number => x !== null),
      ),
    ),
    maxTokens,
    prefillTps1: round1(median(okSingle.map((r) => r.prefillTps).filter((x): x is number => x !== null))),
    decodeTps1: round1(median(okSingle.map((r) => r.decodeTps).filter((x): x is number => x !== null))),
    slots,
    decodeTpsN: round1(median(perRoundTotal)),
    decodeTpsPerStreamN,
    prefillTpsN: round1(median(fullRounds.flatMap((rs) => rs.map((r) => r.prefillTps).filter((x): x is number => x !== null)))),
    source: ok(all).length && ok(all).every((r) => r.fromTimings) ? "timings" : "stream",
    requests: all.length,
    failed: all.length - ok(all).length,
    warning: null,
  };
  bench.warning = benchWarning(bench, all.find((r) => !r.ok)?.error);
  return bench;
}

/**
 * The warning a benchmark earns, or null: nothing measured; else requests that failed among answered ones (the figures
 * leave them out, and a server that fails some requests fails some workers' turns too), and too slow per stream at full load.
 */
function benchWarning(b: Pick<TargetBench, "decodeTpsPerStreamN" | "decodeTps1" | "slots" | "requests" | "failed">, firstError?: string): string | null {
  if (b.decodeTpsPerStreamN === null)
    return `nothing was measured${b.slots > 1 ? ` with ${b.slots} streams at once` : ""} (${b.failed} of ${b.requests} requests failed${firstError ? `: ${firstError.slice(0, 160)}` : ""})`;
  const said: string[] = [];
  if (b.failed > 0)
    said.push(
      `${b.failed} of ${b.requests} requests failed${firstError ? ` (the first: ${firstError.slice(0, 160)})` : ""}; the figures are of those that answered`,
    );
  if (b.decodeTpsPerStreamN < MIN_AGENT_TOK_PER_SEC)
    said.push(
      `measured ${b.decodeTpsPerStreamN} tokens/s ${b.slots > 1 ? `per stream with all ${b.slots} slots busy` : "with its one slot busy"} (under ${MIN_AGENT_TOK_PER_SEC}): too slow for agents — a worker's turn writes hundreds of tokens; use fewer slots, a smaller or MoE model, or a GPU`,
    );
  return said.length ? said.join("; ") : null;
}

/** One line for people: `ocw setup`, `ocw targets`, the wizard (shared/target.ts). */
export const benchLine = benchText;
