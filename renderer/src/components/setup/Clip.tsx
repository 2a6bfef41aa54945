// Long text a model or a server wrote, cut with "show all".
import { useState } from "react";

/**
 * Text a model or a server wrote (a failed completion's body, a log line), quoted once and cut to `max` characters
 * with "show all": never pasted whole, several times over.
 */
export function Clip({ text, max = 240 }: { text: string; max?: number }) {
  const [all, setAll] = useState(false);
  if (text.length <= max) return <>{text}</>;
  return (
    <>
      {all ? text : `${text.slice(0, max).trimEnd()}…`}{" "}
      <button type="button" className="btn ghost small" aria-expanded={all} onClick={() => setAll(!all)}>
        {all ? "show less" : `show all (${text.length.toLocaleString()} characters)`}
      </button>
    </>
  );
}
