// Long text a model or a server wrote, cut with "show all".
import { useState } from "react";
import { EngineText } from "../EngineText";

/**
 * Text a model or a server wrote (a failed completion's body, a log line), quoted once and cut to `max` characters
 * with "show all": never pasted whole, several times over.
 */
export function Clip({ text, max = 240, engine = false }: { text: string; max?: number; engine?: boolean }) {
  const [all, setAll] = useState(false);
  // `engine`: the engine's own words (an error it answered), whose code spans show as code (EngineText)
  const show = (t: string) => (engine ? <EngineText text={t} /> : t);
  if (text.length <= max) return <>{show(text)}</>;
  return (
    <>
      {show(all ? text : `${text.slice(0, max).trimEnd()}…`)}{" "}
      <button type="button" className="btn ghost small" aria-expanded={all} onClick={() => setAll(!all)}>
        {all ? "show less" : `show all (${text.length.toLocaleString()} characters)`}
      </button>
    </>
  );
}
