// The setup wizard: every figure comes from the engine (setup.fit / setup.catalog — the planner behind `ocw fit`),
// capture and API providers are verified by the engine before they are saved (setup.capture / setup.provider).
import { useCallback, useEffect, useState } from "react";
import type { CatalogView, FitResult } from "../../../shared/fit";
import { api, errorText } from "../api";
import { BuildLlama } from "../components/setup/BuildLlama";
import { CatalogTable } from "../components/setup/CatalogTable";
import { EndpointForm } from "../components/setup/EndpointForm";
import { ctxText } from "../components/setup/format";
import { counted } from "../format";
import { HardwareList } from "../components/setup/HardwareList";
import { PlanCard } from "../components/setup/PlanCard";
import { StartProgress, StartStatus, useSetupJob } from "../components/setup/StartProgress";
import { ServersPanel } from "../components/setup/ServersPanel";
import { go } from "../router";
import { pushNotice, refreshTargets, useStore, ENGINE_WORDS } from "../store";
import { EngineText } from "../components/EngineText";

type Route = "local" | "capture" | "provider";

const ROUTES: { id: Route; label: string; hint: string }[] = [
  { id: "local", label: "Run a model on this machine", hint: "the engine picks a model, quant, slots and context for this hardware" },
  { id: "capture", label: "Capture a running server", hint: "llama-server, vLLM, SGLang, ollama or LM Studio already serving" },
  { id: "provider", label: "Use an API provider", hint: "an OpenAI-compatible API with a key" },
];

const MIN_CTX = [16384, 32768, 65536, 131072];

