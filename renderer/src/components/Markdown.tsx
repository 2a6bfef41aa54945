// Model text, steers and summaries as markdown: react-markdown (no raw HTML: it is shown as text) through
// rehype-sanitize's GitHub schema, so text a worker or model wrote can never add script, style, forms or frames.
// Images are not loaded (their alt text shows; a model's image URL would be a beacon), links open outside the app.
// It re-renders as text streams in: a half-written fence renders as code until it closes. Code blocks are
// highlighted by shiki, loaded on first use (a separate chunk), with a handful of languages and the JavaScript regex
// engine (no WebAssembly, which the page's CSP does not allow); tokens become React spans (no innerHTML).
import { memo, useEffect, useState, type ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import rehypeSanitize, { defaultSchema } from "rehype-sanitize";
import { isHiddenCodePoint, showUntrustedLines } from "../../../shared/untrusted";

/**
 * Model text with what could hide or reorder it (bidi controls, zero-width and other invisible characters, control
 * characters) shown as ⟪U+XXXX⟫, as everywhere worker-written text reaches a person (shared/untrusted.ts); line breaks
 * and tabs stay, since markdown needs them.
 */
// Line breaks, tabs, and the spaces prose uses (no-break, thin, ideographic…): nothing runs this text, so a space
// other than U+0020 cannot split a command here; bidi, zero-width and control characters are still shown.
const PROSE_OK = (cp: number) =>
  cp === 0x0a ||
  cp === 0x0d ||
  cp === 0x09 ||
  cp === 0x00a0 ||
  cp === 0x1680 ||
  (cp >= 0x2000 && cp <= 0x200a) ||
  cp === 0x202f ||
  cp === 0x205f ||
  cp === 0x3000;
function visible(text: string): string {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    out += !PROSE_OK(cp) && isHiddenCodePoint(cp) ? `⟪U+${cp.toString(16).toUpperCase().padStart(4, "0")}⟫` : ch;
  }
  return out;
}

const schema = { ...defaultSchema, tagNames: (defaultSchema.tagNames ?? []).filter((t) => t !== "img" && t !== "input") };

type Token = { content: string; htmlStyle?: Record<string, string> };
type Highlighter = { codeToTokens(code: string, o: { lang: string; themes: { light: string; dark: string } }): { tokens: Token[][] } };

const LANGS: Record<string, string> = {
  ts: "typescript",
  typescript: "typescript",
  tsx: "tsx",
  js: "javascript",
  javascript: "javascript",
  jsx: "javascript",
  mjs: "javascript",
  json: "json",
  sh: "shellscript",
  bash: "shellscript",
  shell: "shellscript",
  shellscript: "shellscript",
  console: "shellscript",
  py: "python",
  python: "python",
  diff: "diff",
  patch: "diff",
  yaml: "yaml",
  yml: "yaml",
};

let highlighter: Promise<Highlighter> | null = null;
/** shiki, with its languages and themes, loaded once on the first code block. */
function loadHighlighter(): Promise<Highlighter> {
  highlighter ??= (async () => {
    const [{ createHighlighterCore }, { createJavaScriptRegexEngine }] = await Promise.all([import("shiki/core"), import("shiki/engine/javascript")]);
    return (await createHighlighterCore({
      themes: [import("shiki/dist/themes/github-light.mjs"), import("shiki/dist/themes/github-dark.mjs")],
      langs: [
        import("shiki/dist/langs/typescript.mjs"),
        import("shiki/dist/langs/tsx.mjs"),
        import("shiki/dist/langs/javascript.mjs"),
        import("shiki/dist/langs/json.mjs"),
        import("shiki/dist/langs/shellscript.mjs"),
        import("shiki/dist/langs/python.mjs"),
        import("shiki/dist/langs/diff.mjs"),
        import("shiki/dist/langs/yaml.mjs"),
      ],
      engine: createJavaScriptRegexEngine(),
    })) as unknown as Highlighter;
  })();
  return highlighter;
}

