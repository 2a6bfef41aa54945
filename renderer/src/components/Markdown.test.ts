// Worker-written markdown as the UI renders it (server-side render, no DOM): no link a click would run or that reads
// local data, no image that loads (a beacon with the person's IP, or a Referer), whatever spelling the model tries.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { Markdown } from "./Markdown";

const render = (text: string) => renderToStaticMarkup(createElement(Markdown, { text }));

describe("worker-written markdown against the person's browser", () => {
  it("links: only web and mail addresses keep their href, and each opens apart with no Referer and no opener", () => {
    const bad = [
      "[a](javascript:alert(1))",
      "[a](JaVaScRiPt:alert(1))",
      "[a](jav&#x61;script:alert(1))",
      "[a](%6Aavascript:alert(1))",
      "[a]( javascript:alert(1))",
      "[a](\tjavascript:alert(1))",
      "[a](vbscript:msgbox(1))",
      "[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
      "[a](file:///etc/passwd)",
      "[a](blob:http://127.0.0.1/x)",
      "[a][r]\n\n[r]: javascript:alert(1)",
      "<javascript:alert(1)>",
      '<a href="javascript:alert(1)">a</a>',
    ];
    for (const md of bad) {
      const html = render(md);
      expect(html, md).not.toMatch(/href="\s*(javascript|vbscript|data|file|blob|%6a|jav&)/i);
      expect(html, md).not.toMatch(/<a[^>]*href="[^"#]*script/i);
    }
    const ok = render("[site](https://example.test/x) <http://example.test/y>");
    for (const a of ok.match(/<a [^>]*>/g) ?? []) {
      expect(a).toContain('target="_blank"');
      expect(a).toMatch(/rel="[^"]*noopener[^"]*noreferrer/);
    }
    expect(ok.match(/<a /g)?.length).toBe(2);
  });

  it("images never load: markdown, reference, raw HTML, srcset, a link around an image, SVG, CSS", () => {
    const md = [
      "![beacon](http://attacker.test/b.png)",
      "![r][img]\n\n[img]: https://attacker.test/r.png",
      '<img src="https://attacker.test/h.png">',
      '<img srcset="https://attacker.test/s.png 1x">',
      "[![x](https://attacker.test/in-link.png)](https://example.test/)",
      '<svg><image href="https://attacker.test/svg.png"/></svg>',
      '<div style="background:url(https://attacker.test/css.png)">x</div>',
      '<picture><source srcset="https://attacker.test/p.png"></picture>',
      '<video poster="https://attacker.test/v.png"></video>',
    ].join("\n\n");
    const html = render(md);
    expect(html).not.toMatch(/<(img|image|source|picture|video|svg|iframe|object|embed|link|style|form)\b/i);
    expect(html).not.toMatch(/\b(src|srcset|poster|style)=/i);
  });
});
