// Approval policies as rules a person builds row by row (tool, pattern, decision), each with what it answers in
// words, validated by the shared schema before saving, and checked against a sample ask by the engine's own matching
// (policies.explain). The raw JSON stays available under "Advanced".
import { useEffect, useId, useMemo, useState } from "react";
import { showUntrusted } from "../../../shared/untrusted";
import { api, errorText } from "../api";
import { describeRule, MAX_RULES, moveRow, parseRulesJson, RULE_TOOLS, rulesJson, validateRules, type RuleRow } from "../policy";
import { counted } from "../format";
import { EngineText } from "./EngineText";

type Explanation = Awaited<ReturnType<typeof api.policies.explain.query>>;

export function PolicyBuilder() {
  const [rows, setRows] = useState<RuleRow[]>([]);
  const [saved, setSaved] = useState<string>("[]");
  const [json, setJson] = useState("[]");
  const [jsonError, setJsonError] = useState<string | null>(null);
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const [showErrors, setShowErrors] = useState(false);
  const [sample, setSample] = useState({ tool: "bash", what: "" });
  const [explained, setExplained] = useState<{ for: string; e: Explanation } | { for: string; error: string } | null>(null);
  const toolsId = useId();

  useEffect(() => {
    void api.policies.get.query().then((r) => {
      const text = rulesJson(r);
      setRows(r);
      setSaved(text);
      setJson(text);
    });
  }, []);

  const update = (next: RuleRow[]) => {
    setRows(next);
    setJson(rulesJson(next));
    setJsonError(null);
    setMsg(null);
  };
  const set = (i: number, patch: Partial<RuleRow>) => update(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const check = useMemo(() => validateRules(rows), [rows]);
  const dirty = rulesJson(rows) !== saved || jsonError !== null;

  // The sample ask, checked by the engine against the rules as drafted (valid ones only).
  const sampleKey = JSON.stringify([rows, sample]);
  useEffect(() => {
    if (!sample.what.trim() || !check.ok) {
      setExplained(null);
      return;
    }
    const t = setTimeout(() => {
      api.policies.explain
        .query({ rules: check.rules, tool: sample.tool.trim() || "bash", what: sample.what })
        .then((e) => setExplained({ for: sampleKey, e }))
        .catch((err) => setExplained({ for: sampleKey, error: errorText(err) }));
    }, 150);
    return () => clearTimeout(t);
  }, [sampleKey, check, sample]);
  const ex = explained && explained.for === sampleKey && "e" in explained ? explained.e : null;

  const save = async () => {
    if (jsonError) return setMsg({ ok: false, text: `Fix the JSON under Advanced first: ${jsonError}` });
    if (!check.ok) {
      setShowErrors(true);
      const n = Object.keys(check.rows).length;
      return setMsg({ ok: false, text: check.list ?? `Not saved: ${n} rule${n === 1 ? "" : "s"} to fix (marked below).` });
    }
    try {
      const r = await api.policies.set.mutate({ rules: check.rules });
      const text = rulesJson(r);
      setRows(r);
      setSaved(text);
      setJson(text);
      setShowErrors(false);
      setMsg({ ok: true, text: `Saved ${counted(r.length, "rule")}.` });
    } catch (err) {
      setMsg({ ok: false, text: errorText(err) });
    }
  };

  return (
    <div className="policy-builder">
      <datalist id={toolsId}>
        {RULE_TOOLS.map((t) => (
          <option key={t} value={t}>
            {t === "*" ? "any tool" : t}
          </option>
        ))}
      </datalist>
      {rows.length === 0 && <p className="muted small">No rules: every ask waits for a person (or Claude).</p>}
      <ol className="rules" aria-label="Rules">
        {rows.map((r, i) => {
          const errs = showErrors && !check.ok ? check.rows[i] : undefined;
          const n = i + 1;
          const hit = ex?.matches[i];
          const answers = ex?.answer?.index === i;
          return (
            <li key={i} className="rule" aria-label={`Rule ${n}`}>
              <div className="rule-row">
                <span className="rule-n muted">{n}</span>
                <label className="rule-field">
                  <span className="small muted">Tool</span>
                  <input
                    aria-label={`Tool of rule ${n}`}
                    list={toolsId}
                    value={r.tool}
                    spellCheck={false}
                    aria-invalid={errs?.tool ? true : undefined}
                    onChange={(e) => set(i, { tool: e.target.value })}
                  />
                </label>
                <label className="rule-field grow">
                  <span className="small muted">Pattern (a glob over the command, path or URL)</span>
                  <input
                    aria-label={`Pattern of rule ${n}`}
                    className="mono"
                    value={r.pattern}
                    spellCheck={false}
                    aria-invalid={errs?.pattern ? true : undefined}
                    onChange={(e) => set(i, { pattern: e.target.value })}
                  />
                </label>
                <label className="rule-field">
                  <span className="small muted">Decision</span>
                  <select
                    aria-label={`Decision of rule ${n}`}
                    value={r.decision}
                    aria-invalid={errs?.decision ? true : undefined}
                    onChange={(e) => set(i, { decision: e.target.value })}
                  >
                    {!["once", "always", "reject"].includes(r.decision) && <option value={r.decision}>{r.decision || "(choose)"}</option>}
                    <option value="once">approve once</option>
                    <option value="always">approve always</option>
                    <option value="reject">reject</option>
                  </select>
                </label>
                <div className="rule-buttons">
                  <button
                    type="button"
                    className="btn small"
                    aria-label={`Move rule ${n} up`}
                    disabled={i === 0}
                    onClick={() => update(moveRow(rows, i, i - 1))}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    className="btn small"
                    aria-label={`Move rule ${n} down`}
                    disabled={i === rows.length - 1}
                    onClick={() => update(moveRow(rows, i, i + 1))}
                  >
                    ↓
                  </button>
                  <button type="button" className="btn small" aria-label={`Remove rule ${n}`} onClick={() => update(rows.filter((_, j) => j !== i))}>
                    Remove
                  </button>
                </div>
              </div>
              <p className="small rule-says" aria-label={`What rule ${n} answers`}>
                {describeRule(r)}
                {hit !== undefined && (
                  <>
                    {" "}
                    <span className={`chip chip-${answers ? (r.decision === "reject" ? "bad" : "ok") : hit ? "warn" : "idle"}`}>
                      {answers ? "answers the sample" : hit ? "matches the sample, another rule answers" : "does not match the sample"}
                    </span>
                  </>
                )}
              </p>
              {errs && (
                <p className="field-error" role="alert" aria-label={`Problems of rule ${n}`}>
                  {Object.entries(errs)
                    .map(([k, v]) => `${k}: ${v}`)
                    .join(" · ")}
                </p>
              )}
            </li>
          );
        })}
      </ol>
      <div className="rule-actions">
        <button
          type="button"
          className="btn"
          disabled={rows.length >= MAX_RULES}
          onClick={() => update([...rows, { tool: "bash", pattern: "", decision: "once" }])}
        >
          Add rule
        </button>
        <button type="button" className="btn primary" disabled={!dirty} onClick={() => void save()}>
          Save policies
        </button>
        {dirty && <span className="small muted">unsaved changes</span>}
      </div>
      {msg && (
        <p className={`small ${msg.ok ? "" : "bad-text"}`} role="status">
          {msg.ok ? msg.text : <EngineText text={msg.text} />}
        </p>
      )}

      <fieldset className="rule-try" aria-label="Try an ask">
        <legend className="small">Try an ask against these rules (the engine's own matching, before you save)</legend>
        <div className="rule-row">
          <label className="rule-field">
            <span className="small muted">Tool</span>
            <input
              aria-label="Sample tool"
              list={toolsId}
              value={sample.tool}
              spellCheck={false}
              onChange={(e) => setSample({ ...sample, tool: e.target.value })}
            />
          </label>
          <label className="rule-field grow">
            <span className="small muted">Command, path or URL</span>
            <input
              aria-label="Sample ask"
              className="mono"
              value={sample.what}
              placeholder="npm test && npm run lint"
              spellCheck={false}
              onChange={(e) => setSample({ ...sample, what: e.target.value })}
            />
          </label>
        </div>
        {sample.what.trim() && !check.ok && <p className="small muted">Fix the rules above to try them.</p>}
        {explained && explained.for === sampleKey && "error" in explained && (
          <p className="field-error" role="alert">
            <EngineText text={explained.error} />
          </p>
        )}
        {ex && (
          <div role="status" aria-label="Sample result" className="small">
            <strong>
              {ex.answer
                ? `Rule ${ex.answer.index + 1} answers: ${ex.answer.decision === "reject" ? "rejected" : `approved (${ex.answer.decision})`}`
                : "No rule answers: it waits for a person"}
            </strong>
            {ex.unsplittable && <div className="muted">Cannot be split with certainty ({ex.unsplittable}): no approving rule answers it.</div>}
            {ex.parts && (
              <ul aria-label="Simple commands">
                {ex.parts.map((p, k) => (
                  <li key={k}>
                    <code className="untrusted">{showUntrusted(p.command, { max: 200, lines: false })}</code>{" "}
                    <span className="muted">{p.rules.length ? `matched by rule ${p.rules.map((x) => x + 1).join(", ")}` : "matched by no rule"}</span>
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </fieldset>

      <details className="rule-advanced">
        <summary className="small">Advanced: the rules as JSON</summary>
        <label className="field">
          <span>Rules (JSON)</span>
          <textarea
            aria-label="Policy rules"
            rows={6}
            spellCheck={false}
            value={json}
            aria-invalid={jsonError ? true : undefined}
            onChange={(e) => {
              setJson(e.target.value);
              const p = parseRulesJson(e.target.value);
              setMsg(null);
              if (p.ok) {
                setRows(p.rows);
                setJsonError(null);
              } else setJsonError(p.error);
            }}
          />
        </label>
        {jsonError && (
          <p className="field-error" role="alert">
            {jsonError}
          </p>
        )}
      </details>
    </div>
  );
}