/** shiki's CSS declarations (`font-style`, `--shiki-dark`) as a React style object (camelCase, custom properties kept). */
function reactStyle(css: Record<string, string> | undefined): React.CSSProperties | undefined {
  if (!css) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(css)) out[k.startsWith("--") ? k : k.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] = v;
  return out as React.CSSProperties;
}

/** A code block: plain at once, highlighted when shiki has loaded (for a language it knows). */
const CodeBlock = memo(function CodeBlock({ code, lang }: { code: string; lang: string | null }) {
  const name = lang ? LANGS[lang.toLowerCase()] : undefined;
  const [tokens, setTokens] = useState<Token[][] | null>(null);
  useEffect(() => {
    if (!name) return;
    let live = true;
    loadHighlighter()
      .then((h) => live && setTokens(h.codeToTokens(code, { lang: name, themes: { light: "github-light", dark: "github-dark" } }).tokens))
      .catch(() => undefined); // unhighlighted is still right
    return () => {
      live = false;
    };
  }, [code, name]);
  return (
    <pre className={`code-block ${tokens ? "shiki" : ""}`} data-lang={name ?? lang ?? undefined}>
      <code>
        {tokens
          ? tokens.map((line, i) => (
              <span key={i} className="line">
                {line.map((t, j) => (
                  <span key={j} style={reactStyle(t.htmlStyle)}>
                    {t.content}
                  </span>
                ))}
                {i < tokens.length - 1 ? "\n" : null}
              </span>
            ))
          : code}
      </code>
    </pre>
  );
});

const components: Components = {
  a: ({ href, children }) => (
    <a href={href} target="_blank" rel="noopener noreferrer nofollow" title={href}>
      {children}
    </a>
  ),
  pre: ({ children }) => <>{children}</>,
  code: ({ className, children }) => {
    const text = String(children ?? "");
    const lang = /language-([\w+-]+)/.exec(className ?? "")?.[1] ?? null;
    // Fenced blocks carry a language class or span lines; `inline` code is neither.
    if (lang || text.includes("\n")) return <CodeBlock code={text.replace(/\n$/, "")} lang={lang} />;
    return <code className="inline-code">{children}</code>;
  },
};

/** The bench's switch (localStorage `ocw.markdown` = "off"): model text as plain text, to measure what markdown costs. */
const PLAIN = (() => {
  try {
    return localStorage.getItem("ocw.markdown") === "off";
  } catch {
    return false;
  }
})();

/** Untrusted markdown, sanitized. `text` may be a prefix of what is still streaming. */
export const Markdown = memo(function Markdown({ text, className }: { text: string; className?: string }): ReactNode {
  if (PLAIN) return <div className={`plain ${className ?? ""}`}>{visible(text)}</div>;
  return (
    <div className={`md ${className ?? ""}`}>
      <ReactMarkdown rehypePlugins={[[rehypeSanitize, schema]]} components={components} skipHtml>
        {visible(text)}
      </ReactMarkdown>
    </div>
  );
});

/** Long tool output: the first `lines` lines, with "Show all" for the rest. */
export function Truncated({ text, lines = 40, className }: { text: string; lines?: number; className?: string }) {
  const [all, setAll] = useState(false);
  text = showUntrustedLines(text);
  const rows = text.split("\n");
  const long = rows.length > lines || text.length > lines * 200;
  const shown =
    all || !long
      ? text
      : rows
          .slice(0, lines)
          .join("\n")
          .slice(0, lines * 200);
  return (
    <>
      <pre className={className}>{shown}</pre>
      {long && (
        <button type="button" className="btn ghost small show-all" aria-expanded={all} onClick={() => setAll(!all)}>
          {all ? "Show less" : `Show all (${rows.length.toLocaleString()} lines, ${text.length.toLocaleString()} chars)`}
        </button>
      )}
    </>
  );
}
