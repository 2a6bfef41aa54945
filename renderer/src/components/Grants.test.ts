// The grants table (server-side render: no DOM): who granted each "always" answer, in the words the transcript and the
// ask cards use for the same person ("you (gui)"), not the engine's internal kind ("person").
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it, vi } from "vitest";
import type { Grant } from "../../../shared/permission";

vi.mock("../api", () => ({ errorText: (e: unknown) => String(e), api: {} }));

const { GrantList } = await import("./Grants");

const grant = (by: Grant["by"]): Grant => ({ id: "g1", workerId: "w-1", tool: "bash", pattern: "echo hi", askId: "per_1", by, createdAt: Date.now() - 5000 });
const render = (g: Grant) => renderToStaticMarkup(createElement(GrantList, { grants: [g], label: "Grants", worktreeOf: () => null }));

describe("who granted it", () => {
  it("a person's grant reads “by you (gui)”, as the transcript says it", () => {
    const html = render(grant({ kind: "person", name: "gui" }));
    expect(html).toContain("by you (gui)");
    expect(html).not.toContain("by person");
  });

  it("Claude's and the terminal's grants are named as such", () => {
    expect(render(grant({ kind: "mcp", name: "claude-code" }))).toContain("by Claude (claude-code)");
    expect(render(grant({ kind: "cli" }))).toContain("by the terminal");
  });
});
