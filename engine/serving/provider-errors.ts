/**
 * Why a model API's request failed, in words a person can act on: which of the usual causes it is (the key, the
 * account's credit, the model id, the URL, a rate limit, the provider itself) and what to do next. One classifier
 * (`classifyFailure`) for both of the engine's readers: verify's chat completion (`explainChatFailure`, setup's words)
 * and a worker's session error as opencode reports it (`describeError`, the worker's words). An error the provider
 * sends inside a 200 stream (`streamedFailure`: an SSE `data: {"error":…}` chunk, Anthropic's `event: error`) is
 * classified as its status-code form would be.
 * The providers' own error bodies are read as they document them: OpenAI `{error:{message,type,code}}` (401
 * invalid_api_key, 404 model_not_found, 429 rate_limit_exceeded / insufficient_quota), OpenRouter `{error:{code,message}}`
 * (402 credits), Anthropic `{type:"error",error:{type,message}}` (529 overloaded_error), DeepSeek (402 Insufficient
 * Balance, 422, 503 Server Overloaded), with Retry-After and the x-ratelimit-* headers of a 429.
 */
import type { HttpResult } from "./http";
import { labelledUntrusted } from "../../shared/untrusted";

/** The provider's own error text and code, from any of the documented error shapes (or null). */
export function providerError(body: unknown, text: string): { message: string | null; code: string | null } {
  // Google's APIs (Gemini's OpenAI endpoint) answer an array of one error: [{"error":{"code":400,…}}]
  const one = Array.isArray(body) && body.length === 1 ? body[0] : body;
  const b = (one && typeof one === "object" ? one : {}) as { error?: unknown; message?: unknown; detail?: unknown; type?: unknown };
  const e = b.error;
  if (e && typeof e === "object") {
    const o = e as { message?: unknown; code?: unknown; type?: unknown; details?: unknown };
    const message = typeof o.message === "string" ? o.message : null;
    // Google's reason (details[].reason: API_KEY_INVALID), for a cause its status does not tell (a wrong key is a 400)
    const reason = Array.isArray(o.details)
      ? (o.details as { reason?: unknown }[]).map((d) => d?.reason).find((r): r is string => typeof r === "string")
      : undefined;
    // OpenAI's code (a string) or type; Anthropic's type; OpenRouter's code is the HTTP status (a number): not a name
    const code = typeof o.code === "string" ? o.code : typeof o.type === "string" ? o.type : (reason ?? null);
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

/** The usual causes of a model API's failure, each with its own remedy. */
type FailureKind =
  | "unreachable"
  | "redirect"
  | "key"
  | "credit"
  | "forbidden"
  | "model"
  | "url"
  | "rate-limit"
  | "max-tokens"
  | "temperature"
  | "context"
  | "bad-request"
  | "provider-side"
  | "not-chat"
  | "other";

/** Error codes and types that name a cause whatever the status (OpenAI codes, Anthropic and OpenAI types). */
const CODE_KIND: Record<string, FailureKind> = {
  invalid_api_key: "key",
  authentication_error: "key",
  API_KEY_INVALID: "key",
  insufficient_quota: "credit",
  billing_error: "credit",
  permission_error: "forbidden",
  model_not_found: "model",
  not_found_error: "model",
  rate_limit_exceeded: "rate-limit",
  rate_limit_error: "rate-limit",
  tokens_exceeded: "rate-limit",
  context_length_exceeded: "context",
  overloaded_error: "provider-side",
  api_error: "provider-side",
  server_error: "provider-side",
  timeout_error: "provider-side",
};

/**
 * Which of the usual causes a failure is: by its HTTP status (null or 0: no answer), read with the provider's code and
 * message where the status alone does not tell (a 429 of an empty account, a 400 of a parameter the model refuses).
 */
export function classifyFailure(f: { status: number | null; code?: string | null; message?: string | null }): FailureKind {
  const message = f.message ?? "";
  const code = f.code ?? null;
  const status = f.status || null;
  if (status === null) return "unreachable";
  if (status >= 300 && status < 400) return "redirect";
  // a wrong key by another status: Google's 400 "API key not valid" (its reason API_KEY_INVALID, where the body is read)
  if (status === 401 || (code !== null && CODE_KIND[code] === "key") || /\bAPI key not valid\b/i.test(message)) return "key";
  if (
    status === 402 ||
    code === "insufficient_quota" ||
    code === "billing_error" ||
    /insufficient[ _](balance|credits?|quota)|credit balance is too low|exceeded your current quota/i.test(message)
  )
    return "credit";
  if (status === 403) return "forbidden";
  if (status === 404) return code === "model_not_found" || /\bmodel\b/i.test(message) ? "model" : "url";
  if (status === 429) return "rate-limit";
  if (status === 400 || status === 422) {
    // OpenAI's reasoning models (o-series, gpt-5) refuse chat-completions' max_tokens, and any temperature but 1
    if (/max_completion_tokens/.test(message)) return "max-tokens";
    if (/'temperature'|\btemperature\b.*\b(unsupported|not supported|does not support)|(unsupported|not supported).*\btemperature\b/i.test(message))
      return "temperature";
    if (code === "context_length_exceeded" || /context[ _]length|maximum context|too many tokens/i.test(message)) return "context";
    return "bad-request";
  }
  if (status === 408 || status >= 500) return "provider-side";
  // a 200 that carries an error (a streamed one, or a body of a router): its code says which
  if (code !== null && CODE_KIND[code]) return CODE_KIND[code]!;
  if (status === 200) return "not-chat";
  return "other";
}

/** The HTTP status an error type or code stands for (Anthropic's error types, OpenAI's codes), for an error of a 200. */
const CODE_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  invalid_api_key: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  model_not_found: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  rate_limit_exceeded: 429,
  insufficient_quota: 429,
  api_error: 500,
  server_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/**
 * An error a provider sent inside a 200 answer (a streamed `data: {"error":{…}}` chunk — OpenAI, OpenRouter with its
 * numeric `code` — or Anthropic's `event: error` data `{"type":"error","error":{"type":"overloaded_error",…}}`) as
 * the failed answer its status-code form is: the status the error stands for (500 when it names none: the provider
 * broke off), the body, its text. Null when the value is no error.
 */
export function streamedFailure(data: unknown): { status: number; body: unknown; text: string } | null {
  const d = data as { error?: unknown } | null;
  if (!d || typeof d !== "object" || d.error === undefined || d.error === null) return null;
  const e = d.error as { code?: unknown; type?: unknown; status?: unknown };
  const numeric = [e.code, e.status].find((x): x is number => typeof x === "number" && x >= 400 && x < 600);
  const named = [e.code, e.type].find((x): x is string => typeof x === "string" && CODE_STATUS[x] !== undefined);
  const status = numeric ?? (named ? CODE_STATUS[named]! : 500);
  return { status, body: d, text: JSON.stringify(d) };
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

interface ChatFailureContext {
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
  switch (classifyFailure({ status: r.status, code, message })) {
    case "key":
      return `${stem} — ${host} refused the key: ${check} (a key of this provider, not of another; no spaces or quotes around it), or make a new one in the provider's console`;
    case "credit":
      return `${stem} — the key is right, but its account has no credit or quota left: add credit (or raise the key's limit) in the provider's console, then verify again`;
    case "forbidden":
      return `${stem} — ${host} took the key but refused this request: the key (or its project) may not be allowed model "${o.model}", or the account is not enabled for it; check the key's permissions, or pick a model it lists`;
    case "model":
      return `${stem} — ${host} does not serve a model "${o.model}" to this key: use a model id exactly as the provider lists it (the wizard's "List models", or GET ${base}/models)`;
    case "url":
      return `${stem} — there is no chat-completions API at ${o.chatUrl}: the base URL is wrong. It is the part before /chat/completions, usually ending in /v1 (https://api.openai.com/v1, https://openrouter.ai/api/v1, https://api.groq.com/openai/v1, https://api.together.xyz/v1, https://api.deepseek.com/v1; Gemini's is https://generativelanguage.googleapis.com/v1beta/openai)`;
    case "rate-limit": {
      const wait = retryAfterSec(r.headers);
      const limits = rateLimitHeaders(r.headers);
      const extra = [wait !== null ? `Retry-After ${wait} s` : null, limits].filter(Boolean).join("; ");
      return `${stem}${extra ? ` (${extra})` : ""} — ${host} is rate-limiting this key (the key and URL are right): wait${wait !== null ? ` ${wait} s` : " a minute"} and verify again; a key of a higher usage tier lifts the limit`;
    }
    case "max-tokens":
      return `${stem} — model "${o.model}" takes max_completion_tokens, not the max_tokens that OpenAI-compatible clients (opencode's included) send: workers could not run on it this way; pick a model that takes max_tokens, or reach this one through a router that translates it (OpenRouter)`;
    case "temperature":
      return `${stem} — model "${o.model}" takes only its default temperature (OpenAI's reasoning models: o1, o3, o4, gpt-5): verify asks again without one`;
    case "context":
      return `${stem} — the model's context is too small even for a short request; pick a model with a longer context`;
    case "bad-request":
      return `${stem} — ${host} refused the request itself: check the model id "${o.model}" (a model that takes OpenAI chat-completions requests), or read the provider's message above`;
    case "provider-side": {
      const wait = retryAfterSec(r.headers);
      return `${stem} — a failure on ${host}'s side (overloaded or down), not of the key or URL: try again ${wait !== null ? `in ${wait} s` : "in a minute"}, or pick another model or provider`;
    }
    case "not-chat":
      return `POST ${o.chatUrl} → HTTP 200 but not a chat completion (${JSON.stringify(r.text.replace(/\s+/g, " ").slice(0, 80))}…): the base URL points at a web page or another API, not an OpenAI-compatible one — use the API's base URL, usually ending in /v1`;
    default:
      return `${stem} — check the URL, the model id and the key`;
  }
}

/**
 * Where a failed model request went, for a person: a keyed target's requests go through the engine's key gateway
 * (http://127.0.0.1:PORT/<target id>-<n>-<hex>/…), whose URL is the engine's own and names nothing they gave — said as
 * the target's endpoint instead.
 */
function requestedAt(url: string | undefined, targetId: string | null | undefined): string {
  if (!url) return "the target's endpoint";
  let pathname = "";
  try {
    pathname = new URL(url).pathname;
  } catch {
    return url;
  }
  return targetId && pathname.startsWith(`/${encodeURIComponent(targetId)}-`) ? `target ${targetId}'s endpoint (\`ocw targets\` shows its URL)` : url;
}

/** A session error as opencode reports it (its `session.error` event's `error`). */
type SessionError = {
  name?: string;
  data?: { message?: string; statusCode?: number; responseHeaders?: Record<string, string>; isRetryable?: boolean; metadata?: { url?: string } };
};

/**
 * A worker session's error in words, with what to do: a model API's refusal by its cause (the key, the credit, the
 * model id, a rate limit that outlasted opencode's retries, the provider's side; `classifyFailure`, as verify reads
 * it), never opencode's class name ("APIError").
 */
export function describeError(err: SessionError | undefined, targetId?: string | null): string {
  const d = err?.data ?? {};
  const said = typeof d.message === "string" ? d.message : "";
  // The error's own text is the provider's (or whatever answers at the target's URL) and reaches people and Claude:
  // quoted, made safe and labelled inside the engine's sentence, never its words.
  const words = said ? labelledUntrusted(said, "the error's words", 400) : "";
  const quoted = words ? ` (${words})` : "";
  const status = typeof d.statusCode === "number" ? d.statusCode : null;
  const out = (() => {
    if (err?.name === "ContextOverflowError")
      return `the conversation outgrew the model's context${quoted}: continue the worker with a narrower task, or use a target with a longer context`;
    if (err?.name === "MessageOutputLengthError") return `the model's answer reached its output limit${quoted}: resume the worker to let it go on`;
    if (err?.name !== "APIError")
      return said ? `the session failed${quoted}: resume the worker to try again` : "the session failed without a message: resume the worker to try again";
    if (status === null) return `the model API could not be reached${quoted}: resume the worker once it answers (ocw targets shows whether it does)`;
    const http = `HTTP ${status}${words ? `; ${words}` : ""}`;
    switch (classifyFailure({ status, message: said })) {
      case "key":
        // the command that sets it, where the target is known (an ad-hoc `--endpoint` target has no Setup row to find)
        return `the model API refused the target's key (${http}): set the key again (${targetId ? `\`ocw target key ${targetId}\`, ` : ""}Setup, or its variable where the engine runs), then resume the worker`;
      case "credit":
        return `the model provider's account has no credit or quota left (${http}): add credit, then resume the worker`;
      case "forbidden":
        return `the model API refused this request (${http}): check the key's access to the target's model, then resume the worker`;
      case "model":
        return `the model API does not serve the target's model (${http}): check the target's model id (ocw targets), then retry the task`;
      case "url":
        return `there is no chat-completions API at ${requestedAt(d.metadata?.url, targetId)} (${http}): fix the target's base URL (usually ending in /v1: ocw setup --provider URL …, or ocw run --endpoint URL), then retry the task`;
      case "rate-limit": {
        const ra = d.responseHeaders?.["retry-after"] ?? d.responseHeaders?.["Retry-After"];
        return `the model provider rate-limited the worker's model calls (${http}${ra ? `; Retry-After ${ra} s` : ""}) and opencode's retries ran out: resume the worker once the limit resets; fewer workers at once on this target (its slots) makes it rarer`;
      }
      case "context":
        return `the conversation outgrew the model's context (${http}): continue the worker with a narrower task, or use a target with a longer context`;
      case "provider-side":
        return `the model API failed on its side (${http}) through opencode's retries: resume the worker once the provider is back`;
      default:
        return `the model API refused a request (${http}): resume the worker, or retry the task if it refuses again`;
    }
  })();
  return out.slice(0, 2000);
}
