import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { Clip } from "./Clip";

describe("Clip: a model's or server's text quoted cut, with show all", () => {
  it("short text whole; long text cut at max with the full length on the button", () => {
    expect(renderToStaticMarkup(createElement(Clip, { text: "short answer" }))).toBe("short answer");
    const html = renderToStaticMarkup(createElement(Clip, { text: "x".repeat(1000), max: 240 }));
    expect(html).toContain(`${"x".repeat(240)}…`);
    expect(html).not.toContain("x".repeat(241));
    expect(html).toContain("show all (1,000 characters)");
  });
});
