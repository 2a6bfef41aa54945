// An edit ask whose write leaves the file as it was: its diff is header lines alone, and every client (the terminal, the
// GUI's card, MCP's form and pending_approvals) says "no change to the file's content" instead of an empty diff.
import { describe, expect, it } from "vitest";
import { diffChangesNothing, UNCHANGED_DIFF } from "./ask-view";

const HEAD = "Index: src/a.ts\n===================================================================\n--- src/a.ts\n+++ src/a.ts\n";

describe("an edit ask's diff that changes nothing", () => {
  it("header lines alone (a write of the file's own content) change nothing", () => {
    expect(diffChangesNothing(HEAD)).toBe(true);
    expect(diffChangesNothing(HEAD + "\n")).toBe(true);
    expect(UNCHANGED_DIFF).toMatch(/^no change to the file's content/);
  });
  it("a hunk is a change, even one that removes a line looking like a header; other formats are changes", () => {
    expect(diffChangesNothing(`${HEAD}@@ -0,0 +1,1 @@\n+from cli\n`)).toBe(false);
    expect(diffChangesNothing(`${HEAD}@@ -1,1 +0,0 @@\n--- x\n`)).toBe(false);
    expect(diffChangesNothing("*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch")).toBe(false);
    expect(diffChangesNothing("+x")).toBe(false);
    expect(diffChangesNothing("")).toBe(false);
  });
});
