// One plan from the engine's planner (the recommendation, or the person's choice): what runs where, the memory it
// takes per device, and the commands that do it.
import type { ReactNode } from "react";
import type { FitPick } from "../../../../shared/fit";
import { CopyField } from "../common";
import { counted } from "../../format";
import { ctxText, PLACEMENT, sh } from "./format";
import { MemoryChart } from "./MemoryChart";
import { EngineText } from "../EngineText";

/** The `ocw setup` command for a pick: the catalog repo and quant when known, else the model as given. */
function setupCommand(pick: FitPick, repoOf: (id: string) => string | undefined): string {
  const repo = repoOf(pick.model);
  const model = repo ? `${repo}${pick.quant ? `:${pick.quant}` : ""}` : pick.model;
  // the model's MTP head switched off (the Setup page's checkbox): the command's own switch
  const mtp = pick.mtp === "off" ? " --no-mtp" : "";
  // vLLM / SGLang load the catalog id's safetensors weights; llama.cpp the GGUF repo:QUANT
  if (pick.runtime !== "llama.cpp") return `ocw setup --runtime ${pick.runtime} --model ${sh(pick.model)} --slots ${pick.slots} --ctx ${pick.ctxPerSlot}${mtp}`;
  return `ocw setup --runtime llama.cpp --model ${sh(model)} --slots ${pick.slots} --ctx ${pick.ctxPerSlot}${mtp}`;
}

export function PlanCard({
  title,
  pick,
  name,
  repoOf,
  onStart,
  busy,
  status,
  children,
}: {
  title: string;
  pick: FitPick;
  name: string;
  repoOf: (id: string) => string | undefined;
  /** Starts this plan on the engine's machine (setup.start); absent: no button. */
  onStart?: () => void;
  /** A start is running: the button waits for it. */
  busy?: boolean;
  /** The start begun from this card: one line next to the button (phase, progress, or what failed and why). */
  status?: ReactNode;
  /** …and its full progress, right under the button. */
  children?: ReactNode;
}) {
  const badge = PLACEMENT[pick.placement];
  return (
    <section className="panel plan" aria-label={title}>
      <h3>
        {title}: {name} <span className={`chip chip-${badge.tone}`}>{badge.label}</span>
      </h3>
      <dl className="kv">
        <dt>model</dt>
        <dd>
          {name} <span className="mono small muted">{repoOf(pick.model) ?? pick.model}</span>
        </dd>
        <dt>quant</dt>
        <dd className="mono">{pick.quant ?? "as in the file"}</dd>
        <dt>slots</dt>
        <dd>{pick.slots} (workers at once)</dd>
        <dt>context per slot</dt>
        <dd>
          {pick.ctxPerSlot.toLocaleString()} tokens ({ctxText(pick.ctxPerSlot)})
        </dd>
        <dt>runtime</dt>
        <dd>
          {pick.runtime}
          {pick.runtimeReason ? <span className="small muted"> — {pick.runtimeReason}</span> : null}
        </dd>
        {pick.speed ? (
          <>
            <dt>speed (estimated)</dt>
            <dd>
              <span className={`chip chip-${pick.speed.tooSlow ? "bad" : "ok"}`}>≈ {pick.speed.decodeTokPerSecPerSlot} tokens/s per slot</span>{" "}
              <span className="small muted">
                with {pick.slots} busy ({pick.speed.decodeTokPerSecTotal} in all)
                {pick.speed.decodeTokPerSecSingle !== undefined ? `, ${pick.speed.decodeTokPerSecSingle} alone` : ""}
                {pick.speed.prefillTokPerSec !== undefined ? `; prompt ≈ ${pick.speed.prefillTokPerSec} tokens/s` : ""}
                {pick.speed.firstRequestSec !== undefined ? `, OpenCode's first request ≈ ${pick.speed.firstRequestSec} s` : ""}
              </span>
              {pick.speed.warning ? (
                <div className="small">
                  <EngineText text={pick.speed.warning} />
                </div>
              ) : null}
            </dd>
          </>
        ) : null}
        <dt>tool calling</dt>
        <dd>
          <span className={`chip chip-${pick.toolCalling === "verified" ? "ok" : "idle"}`}>{pick.toolCalling}</span>{" "}
          <span className="small muted">
            {pick.toolCalling === "verified" ? "a target of this model passed the tool-call round trip here" : "checked by verify once it runs here"}
          </span>
        </dd>
        {pick.pool ? (
          <>
            <dt>replicas</dt>
            <dd>
              {pick.pool.replicas} llama-servers as one pool target:{" "}
              {pick.pool.endpoints.map((e) => `${e.devices.join("+")} ${counted(e.slots, "slot")}`).join(", ")}
            </dd>
          </>
        ) : pick.replicas ? (
          <>
            <dt>replicas</dt>
            <dd>{pick.replicas} copies would fit, one per GPU set</dd>
          </>
        ) : null}
      </dl>
      <p className="small">
        <EngineText text={pick.reason} />
      </p>
      <MemoryChart devices={pick.devices} />
      <div className="field">
        <span>Equivalent CLI command (downloads, starts and verifies, then saves the target)</span>
        <CopyField label="ocw setup command" value={setupCommand(pick, repoOf)} />
      </div>
      <div className="field">
        <span>
          {pick.pool
            ? `The ${pick.pool.replicas} llama-servers it runs, one per line (key elided, each with its GPUs alone)`
            : pick.runtime === "llama.cpp"
              ? "The llama-server it runs (key elided)"
              : `The ${pick.runtime === "vllm" ? "vLLM" : "SGLang"} server it runs (key elided)`}
        </span>
        <CopyField label={pick.runtime === "llama.cpp" ? "llama-server command" : `${pick.runtime} command`} value={pick.command} />
      </div>
      {onStart && (
        <p>
          <button type="button" className="btn primary" onClick={onStart} disabled={busy}>
            Start {name} here
          </button>{" "}
          {status ?? (
            <span className="small muted">
              {busy
                ? "a start is running: wait for it or cancel it"
                : "the engine downloads, starts, verifies and checks where the weights landed, then saves the target"}
            </span>
          )}
        </p>
      )}
      {children}
    </section>
  );
}
