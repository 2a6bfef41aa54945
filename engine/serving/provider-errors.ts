/**
 * Why a chat completion an endpoint was asked for failed, in words a person can act on: which of the usual causes it
 * is (the key, the account's credit, the model id, the URL, a rate limit, the provider itself) and what to do next.
 * The providers' own error bodies are read as they document them: OpenAI `{error:{message,type,code}}` (401
 * invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded / insufficient_quota), OpenRouter `{error:{code,message}}`
 * (402 credits), Anthropic `{type:"error",error:{type,message}}` (529 overloaded_error), DeepSeek (402 Insufficient
 * Balance, 422, 503 Server Overloaded), with Retry-After and the x-ratelimit-* headers of a 429.
 */
import type { HttpResult } from "./http";

/** The provider's own error text and code, from any of the documented error shapes (or null). */
export function providerError(body: unknown, text: string): { message: string | null; code: string | null } {
  const b = (body && typeof body === "object" ? body : {}) as { error?: unknown; message?: unknown; detail?: unknown; type?: unknown };
  const e = b.error;
  if (e && typeof e === "object") {
    const o = e as { message?: unknown; code?: unknown; type?: unknown };
    const message = typeof o.message === "string" ? o.message : null;
    const code = typeof o.code === "string" ? o.code : typeof o.type === "string" ? o.type : null;
    return { message, code };
  }
  if (typeof e === "string") return { message: e, code: null };
  if (typeof b.message === "string") return { message: b.message, code: null };
  if (typeof b.detail === "string") return { message: b.detail, code: null };
  // not JSON: a web page or a proxy's text
  const plain = text
    .replace(/<[^>]*>/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return { message: plain ? plain.slice(0, 160) : null, code: null };
}

/** Seconds a 429 or 503 asks to wait (Retry-After in seconds or as a date; retry-after-ms), or null. */
export function retryAfterSec(headers: Headers | undefined, now = Date.now()): number | null {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms / 1000);
  const ra = headers?.get("retry-after");
  if (!ra) return null;
  const s = Number.parseFloat(ra);
  if (Number.isFinite(s) && s >= 0) return Math.ceil(s);
  const at = Date.parse(ra);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : null;
}

