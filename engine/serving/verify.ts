/**
 * Verify a serving endpoint, each check with evidence:
 *  reachable  — a real chat completion with the key
 *  auth       — the same request without the key is refused (401/403), with it succeeds
 *  slots      — llama.cpp: /props total_slots ≥ N and per-slot n_ctx ≥ the intended context (the c/N trap fails here);
 *               other engines: what they expose
 *  concurrency— N simultaneous streamed requests overlap in wall time (overlap factor = N·t1 / t_N)
 *  capability — a small coding task, executed and checked (a model that answers "hello" cannot pass)
 *  reasoning  — the model's thinking stays out of `content` (no `<think>…</think>` in the answers): a server without
 *               the family's reasoning parser is cannot-build, with the flag to add
 *  tools      — a tool-call round trip with OpenCode's tool schemas (tool-probe.ts): a server that refuses `tools`
 *               (llama-server --no-jinja) or returns calls as text fails with cannot-build; a model that does not call
 *               the tool or ignores its result makes the target underpowered
 * Context: llama.cpp per slot from /props and /slots; ollama from /api/ps (`context_length` of the loaded model: its
 * default is 4096 below 24 GiB of VRAM, too small for OpenCode's first request); LM Studio from /api/v0/models
 * (`loaded_context_length`). For ollama and LM Studio a context below WORKER_MIN_CTX fails even when none was asked.
 * Outcome: built (all pass), underpowered (reachable, slots ok, but capability, concurrency or the model's tool
 * use fails), cannot-build (otherwise).
 */
import vm from "node:vm";
import type { TargetCheck } from "../../shared/target";
import { authHeaders, httpJson, isLoopback, serverRoot, streamTimed } from "./http";
import { sseData } from "../net";
import { toolRoundTrip } from "./tool-probe";
import { classifyFailure, explainChatFailure, providerError, streamedFailure } from "./provider-errors";
import { counted } from "../../shared/words";

/**
 * The least context a worker can run in: OpenCode's first request is ≈ 4.9k tokens with its 8 tools and its output
 * limit is 8,192. Checked for servers whose default is below it without the person choosing (ollama, LM Studio).
 */
const WORKER_MIN_CTX = 16384;

/**
 * OpenCode's first request with our agent, in tokens: measured by test/integration/setup-first-request.test.ts (a real
 * opencode worker against the scripted model: 9 tools, messages 2,869 + tool schemas 17,840 characters ≈ 5,917 tokens
 * at 3.5 characters per token — what BPE tokenizers give for English and JSON, the safe end), rounded up to 6,144. A slot with less context than this plus room for the
 * first answer (FIRST_ANSWER_TOKENS) cannot take a worker's first turn at all: cannot-build, whatever was asked.
 */
export const OPENCODE_FIRST_REQUEST_TOKENS = 6144;
export const FIRST_ANSWER_TOKENS = 1024;
export const MIN_SLOT_CTX = OPENCODE_FIRST_REQUEST_TOKENS + FIRST_ANSWER_TOKENS;

export type Outcome = "built" | "underpowered" | "cannot-build";

/** The endpoint verify and the benchmark (bench.ts) send their requests to. */
export interface ServedEndpoint {
  /** OpenAI-compatible base URL (…/v1, or the server root; an API provider's as given, e.g. …/v1beta/openai). */
  url: string;
  model: string;
  key: string | null;
  /** Which runtime answers (llama.cpp, vllm, sglang, ollama, lmstudio …, or "api" for a provider): what it is asked depends on it. */
  engine: string;
  slots: number;
  /** Intended context per slot; null = unknown (verify does not check it; the benchmark assumes 4,096). */
  perSlotCtx: number | null;
}

interface VerifyInput extends ServedEndpoint {
  /** llama.cpp-only request extensions allowed (ignore_eos, grammar, chat_template_kwargs). */
  llamaExtensions?: boolean;
  timeoutMs?: number;
  /** Tokens per request in the concurrency probe. */
  concurrencyTokens?: number;
  /** Run the tool-call round trip (default true). */
  tools?: boolean;
  /**
   * llama.cpp with N > 1 slots: send N long requests at once (each filling the per-slot context, up to
   * POOL_CHECK_MAX_TOKENS) to prove the KV pool holds them all (default true).
   */
  poolCheck?: boolean;
  /** Where the key came from, for a refused key's "check …" (e.g. "the value of OPENAI_API_KEY"). */
  keyHint?: string;
  /** Called as each check completes (the wizard's live checklist). */
  onCheck?: (check: TargetCheck, done: TargetCheck[]) => void;
}

export interface VerifyResult {
  outcome: Outcome;
  checks: TargetCheck[];
  /** Slot facts the server exposed. */
  observed: { totalSlots: number | null; perSlotCtx: number | null; overlap: number | null };
  summary: string;
}

