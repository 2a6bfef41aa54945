// The engine's code spans: split out where the engine wrote them, never inside text it quotes, never markup.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { showUntrusted } from "../../shared/untrusted";
import { EngineText } from "./components/EngineText";
import { codeSpans } from "./engineText";

const html = (text: string) => renderToStaticMarkup(createElement(EngineText, { text }));

describe("an engine message's code spans", () => {
  it("a command in backticks is code, its backticks gone; the words around it plain", () => {
    expect(codeSpans("run `ocw stop` first (same planner as `ocw fit`)")).toEqual([
      { text: "run ", code: false },
      { text: "ocw stop", code: true },
      { text: " first (same planner as ", code: false },
      { text: "ocw fit", code: true },
      { text: ")", code: false },
    ]);
    expect(html("export it (then `ocw stop` and start it again)")).toBe("export it (then <code>ocw stop</code> and start it again)");
  });

  it("a lone, empty or multi-line backtick stays as written", () => {
    for (const t of ["a ` b", "a `` b", "a ` ` b", "a `x\ny` b", "no spans here"]) expect(codeSpans(t)).toEqual([{ text: t, code: false }]);
  });

  it("text the engine quotes (a value typed in, a worker's words marked untrusted) is never read for spans", () => {
    const quoted = `unknown worker "a\`b\`c"; (a file name the worker chose, untrusted: ${JSON.stringify('x`rm -rf`y " `z`')}) — see \`ocw list\``;
    const spans = codeSpans(quoted);
    expect(spans.filter((s) => s.code).map((s) => s.text)).toEqual(["ocw list"]);
    expect(spans.map((s) => (s.code ? `\`${s.text}\`` : s.text)).join("")).toBe(quoted);
  });

  it("makes no markup: tags and entities in the message stay text, inside a span too", () => {
    const out = html('<img src=x onerror=alert(1)> `<b>&amp;</b>` "q"');
    expect(out).not.toContain("<img");
    expect(out).not.toContain("<b>");
    expect(out).toBe("&lt;img src=x onerror=alert(1)&gt; <code>&lt;b&gt;&amp;amp;&lt;/b&gt;</code> &quot;q&quot;");
  });

  it("keeps the marks of a message made safe (a notice's showUntrusted): hidden characters stay shown, inside a span too", () => {
    const safe = showUntrusted("push refused: `git\u202epush`\u001b[2J", { block: true });
    const spans = codeSpans(safe);
    expect(spans.find((s) => s.code)?.text).toBe("git⟪U+202E⟫push");
    expect(spans.map((s) => s.text).join("")).not.toMatch(/[\u202e\u001b]/);
  });
});
