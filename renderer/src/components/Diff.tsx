import { useMemo } from "react";

/** A unified diff, coloured by line. Long diffs are cut at `maxLines` with a note. */
export function Diff({ text, maxLines = 400, label = "diff" }: { text: string; maxLines?: number; label?: string }) {
  const lines = useMemo(() => text.split("\n"), [text]);
  const shown = lines.slice(0, maxLines);
  return (
    <pre className="diff" aria-label={label} tabIndex={0}>
      {shown.map((l, i) => {
        const cls = l.startsWith("+++") || l.startsWith("---") ? "d-file" : l.startsWith("+") ? "d-add" : l.startsWith("-") ? "d-del" : l.startsWith("@@") ? "d-hunk" : l.startsWith("diff ") ? "d-file" : "";
        return (
          <span key={i} className={cls}>
            {l}
            {"\n"}
          </span>
        );
      })}
      {lines.length > maxLines && <span className="muted">… {lines.length - maxLines} more lines</span>}
    </pre>
  );
}
