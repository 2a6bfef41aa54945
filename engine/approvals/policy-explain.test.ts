// The rule builder's check (policies.explain): the same matching the queue uses to answer asks (pickRule), shown per
// simple command, so a person sees exactly what a rule answers before saving it.
import { describe, expect, it } from "vitest";
import { explainPolicy, pickRule } from "./inspect";

const once = (pattern: string, tool = "bash") => ({ tool, pattern, decision: "once" });
const reject = (pattern: string, tool = "bash") => ({ tool, pattern, decision: "reject" });

describe("explainPolicy", () => {
  it("an approving rule answers a shell command only when every simple command matches it", () => {
    const rules = [once("npm test*")];
    expect(explainPolicy(rules, { tool: "bash", what: "npm test -- --watch" })).toEqual({
      parts: [{ command: "npm test -- --watch", rules: [0] }],
      unsplittable: null,
      matches: [true],
      answer: { index: 0, decision: "once" },
    });
    const chained = explainPolicy(rules, { tool: "bash", what: "npm test; touch pwned" });
    expect(chained.parts).toEqual([
      { command: "npm test", rules: [0] },
      { command: "touch pwned", rules: [] },
    ]);
    expect(chained.answer).toBeNull();
  });
  it("a rejecting rule wins over an earlier approving one, and answers when any part matches", () => {
    const rules = [once("*"), reject("rm *")];
    expect(explainPolicy(rules, { tool: "bash", what: "ls && rm -rf x" }).answer).toEqual({ index: 1, decision: "reject" });
    expect(explainPolicy(rules, { tool: "bash", what: "ls" }).answer).toEqual({ index: 0, decision: "once" });
  });
  it("a command that cannot be split is never approved, and says why", () => {
    const e = explainPolicy([once("*")], { tool: "bash", what: "echo $(id)" });
    expect(e.parts).toBeNull();
    expect(e.unsplittable).toMatch(/\S/);
    expect(e.answer).toBeNull();
  });
  it("a rule names its tool or * ; other tools are matched on the whole text", () => {
    const rules = [once("src/**", "edit"), reject("*", "webfetch"), once("*.md", "*")];
    expect(explainPolicy(rules, { tool: "edit", what: "src/a/b.ts" })).toMatchObject({ parts: null, matches: [true, false, false], answer: { index: 0 } });
    expect(explainPolicy(rules, { tool: "webfetch", what: "https://x" }).answer).toEqual({ index: 1, decision: "reject" });
    expect(explainPolicy(rules, { tool: "read", what: "README.md" }).answer).toEqual({ index: 2, decision: "once" });
    expect(explainPolicy(rules, { tool: "edit", what: "lib/a.ts" }).answer).toBeNull();
  });
  it("pickRule is what the queue answers with", () => {
    expect(pickRule([once("a*"), once("ab*")], { tool: "bash", what: "abc" })).toEqual(once("a*"));
    expect(pickRule([], { tool: "bash", what: "abc" })).toBeUndefined();
  });
});
