/**
 * setup.models: the models an OpenAI-compatible provider lists (GET {url}/models), for the wizard's model picker.
 * The key comes from the engine's environment variable named (never from the request); failures say their root cause.
 */
import { priceFromListing, type Price } from "../../shared/cost";
import { OcwError } from "../../shared/errors";
import { ProviderModelsInput } from "../../shared/servers";
import { BodyTooLarge, describeFetchError, parseBody, readBoundedBytes } from "../net";

interface ProviderModel {
  id: string;
  /** The context window the provider reports (OpenRouter `context_length`, Together `context_length`), when it does. */
  contextLength: number | null;
  name: string | null;
  /** Dollars per million tokens when the provider lists a price (OpenRouter, Together); the target keeps it for costs. */
  price: Price | null;
}

export async function providerModelsApi(
  input: ProviderModelsInput,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 15_000,
): Promise<{ url: string; models: ProviderModel[] }> {
  const i = ProviderModelsInput.parse(input);
  // the base URL as given (Gemini's …/v1beta/openai, OpenRouter's …/api/v1): /models is appended to its path
  const given = new URL(i.url);
  if (given.search || given.hash)
    throw new OcwError(
      "bad-input",
      `the base URL takes no query or fragment (got "${given.origin}${given.pathname}${given.search ? "?…" : "#…"}"): /models is appended to its path`,
    );
  const base = i.url.replace(/\/+$/, "");
  let key: string | null = i.key ?? null;
  if (!key && i.apiKeyEnv) {
    key = env[i.apiKeyEnv] ?? null;
    if (!key)
      throw new OcwError(
        "bad-input",
        `environment variable ${i.apiKeyEnv} is not set in the engine's environment: export it where the engine starts (then \`ocw stop\` and start it again), or leave the key field empty for a server without a key`,
      );
  }
  const url = `${base}/models`;
  const models: ProviderModel[] = [];
  // Anthropic's list comes in pages (20 by default; has_more, last_id → after_id): the rest is asked for, up to 10 pages
  let after: string | null = null;
  for (let page = 0; page < 10; page++) {
    const next = await modelsPage(after ? `${url}?after_id=${encodeURIComponent(after)}` : url, i, key, timeoutMs);
    models.push(...next.models);
    if (!next.more || !next.lastId || models.length >= 5000) break;
    after = next.lastId;
  }
  models.sort((a, b) => a.id.localeCompare(b.id));
  return { url: base, models };
}

async function modelsPage(
  url: string,
  i: ProviderModelsInput,
  key: string | null,
  timeoutMs: number,
): Promise<{ models: ProviderModel[]; more: boolean; lastId: string | null }> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: {
        accept: "application/json",
        // Bearer for OpenAI-compatible lists; Anthropic's GET /v1/models reads x-api-key and needs anthropic-version
        ...(key ? { authorization: `Bearer ${key}`, "x-api-key": key, "anthropic-version": "2023-06-01" } : {}),
      },
      signal: AbortSignal.timeout(timeoutMs),
      // said, not followed: fetch drops the key on a redirect to another origin (http → https), and the provider's
      // 401 then blamed the key
      redirect: "manual",
    });
  } catch (e) {
    throw new OcwError("unavailable", `${describeFetchError(e, url)}; check the URL (it usually ends in /v1)`);
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel().catch(() => undefined);
    const to = res.headers.get("location");
    const target = to ? new URL(to, url).toString() : null;
    const https = target && /^http:/.test(url) && /^https:/.test(target);
    throw new OcwError(
      "bad-input",
      `${url} → HTTP ${res.status}, a redirect${target ? ` to ${target}` : ""}: ${https ? `use the https:// URL (${i.url.replace(/^http:/, "https:").replace(/\/+$/, "")})` : "use the URL it redirects to as the base URL"}`,
    );
  }
  // a model list is kilobytes to a few MB (OpenRouter ≈ 1 MB): a larger answer is not one
  const MAX = 16 * 1024 * 1024;
  if (Number(res.headers.get("content-length") ?? 0) > MAX) throw new OcwError("bad-input", `${url} answered more than 16 MB: not a model list; check the URL`);
  // Read at most MAX bytes: a body streamed without a length is cut there, not read whole into memory first.
  const bytes = await readBoundedBytes(res, url, MAX).catch((e: unknown) => {
    if (e instanceof BodyTooLarge) throw new OcwError("bad-input", `${url} answered more than 16 MB: not a model list; check the URL`);
    return Buffer.alloc(0);
  });
  // Its head for messages; the whole is parsed off the engine's thread when large (net/parse.ts).
  const text = bytes.subarray(0, 4096).toString("utf8");
  if (res.status === 401 || res.status === 403)
    throw new OcwError(
      "bad-input",
      `${new URL(url).host} refused the key (HTTP ${res.status})${i.key ? ": check the key typed" : i.apiKeyEnv ? `: check the value of ${i.apiKeyEnv}` : ": this provider needs a key — type it or name the variable that holds it"}`,
    );
  if (res.status === 404)
    throw new OcwError(
      "bad-input",
      `${url} → HTTP 404: this endpoint lists no models there; check the URL (an OpenAI-compatible base URL usually ends in /v1; Gemini's ends in /v1beta/openai), or type the model id yourself`,
    );
  if (!res.ok) throw new OcwError("unavailable", `${url} → HTTP ${res.status}${text ? `: ${text.replace(/\s+/g, " ").slice(0, 160)}` : ""}`);
  const body = await parseBody(bytes, { kind: "json" });
  if (body === null || typeof body !== "object") {
    throw new OcwError("bad-input", `${url} did not answer JSON (${JSON.stringify(text.slice(0, 60))}…): is this an OpenAI-compatible API base URL?`);
  }
  const b = body as { data?: unknown; models?: unknown; has_more?: unknown; last_id?: unknown };
  const list = Array.isArray(b.data) ? b.data : Array.isArray(b.models) ? b.models : Array.isArray(body) ? (body as unknown[]) : null;
  if (!list) throw new OcwError("bad-input", `${url} answered JSON without a "data" list of models: is this an OpenAI-compatible API base URL?`);
  const models: ProviderModel[] = [];
  for (const m of list.slice(0, 5000)) {
    const o = m as { id?: unknown; name?: unknown; display_name?: unknown; context_length?: unknown; context_window?: unknown; max_model_len?: unknown };
    if (typeof o.id !== "string" || !o.id || o.id.length > 300) continue;
    const ctx = [o.context_length, o.context_window, o.max_model_len].find((x) => typeof x === "number" && Number.isFinite(x) && x > 0) as number | undefined;
    // Anthropic names a model by display_name
    const name = typeof o.name === "string" ? o.name : typeof o.display_name === "string" ? o.display_name : null;
    models.push({ id: o.id, contextLength: ctx ?? null, name: name?.slice(0, 200) ?? null, price: priceFromListing(m) });
  }
  return { models, more: b.has_more === true, lastId: typeof b.last_id === "string" ? b.last_id : null };
}
