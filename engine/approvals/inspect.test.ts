import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { inspectAsk, ruleMatches } from "./inspect";

const ws = mkdtempSync(path.join(os.tmpdir(), "ocw-inspect-"));
afterAll(() => rmSync(ws, { recursive: true, force: true }));
mkdirSync(path.join(ws, "secrets"));

describe("an ask's flags", () => {
  it("a write under a protected folder is flagged whatever the file's name holds (line breaks, U+2028)", () => {
    for (const name of ["plain.txt", "new\nline.txt", "cr\rname", "ls\u2028sep"]) {
      const flags = inspectAsk({ tool: "edit", what: path.join(ws, "secrets", name) }, { worktree: ws, cwd: ws }, { scope: [], protect: ["secrets/**"] });
      expect(
        flags.map((f) => f.kind),
        JSON.stringify(name),
      ).toEqual(["protected"]);
    }
  });

  it("a write outside the scope is flagged, one inside is not", () => {
    const spec = { scope: ["src/**"], protect: [] };
    expect(inspectAsk({ tool: "edit", what: path.join(ws, "src", "a\nb.ts") }, { worktree: ws, cwd: ws }, spec)).toEqual([]);
    expect(inspectAsk({ tool: "edit", what: path.join(ws, "docs", "x.md") }, { worktree: ws, cwd: ws }, spec).map((f) => f.kind)).toEqual(["out-of-scope"]);
  });

  it("a write under a case-variant of a protected folder (Secrets/, SECRETS./) is flagged protected at the ask", () => {
    for (const name of ["Secrets/a.txt", "SECRETS/b.txt", "secrets./c.txt"]) {
      const flags = inspectAsk({ tool: "edit", what: path.join(ws, name) }, { worktree: ws, cwd: ws }, { scope: [], protect: ["secrets/**"] });
      expect(
        flags.map((f) => f.kind),
        name,
      ).toEqual(["protected"]);
    }
  });

  it("a rejecting policy rule on a path holds for its case-variants; an approving one answers only the name as written", () => {
    const reject = { pattern: "**/secrets/**", decision: "reject" };
    for (const what of ["/w/secrets/a", "/w/Secrets/a", "/w/SECRETS./a"]) expect(ruleMatches({ tool: "edit", what }, reject), what).toBe(true);
    const approve = { pattern: "**/docs/**", decision: "approve" };
    expect(ruleMatches({ tool: "edit", what: "/w/docs/a.md" }, approve)).toBe(true);
    expect(ruleMatches({ tool: "edit", what: "/w/DOCS/a.md" }, approve)).toBe(false);
  });
});