type Chat = { choices?: { message?: { content?: string; reasoning_content?: string } }[]; error?: { message?: string } };

/** Thinking markers that must never reach `content`: <think>…</think> (Qwen3, GLM, DeepSeek) and harmony's analysis channel. */
const THINKING_IN_CONTENT = /<\/?think>|<\|channel\|>\s*analysis/;

const CAPABILITY_TASK = [
  "Write a JavaScript function named sumOfSquares(n) that returns 1*1 + 2*2 + ... + n*n for a non-negative integer n",
  "(0 for n = 0). Reply with only the code in one ```js code block, no explanation.",
].join(" ");

/** Extracts the code of the first fenced block (or the whole text when there is none). */
export function extractCode(text: string): string {
  const m = /```(?:[a-zA-Z]*)\n([\s\S]*?)```/.exec(text);
  return (m ? m[1]! : text).trim();
}

/** How long the model's answer may run, each call (a loop that never ends is a failed answer). */
export const CAPABILITY_RUN_MS = 1000;

/** Runs the answer in a bare VM context (no require, no process, CAPABILITY_RUN_MS a call) and checks it. */
export function checkCapabilityAnswer(text: string, limitMs = CAPABILITY_RUN_MS): { passed: boolean; evidence: string } {
  const code = extractCode(text);
  if (!code) return { passed: false, evidence: "empty answer" };
  const cases: [number, number][] = [
    [0, 0],
    [1, 1],
    [3, 14],
    [10, 385],
    [25, 5525],
  ];
  try {
    const ctx = vm.createContext(Object.create(null));
    vm.runInContext(`${code}\n;globalThis.__f = typeof sumOfSquares === "function" ? sumOfSquares : undefined;`, ctx, { timeout: limitMs });
    const f = (ctx as { __f?: (n: number) => unknown }).__f;
    if (typeof f !== "function") return { passed: false, evidence: `no function sumOfSquares in the answer (${JSON.stringify(code.slice(0, 80))}…)` };
    for (const [n, want] of cases) {
      const got = vm.runInContext(`__f(${n})`, ctx, { timeout: limitMs });
      if (got !== want) return { passed: false, evidence: `sumOfSquares(${n}) returned ${JSON.stringify(got)}, expected ${want}` };
    }
    return { passed: true, evidence: `sumOfSquares passed ${cases.length}/${cases.length} held-back cases` };
  } catch (e) {
    return { passed: false, evidence: `answer does not run: ${(e as Error).message.split("\n")[0]} (${JSON.stringify(code.slice(0, 60))}…)` };
  }
}

/**
 * The pool check fills every slot to its whole context at once (N × ctx tokens of prefill): a pool that holds less
 * fails, whatever /props says. (It used to stop at 16k per request, which passed a 65,536-token pool asked for
 * 4 × 32,768.) It costs N × ctx tokens of prompt processing once per setup.
 */
const POOL_UNIT = "The build runs every test in the repository and reports each failure with its file and line. ";

/**
 * N requests at once, each with a prompt of about `ctx` tokens (less the answer and a margin for the chat template),
 * measured with the server's /tokenize. passed: null when it could not be run (no /tokenize).
 */
async function poolCheck(o: {
  root: string;
  chatUrl: string;
  key: string | null;
  model: string;
  n: number;
  ctx: number;
  ext: boolean;
  timeoutMs: number;
}): Promise<{ passed: boolean | null; evidence: string }> {
  const headers = authHeaders(o.key);
  const tok = await httpJson<{ tokens?: unknown[] }>(`${o.root}/tokenize`, { headers, body: { content: POOL_UNIT }, timeoutMs: 10_000 });
  const perUnit = Array.isArray(tok.body?.tokens) ? tok.body.tokens.length : 0;
  if (!perUnit) return { passed: null, evidence: `not checked: /tokenize → ${tok.status || tok.error}` };
  const maxTokens = 8;
  const fill = o.ctx - maxTokens - 160;
  const units = Math.max(1, Math.floor(fill / perUnit));
  const t0 = performance.now();
  const runs = await Promise.all(
    Array.from({ length: o.n }, (_, i) =>
      httpJson<{ usage?: { prompt_tokens?: number }; error?: { message?: string } }>(o.chatUrl, {
        headers,
        timeoutMs: o.timeoutMs,
        // a different first line per request: no two requests share a cached prefix
        body: {
          model: o.model,
          messages: [{ role: "user", content: `Request ${i + 1} of ${o.n} (${Math.random().toString(36).slice(2)}). Reply OK.\n${POOL_UNIT.repeat(units)}` }],
          max_tokens: maxTokens,
          temperature: 0,
          cache_prompt: false,
          ...(o.ext ? { grammar: "root ::= [a-zA-Z .,]+", chat_template_kwargs: { enable_thinking: false } } : {}),
        },
      }),
    ),
  );
  const secs = ((performance.now() - t0) / 1000).toFixed(1);
  const prompt = Math.max(...runs.map((r) => r.body?.usage?.prompt_tokens ?? 0)) || units * perUnit;
  const failed = runs.filter((r) => r.status !== 200);
  if (!failed.length) return { passed: true, evidence: `${o.n} requests × ${prompt} prompt tokens at once (${o.n * prompt} cells) all answered in ${secs} s` };
  const why = failed[0]!.body?.error?.message ?? (failed[0]!.text.slice(0, 120) || failed[0]!.error || `HTTP ${failed[0]!.status}`);
  return {
    passed: false,
    evidence:
      `${o.n} requests × ${prompt} prompt tokens at once: ${failed.length} of ${o.n} failed (${failed[0]!.status || "no answer"}: ${why}) in ${secs} s — the server's KV pool holds fewer than ${o.n} × ${o.ctx} tokens at once ` +
      `(with --kv-unified, -c is one pool shared by all slots): start it with -c ${o.n * o.ctx} -np ${o.n} --kv-unified, or use fewer slots`,
  };
}

