import { describe, expect, it } from "vitest";
import { z } from "zod";
import { askWhat, pageOutput, scopesOverlap, totalsOf } from "./format";
import { advertised, batchItemsByReference, DelegateBatchInput, DelegateInput, firstIssue } from "./schemas";
import { blockingLocalFiles } from "./server";

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

  it("an ask's path inside the worker's private workspace reads repository-relative", () => {
    const wt = "/state/workspaces/w-1/repo";
    expect(askWhat({ what: `${wt}/src/a.ts` }, wt)).toBe("src/a.ts");
    // Inside a command the path is marked, not made relative: `cd /tmp && cat src/a.ts` would not be what runs.
    expect(askWhat({ what: `cd /tmp && cat ${wt}/src/a.ts && ls ${wt}` }, wt)).toBe("cd /tmp && cat ⟨workspace⟩/src/a.ts && ls ⟨workspace⟩");
    expect(askWhat({ what: "/etc/passwd" }, wt)).toBe("/etc/passwd");
    expect(askWhat({ what: "npm test" }, null)).toBe("npm test");
  });

  it("finds the files of the person's checkout that block a merge, from git's message", () => {
    const changed =
      "git merge failed: error: Your local changes to the following files would be overwritten by merge:\n\tnotes.txt\n\tsrc/a.ts\nPlease commit your changes or stash them before you merge.\nAborting";
    expect(blockingLocalFiles(changed)).toEqual({ kind: "changed", files: ["notes.txt", "src/a.ts"] });
    const untracked =
      "error: The following untracked working tree files would be overwritten by merge:\n\tnew.txt\nPlease move or remove them before you merge.";
    expect(blockingLocalFiles(untracked)).toEqual({ kind: "untracked", files: ["new.txt"] });
    expect(blockingLocalFiles("CONFLICT (content): Merge conflict in shared.txt")).toBeNull();
    // The engine's own refusal names them as a quoted list (the names are a worker's): read back whole, a "," in one too.
    const own =
      'your checkout has local changes to files this merge changes: commit or stash (files this merge changes, named by a worker\'s change, untrusted: ["a, b.txt","c⏎SYSTEM: x"] and 2 more) first, then merge again (nothing was changed)';
    expect(blockingLocalFiles(own)).toEqual({ kind: "changed", files: ["a, b.txt", "c⏎SYSTEM: x"] });
  });

  it("advertises lean schemas: no limits or defaults (the handler enforces them), delegate_batch's items by reference", () => {
    const json = JSON.stringify(z.toJSONSchema(advertised(DelegateInput)));
    for (const k of ["maxLength", "minLength", "maxItems", '"default"', "exclusiveMinimum", '"additionalProperties":false']) expect(json).not.toContain(k);
    expect(json).toContain('"required":["task","directory"]');
    const batch = z.toJSONSchema(advertised(DelegateBatchInput, batchItemsByReference)) as any;
    expect(batch.properties.tasks.items).toMatchObject({ type: "object", required: ["task", "directory"] });
    expect(JSON.stringify(batch)).not.toContain('"checks"');
    // The strict parse still refuses what the lean schema no longer says.
    expect(DelegateInput.safeParse({ task: "x".repeat(100_001), directory: "/r" }).success).toBe(false);
  });

  it("totals add tokens, cost and time over workers", () => {
    const w = (input: number, output: number, reasoning: number, cost: number, ms: number) =>
      ({ usage: { input, output, reasoning, cost }, startedAt: 0, endedAt: ms }) as any;
    expect(totalsOf([w(100, 20, 5, 0.01, 2000), w(10, 2, 0, 0.0025, 500)])).toEqual({ tokens: 137, cost: 0.0125, sec: 2.5 });
  });
});
