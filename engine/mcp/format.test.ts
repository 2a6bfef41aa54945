import { describe, expect, it } from "vitest";
import { z } from "zod";
import { pageOutput, scopesOverlap } from "./format";
import { advertised, DelegateInput, firstIssue } from "./schemas";

describe("mcp format", () => {
  it("pages a long output: start and end by default, windows with an offset", () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n");
    const p = pageOutput(text, 900);
    expect(p.truncated).toBe(true);
    expect(p.output.startsWith("line 0\n")).toBe(true);
    expect(p.output.endsWith("line 4999")).toBe(true);
    expect(p.output).toMatch(/characters omitted: call result with check and offset=300/);
    expect(p.output.length).toBeLessThan(1000);
    const w = pageOutput(text, 100, 300);
    expect(w).toMatchObject({ output: text.slice(300, 400), truncated: true, nextOffset: 400 });
    expect(pageOutput(text, 100, text.length - 10)).toMatchObject({ nextOffset: null });
    expect(pageOutput("short", 100)).toEqual({ output: "short", truncated: false, nextOffset: null });
  });

  it("flags overlapping scopes conservatively", () => {
    expect(scopesOverlap(["src/a/**"], ["src/b/**"])).toBe(false);
    expect(scopesOverlap(["src/**"], ["src/b/x.ts"])).toBe(true);
    expect(scopesOverlap([], ["src/b/**"])).toBe(true);
    expect(scopesOverlap(["**/*.ts"], ["docs/**"])).toBe(true);
  });

  it("advertises the strict schema but leaves validation (and its messages) to the handler", () => {
    const loose = advertised(DelegateInput);
    expect(loose.safeParse({ anything: 1 }).success).toBe(true);
    const json = z.toJSONSchema(loose) as { properties: Record<string, unknown>; required: string[] };
    expect(json.required).toEqual(["task", "directory"]);
    expect(Object.keys(json.properties)).toContain("checks");
    const r = DelegateInput.safeParse({ task: "x" });
    expect(firstIssue(r.error!)).toMatch(/^directory is required/);
    const bad = DelegateInput.safeParse({ task: "x", directory: "rel" });
    expect(firstIssue(bad.error!)).toBe("directory: directory must be an absolute path to a git repository");
  });
});
