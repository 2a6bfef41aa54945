// The engine's own messages mark commands and names as Markdown-like code spans ("run `ocw stop` first"): split into
// plain text and code, so the GUI shows them as <code> and not as raw backticks. Only the engine's words go through
// it, never text a worker or a model wrote (that is shown as it is, made safe by shared/untrusted.ts).
//
// Text the engine quotes inside its words (a value typed in, `…, untrusted: "…"` of shared/untrusted.ts) is in double
// quotes, JSON's: a backtick in it is a character of that text, never a span's edge. A backtick with no partner on its
// line stays a backtick. Nothing here makes markup: the pieces are text, rendered by React as text (EngineText).

export interface TextSpan {
  text: string;
  /** A code span of the engine's (shown as <code>, its backticks dropped). */
  code: boolean;
}

/** The end (after the closing quote) of the JSON-quoted string opening at `i`, or -1 when it does not close on its line. */
function quoteEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text[j];
    if (c === "\\") j++;
    else if (c === '"') return j + 1;
    else if (c === "\n") return -1;
  }
  return -1;
}

/** An engine message as plain and code pieces, in order; joined, their texts (with each code piece's backticks) are the message. */
export function codeSpans(text: string): TextSpan[] {
  const out: TextSpan[] = [];
  let plain = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const end = quoteEnd(text, i);
      const to = end < 0 ? i + 1 : end;
      plain += text.slice(i, to);
      i = to;
      continue;
    }
    if (c === "`") {
      const close = text.indexOf("`", i + 1);
      const inner = close < 0 ? "" : text.slice(i + 1, close);
      if (close > i + 1 && !inner.includes("\n") && inner.trim()) {
        if (plain) out.push({ text: plain, code: false });
        plain = "";
        out.push({ text: inner, code: true });
        i = close + 1;
        continue;
      }
    }
    plain += c;
    i++;
  }
  if (plain) out.push({ text: plain, code: false });
  return out;
}
