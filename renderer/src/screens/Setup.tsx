import { useEffect, useMemo, useState, type FormEvent } from "react";
import type { Target } from "../../../shared/target";
import { api, errorText } from "../api";
import { NotWired } from "../components/common";
import { go } from "../router";
import { pushNotice, refreshTargets, useStore } from "../store";

// ---------- browser-side estimates (the engine's fit estimator is not on the control API yet) ----------

interface Gpu {
  name: string;
  totalGiB: number;
  freeGiB: number;
}

interface CatalogModel {
  id: string;
  label: string;
  paramsB: number;
  layers: number;
  kvHeads: number;
  headDim: number;
  maxCtx: number;
  /** Layers with recurrent state (hybrid models); 0 for plain transformers. */
  recurrentMiB: number;
}

const CATALOG: CatalogModel[] = [
  { id: "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", label: "Qwen2.5-Coder 7B", paramsB: 7.6, layers: 28, kvHeads: 4, headDim: 128, maxCtx: 32768, recurrentMiB: 0 },
  { id: "Qwen/Qwen2.5-Coder-14B-Instruct-GGUF", label: "Qwen2.5-Coder 14B", paramsB: 14.8, layers: 48, kvHeads: 8, headDim: 128, maxCtx: 32768, recurrentMiB: 0 },
  { id: "Qwen/Qwen2.5-Coder-32B-Instruct-GGUF", label: "Qwen2.5-Coder 32B", paramsB: 32.8, layers: 64, kvHeads: 8, headDim: 128, maxCtx: 32768, recurrentMiB: 0 },
  { id: "unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF", label: "Qwen3-Coder 30B-A3B (MoE)", paramsB: 30.5, layers: 48, kvHeads: 4, headDim: 128, maxCtx: 262144, recurrentMiB: 0 },
  { id: "unsloth/Devstral-Small-2507-GGUF", label: "Devstral Small 24B", paramsB: 23.6, layers: 40, kvHeads: 8, headDim: 128, maxCtx: 131072, recurrentMiB: 0 },
  { id: "ggml-org/gpt-oss-20b-GGUF", label: "gpt-oss 20B", paramsB: 20.9, layers: 24, kvHeads: 8, headDim: 64, maxCtx: 131072, recurrentMiB: 0 },
];

const QUANTS: { id: string; bits: number }[] = [
  { id: "Q4_K_M", bits: 4.85 },
  { id: "Q5_K_M", bits: 5.7 },
  { id: "Q6_K", bits: 6.6 },
  { id: "Q8_0", bits: 8.5 },
  { id: "F16", bits: 16 },
];

const GiB = 1024 ** 3;

interface Budget {
  gpu: Gpu;
  weights: number;
  kv: number;
  recurrent: number;
  compute: number;
  margin: number;
  free: number;
  fits: boolean;
}

function estimate(model: CatalogModel, quantBits: number, slots: number, perSlotCtx: number, gpus: Gpu[]): Budget[] {
  const weights = (model.paramsB * 1e9 * quantBits) / 8;
  const kvPerToken = 2 * model.layers * model.kvHeads * model.headDim * 2; // K and V, f16
  const kv = kvPerToken * perSlotCtx * slots;
  const recurrent = model.recurrentMiB * 1024 ** 2 * slots;
  const total = gpus.reduce((a, g) => a + g.totalGiB, 0) || 1;
  return gpus.map((gpu) => {
    const share = gpu.totalGiB / total;
    const compute = 0.6 * GiB + perSlotCtx * 1024 * share * 0.02; // scratch buffers grow with the batch/context
    const margin = 0.5 * GiB;
    const used = weights * share + kv * share + recurrent * share + compute + margin;
    const cap = gpu.freeGiB * GiB;
    return { gpu, weights: weights * share, kv: kv * share, recurrent: recurrent * share, compute, margin, free: Math.max(0, cap - used), fits: used <= cap };
  });
}

function fitBadge(model: CatalogModel, bits: number, gpus: Gpu[]): "fits" | "tight" | "too big" {
  const free = gpus.reduce((a, g) => a + g.freeGiB, 0) * GiB;
  const w = (model.paramsB * 1e9 * bits) / 8;
  if (w + 2 * GiB < free * 0.8) return "fits";
  if (w + 1 * GiB < free) return "tight";
  return "too big";
}