/** What a 429's x-ratelimit-* headers say (OpenAI, Groq, Together), e.g. "0 of 3 requests left, reset in 20s". */
function rateLimitHeaders(headers: Headers | undefined): string | null {
  if (!headers) return null;
  const parts: string[] = [];
  for (const unit of ["requests", "tokens"]) {
    const limit = headers.get(`x-ratelimit-limit-${unit}`);
    const left = headers.get(`x-ratelimit-remaining-${unit}`);
    const reset = headers.get(`x-ratelimit-reset-${unit}`);
    if (limit === null && left === null) continue;
    parts.push(`${left ?? "?"} of ${limit ?? "?"} ${unit} left${reset ? `, reset in ${reset}` : ""}`);
  }
  return parts.length ? parts.join("; ") : null;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

export interface ChatFailureContext {
  /** The URL asked (…/chat/completions). */
  chatUrl: string;
  model: string;
  /** Where the key came from, for "check …": e.g. "the value of OPENAI_API_KEY", "the key typed". */
  keyHint?: string | null;
}

/**
 * A failed chat completion (any status but a 200 chat answer, or no answer) in one sentence: the provider's own words,
 * then the cause and what to do next. Never the key.
 */
export function explainChatFailure(r: Pick<HttpResult, "status" | "body" | "text" | "headers" | "error" | "why">, o: ChatFailureContext): string {
  const host = hostOf(o.chatUrl);
  const { message, code } = providerError(r.body, r.text);
  const said = `HTTP ${r.status}${code ? ` ${code}` : ""}${message ? `: ${JSON.stringify(message.length > 300 ? `${message.slice(0, 300)}…` : message)}` : ""}`;
  const check = o.keyHint ? `check ${o.keyHint}` : "check the key";
  const base = o.chatUrl.replace(/\/chat\/completions$/, "");
  const plainHttp = /^http:/.test(o.chatUrl);
  if (r.status === 0) {
    const why = r.why ?? r.error ?? "no answer";
    const tls = /EPROTO|SSL|wrong version number|packet length too long/i.test(`${r.why ?? ""} ${r.error ?? ""}`);
    const hint = tls
      ? ` — it does not speak TLS there: if it is a plain-HTTP server (a vLLM of one's own), use ${o.chatUrl.replace(/^https:/, "http:").replace(/\/chat\/completions$/, "")}`
      : plainHttp && !/^https?:\/\/(localhost|127\.|\[::1\])/.test(o.chatUrl) && /refused|connection timed out|reset/.test(why)
        ? ` — an API provider serves https://: try ${base.replace(/^http:/, "https:")}`
        : "";
    return `POST ${o.chatUrl}: ${why}${hint}; check the URL and that the server runs`;
  }
  if (r.status >= 300 && r.status < 400) {
    const to = r.headers?.get("location");
    const target = to ? new URL(to, o.chatUrl).toString() : null;
    const https = target && plainHttp && /^https:/.test(target);
    return `POST ${o.chatUrl} → HTTP ${r.status}, a redirect${target ? ` to ${target}` : ""}: the key is not sent on through a redirect — ${
      https ? `use the https:// URL (${base.replace(/^http:/, "https:")})` : "use the URL it redirects to as the base URL"
    }`;
  }
  const stem = `POST ${o.chatUrl} → ${said}`;
  if (r.status === 401)
    return `${stem} — ${host} refused the key: ${check} (a key of this provider, not of another; no spaces or quotes around it), or make a new one in the provider's console`;
  if (r.status === 402 || code === "insufficient_quota" || /insufficient[ _](balance|credits?|quota)|credit balance is too low/i.test(message ?? ""))
    return `${stem} — the key is right, but its account has no credit or quota left: add credit (or raise the key's limit) in the provider's console, then verify again`;
  if (r.status === 403)
    return `${stem} — ${host} took the key but refused this request: the key (or its project) may not be allowed model "${o.model}", or the account is not enabled for it; check the key's permissions, or pick a model it lists`;
  if (r.status === 404) {
    const modelWords = code === "model_not_found" || /\bmodel\b/i.test(message ?? "");
    if (modelWords)
      return `${stem} — ${host} does not serve a model "${o.model}" to this key: use a model id exactly as the provider lists it (the wizard's "List models", or GET ${base}/models)`;
    return `${stem} — there is no chat-completions API at ${o.chatUrl}: the base URL is wrong. It is the part before /chat/completions, usually ending in /v1 (https://api.openai.com/v1, https://openrouter.ai/api/v1, https://api.groq.com/openai/v1, https://api.together.xyz/v1, https://api.deepseek.com/v1)`;
  }
  if (r.status === 429) {
    const wait = retryAfterSec(r.headers);
    const limits = rateLimitHeaders(r.headers);
    const extra = [wait !== null ? `Retry-After ${wait} s` : null, limits].filter(Boolean).join("; ");
    return `${stem}${extra ? ` (${extra})` : ""} — ${host} is rate-limiting this key (the key and URL are right): wait${wait !== null ? ` ${wait} s` : " a minute"} and verify again; a key of a higher usage tier lifts the limit`;
  }
  if (r.status === 400 || r.status === 422) {
    // OpenAI's reasoning models (o-series, gpt-5) refuse chat-completions' max_tokens, which OpenAI-compatible clients send
    if (/max_completion_tokens/.test(message ?? ""))
      return `${stem} — model "${o.model}" takes max_completion_tokens, not the max_tokens that OpenAI-compatible clients (opencode's included) send: workers could not run on it this way; pick a model that takes max_tokens, or reach this one through a router that translates it (OpenRouter)`;
    const ctx = code === "context_length_exceeded" || /context[ _]length|maximum context|too many tokens/i.test(message ?? "");
    return ctx
      ? `${stem} — the model's context is too small even for a short request; pick a model with a longer context`
      : `${stem} — ${host} refused the request itself: check the model id "${o.model}" (a model that takes OpenAI chat-completions requests), or read the provider's message above`;
  }
  if (r.status === 408 || r.status >= 500) {
    const wait = retryAfterSec(r.headers);
    return `${stem} — a failure on ${host}'s side (overloaded or down), not of the key or URL: try again ${wait !== null ? `in ${wait} s` : "in a minute"}, or pick another model or provider`;
  }
  if (r.status === 200)
    return `POST ${o.chatUrl} → HTTP 200 but not a chat completion (${JSON.stringify(r.text.replace(/\s+/g, " ").slice(0, 80))}…): the base URL points at a web page or another API, not an OpenAI-compatible one — use the API's base URL, usually ending in /v1`;
  return `${stem} — check the URL, the model id and the key`;
}
