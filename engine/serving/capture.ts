/**
 * Capture an OpenAI-compatible endpoint that is already serving: probe the usual loopback ports
 * (8080 llama.cpp, 11434 ollama, 1234 LM Studio, 8000 vLLM, 30000 SGLang) or a user URL, and read what the
 * server exposes (/props, /slots, /v1/models, ollama /api/version, SGLang /get_server_info).
 */
import type { ServingEngine } from "../../shared/target";
import { authHeaders, httpJson, serverRoot } from "./http";
import type { Keep } from "../net";

const USUAL_PORTS = [8080, 11434, 1234, 8000, 30000] as const;

interface CapturedEndpoint {
  url: string;
  engine: ServingEngine | "lmstudio";
  models: string[];
  totalSlots: number | null;
  perSlotCtx: number | null;
  /** 401/403 with the key given (none, or a wrong one). */
  needsKey: boolean;
  /** The status of that refusal. */
  keyStatus?: number;
  build: string | null;
  notes: string[];
  /** 503 "Loading model": a llama-server binds its port before it loads the model and answers 503 until it is ready. */
  loading?: boolean;
}

/** What is read of a `/v1/models` answer (a large one is parsed off the engine's thread; only this comes back). */
const MODELS_KEEP: Keep = { data: [{ id: true, owned_by: true, max_model_len: true, meta: { n_ctx: true } }], models: [{ name: true }] };

type Models = { data?: { id: string; owned_by?: string; max_model_len?: number; meta?: { n_ctx?: number } }[]; models?: { name: string }[] };

export async function probeEndpoint(url: string, key: string | null = null, timeoutMs = 2500): Promise<CapturedEndpoint | null> {
  const root = serverRoot(url);
  const h = authHeaders(key);
  const models = await httpJson<Models>(`${root}/v1/models`, { headers: h, timeoutMs, keep: MODELS_KEEP });
  if (models.status === 0) return null;
  const notes: string[] = [];
  const needsKey = models.status === 401 || models.status === 403;
  if (!models.ok && !needsKey) {
    // not an OpenAI-compatible server (or an unrelated service on the port)
    if (models.status === 404) return null;
  }
  const ids = models.body?.data?.map((d) => d.id) ?? [];
  let engine: CapturedEndpoint["engine"] = "capture";
  let totalSlots: number | null = null;
  let perSlotCtx: number | null = null;
  let build: string | null = null;
  const props = await httpJson<{ total_slots?: number; build_info?: string; default_generation_settings?: { n_ctx?: number } }>(`${root}/props`, {
    headers: h,
    timeoutMs,
    keep: { total_slots: true, build_info: true, default_generation_settings: { n_ctx: true } },
  });
  if (props.ok && typeof props.body?.total_slots === "number") {
    engine = "llama.cpp";
    totalSlots = props.body.total_slots;
    perSlotCtx = props.body.default_generation_settings?.n_ctx ?? null;
    build = props.body.build_info ?? null;
    const slots = await httpJson<{ n_ctx: number }[]>(`${root}/slots`, { headers: h, timeoutMs, keep: [{ n_ctx: true }] });
    if (Array.isArray(slots.body)) notes.push(`/slots: ${slots.body.length} × n_ctx [${[...new Set(slots.body.map((s) => s.n_ctx))].join(",")}]`);
    else if (slots.status === 501) notes.push("/slots disabled (--no-slots)");
  } else if (props.status === 401 && needsKey) {
    engine = "llama.cpp";
    notes.push("llama.cpp-style /props refused without the key");
  } else {
    const ol = await httpJson<{ version?: string }>(`${root}/api/version`, { timeoutMs, keep: { version: true } });
    if (ol.ok && ol.body?.version) {
      engine = "ollama";
      build = ol.body.version;
      notes.push("ollama: num_ctx is per request/model and per slot; OLLAMA_NUM_PARALLEL sets slots");
    } else {
      const sg = await httpJson<{ max_running_requests?: number; context_length?: number; version?: string }>(`${root}/get_server_info`, {
        headers: h,
        timeoutMs,
        keep: { max_running_requests: true, context_length: true, version: true },
      });
      if (sg.ok && sg.body && typeof sg.body === "object") {
        engine = "sglang";
        totalSlots = sg.body.max_running_requests ?? null;
        perSlotCtx = sg.body.context_length ?? null;
        build = sg.body.version ?? null;
      } else if (models.body?.data?.some((d) => d.owned_by === "vllm")) {
        engine = "vllm";
        perSlotCtx = models.body.data.find((d) => d.max_model_len)?.max_model_len ?? null;
      } else if (models.body?.data?.some((d) => /lmstudio|organization_owner/i.test(d.owned_by ?? "")) || new URL(root).port === "1234") {
        engine = "lmstudio";
      }
    }
  }
  if (models.status === 503) {
    const loading = /loading model/i.test(models.text);
    return { url: `${root}/v1`, engine: loading ? "llama.cpp" : engine, models: ids, totalSlots, perSlotCtx, needsKey, build, notes, loading };
  }
  if (needsKey) return { url: `${root}/v1`, engine, models: ids, totalSlots, perSlotCtx, needsKey, keyStatus: models.status, build, notes };
  if (perSlotCtx === null) {
    const m = models.body?.data?.[0];
    perSlotCtx = m?.max_model_len ?? m?.meta?.n_ctx ?? null;
  }
  return { url: `${root}/v1`, engine, models: ids, totalSlots, perSlotCtx, needsKey, build, notes };
}

/** Probes the usual loopback ports (and `extra` URLs) in parallel. */
export async function discoverEndpoints(extra: string[] = [], key: string | null = null, ports: readonly number[] = USUAL_PORTS): Promise<CapturedEndpoint[]> {
  const urls = [...ports.map((p) => `http://127.0.0.1:${p}`), ...extra];
  const found = await Promise.all(urls.map((u) => probeEndpoint(u, key).catch(() => null)));
  return found.filter((x): x is CapturedEndpoint => x !== null);
}
