/** Small HTTP helpers for probing OpenAI-compatible servers (loopback or user-given URLs). */
import { BodyTooLarge, describeFetchError, ENDPOINT_MAX_BYTES, type Keep, PARSE_INLINE_MAX, parseBody, readBounded, readBoundedBytes, sseData } from "../net";

/** The most read of an error answer (only its first 200 characters are shown). */
const ERROR_MAX_BYTES = 64 * 1024;
/** The most of an answer kept as `text` (the whole of any answer parsed inline). */
const TEXT_HEAD = PARSE_INLINE_MAX;

export interface HttpResult<T = unknown> {
  ok: boolean;
  status: number;
  body: T | null;
  /** The answer's text (its first PARSE_INLINE_MAX bytes, when larger). */
  text: string;
  ms: number;
  error?: string;
  /** The answer's headers (Retry-After, x-ratelimit-*, Location): absent when none came. */
  headers?: Headers;
  /** When no answer came: why, in words (the host, and the root cause of node's bare "fetch failed"). */
  why?: string;
}

/**
 * `maxBytes`: the most of the answer read (ENDPOINT_MAX_BYTES by default); a larger one is an error, not read. `keep`:
 * the part of the answer's JSON the caller reads (net/parse.ts Keep): a large answer is parsed off the engine's thread
 * either way, and with `keep` only that part is handed back to it.
 */
type HttpInit = {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs?: number;
  signal?: AbortSignal;
  maxBytes?: number;
  keep?: Keep;
  /** "manual": a 3xx is the answer (a provider's http → https redirect is said, not followed with the key). */
  redirect?: "follow" | "manual" | "error";
};

/** A kept-alive connection the server closed while idle fails the next request sent on it at once; a GET is safe to send again on a fresh one. */
export const STALE_CONNECTION = /^(UND_ERR_SOCKET|ECONNRESET|EPIPE)$/;

export async function httpJson<T = unknown>(url: string, given: HttpInit = {}): Promise<HttpResult<T>> {
  const init = { ...given, method: given.method ?? (given.body === undefined ? "GET" : "POST") };
  const first = await httpJsonOnce<T>(url, init);
  if (init.method === "GET" && first.status === 0 && STALE_CONNECTION.test(first.error ?? "") && !init.signal?.aborted) return httpJsonOnce<T>(url, init);
  return first;
}

async function httpJsonOnce<T>(url: string, init: HttpInit & { method: string }): Promise<HttpResult<T>> {
  const t0 = performance.now();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`timed out after ${init.timeoutMs ?? 10000} ms`)), init.timeoutMs ?? 10000);
  const onAbort = () => ctl.abort(init.signal?.reason);
  init.signal?.addEventListener("abort", onAbort);
  try {
    const res = await fetch(url, {
      method: init.method,
      headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: ctl.signal,
      ...(init.redirect ? { redirect: init.redirect } : {}),
    });
    let bytes: Buffer;
    try {
      bytes = await readBoundedBytes(res, url, init.maxBytes ?? ENDPOINT_MAX_BYTES);
    } catch (e) {
      if (e instanceof BodyTooLarge)
        return { ok: false, status: res.status, body: null, text: "", ms: performance.now() - t0, error: e.message, headers: res.headers };
      throw e;
    }
    // A large answer is parsed off the engine's thread (net/parse.ts); its text is kept to its head (callers quote a
    // few hundred characters of it at most).
    const text = bytes.subarray(0, TEXT_HEAD).toString("utf8");
    const body = (await parseBody(bytes, { kind: "json", keep: init.keep }).catch(() => null)) as T | null;
    return { ok: res.ok, status: res.status, body, text, ms: performance.now() - t0, headers: res.headers };
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    const why =
      ctl.signal.aborted && !init.signal?.aborted
        ? `${new URL(url).host} sent no answer within ${Math.round((init.timeoutMs ?? 10000) / 1000)} s`
        : describeFetchError(e, url);
    return { ok: false, status: 0, body: null, text: "", ms: performance.now() - t0, error: err.cause?.code ?? err.message, why };
  } finally {
    clearTimeout(timer);
    init.signal?.removeEventListener("abort", onAbort);
  }
}

export function authHeaders(key: string | null | undefined): Record<string, string> {
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** Base URL without trailing slash and without a trailing /v1. */
export function serverRoot(url: string): string {
  return url.replace(/\/+$/, "").replace(/\/v1$/, "");
}

export function isLoopback(url: string): boolean {
  try {
    const h = new URL(url).hostname;
    return h === "localhost" || h === "::1" || h === "[::1]" || /^127\./.test(h);
  } catch {
    return false;
  }
}

interface StreamTiming {
  status: number;
  startMs: number;
  firstTokenMs: number | null;
  endMs: number;
  tokens: number;
  error?: string;
  /**
   * The error chunk a provider sent inside its 200 stream (`data: {"error":…}`; Anthropic's `event: error` carries
   * `{"type":"error","error":…}`), parsed: the stream ended there. Read with provider-errors.ts streamedFailure.
   */
  streamError?: unknown;
}

/** POSTs a JSON request body with `stream: true` (a streamed chat completion): the answer, its body not read yet. */
export function postStreaming(url: string, headers: Record<string, string>, body: object, signal: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ ...body, stream: true }),
    signal,
  });
}

/** Streams one chat completion and records when the first token and the end arrived (ms since `t0`). */
export async function streamTimed(url: string, headers: Record<string, string>, body: unknown, t0: number, timeoutMs = 60000): Promise<StreamTiming> {
  const startMs = performance.now() - t0;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    const res = await postStreaming(url, headers, body as object, ctl.signal);
    if (!res.ok || !res.body)
      return {
        status: res.status,
        startMs,
        firstTokenMs: null,
        endMs: performance.now() - t0,
        tokens: 0,
        error: (await readBounded(res, url, ERROR_MAX_BYTES).catch(() => "")).slice(0, 200),
      };
    let first: number | null = null;
    let tokens = 0;
    for await (const data of sseData(res.body)) {
      if (data === "[DONE]") continue;
      try {
        const j = JSON.parse(data) as { choices?: { delta?: { content?: string; reasoning_content?: string; reasoning?: string } }[]; error?: unknown };
        if (j.error) {
          const message = (j.error as { message?: unknown }).message;
          return {
            status: res.status,
            startMs,
            firstTokenMs: first,
            endMs: performance.now() - t0,
            tokens,
            error: (typeof message === "string" ? message : JSON.stringify(j.error)).slice(0, 200),
            streamError: j,
          };
        }
        const d = j.choices?.[0]?.delta;
        // thinking counts as the model's output: `reasoning_content` (llama.cpp, vLLM, DeepSeek) or `reasoning`
        // (OpenRouter, Groq, Ollama); a reasoning model asked for a few tokens may send nothing else
        if (d && (d.content || d.reasoning_content || d.reasoning)) {
          tokens++;
          first ??= performance.now() - t0;
        }
      } catch {
        /* ignore keep-alives */
      }
    }
    return { status: res.status, startMs, firstTokenMs: first, endMs: performance.now() - t0, tokens };
  } catch (e) {
    return { status: 0, startMs, firstTokenMs: null, endMs: performance.now() - t0, tokens: 0, error: (e as Error).message };
  } finally {
    clearTimeout(timer);
    // a stream left at an error chunk: its connection goes too
    ctl.abort();
  }
}
