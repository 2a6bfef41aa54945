// The verify checklist: each check the engine ran, with its evidence and, when it failed, what to do.
import { Clip } from "./Clip";
import type { TargetCheck } from "../../../../shared/target";

/** Where an API provider's model is not lifted by a server flag, more VRAM or "an API provider": what is in reach there. */
const PROVIDER_REMEDY: Partial<Record<TargetCheck["name"], string>> = {
  reachable: "Check the base URL (the part before /chat/completions, as the provider documents it) and that this machine reaches it.",
  concurrency: "Requests ran one after another: this provider does not serve that many requests of this key at once — ask for fewer slots.",
  capability: "The model could not solve a small coding task: a stronger coding model of this provider, or another provider.",
  reasoning: "The model's thinking came back as its answer: choose another model of this provider, or one whose API keeps its thinking apart.",
  tools: "Workers act only through tool calls: choose a model of this provider whose tool calling works.",
};

const ORDER: { name: TargetCheck["name"]; label: string; remedy: string }[] = [
  {
    name: "reachable",
    label: "Reachable",
    remedy: "Start the server, or check the URL (the part before /chat/completions, usually ending in /v1) and that it listens where the engine runs.",
  },
  {
    name: "auth",
    label: "Key required",
    remedy: "The endpoint should refuse requests without a key: start it with an API key and name the variable that holds it.",
  },
  { name: "slots", label: "Slots and context", remedy: "Give the server as many parallel slots as asked, each with the full context per slot." },
  {
    name: "concurrency",
    label: "Requests overlap",
    remedy: "Requests ran one after another: enable parallel slots / continuous batching, or ask for fewer slots.",
  },
  { name: "capability", label: "Coding task", remedy: "The model could not solve a small coding task: a larger model, a higher quant, or an API provider." },
  {
    name: "reasoning",
    label: "Thinking kept out of answers",
    remedy:
      "The model's thinking came back as its answer: start the server with the model family's reasoning parser (vLLM / SGLang --reasoning-parser qwen3, llama-server --jinja).",
  },
  {
    name: "tools",
    label: "Tool-call round trip",
    remedy: "Workers act only through tool calls: turn tool calling on in the server (llama-server --jinja), or use a model whose tool calling works.",
  },
];

/** `provider`: the checks of an API provider's model (its remedies are the provider's, not a server's). */
export function VerifyChecklist({ checks, running, provider }: { checks: TargetCheck[]; running?: boolean; provider?: boolean }) {
  return (
    <ul className="checklist" aria-label="Verify checklist" aria-busy={running || undefined}>
      {ORDER.map(({ name, label, remedy: own }) => {
        const remedy = (provider && PROVIDER_REMEDY[name]) || own;
        const c = checks.find((x) => x.name === name);
        // A keyless server that only listens on this machine is not a failure: nothing else can reach it.
        const loopbackNoKey = !!c && name === "auth" && !c.passed && /^no key configured/.test(c.evidence) && /\(loopback only\)/.test(c.evidence);
        const state = loopbackNoKey ? "no key (loopback only)" : c ? (c.passed ? "pass" : "fail") : running ? "running" : "not run";
        return (
          <li key={name} className={loopbackNoKey ? "info" : c ? (c.passed ? "pass" : "fail") : "pending"} aria-label={`${label}: ${state}`}>
            <span className={`chip chip-${loopbackNoKey ? "idle" : c ? (c.passed ? "ok" : "bad") : running ? "busy" : "idle"}`}>{state}</span>{" "}
            <strong>{label}</strong>
            {c && (
              <div className="small muted">
                <Clip text={c.evidence} />
              </div>
            )}
            {c && !c.passed && !loopbackNoKey && <div className="remedy small">{remedy}</div>}
          </li>
        );
      })}
    </ul>
  );
}