/** Why a slot of this context cannot take a worker at all (below OpenCode's first request + its answer), or null. */
function minSlotProblem(ctx: number | null): string | null {
  if (ctx === null || ctx >= MIN_SLOT_CTX) return null;
  return `${ctx} tokens per slot is less than OpenCode's first request needs (≈ ${OPENCODE_FIRST_REQUEST_TOKENS} tokens with our agent, plus ${FIRST_ANSWER_TOKENS} for its answer): no worker can start — give each slot at least 32768 (llama-server -c <slots × 32768> -np <slots> --kv-unified)`;
}

/**
 * "Say OK." as OpenCode asks (no chat_template_kwargs, no grammar), streamed and cut short as soon as it tells: the
 * first thinking delta apart from the content (a parser is on), or a thinking marker in the content (none is). A
 * thinking model would otherwise think up to max_tokens first — minutes on a CPU.
 */
async function thinkingProbe(
  chatUrl: string,
  key: string | null,
  model: string,
  timeoutMs: number,
): Promise<{ content: string; reasoning: string; error: string | null }> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  const out = { content: "", reasoning: "", error: null as string | null };
  try {
    const res = await fetch(chatUrl, {
      method: "POST",
      headers: { "content-type": "application/json", ...authHeaders(key) },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Say OK." }], max_tokens: 512, temperature: 0, stream: true }),
      signal: ctl.signal,
    });
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return { ...out, error: `HTTP ${res.status}` };
    }
    for await (const data of sseData(res.body)) {
      if (data === "[DONE]") break;
      let j: {
        choices?: { delta?: { content?: string | null; reasoning_content?: string | null; reasoning?: string | null } }[];
        error?: { message?: string };
      };
      try {
        j = JSON.parse(data);
      } catch {
        continue;
      }
      if (j.error) return { ...out, error: j.error.message ?? "an error event in the stream" };
      const d = j.choices?.[0]?.delta;
      out.content += d?.content ?? "";
      out.reasoning += d?.reasoning_content ?? d?.reasoning ?? "";
      if (out.reasoning || THINKING_IN_CONTENT.test(out.content)) break;
    }
    return out;
  } catch (e) {
    return { ...out, error: ctl.signal.aborted ? `no answer within ${Math.round(timeoutMs / 1000)} s` : (e as Error).message };
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
}

export function overlapFactor(singleMs: number, wallMs: number, n: number): number {
  return wallMs > 0 ? (n * singleMs) / wallMs : 0;
}

/**
 * An underpowered verdict in words, with what would lift it where the model runs: a model of one's own (a larger model,
 * more VRAM, a higher quant, or an API provider), or an API provider's (engine "api": another of its models, or another
 * provider; "more VRAM" or "an API provider" told a person who had just set one up nothing they could do).
 */
export function underpoweredSummary(failed: "capability" | "concurrency" | "tools", evidence: string, engine: string): string {
  const api = engine === "api";
  if (failed === "capability")
    return `reachable but failed the coding task (${evidence}); ${api ? "a stronger coding model of this provider, or another provider," : "a larger or better coding model, more VRAM, or an API provider"} would lift it`;
  if (failed === "concurrency")
    return `requests do not overlap (${evidence}); ${api ? "fewer slots: this provider does not serve that many requests of this key at once" : "fewer slots or a stronger machine"}`;
  return `the model does not use tools reliably (${evidence}); ${api ? "a model of this provider (or another) whose tool calling is verified" : "a model whose tool calling is verified, a higher quant, or an API provider"}`;
}