export function Setup() {
  const [route, setRoute] = useState<Route>("local");
  const [slots, setSlots] = useState("");
  const [minCtx, setMinCtx] = useState(32768);
  /** Speculative decoding with the model's own MTP head (on by default; the checkbox shows where the pick has a head). */
  const [mtp, setMtp] = useState(true);
  const [fit, setFit] = useState<FitResult | null>(null);
  const [fitError, setFitError] = useState<string | null>(null);
  const [catalog, setCatalog] = useState<CatalogView[] | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);
  const [chosenFit, setChosenFit] = useState<FitResult | null>(null);
  const [chosenError, setChosenError] = useState<string | null>(null);
  const [custom, setCustom] = useState("");
  const [llamaPath, setLlamaPath] = useState("");
  const [loading, setLoading] = useState(true);
  const targets = useStore((s) => s.targets);
  const starter = useSetupJob();
  const running = starter.job?.state === "running";
  /**
   * setup.start with a plan, on the pick's runtime: a llama.cpp catalog pick as id:QUANT, any other model as given (vLLM /
   * SGLang re-plan the same precision from the catalog id), at the slots and context asked.
   */
  /** Which card's Start began the job on screen: its progress and failure show there, under the button clicked. */
  const [startedFrom, setStartedFrom] = useState<"recommended" | "chosen">("recommended");
  const startHere = (where: "recommended" | "chosen") =>
    startedFrom === where && (starter.job || starter.error)
      ? {
          status: <StartStatus job={starter.job} error={starter.error} />,
          children: starter.job ? <StartProgress job={starter.job} onCancel={starter.cancel} /> : null,
        }
      : {};
  const startPick = (pick: NonNullable<FitResult["pick"]>, model: string, where: "recommended" | "chosen") =>
    void (setStartedFrom(where),
    starter.start({
      model: pick.runtime === "llama.cpp" && catalog?.some((c) => c.id === model) && pick.quant ? `${model}:${pick.quant}` : model,
      runtime: pick.runtime,
      slots: pick.slots,
      minCtx: Math.min(minCtx, pick.ctxPerSlot),
      // the choice the card was planned with: off, the started server's argv has no speculative flags
      ...(pick.mtp === "off" ? { mtp: false } : {}),
      ...(pick.runtime === "llama.cpp" && llamaPath.trim() ? { llamaServer: llamaPath.trim() } : {}),
      // the KV cache the card shows is the one started (the engine says so when it no longer fits)
      ...(pick.runtime === "llama.cpp" && (pick.cacheType === "f16" || pick.cacheType === "q8_0" || pick.cacheType === "q4_0")
        ? { cacheType: pick.cacheType }
        : {}),
    }));
  const active = useStore((s) => s.status?.activeTarget ?? null);

  const slotsN = slots.trim() ? Number(slots) : undefined;
  const query = useCallback(
    (model?: string) =>
      api.setup.fit.query({
        ...(model ? { model } : {}),
        ...(slotsN && Number.isInteger(slotsN) ? { slots: slotsN } : {}),
        minCtx,
        ...(mtp ? {} : { mtp: false }),
      }),
    [slotsN, minCtx, mtp],
  );

  useEffect(() => {
    let live = true;
    setLoading(true);
    setFitError(null);
    const bad = slots.trim() !== "" && !(Number.isInteger(slotsN) && slotsN! >= 1 && slotsN! <= 256);
    if (bad) {
      setFitError(`Slots must be a whole number from 1 to 256 (got "${slots}").`);
      setLoading(false);
      return;
    }
    void Promise.all([query(), api.setup.catalog.query({ ...(slotsN ? { slots: slotsN } : {}), minCtx })]).then(
      ([f, c]) => {
        if (!live) return;
        setFit(f);
        setCatalog(c);
        setLoading(false);
      },
      (err) => {
        if (!live) return;
        setFitError(`The engine could not plan for this machine: ${errorText(err)}`);
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [query, slots, slotsN, minCtx]);

  const plan = useCallback(
    (model: string) => {
      setChosen(model);
      setChosenFit(null);
      setChosenError(null);
      query(model).then(
        (f) => (f.pick ? setChosenFit(f) : setChosenError(f.problem ?? `${model} does not fit here`)),
        (err) => setChosenError(errorText(err)),
      );
    },
    [query],
  );
  useEffect(() => {
    if (chosen) plan(chosen);
    // re-plan the chosen model when slots, the minimum context or the MTP choice change
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [slotsN, minCtx, mtp]);

  const repoOf = (id: string) => catalog?.find((c) => c.id === id)?.repo;
  const nameOf = (id: string) => catalog?.find((c) => c.id === id)?.name ?? id;
  const hw = fit?.hardware ?? null;
  // the picked model (recommended or chosen) has an MTP head its runtime can draft with; while a plan is on its way the
  // checkbox stays as it was (it would blink out under the pointer when its own change re-plans)
  const head = !!(fit?.pick?.mtp || chosenFit?.pick?.mtp);
  const planning = loading || (!!chosen && !chosenFit && !chosenError);
  const [hasHead, setHasHead] = useState(false);
  useEffect(() => {
    if (!planning) setHasHead(head);
  }, [head, planning]);

  return (
    <div className="wizard">
      <section className="panel" aria-label="Hardware">
        <h2>Hardware</h2>
        {hw ? <HardwareList hw={hw} slotsShown={route === "local"} /> : !fitError && <p role="status">Detecting GPUs, CPU and RAM on the engine's machine…</p>}
        {fitError && (
          <div className="field-error" role="alert">
            <EngineText text={fitError} />
          </div>
        )}
      </section>

      <section className="panel" aria-label="Route">
        <h2>How will workers reach a model?</h2>
        <div role="radiogroup" aria-label="Route" className="routes">
          {ROUTES.map((r) => (
            <label key={r.id} className="route" style={{ display: "block", margin: "4px 0" }}>
              <input type="radio" name="route" value={r.id} checked={route === r.id} onChange={() => setRoute(r.id)} /> <strong>{r.label}</strong>{" "}
              <span className="small muted">— {r.hint}</span>
            </label>
          ))}
        </div>
      </section>

      {route === "local" && (
        <section className="panel" aria-label="Run a model on this machine">
          <div className="grid2">
            <label className="field">
              <span>Slots (workers at once; empty: {hw && hw.gpus.length === 0 ? "1 on CPU only" : "4 with a GPU"})</span>
              <input name="slots" inputMode="numeric" value={slots} placeholder="auto" onChange={(e) => setSlots(e.target.value)} />
            </label>
            <label className="field">
              <span>Minimum context per slot</span>
              <select value={minCtx} onChange={(e) => setMinCtx(Number(e.target.value))}>
                {MIN_CTX.map((c) => (
                  <option key={c} value={c}>
                    {ctxText(c)} tokens
                    {c === 32768 ? " (default: OpenCode's first request is ≈ 5k, its output up to 8k)" : c < 32768 ? " (short sessions only)" : ""}
                  </option>
                ))}
              </select>
            </label>
            {hasHead && (
              <div className="field">
                <label className="opt">
                  <input type="checkbox" name="mtp" aria-describedby="mtp-hint" checked={mtp} onChange={(e) => setMtp(e.target.checked)} />
                  <span>Speculative decoding (MTP)</span>
                </label>
                <span id="mtp-hint" className="small muted">
                  with the model's own MTP head: faster for one worker; at many workers at once it can lower total throughput
                </span>
              </div>
            )}
            <div className="llama-path">
              <label className="field">
                <span>llama-server binary (optional: an absolute path on the engine's machine; empty: the one found, else the prebuilt release)</span>
                <input
                  name="llamaServer"
                  value={llamaPath}
                  placeholder="/opt/llama.cpp/build/bin/llama-server"
                  onChange={(e) => setLlamaPath(e.target.value)}
                  spellCheck={false}
                />
              </label>
              <BuildLlama onBuilt={setLlamaPath} />
            </div>
          </div>
          {loading && <p role="status">Planning with the engine…</p>}
          {!loading && fit && fit.pick && (
            <PlanCard
              title="Recommended setup"
              pick={fit.pick}
              name={nameOf(fit.pick.model)}
              repoOf={repoOf}
              busy={running}
              onStart={() => startPick(fit.pick!, fit.pick!.model, "recommended")}
              {...startHere("recommended")}
            />
          )}
          {!loading && fit && !fit.pick && (
            <section className="panel" aria-label="Recommended setup">
              <h3>Recommended setup</h3>
              <p className="bad-text" role="alert">
                Nothing fits: <EngineText text={fit.problem ?? ""} />
              </p>
              <button type="button" className="btn" onClick={() => setRoute("provider")}>
                Use an API provider instead
              </button>
            </section>
          )}
          {!loading && fit && fit.alternatives.length > 0 && (
            <p className="small">
              Also fits:{" "}
              {fit.alternatives.map((a, i) => (
                <span key={a.model}>
                  {i > 0 && ", "}
                  <button type="button" className="btn ghost small" onClick={() => plan(a.model)}>
                    {nameOf(a.model)} {a.quant}
                  </button>{" "}
                  ({a.slots} × {ctxText(a.ctxPerSlot)})
                </span>
              ))}
            </p>
          )}
          {chosen && (chosenFit?.pick || chosenError) && (
            <>
              {chosenFit?.pick && (
                <PlanCard
                  title="Your choice"
                  pick={chosenFit.pick}
                  name={nameOf(chosenFit.pick.model)}
                  repoOf={repoOf}
                  busy={running}
                  onStart={() => startPick(chosenFit.pick!, chosen, "chosen")}
                  {...startHere("chosen")}
                />
              )}
              {chosenError && (
                <div className="field-error" role="alert">
                  {chosen}: <EngineText text={chosenError} />
                </div>
              )}
            </>
          )}
          {/* a start whose card is gone (re-planned, or begun before a reload with no plan on screen) shows here */}
          {(starter.job || starter.error) && !(startedFrom === "recommended" ? fit?.pick : chosenFit?.pick) && (
            <section className="panel" aria-label="Model start here">
              <p>
                <StartStatus job={starter.job} error={starter.error} />
              </p>
              {starter.job && <StartProgress job={starter.job} onCancel={starter.cancel} />}
            </section>
          )}
          <h3>Catalog</h3>
          <p className="small muted">Badges are the engine's fit for this machine at the slots and context above (same planner as `ocw fit`).</p>
          {catalog && <CatalogTable entries={catalog} chosen={chosen} onPlan={plan} />}
          <form
            className="grid2"
            aria-label="Plan another model"
            onSubmit={(e) => {
              e.preventDefault();
              if (custom.trim()) plan(custom.trim());
            }}
          >
            <label className="field">
              <span>Any Hugging Face repo (owner/repo[:QUANT]) or local .gguf on the engine's machine</span>
              <input
                value={custom}
                placeholder="unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q4_K_M"
                onChange={(e) => setCustom(e.target.value)}
                spellCheck={false}
              />
            </label>
            <div className="field">
              <span>&nbsp;</span>
              <button type="submit" className="btn">
                Plan this model
              </button>
            </div>
          </form>
        </section>
      )}

      {route === "capture" && (
        <section className="panel" aria-label="Capture">
          <h2>Capture a running server</h2>
          <EndpointForm mode="capture" />
        </section>
      )}
      {route === "provider" && (
        <section className="panel" aria-label="API provider">
          <h2>Use an API provider</h2>
          <EndpointForm mode="provider" />
        </section>
      )}

      <ServersPanel />

      <section className="panel" aria-label="Saved targets">
        <h2>Saved targets</h2>
        {active && (
          <p aria-label="Active target">
            Active target: <strong>{active.id}</strong> — <span className="mono">{active.model}</span> at <span className="mono">{active.endpoint}</span> ·{" "}
            {counted(active.serving.slots, "slot")}
            {active.serving.perSlotCtx ? ` × ${active.serving.perSlotCtx.toLocaleString()} tokens` : ""}{" "}
            <button type="button" className="btn small primary" onClick={() => go({ name: "new" })}>
              Start a task
            </button>
          </p>
        )}
        {targets.length === 0 && <p className="muted small">None yet.</p>}
        <table className="table">
          <tbody>
            {targets.map((t) => {
              const outcome = t.outcome ?? "unverified";
              return (
                <tr key={t.id}>
                  <td className="mono id-cell">{t.id}</td>
                  <td className="id-cell">{t.model}</td>
                  <td className="mono small">{t.endpoint}</td>
                  <td>
                    {t.serving.engine} · {counted(t.serving.slots, "slot")}
                    {t.serving.perSlotCtx ? ` × ${ctxText(t.serving.perSlotCtx)}` : ""}
                  </td>
                  <td>
                    <span
                      className={`chip chip-${outcome === "built" ? "ok" : outcome === "underpowered" ? "warn" : outcome === "unverified" ? "idle" : "bad"}`}
                    >
                      {outcome}
                    </span>
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
                            .catch((err) => pushNotice("error", errorText(err), ENGINE_WORDS))
                        }
                      >
                        Use {t.id}
                      </button>
                    )}
                  </td>
                  <td>
                    <KeyField target={t} />
                  </td>
                  <td>
                    <DeleteTarget id={t.id} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
    </div>
  );
}

/** Delete a target, after an inline confirmation whose focus starts on Cancel. The engine refuses while workers of it run. */
function DeleteTarget({ id }: { id: string }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!confirm)
    return (
      <button type="button" className="btn small ghost" aria-label={`Delete target ${id}`} onClick={() => setConfirm(true)}>
        Delete…
      </button>
    );
  return (
    <span className="confirm-inline" role="group" aria-label={`Confirm deleting target ${id}`}>
      <span className="small">Delete {id}? Its workers keep their records.</span>
      <button
        type="button"
        className="btn small bad"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          void api.targets.remove
            .mutate({ id })
            .then(() => refreshTargets())
            .catch((err) => pushNotice("error", errorText(err), ENGINE_WORDS))
            .finally(() => (setBusy(false), setConfirm(false)));
        }}
      >
        Delete
      </button>
      <button type="button" className="btn small" autoFocus onClick={() => setConfirm(false)}>
        Cancel
      </button>
    </span>
  );
}

/**
 * The target's API key: where it comes from, and a field to type one in. The engine keeps it in the OS keychain (a
 * 0600 file in its state dir where none runs); it never comes back to this page. Servers the engine started have
 * their own generated key.
 */
function KeyField({ target }: { target: { id: string; keyRef?: string | null; keyFile?: string | null; keyStore?: string | null } }) {
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const managed = !!target.keyFile && !target.keyFile.endsWith(".api-key");
  const source =
    target.keyStore === "keychain"
      ? "key in keychain"
      : target.keyFile
        ? managed
          ? "generated key"
          : "key in 0600 file"
        : target.keyRef
          ? `key from $${target.keyRef}`
          : "no key";
  if (managed) return <span className="small muted">{source}</span>;
  if (!open)
    return (
      <span className="small">
        <span className="muted">{source}</span>{" "}
        <button type="button" className="btn small ghost" aria-label={`Set API key of ${target.id}`} onClick={() => setOpen(true)}>
          Set key…
        </button>
      </span>
    );
  const save = (key: string) => {
    setBusy(true);
    void api.targets.setKey
      .mutate({ id: target.id, key })
      .then((r) => {
        pushNotice(
          "info",
          r.stored === "none"
            ? `key of ${target.id} forgotten`
            : `key of ${target.id} stored in the ${r.stored === "keychain" ? "OS keychain" : "state dir (0600 file: no keychain here)"}`,
        );
        setOpen(false);
        return refreshTargets();
      })
      .catch((err) => pushNotice("error", errorText(err), ENGINE_WORDS))
      .finally(() => (setBusy(false), setValue("")));
  };
  return (
    <form
      className="confirm-inline"
      aria-label={`API key of ${target.id}`}
      onSubmit={(e) => {
        e.preventDefault();
        save(value);
      }}
    >
      <input
        type="password"
        autoComplete="off"
        spellCheck={false}
        aria-label={`API key for ${target.id}`}
        placeholder="paste the key"
        value={value}
        onChange={(e) => setValue(e.target.value)}
        autoFocus
      />
      <button type="submit" className="btn small primary" disabled={busy || !value.trim()}>
        Save
      </button>
      {(target.keyStore || target.keyFile) && (
        <button type="button" className="btn small ghost" disabled={busy} onClick={() => save("")}>
          Forget
        </button>
      )}
      <button type="button" className="btn small" onClick={() => (setOpen(false), setValue(""))}>
        Cancel
      </button>
    </form>
  );
}
