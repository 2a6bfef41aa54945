// Capture a running server, or add an API provider: the engine verifies it (setup.capture / setup.provider) and saves
// the target only after that verify; saving without verify is the person's explicit, confirmed choice.
import type { Price } from "../../../../shared/cost";
import { useState, type FormEvent } from "react";
import type { SetupOutcome } from "../../../../shared/setup";
import { PROVIDER_PRESETS } from "../../../../shared/servers";
import { benchText } from "../../../../shared/target";
import { api, errorText } from "../../api";
import { refreshTargets } from "../../store";
import { CopyField } from "../common";
import { counted } from "../../format";
import { sh } from "./format";
import { VerifyChecklist } from "./VerifyChecklist";
import { Clip } from "./Clip";
import { EngineText } from "../EngineText";

type Mode = "capture" | "provider";

const OUTCOME_TEXT: Record<SetupOutcome["outcome"], string> = {
  built: "Verified: every check passed.",
  underpowered: "Reachable, but not good enough for workers.",
  "cannot-build": "Workers cannot run on this endpoint.",
  unverified: "Saved without verifying: nothing was checked — not the URL, the key, the context, nor tool calls.",
};

function int(v: string): number | undefined {
  const n = Number(v.trim());
  return v.trim() && Number.isFinite(n) ? n : undefined;
}