function BudgetChart({ budgets }: { budgets: Budget[] }) {
  const segs = ["weights", "kv", "recurrent", "compute", "margin", "free"] as const;
  const names: Record<(typeof segs)[number], string> = { weights: "weights", kv: "KV cache", recurrent: "recurrent", compute: "compute", margin: "margin", free: "free" };
  return (
    <div className="budget" role="group" aria-label="Memory budget per GPU">
      {budgets.map((b, i) => {
        const cap = Math.max(b.gpu.totalGiB * GiB, b.weights + b.kv + b.recurrent + b.compute + b.margin);
        return (
          <div key={i} className="budget-row">
            <div className="budget-label">
              <strong>{b.gpu.name}</strong> <span className="muted small">{b.gpu.totalGiB} GiB</span>
              {!b.fits && <span className="chip chip-bad">over budget</span>}
            </div>
            <div className="budget-bar" role="img" aria-label={`${b.gpu.name}: ${segs.map((s) => `${names[s]} ${(b[s] / GiB).toFixed(1)} GiB`).join(", ")}`}>
              {segs.map((s) => (b[s] > 0 ? <span key={s} className={`seg seg-${s}`} style={{ width: `${(b[s] / cap) * 100}%` }} title={`${names[s]} ${(b[s] / GiB).toFixed(2)} GiB`} /> : null))}
            </div>
          </div>
        );
      })}
      <div className="legend small">
        {segs.map((s) => (
          <span key={s}>
            <i className={`swatch seg-${s}`} /> {names[s]}
          </span>
        ))}
      </div>
    </div>
  );
}

// ---------- the wizard ----------

const STEPS = ["Hardware", "Model", "Serving", "Start, capture or API", "Verify", "Done"] as const;
type Step = (typeof STEPS)[number];

const REMEDY: Record<string, string> = {
  reachable: "Start the server, or check the base URL (it ends in /v1) and that it listens on this machine.",
  auth: "The endpoint must refuse requests without the key: start it with an API key and name the variable that holds it.",
  slots: "Start the server with as many parallel slots as you give here, each with the full per-slot context.",
  concurrency: "Requests did not overlap: enable continuous batching / parallel slots on the server.",
  capability: "The model could not solve the small coding task: try a larger model or a higher quant.",
};

