import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { TargetCheck } from "../../../../shared/target";
import { VerifyChecklist } from "./VerifyChecklist";

const failed = (name: TargetCheck["name"]): TargetCheck => ({ name, passed: false, evidence: "evidence" }) as TargetCheck;

describe("VerifyChecklist: what to do about a failed check, where the model runs", () => {
  const checks = (["reachable", "concurrency", "capability", "reasoning", "tools"] as const).map(failed);

  it("an API provider's model: the provider's remedies, nothing of servers, VRAM, quants or 'an API provider'", () => {
    const html = renderToStaticMarkup(createElement(VerifyChecklist, { checks, provider: true }));
    expect(html).toContain("a stronger coding model of this provider, or another provider");
    expect(html).not.toMatch(/higher quant|an API provider|llama-server|Start the server|VRAM/);
  });

  it("a server of one's own: the server's remedies, as before", () => {
    const html = renderToStaticMarkup(createElement(VerifyChecklist, { checks }));
    expect(html).toContain("a larger model, a higher quant, or an API provider");
    expect(html).toContain("llama-server --jinja");
  });
});