export function EndpointForm({ mode }: { mode: Mode }) {
  const capture = mode === "capture";
  const [url, setUrl] = useState(capture ? "" : "https://");
  const [model, setModel] = useState("");
  const [keyEnv, setKeyEnv] = useState("");
  /** Provider: a key typed here (sent once to the engine, which stores it; never shown again). Wins over the variable. */
  const [typedKey, setTypedKey] = useState("");
  const [slots, setSlots] = useState(capture ? "" : "4");
  const [ctx, setCtx] = useState("");
  const [id, setId] = useState("");
  const [busy, setBusy] = useState<"verify" | "unverified" | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<SetupOutcome | null>(null);
  const [confirmUnverified, setConfirmUnverified] = useState(false);
  const [preset, setPreset] = useState("");
  const [models, setModels] = useState<{ id: string; contextLength: number | null; price?: Price | null }[] | null>(null);
  const [modelsState, setModelsState] = useState<{ busy: boolean; error: string | null }>({ busy: false, error: null });

  /** A preset fills the base URL and the usual key variable; the model list is fetched from the provider. */
  function choosePreset(id: string) {
    setPreset(id);
    setModels(null);
    setModelsState({ busy: false, error: null });
    const p = PROVIDER_PRESETS.find((x) => x.id === id);
    if (p) {
      setUrl(p.url);
      setKeyEnv(p.keyEnv);
    } else {
      setUrl("https://");
    }
  }

  async function listModels() {
    setModelsState({ busy: true, error: null });
    try {
      const r = await api.setup.models.query({
        url: url.trim(),
        ...(!capture && typedKey.trim() ? { key: typedKey.trim() } : keyEnv.trim() ? { apiKeyEnv: keyEnv.trim() } : {}),
      });
      setModels(r.models);
      setModelsState({ busy: false, error: r.models.length ? null : "the provider listed no models: type the model id" });
    } catch (err) {
      setModels(null);
      setModelsState({ busy: false, error: errorText(err) });
    }
  }

  const input = (unverified: boolean) => ({
    url: url.trim(),
    ...(model.trim() ? { model: model.trim() } : {}),
    ...(keyEnv.trim() ? { apiKeyEnv: keyEnv.trim() } : {}),
    ...(int(slots) !== undefined ? { slots: int(slots) } : {}),
    ...(capture && int(ctx) !== undefined ? { ctx: int(ctx) } : {}),
    ...(id.trim() ? { id: id.trim() } : {}),
    unverified,
  });

  async function run(unverified: boolean) {
    setError(null);
    setResult(null);
    setConfirmUnverified(false);
    setBusy(unverified ? "unverified" : "verify");
    try {
      const i = input(unverified);
      const { apiKeyEnv, ...rest } = i;
      // The provider's listed price of the chosen model goes with the target: costs use it.
      const price = models?.find((m) => m.id === i.model)?.price ?? undefined;
      if (!capture && price) Object.assign(rest, { price });
      const r = capture
        ? await api.setup.capture.mutate(i)
        : typedKey.trim()
          ? await api.setup.providerKey.mutate({ ...rest, model: i.model ?? "", key: typedKey.trim() })
          : await api.setup.provider.mutate({ ...rest, model: i.model ?? "", apiKeyEnv: apiKeyEnv ?? "" });
      if (r.saved && typedKey) setTypedKey("");
      setResult(r);
      await refreshTargets();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(null);
    }
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    void run(false);
  }

  const cli = capture
    ? [
        "ocw setup --capture",
        sh(url.trim() || "URL"),
        model.trim() && `--model ${sh(model.trim())}`,
        keyEnv.trim() && `--api-key-env ${sh(keyEnv.trim())}`,
        int(slots) && `--slots ${int(slots)}`,
        int(ctx) && `--ctx ${int(ctx)}`,
      ]
    : [
        "ocw setup --provider",
        sh(url.trim() || "URL"),
        `--model ${sh(model.trim() || "ID")}`,
        `--api-key-env ${sh(keyEnv.trim() || "VAR")}`,
        int(slots) && `--slots ${int(slots)}`,
      ];
  const formName = capture ? "Capture a running server" : "Use an API provider";

  return (
    <>
      <form className="capture" onSubmit={submit} aria-label={formName}>
        {!capture && (
          <div className="field">
            <label htmlFor="provider-preset">Provider</label>
            <select id="provider-preset" name="preset" value={preset} onChange={(e) => choosePreset(e.target.value)}>
              <option value="">Any OpenAI-compatible API (type its base URL)</option>
              {PROVIDER_PRESETS.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name} — {p.url}
                </option>
              ))}
            </select>
          </div>
        )}
        <div className="grid2">
          <label className="field">
            <span>{capture ? "Server URL" : "Base URL"}</span>
            <input
              name="url"
              value={url}
              placeholder={capture ? "http://127.0.0.1:8080/v1" : "https://api.example.com/v1"}
              onChange={(e) => setUrl(e.target.value)}
              spellCheck={false}
            />
          </label>
          <div className="field">
            <label htmlFor={`${mode}-model`}>{capture ? "Model (optional: the first one it serves)" : "Model id"}</label>
            <div style={{ display: "flex", gap: 6, alignItems: "center" }}>
              <input
                id={`${mode}-model`}
                name="model"
                value={model}
                onChange={(e) => setModel(e.target.value)}
                spellCheck={false}
                style={{ flex: 1, minWidth: 0 }}
              />
              <button
                type="button"
                className="btn small"
                disabled={modelsState.busy || !/^https?:\/\/[^/]+/.test(url.trim())}
                onClick={() => void listModels()}
              >
                {modelsState.busy ? "Listing…" : "List models"}
              </button>
            </div>
            {models && models.length > 0 && (
              <select
                aria-label={capture ? "Models the server lists" : "Models the provider lists"}
                value={models.some((m) => m.id === model) ? model : ""}
                onChange={(e) => setModel(e.target.value)}
              >
                <option value="">
                  {counted(models.length, "model")} listed by the {capture ? "server" : "provider"}: pick one
                </option>
                {models.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.id}
                    {m.contextLength ? ` (${Math.round(m.contextLength / 1024)}k context)` : ""}
                    {m.price ? ` · $${m.price.inputPerMTok} / $${m.price.outputPerMTok} per M tokens` : ""}
                  </option>
                ))}
              </select>
            )}
            {modelsState.error && (
              <div className="field-error small" role="alert" aria-label="Model list error">
                <EngineText text={modelsState.error} />
              </div>
            )}
          </div>
          {!capture && (
            <label className="field">
              <span>API key (typed here: the engine keeps it in the OS keychain, else a 0600 file; never shown again)</span>
              <input
                name="apiKey"
                type="password"
                autoComplete="off"
                spellCheck={false}
                value={typedKey}
                placeholder="paste the key, or name a variable below"
                onChange={(e) => setTypedKey(e.target.value)}
              />
            </label>
          )}
          <label className="field">
            <span>
              {capture
                ? "Key environment variable (empty if the server has no key)"
                : typedKey.trim()
                  ? "Key environment variable (not used: a key is typed above)"
                  : "Key environment variable (or type the key above)"}
            </span>
            <input
              name="keyEnv"
              value={keyEnv}
              placeholder={capture ? "LLAMA_API_KEY" : (PROVIDER_PRESETS.find((p) => p.id === preset)?.keyEnv ?? "OPENROUTER_API_KEY")}
              onChange={(e) => setKeyEnv(e.target.value)}
              spellCheck={false}
            />
          </label>
          <label className="field">
            <span>{capture ? "Slots (optional: what the server reports)" : "Slots (requests at once)"}</span>
            <input name="slots" inputMode="numeric" value={slots} onChange={(e) => setSlots(e.target.value)} />
          </label>
          {capture && (
            <label className="field">
              <span>Context per slot to require (optional)</span>
              <input name="ctx" inputMode="numeric" value={ctx} placeholder="e.g. 32768" onChange={(e) => setCtx(e.target.value)} />
            </label>
          )}
          <label className="field">
            <span>Target id (optional)</span>
            <input name="targetId" value={id} placeholder="derived from the model" onChange={(e) => setId(e.target.value)} spellCheck={false} />
          </label>
        </div>
        <p className="muted small">
          {capture
            ? "The key itself is never stored or typed here: the engine reads it from the named variable in its own environment."
            : "A typed key goes to the engine once and is kept there (never in targets.json, a log or a worker's reach); a variable is read from the engine's own environment."}{" "}
          Verify sends real requests: a chat, the same without the key, {capture ? "the server's slot and context figures, " : ""}overlapping requests, a small
          coding task and a tool call with OpenCode's tools.
        </p>
        {error && (
          <div className="field-error" role="alert">
            <EngineText text={error} />
          </div>
        )}
        <div className="row" style={{ display: "flex", gap: 8, alignItems: "center", flexWrap: "wrap" }}>
          <button type="submit" className="btn primary" disabled={busy !== null}>
            Verify and save
          </button>
          <button type="button" className="btn ghost" disabled={busy !== null} onClick={() => setConfirmUnverified(true)}>
            Save without verifying…
          </button>
          {busy === "verify" && (
            <span className="small muted" role="status">
              Verifying… (seconds on a fast server, up to a few minutes on a slow one)
            </span>
          )}
        </div>
        {confirmUnverified && (
          <div className="inline-warning" role="group" aria-label="Confirm saving unverified">
            Nothing will be checked — not the URL, the key, the context nor tool calls — and workers may fail on it. It is saved as <strong>unverified</strong>{" "}
            and made active.{" "}
            <button type="button" className="btn small" onClick={() => void run(true)}>
              Yes, save it unverified
            </button>{" "}
            <button type="button" className="btn small ghost" onClick={() => setConfirmUnverified(false)}>
              Cancel
            </button>
          </div>
        )}
        <div className="field">
          <span>Equivalent CLI command</span>
          <CopyField label={`${formName}: CLI command`} value={cli.filter(Boolean).join(" ")} />
        </div>
      </form>
      {(busy === "verify" || result) && (
        <section className="panel" aria-label="Verify result">
          <h3>Verify</h3>
          {result && (
            <p role="status" className={result.outcome === "built" ? "ok-text" : result.outcome === "unverified" ? "" : "bad-text"}>
              <span
                className={`chip chip-${result.outcome === "built" ? "ok" : result.outcome === "underpowered" ? "warn" : result.outcome === "unverified" ? "idle" : "bad"}`}
              >
                {result.outcome}
              </span>{" "}
              {OUTCOME_TEXT[result.outcome]} {/* Unverified, the engine's summary only says again what the line above says. */}
              {result.outcome !== "unverified" && (
                <>
                  <Clip text={result.summary} />{" "}
                </>
              )}
              {result.saved ? (
                <strong>{result.active ? `Saved as ${result.target.id} and made active.` : `Saved as ${result.target.id}, not active.`}</strong>
              ) : (
                <strong>Nothing was saved.</strong>
              )}
            </p>
          )}
          {result?.bench && (
            <p className={result.bench.warning ? "bad-text" : ""} aria-label="Measured speed">
              {benchText(result.bench)}
            </p>
          )}
          {result?.outcome !== "unverified" && <VerifyChecklist checks={result?.checks ?? []} running={busy === "verify"} provider={!capture} />}
          {result?.saved && !result.active && (
            <button
              type="button"
              className="btn"
              onClick={() =>
                void api.targets.use
                  .mutate({ id: result.target.id })
                  .then(async () => {
                    await refreshTargets();
                    setResult({ ...result, active: true });
                  })
                  .catch((err) => setError(errorText(err)))
              }
            >
              Use it anyway
            </button>
          )}
        </section>
      )}
    </>
  );
}