export function Setup() {
  const [step, setStep] = useState<Step>("Hardware");
  const [gpus, setGpus] = useState<Gpu[]>([{ name: "GPU 0", totalGiB: 24, freeGiB: 23 }]);
  const [detected, setDetected] = useState<string | null>(null);
  useEffect(() => {
    void api.hardware.query().then((hw) => {
      if (!hw) return setDetected("Hardware detection did not answer in time; enter your GPUs below.");
      const found = hw.gpus.map((g) => ({ name: `${g.name} (${g.vendor}${g.unified ? ", unified" : ""})`, totalGiB: g.vramGiB, freeGiB: g.freeGiB ?? g.vramGiB }));
      if (found.length) setGpus(found);
      setDetected(
        `${hw.cpu}, ${hw.cores} cores, ${hw.ramGiB} GiB RAM; ${found.length ? `${found.length} GPU(s) detected` : "no GPU detected (CPU only): use an API provider or capture a server elsewhere"}.` +
          (hw.problems.length ? ` Probes: ${hw.problems.join("; ")}` : ""),
      );
    }, (err) => setDetected(`Hardware detection failed: ${errorText(err)}`));
  }, []);
  const [modelId, setModelId] = useState(CATALOG[0]!.id);
  const [custom, setCustom] = useState("");
  const [quant, setQuant] = useState("Q4_K_M");
  const [slots, setSlots] = useState(4);
  const [ctx, setCtx] = useState(32768);
  const targets = useStore((s) => s.targets);
  const active = useStore((s) => s.status?.activeTarget ?? null);
  const [saved, setSaved] = useState<Target | null>(null);

  const model = CATALOG.find((m) => m.id === modelId) ?? CATALOG[0]!;
  const bits = QUANTS.find((q) => q.id === quant)?.bits ?? 4.85;
  const budgets = useMemo(() => estimate(model, bits, slots, ctx, gpus), [model, bits, slots, ctx, gpus]);
  const idx = STEPS.indexOf(step);
  const verifyTarget = saved ?? active;

  return (
    <div className="wizard">
      <ol className="stepper" aria-label="Setup steps">
        {STEPS.map((s, i) => (
          <li key={s} className={i < idx ? "done" : i === idx ? "on" : ""}>
            <button type="button" aria-current={s === step ? "step" : undefined} onClick={() => setStep(s)}>
              <span className="num">{i + 1}</span> {s}
            </button>
          </li>
        ))}
      </ol>

      <section className="panel step" aria-label={step}>
        {step === "Hardware" && (
          <>
            <h2>Hardware</h2>
            <p className="small" role="status" aria-label="Detected hardware">
              {detected ?? "Detecting GPUs, CPU and RAM on the engine's machine…"} The figures below feed the estimates; edit them to plan for another machine.
            </p>
            <table className="table">
              <thead>
                <tr>
                  <th>GPU</th>
                  <th>total GiB</th>
                  <th>free GiB</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {gpus.map((g, i) => (
                  <tr key={i}>
                    <td>
                      <input aria-label={`GPU ${i} name`} value={g.name} onChange={(e) => setGpus(gpus.map((x, j) => (j === i ? { ...x, name: e.target.value } : x)))} />
                    </td>
                    <td>
                      <input aria-label={`GPU ${i} total GiB`} type="number" min={1} value={g.totalGiB} onChange={(e) => setGpus(gpus.map((x, j) => (j === i ? { ...x, totalGiB: Number(e.target.value) || 0 } : x)))} />
                    </td>
                    <td>
                      <input aria-label={`GPU ${i} free GiB`} type="number" min={0} value={g.freeGiB} onChange={(e) => setGpus(gpus.map((x, j) => (j === i ? { ...x, freeGiB: Number(e.target.value) || 0 } : x)))} />
                    </td>
                    <td>
                      {gpus.length > 1 && (
                        <button type="button" className="btn ghost small" onClick={() => setGpus(gpus.filter((_, j) => j !== i))}>
                          Remove
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <button type="button" className="btn small" onClick={() => setGpus([...gpus, { name: `GPU ${gpus.length}`, totalGiB: 24, freeGiB: 23 }])}>
              + Add GPU
            </button>
          </>
        )}

        {step === "Model" && (
          <>
            <h2>Model</h2>
            <NotWired>The catalog and fit badges are estimates made in this page; the engine's GGUF reader and fit estimator are not on the control API yet.</NotWired>
            <div className="grid2">
              <label className="field">
                <span>Quantization</span>
                <select value={quant} onChange={(e) => setQuant(e.target.value)}>
                  {QUANTS.map((q) => (
                    <option key={q.id} value={q.id}>
                      {q.id} (~{q.bits} bits/weight)
                    </option>
                  ))}
                </select>
              </label>
              <label className="field">
                <span>Any Hugging Face repo or local GGUF file</span>
                <input value={custom} placeholder="org/repo-GGUF or /models/file.gguf" onChange={(e) => setCustom(e.target.value)} />
              </label>
            </div>
            <table className="table catalog">
              <thead>
                <tr>
                  <th />
                  <th>model</th>
                  <th>params</th>
                  <th>max context</th>
                  <th>weights at {quant}</th>
                  <th>fit</th>
                </tr>
              </thead>
              <tbody>
                {CATALOG.map((m) => {
                  const fit = fitBadge(m, bits, gpus);
                  return (
                    <tr key={m.id} className={m.id === modelId ? "sel" : ""} onClick={() => setModelId(m.id)}>
                      <td>
                        <input type="radio" name="model" aria-label={m.label} checked={m.id === modelId} onChange={() => setModelId(m.id)} />
                      </td>
                      <td>
                        {m.label}
                        <div className="mono small muted">{m.id}</div>
                      </td>
                      <td>{m.paramsB}B</td>
                      <td>{(m.maxCtx / 1024).toFixed(0)}k</td>
                      <td>{((m.paramsB * 1e9 * bits) / 8 / GiB).toFixed(1)} GiB</td>
                      <td>
                        <span className={`chip chip-${fit === "fits" ? "ok" : fit === "tight" ? "warn" : "bad"}`}>{fit}</span>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </>
        )}

        {step === "Serving" && (
          <>
            <h2>Serving</h2>
            <p className="muted small">
              {model.label} at {quant}. Every slot gets the full per-slot context; workers are admitted up to the slot count.
            </p>
            <div className="grid2">
              <label className="field">
                <span>Slots (parallel workers): {slots}</span>
                <input type="range" min={1} max={16} value={slots} onChange={(e) => setSlots(Number(e.target.value))} />
              </label>
              <label className="field">
                <span>Per-slot context: {ctx.toLocaleString()} tokens</span>
                <input type="range" min={4096} max={model.maxCtx} step={4096} value={Math.min(ctx, model.maxCtx)} onChange={(e) => setCtx(Number(e.target.value))} />
              </label>
            </div>
            <BudgetChart budgets={budgets} />
            <p className={budgets.every((b) => b.fits) ? "ok-text" : "bad-text"}>
              {budgets.every((b) => b.fits) ? "Fits (estimate)." : "Does not fit (estimate): lower the slots or the context, or pick a smaller quant."}
            </p>
          </>
        )}

        {step === "Start, capture or API" && (
          <StartStep
            defaults={{ model: custom || model.id, quant, slots, ctx }}
            onSaved={(t) => {
              setSaved(t);
              setStep("Verify");
            }}
          />
        )}

        {step === "Verify" && (
          <>
            <h2>Verify</h2>
            {!verifyTarget && <p className="muted">Save a target first (previous step).</p>}
            {verifyTarget && (
              <>
                <p>
                  Target <strong>{verifyTarget.id}</strong> — <span className="mono">{verifyTarget.model}</span> at <span className="mono">{verifyTarget.endpoint}</span>
                </p>
                <NotWired>
                  The live verify (reachable, key-protected, N slots at full context, overlapping requests, a small coding task) runs in the engine's model setup, which is not on the
                  control API yet. The engine still checks the endpoint answers before it starts each worker. Results recorded on the target are shown here.
                </NotWired>
                <ul className="checklist" aria-label="Verify checklist">
                  {(["reachable", "auth", "slots", "concurrency", "capability"] as const).map((name) => {
                    const c = verifyTarget.checks.find((x) => x.name === name);
                    return (
                      <li key={name} className={c ? (c.passed ? "pass" : "fail") : "pending"}>
                        <span className={`chip chip-${c ? (c.passed ? "ok" : "bad") : "idle"}`}>{c ? (c.passed ? "pass" : "fail") : "not run"}</span> <strong>{name}</strong>
                        {c && <span className="small muted"> — {c.evidence}</span>}
                        {c && !c.passed && <div className="remedy small">{REMEDY[name]}</div>}
                        {!c && <div className="remedy small muted">{REMEDY[name]}</div>}
                      </li>
                    );
                  })}
                </ul>
              </>
            )}
          </>
        )}

        {step === "Done" && (
          <>
            <h2>Done</h2>
            {active ? (
              <div className="target-summary" aria-label="Active target">
                <p>
                  Active target: <strong>{active.id}</strong>
                </p>
                <dl className="kv">
                  <dt>model</dt>
                  <dd className="mono">{active.model}</dd>
                  <dt>endpoint</dt>
                  <dd className="mono">{active.endpoint}</dd>
                  <dt>serving</dt>
                  <dd>
                    {active.serving.engine} · {active.serving.slots} slots{active.serving.perSlotCtx ? ` · ${active.serving.perSlotCtx.toLocaleString()} tokens each` : ""}
                  </dd>
                  <dt>key</dt>
                  <dd className="mono">{active.keyRef ? `$${active.keyRef}` : "none"}</dd>
                </dl>
                <button type="button" className="btn primary" onClick={() => go({ name: "new" })}>
                  Start a task
                </button>
              </div>
            ) : (
              <p className="muted">No active target yet.</p>
            )}
          </>
        )}
      </section>

      <section className="panel" aria-label="Saved targets">
        <h2>Saved targets</h2>
        {targets.length === 0 && <p className="muted small">None yet.</p>}
        <table className="table">
          <tbody>
            {targets.map((t) => (
              <tr key={t.id}>
                <td className="mono">{t.id}</td>
                <td>{t.model}</td>
                <td className="mono small">{t.endpoint}</td>
                <td>
                  {t.serving.engine} · {t.serving.slots} slots
                </td>
                <td>
                  {active?.id === t.id ? (
                    <span className="chip chip-ok">active</span>
                  ) : (
                    <button
                      type="button"
                      className="btn small"
                      onClick={() =>
                        void api.targets.use
                          .mutate({ id: t.id })
                          .then(() => refreshTargets())
                          .catch((err) => pushNotice("error", errorText(err)))
                      }
                    >
                      Use {t.id}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <div className="wizard-foot">
        <button type="button" className="btn ghost" onClick={() => go({ name: "dashboard" })}>
          Cancel
        </button>
        <span className="grow" />
        <button type="button" className="btn" disabled={idx === 0} onClick={() => setStep(STEPS[idx - 1]!)}>
          Back
        </button>
        <button type="button" className="btn primary" disabled={idx === STEPS.length - 1} onClick={() => setStep(STEPS[idx + 1]!)}>
          Next
        </button>
      </div>
    </div>
  );
}

function StartStep({ defaults, onSaved }: { defaults: { model: string; quant: string; slots: number; ctx: number }; onSaved: (t: Target) => void }) {
  const [mode, setMode] = useState<"start" | "capture" | "api">("capture");
  const [id, setId] = useState("");
  const [endpoint, setEndpoint] = useState("http://127.0.0.1:8080/v1");
  const [model, setModel] = useState(defaults.model);
  const [keyRef, setKeyRef] = useState("");
  const [slots, setSlots] = useState(String(defaults.slots));
  const [ctx, setCtx] = useState(String(defaults.ctx));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function save(e: FormEvent) {
    e.preventDefault();
    setError(null);
    setBusy(true);
    const slug = (id.trim() || `${mode}-${model}`).toLowerCase().replace(/[^a-z0-9.]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "target";
    const target: Target = {
      id: slug,
      model: model.trim(),
      quant: mode === "api" ? null : defaults.quant,
      endpoint: endpoint.trim(),
      keyRef: keyRef.trim() || null,
      serving: { engine: mode === "api" ? "api" : "capture", endpoints: [], slots: Number(slots) || 1, perSlotCtx: Number(ctx) || null },
      checks: [],
    };
    try {
      const saved = await api.targets.save.mutate({ target, activate: true });
      await refreshTargets();
      pushNotice("info", `saved target ${slug} and made it active`);
      onSaved((saved as Target | undefined) ?? target);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <h2>Start, capture or API</h2>
      <div className="tabs" role="tablist" aria-label="How to serve">
        {(
          [
            ["start", "Start a server"],
            ["capture", "Capture an endpoint"],
            ["api", "API provider"],
          ] as const
        ).map(([m, label]) => (
          <button key={m} type="button" role="tab" aria-selected={mode === m} className={`tab ${mode === m ? "on" : ""}`} onClick={() => setMode(m)}>
            {label}
          </button>
        ))}
      </div>
      {mode === "start" ? (
        <NotWired>
          Starting llama-server / vLLM / ollama with progress (download bytes, rate, time left) runs in the engine's model setup, which is not on the control API yet. Start the server
          yourself with the slots and context from the Serving step, then use “Capture an endpoint”.
        </NotWired>
      ) : (
        <form className="capture" onSubmit={save} aria-label={mode === "api" ? "API provider" : "Capture an endpoint"}>
          <div className="grid2">
            <label className="field">
              <span>Base URL (OpenAI-compatible, ends in /v1)</span>
              <input name="endpoint" value={endpoint} onChange={(e) => setEndpoint(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Model id</span>
              <input name="model" value={model} onChange={(e) => setModel(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Key environment variable {mode === "api" ? "" : "(empty if none)"}</span>
              <input name="keyRef" value={keyRef} placeholder="OPENAI_API_KEY" onChange={(e) => setKeyRef(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Target id (optional)</span>
              <input name="targetId" value={id} placeholder="derived from the model" onChange={(e) => setId(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Slots</span>
              <input name="slots" inputMode="numeric" value={slots} onChange={(e) => setSlots(e.target.value)} />
            </label>
            <label className="field">
              <span>Per-slot context (tokens)</span>
              <input name="perSlotCtx" inputMode="numeric" value={ctx} onChange={(e) => setCtx(e.target.value)} />
            </label>
          </div>
          <p className="muted small">The key itself is never stored: the engine reads it from the named environment variable.</p>
          {error && (
            <div className="field-error" role="alert">
              {error}
            </div>
          )}
          <button type="submit" className="btn primary" disabled={busy}>
            Save and use target
          </button>
        </form>
      )}
    </>
  );
}