export async function verifyEndpoint(v: VerifyInput): Promise<VerifyResult> {
  const root = serverRoot(v.url);
  // An API provider's base URL is used as given: not every one ends in /v1 (Gemini's …/v1beta/openai, Azure's
  // …/openai/v1, OpenRouter's …/api/v1); a server of one's own may be given by its root, where /v1 is its API.
  const apiBase = v.engine === "api" || /\/v1$/.test(v.url.replace(/\/+$/, "")) ? v.url.replace(/\/+$/, "") : `${root}/v1`;
  const chatUrl = `${apiBase}/chat/completions`;
  const timeoutMs = v.timeoutMs ?? 120_000;
  const ext = v.llamaExtensions ?? v.engine === "llama.cpp";
  const checks: TargetCheck[] = [];
  // a provider that echoes the key it refused: never repeated (checks reach the CLI, the GUI and the saved target)
  const redact = (text: string) => (v.key && v.key.length >= 8 ? text.replaceAll(v.key, "<the key>") : text);
  // every check is reported the moment it completes
  const add = (c: TargetCheck) => {
    const said = { ...c, evidence: redact(c.evidence) };
    checks.push(said);
    v.onCheck?.(said, [...checks]);
  };
  const observed: VerifyResult["observed"] = { totalSlots: null, perSlotCtx: null, overlap: null };
  // the checks whose requests a provider answered 429: a rate limit, which says nothing of the model or the machine
  const rateLimited = new Set<string>();
  // the checks whose requests the provider failed otherwise (overloaded, down, out of credit …), in words: the model
  // was not judged, so never "underpowered"
  const providerFailed: { check: string; why: string }[] = [];
  /** A failed answer (a status, or an error inside a 200) named as provider-errors.ts reads it; a 429 counts apart. */
  const failedBy = (check: string, res: { status: number; body: unknown; text: string; headers?: Headers }): string => {
    const why = explainChatFailure(res, { chatUrl, model: v.model, keyHint: v.keyHint ?? null });
    const { message, code } = providerError(res.body, res.text);
    if (classifyFailure({ status: res.status, code, message }) === "rate-limit") rateLimited.add(check);
    else providerFailed.push({ check, why });
    return why;
  };
  // OpenAI's reasoning models (o1, o3, o4, gpt-5) take only their default temperature: asked again without one
  let temperature = true;
  const base = (extra: Record<string, unknown> = {}) => ({
    model: v.model,
    messages: [{ role: "user", content: "Say OK." }],
    max_tokens: 8,
    ...(temperature ? { temperature: 0 } : {}),
    ...(ext ? { grammar: "root ::= [a-zA-Z .,]+", chat_template_kwargs: { enable_thinking: false } } : {}),
    ...extra,
  });

  // reachable
  // a redirect is said, not followed: fetch would resend a POST as a GET (http → https) or drop the key on the way
  const ask = () => httpJson<Chat>(chatUrl, { headers: authHeaders(v.key), body: base(), timeoutMs, redirect: "manual" });
  let r = await ask();
  const refusedTemperature = (x: typeof r) => {
    const { message, code } = providerError(x.body, x.text);
    return classifyFailure({ status: x.status, code, message }) === "temperature";
  };
  if (refusedTemperature(r)) {
    temperature = false;
    r = await ask();
  }
  const reachable = r.status === 200 && Array.isArray(r.body?.choices);
  // why not, in words: the key, the credit, the model id, the URL, a rate limit or the provider (provider-errors.ts);
  // an error in a 200 body (a router's) as its status-code form
  const failure = reachable
    ? null
    : redact(explainChatFailure({ ...r, ...(r.status === 200 ? streamedFailure(r.body) : null) }, { chatUrl, model: v.model, keyHint: v.keyHint ?? null }));
  const noTemperature = temperature ? "" : " (asked again without temperature: the model takes only its default)";
  add({ name: "reachable", passed: reachable, evidence: failure ?? `POST ${chatUrl} → 200 in ${Math.round(r.ms)} ms${noTemperature}` });
  if (failure) return { outcome: "cannot-build", checks, observed, summary: `no chat completion: ${failure}` };

  // auth
  if (v.key) {
    const noKey = await httpJson(chatUrl, { body: base(), timeoutMs });
    const wrong = await httpJson(chatUrl, { headers: authHeaders("wrong-key"), body: base(), timeoutMs });
    // 401/403, or a refusal of the key by another status: Gemini answers a wrong key 400 API_KEY_INVALID
    const refused = (x: typeof noKey) => {
      const { message, code } = providerError(x.body, x.text);
      return x.status === 401 || x.status === 403 || (x.status >= 400 && classifyFailure({ status: x.status, code, message }) === "key");
    };
    const ok = refused(noKey) && refused(wrong);
    add({ name: "auth", passed: ok, evidence: `without key → ${noKey.status}, wrong key → ${wrong.status}, with key → 200` });
  } else if (isLoopback(root)) {
    // a server only this machine can reach, without a key: nothing to refuse — not a failed check
    add({ name: "auth", passed: true, evidence: "no key (loopback only): the endpoint listens on this machine only and takes requests without a key" });
  } else {
    add({
      name: "auth",
      passed: false,
      evidence: "no key configured: the endpoint accepts unauthenticated requests from the network — start it with an API key and name its variable",
    });
  }

  // slots
  if (v.engine === "llama.cpp") {
    const props = await httpJson<{ total_slots?: number; default_generation_settings?: { n_ctx?: number } }>(`${root}/props`, {
      headers: authHeaders(v.key),
      timeoutMs: 10000,
      keep: { total_slots: true, default_generation_settings: { n_ctx: true } },
    });
    const slotsRes = await httpJson<{ id: number; n_ctx: number }[]>(`${root}/slots`, {
      headers: authHeaders(v.key),
      timeoutMs: 10000,
      keep: [{ id: true, n_ctx: true }],
    });
    const total = props.body?.total_slots ?? null;
    const perSlot = props.body?.default_generation_settings?.n_ctx ?? null;
    observed.totalSlots = total;
    observed.perSlotCtx = perSlot;
    const slotCtxs = Array.isArray(slotsRes.body) ? slotsRes.body.map((s) => s.n_ctx) : [];
    const okSlots = total !== null && total >= v.slots;
    const okCtx = v.perSlotCtx === null || (perSlot !== null && perSlot >= v.perSlotCtx && slotCtxs.every((c) => c >= v.perSlotCtx!));
    let evidence =
      `/props total_slots=${total} (want ≥ ${v.slots}), per-slot n_ctx=${perSlot}${v.perSlotCtx ? ` (want ≥ ${v.perSlotCtx})` : ""}; /slots n_ctx=[${slotCtxs.join(",")}]` +
      (!okCtx && perSlot !== null && v.perSlotCtx !== null ? " — each slot gets less than intended (split KV: c/N)" : "");
    let okPool = true;
    // A unified KV pool reports its whole size as every slot's n_ctx: only N long requests at once show whether it
    // holds N slots × the context (llama-server answers "Context size has been exceeded" to every request otherwise).
    if (okSlots && okCtx && v.slots > 1 && perSlot !== null && v.poolCheck !== false) {
      const want = v.perSlotCtx ?? perSlot;
      let pool = await poolCheck({ root, chatUrl, key: v.key, model: v.model, n: v.slots, ctx: want, ext, timeoutMs: Math.max(timeoutMs, 600_000) });
      if (pool.passed === false && v.perSlotCtx === null) {
        // nothing was asked: what each of the N slots can count on is the pool shared N ways
        const share = Math.floor(perSlot / v.slots / 256) * 256;
        const again =
          share >= 1024
            ? await poolCheck({ root, chatUrl, key: v.key, model: v.model, n: v.slots, ctx: share, ext, timeoutMs: Math.max(timeoutMs, 600_000) })
            : null;
        if (again?.passed) {
          observed.perSlotCtx = share;
          pool = {
            passed: true,
            evidence: `${again.evidence}; at the reported ${perSlot} per slot: ${pool.evidence.replace(/ — .*$/, "")} — one KV pool of ${perSlot} shared by ${v.slots} slots: each worker is given ${share}`,
          };
        }
      }
      if (pool.passed === null && v.perSlotCtx === null) {
        // the pool could not be exercised: a unified pool is shared, so each slot counts on pool ÷ N
        const share = Math.floor(perSlot / v.slots / 256) * 256;
        observed.perSlotCtx = share;
        pool = {
          passed: null,
          evidence: `${pool.evidence}; one KV pool may be shared by the ${v.slots} slots: each worker is given ${perSlot} ÷ ${v.slots} = ${share}`,
        };
      }
      okPool = pool.passed !== false;
      // what was proven for N slots at once: the asked context (a unified pool reports its whole size per slot)
      if (pool.passed && v.perSlotCtx !== null && perSlot > v.perSlotCtx) observed.perSlotCtx = v.perSlotCtx;
      evidence += `; pool: ${pool.evidence}`;
    }
    const floor = minSlotProblem(observed.perSlotCtx ?? perSlot);
    if (floor) evidence += `; ${floor}`;
    add({ name: "slots", passed: okSlots && okCtx && okPool && !floor, evidence });
  } else if (v.engine === "ollama" || v.engine === "lmstudio") {
    // the context the loaded model really has (the reachable request above loaded it)
    let ctx: number | null = null;
    let where: string;
    if (v.engine === "ollama") {
      const ps = await httpJson<{ models?: { name?: string; model?: string; context_length?: number }[] }>(`${root}/api/ps`, {
        timeoutMs: 10000,
        keep: { models: [{ name: true, model: true, context_length: true }] },
      });
      const m =
        ps.body?.models?.find((x) => x.name === v.model || x.model === v.model || x.name === `${v.model}:latest`) ??
        (ps.body?.models?.length === 1 ? ps.body.models[0] : undefined);
      ctx = typeof m?.context_length === "number" ? m.context_length : null;
      where =
        ps.status !== 200
          ? `/api/ps → ${ps.status || ps.error}`
          : !m
            ? `/api/ps does not list ${v.model} as loaded`
            : ctx === null
              ? "/api/ps lists no context_length (ollama older than 0.12?)"
              : `/api/ps context_length ${ctx}`;
    } else {
      const lm = await httpJson<{ data?: { id: string; state?: string; loaded_context_length?: number; max_context_length?: number }[] }>(
        `${root}/api/v0/models`,
        { headers: authHeaders(v.key), timeoutMs: 10000, keep: { data: [{ id: true, state: true, loaded_context_length: true, max_context_length: true }] } },
      );
      const m = lm.body?.data?.find((x) => x.id === v.model);
      ctx = typeof m?.loaded_context_length === "number" ? m.loaded_context_length : null;
      where =
        lm.status !== 200
          ? `/api/v0/models → ${lm.status || lm.error}`
          : !m
            ? `/api/v0/models does not list ${v.model}`
            : ctx === null
              ? `${v.model} is not loaded (no loaded_context_length)`
              : `/api/v0/models loaded_context_length ${ctx}`;
    }
    observed.perSlotCtx = ctx;
    const want = v.perSlotCtx ?? WORKER_MIN_CTX;
    const ok = ctx !== null && ctx >= want;
    const fix =
      v.engine === "ollama"
        ? "set OLLAMA_CONTEXT_LENGTH (e.g. 32768) in ollama's environment and restart it, or a num_ctx PARAMETER in a Modelfile"
        : "load the model in LM Studio with a larger context length (lms load MODEL --context-length 32768)";
    add({
      name: "slots",
      passed: ok,
      evidence:
        `${v.engine}: ${where} (want ≥ ${want}${v.perSlotCtx ? "" : ", what an OpenCode worker needs"}); ${counted(v.slots, "slot")} as configured` +
        (ok ? "" : ` — ${fix}`),
    });
  } else {
    const models = await httpJson<{
      data?: { id: string; max_model_len?: number; meta?: { n_ctx?: number }; context_length?: number; context_window?: number }[];
    }>(`${apiBase}/models`, {
      headers: authHeaders(v.key),
      timeoutMs: 10000,
      // a provider's whole list (OpenRouter's is megabytes, with descriptions); the setup wizard's list reads as much
      maxBytes: 16 * 1024 * 1024,
      keep: { data: [{ id: true, max_model_len: true, meta: { n_ctx: true }, context_length: true, context_window: true }] },
    });
    // a provider lists many models: only the one asked for says anything (a server of one's own serves one)
    const m = models.body?.data?.find((d) => d.id === v.model) ?? (v.engine === "api" ? undefined : models.body?.data?.[0]);
    // vLLM max_model_len, llama.cpp meta.n_ctx, OpenRouter / Together context_length, Groq context_window
    const ctx = [m?.max_model_len, m?.meta?.n_ctx, m?.context_length, m?.context_window].find((x): x is number => typeof x === "number" && x > 0) ?? null;
    observed.perSlotCtx = ctx;
    const okCtx = v.perSlotCtx === null || ctx === null || ctx >= v.perSlotCtx;
    const floor = minSlotProblem(ctx);
    add({
      name: "slots",
      passed: okCtx && !floor,
      evidence:
        (ctx === null
          ? `${v.engine}: no slot or context figures exposed; taking ${counted(v.slots, "slot")} as configured`
          : `${new URL(`${apiBase}/models`).pathname} context ${ctx}${v.perSlotCtx ? ` (want ≥ ${v.perSlotCtx})` : ""}; ${counted(v.slots, "slot")} as configured`) +
        (floor ? `; ${floor}` : ""),
    });
  }

  // concurrency
  if (v.slots <= 1) {
    add({ name: "concurrency", passed: true, evidence: "1 slot: nothing to overlap" });
  } else {
    const n = v.slots;
    const tokens = v.concurrencyTokens ?? 192;
    const body = base({
      max_tokens: tokens,
      messages: [{ role: "user", content: "Count from one to one hundred in words." }],
      ...(ext ? { ignore_eos: true } : {}),
    });
    const headers = authHeaders(v.key);
    // one untimed warm-up (client and server first-use costs)
    await streamTimed(chatUrl, headers, body, performance.now(), timeoutMs);
    const alone = async () => {
      const s = await streamTimed(chatUrl, headers, body, performance.now(), timeoutMs);
      return s.endMs - s.startMs;
    };
    // llama.cpp shows its own view: how many slots it has (/slots lists them) and how many process at once
    const slotsNow = async () => {
      const sl = await httpJson<{ is_processing?: boolean }[]>(`${root}/slots`, { headers, timeoutMs: 5000, keep: [{ is_processing: true }] });
      return Array.isArray(sl.body) ? { listed: sl.body.length, busy: sl.body.filter((x) => x.is_processing).length } : null;
    };
    const before = v.engine === "llama.cpp" ? await slotsNow() : null;
    // One burst of n requests at once, measured against a request alone just before it (interleaved: a loaded machine
    // slows both alike). A second pair is allowed: a server that serializes fails both, a parallel one passes one.
    const burst = async () => {
      const singleMs = await alone();
      const t0 = performance.now();
      let maxBusy: number | null = before ? 0 : null;
      let polling = before !== null;
      const poller = (async () => {
        while (polling) {
          const sl = await slotsNow();
          if (sl) maxBusy = Math.max(maxBusy ?? 0, sl.busy);
          await new Promise((r) => setTimeout(r, 15));
        }
      })();
      const runs = await Promise.all(Array.from({ length: n }, () => streamTimed(chatUrl, headers, body, t0, timeoutMs)));
      polling = false;
      await poller;
      const wall = Math.max(...runs.map((x) => x.endMs));
      const firsts = runs.map((x) => x.firstTokenMs).filter((x): x is number => x !== null);
      const spread = firsts.length ? Math.max(...firsts) - Math.min(...firsts) : Infinity;
      const failed = runs.filter((x) => x.status !== 200 || x.error);
      if (failed.some((x) => x.status === 429)) rateLimited.add("concurrency");
      // an error inside a 200 stream (overloaded, rate-limited …): the provider's failure, named — not slow requests
      const broke = runs.map((x) => streamedFailure(x.streamError)).find(Boolean);
      const brokeWhy = broke ? failedBy("concurrency", broke) : null;
      const factor = overlapFactor(singleMs, wall, n);
      // Served one after another, the k-th first token waits k solo requests: the spread is ≈ (n−1)·t₁.
      // Overlapping requests all start within a fraction of that. (The overlap factor is recorded, not the criterion:
      // batched decode on a small CPU may not be faster in total.)
      const spreadOk = spread < 0.5 * (n - 1) * singleMs;
      // llama.cpp: decided by the server itself, not by timing — it must have n slots, and /slots must show requests
      // processed together (or the first tokens arrive together); fewer slots than requests queue, whatever the clock says
      const slotsOk = before ? before.listed >= n && ((maxBusy ?? 0) >= 2 || spreadOk) : spreadOk;
      const passed = failed.length === 0 && firsts.length === n && slotsOk;
      const evidence =
        `${n} concurrent × ${tokens} tokens: wall ${Math.round(wall)} ms vs ${Math.round(singleMs)} ms alone just before, overlap factor ${factor.toFixed(2)}, first-token spread ${Number.isFinite(spread) ? Math.round(spread) : "∞"} ms` +
        (before ? `, /slots lists ${counted(before.listed, "slot")} and showed ${maxBusy} processing at once` : "") +
        (before && before.listed < n ? ` — ${n} requests cannot run at once on ${counted(before.listed, "slot")}: they queue` : "") +
        (failed.length ? `; ${failed.length} failed (${failed[0]!.status} ${failed[0]!.error ?? ""})` : "") +
        (brokeWhy ? `: the provider's stream broke off with an error — ${brokeWhy}` : "");
      return { passed, factor, evidence, failedRequests: failed.length > 0 };
    };
    let result = await burst();
    if (!result.passed && !result.failedRequests && !(before && before.listed < n)) {
      const second = await burst();
      result = second.passed ? { ...second, evidence: `${second.evidence} (second burst; the first: ${result.evidence})` } : second;
    }
    observed.overlap = Math.round(result.factor * 100) / 100;
    add({ name: "concurrency", passed: result.passed, evidence: result.evidence });
  }

  // capability
  const cap = await httpJson<Chat>(chatUrl, {
    headers: authHeaders(v.key),
    body: {
      model: v.model,
      messages: [{ role: "user", content: CAPABILITY_TASK }],
      max_tokens: 400,
      ...(temperature ? { temperature: 0 } : {}),
      ...(ext ? { chat_template_kwargs: { enable_thinking: false } } : {}),
    },
    timeoutMs,
  });
  let capCheck: { passed: boolean; evidence: string };
  const capError = cap.status === 200 && !Array.isArray(cap.body?.choices) ? streamedFailure(cap.body) : null;
  if (cap.status === 0) capCheck = { passed: false, evidence: `capability request → ${cap.error}` };
  else if (cap.status !== 200 || capError) capCheck = { passed: false, evidence: `capability request: ${failedBy("capability", { ...cap, ...capError })}` };
  else capCheck = checkCapabilityAnswer(cap.body?.choices?.[0]?.message?.content ?? "");
  add({ name: "capability", ...capCheck });

  // reasoning: a thinking model's thoughts belong in reasoning_content; in `content` OpenCode takes them for the answer.
  // The llama.cpp requests above turn thinking off (chat_template_kwargs.enable_thinking: false) and the first one
  // holds the answer to a grammar without '<': neither can show thinking in content. OpenCode sends neither, so one
  // request goes as it would — a server with --reasoning-format none leaves a Qwen3's <think>…</think> in content.
  const plain = ext ? await thinkingProbe(chatUrl, v.key, v.model, timeoutMs) : null;
  const plainOk: Chat | null = plain && !plain.error ? { choices: [{ message: { content: plain.content, reasoning_content: plain.reasoning } }] } : null;
  const answers = [r.body, cap.status === 200 ? cap.body : null, plainOk].map((b) => b?.choices?.[0]?.message?.content ?? "");
  const leak = answers.map((a) => THINKING_IN_CONTENT.exec(a)?.[0]).find(Boolean);
  const hadReasoning = [r.body, cap.body, plainOk].some(
    (b) => !!(b?.choices?.[0]?.message?.reasoning_content || (b?.choices?.[0]?.message as { reasoning?: string } | undefined)?.reasoning),
  );
  add({
    name: "reasoning",
    passed: !leak,
    evidence: leak
      ? `the answer's content holds the model's thinking (${JSON.stringify(leak)} …): the server has no reasoning parser for this model — ${v.engine === "llama.cpp" ? "start llama-server with --jinja and --reasoning-format auto (not none)" : `start ${v.engine} with the family's --reasoning-parser (qwen3 for Qwen3.x, ${v.engine === "vllm" ? "openai_gptoss" : "gpt-oss"} for gpt-oss, glm45 for GLM-4.x)`}`
      : hadReasoning
        ? "thinking returned apart from the answer (reasoning_content)"
        : `no thinking in the answers' content${plain?.error ? ` (the request without chat_template_kwargs → ${plain.error}: not checked that way)` : ""}`,
  });

  // tools: the round trip every worker turn makes
  let toolsBlocking = false;
  if (v.tools !== false) {
    const t = await toolRoundTrip({ chatUrl, model: v.model, key: v.key, llamaExtensions: ext, timeoutMs, maxTokens: ext ? 256 : 1024, temperature });
    toolsBlocking = t.failure === "refused" || t.failure === "parser" || t.failure === "unreachable";
    if (t.rateLimited) rateLimited.add("tools");
    const named = t.streamed ? failedBy("tools", t.streamed) : null;
    add({ name: "tools", passed: t.passed, evidence: named ? `${t.evidence} — ${named}` : t.evidence });
  }

  const by = (n: TargetCheck["name"]) => checks.find((c) => c.name === n)!;
  const authOk = by("auth").passed || (!v.key && isLoopback(root));
  let outcome: Outcome;
  let summary: string;
  if (!by("slots").passed) {
    outcome = "cannot-build";
    summary = `slots check failed: ${by("slots").evidence}`;
  } else if (!authOk) {
    outcome = "cannot-build";
    summary = `auth check failed: ${by("auth").evidence}`;
  } else if (!by("reasoning").passed) {
    outcome = "cannot-build";
    summary = `the model's thinking lands in its answers: ${by("reasoning").evidence}`;
  } else if (rateLimited.size) {
    // not underpowered: the model was not judged (its answers never came), and "a stronger machine" would not help
    outcome = "cannot-build";
    summary = `the provider rate-limited verify's requests (HTTP 429 in ${[...rateLimited].join(", ")}): the model could not be judged — wait a minute and verify again, use a key of a higher usage tier, or save it without verifying`;
  } else if (providerFailed.length) {
    // not underpowered either: the provider failed the requests (overloaded, down, out of credit …), as it said
    outcome = "cannot-build";
    summary = `the model API failed verify's requests (in ${[...new Set(providerFailed.map((f) => f.check))].join(", ")}): the model could not be judged — ${providerFailed[0]!.why}`;
  } else if (toolsBlocking) {
    outcome = "cannot-build";
    summary = `tool calls do not work: ${by("tools").evidence}`;
  } else if (!by("capability").passed || !by("concurrency").passed || checks.some((c) => c.name === "tools" && !c.passed)) {
    outcome = "underpowered";
    const failed = !by("capability").passed ? "capability" : !by("concurrency").passed ? "concurrency" : "tools";
    summary = underpoweredSummary(failed, by(failed).evidence, v.engine);
  } else {
    outcome = "built";
    summary = `verified: ${counted(v.slots, "slot")}${observed.perSlotCtx ? ` × ${observed.perSlotCtx} ctx` : ""}, coding task and tool-call round trip passed`;
  }
  return { outcome, checks, observed, summary: redact(summary) };
}
