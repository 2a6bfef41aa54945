/**
 * The root cause of a failed request in words. Node's fetch rejects with a bare "fetch failed" whose reason sits in
 * `cause` (a system error code, a TLS error, a timeout): that reason, said plainly, with the host it concerned.
 */
const CODES: Record<string, string> = {
  ENOTFOUND: "its name does not resolve (DNS): no network, a typo in the host, or a proxy-only network",
  EAI_AGAIN: "its name could not be resolved right now (DNS): no network or a DNS outage",
  ECONNREFUSED: "nothing listens there (connection refused)",
  ECONNRESET: "the connection was cut (reset by the other end or a proxy)",
  ETIMEDOUT: "it did not answer in time (connection timed out)",
  UND_ERR_CONNECT_TIMEOUT: "it did not answer in time (connection timed out)",
  UND_ERR_HEADERS_TIMEOUT: "it accepted the connection but sent no answer in time",
  UND_ERR_SOCKET: "the connection broke while talking to it",
  EHOSTUNREACH: "the host cannot be reached (no route)",
  ENETUNREACH: "the network is unreachable (offline?)",
  CERT_HAS_EXPIRED: "its TLS certificate has expired",
  DEPTH_ZERO_SELF_SIGNED_CERT: "its TLS certificate is self-signed (not trusted)",
  SELF_SIGNED_CERT_IN_CHAIN: "its TLS certificate chain is not trusted (a proxy that inspects TLS? set NODE_EXTRA_CA_CERTS)",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "its TLS certificate cannot be verified (a proxy that inspects TLS? set NODE_EXTRA_CA_CERTS)",
  ERR_TLS_CERT_ALTNAME_INVALID: "its TLS certificate is for another host name",
};

function hostOf(url: string | undefined): string | null {
  if (!url) return null;
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

/** "cannot reach huggingface.co: its name does not resolve (DNS) …" for a fetch failure; other errors keep their message. */
export function describeFetchError(e: unknown, url?: string): string {
  const err = e as (Error & { cause?: unknown; code?: string }) | null;
  const msg = err?.message ?? String(e);
  // walk the cause chain to the innermost code / message
  let c: unknown = err;
  let code: string | undefined;
  let inner: string | undefined;
  for (let i = 0; c && i < 5; i++) {
    const x = c as { code?: unknown; message?: unknown; cause?: unknown; hostname?: unknown; errors?: unknown[] };
    if (typeof x.code === "string") code = x.code;
    if (typeof x.message === "string" && x.message && x.message !== "fetch failed") inner = x.message;
    if (typeof x.hostname === "string" && !url) url = `http://${x.hostname}`;
    c = x.cause ?? (Array.isArray(x.errors) ? x.errors[0] : undefined);
  }
  const isFetch = msg === "fetch failed" || /^fetch failed/.test(msg) || err?.name === "AbortError" || err?.name === "TimeoutError";
  // only network failures are re-worded: a file-system error (ENOSPC, EACCES …) keeps its own message
  if (!isFetch && !(code && (CODES[code] || code.startsWith("UND_ERR")))) return msg;
  const host = hostOf(url);
  const where = host ? `cannot reach ${host}` : "the request could not be made";
  if (err?.name === "TimeoutError" || err?.name === "AbortError") return `${where}: it did not answer in time`;
  if (code && CODES[code]) return `${where}: ${CODES[code]} [${code}]`;
  if (code) return `${where}: ${inner ?? code} [${code}]`;
  return `${where}: ${inner ?? "the connection failed before any answer"}`;
}
