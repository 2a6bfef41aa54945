import { describe, expect, it } from "vitest";
import { describeRule, moveRow, parseRulesJson, rulesJson, validateRules } from "./policy";

describe("policy rule builder (pure)", () => {
  it("validates rows with the shared schema, per row and field", () => {
    expect(validateRules([{ tool: "bash", pattern: "npm test", decision: "once" }])).toEqual({
      ok: true,
      rules: [{ tool: "bash", pattern: "npm test", decision: "once" }],
    });
    const bad = validateRules([
      { tool: "bash", pattern: "ok", decision: "once" },
      { tool: "", pattern: "", decision: "sometimes" },
    ]);
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(Object.keys(bad.rows)).toEqual(["1"]);
    expect(bad.rows[1]).toEqual({
      tool: expect.stringMatching(/name a tool/),
      pattern: expect.stringMatching(/give a pattern/),
      decision: 'decision must be "once", "always" or "reject"',
    });
    const many = validateRules(Array.from({ length: 201 }, () => ({ tool: "bash", pattern: "x", decision: "once" })));
    expect(many).toMatchObject({ ok: false, list: "at most 200 rules" });
  });
  it("reads the advanced JSON, or says why not", () => {
    expect(parseRulesJson("")).toEqual({ ok: true, rows: [] });
    expect(parseRulesJson('[{"tool":"edit","pattern":"src/**","decision":"reject"}]')).toEqual({
      ok: true,
      rows: [{ tool: "edit", pattern: "src/**", decision: "reject" }],
    });
    expect(parseRulesJson("[{")).toMatchObject({ ok: false, error: expect.stringMatching(/^Not valid JSON/) });
    expect(parseRulesJson("{}")).toMatchObject({ ok: false, error: expect.stringMatching(/JSON array/) });
    expect(parseRulesJson("[1]")).toMatchObject({ ok: false, error: expect.stringMatching(/Rule 1 is not an object/) });
    // a value of the wrong type stays visible (and fails validation) rather than vanishing
    expect(parseRulesJson('[{"tool":"bash","pattern":5,"decision":"once"}]')).toEqual({ ok: true, rows: [{ tool: "bash", pattern: "5", decision: "once" }] });
    expect(rulesJson([])).toBe("[]");
  });
  it("says exactly what a rule answers", () => {
    expect(describeRule({ tool: "bash", pattern: "npm test*", decision: "once" })).toMatch(
      /only when every one of its simple commands .* matches the glob “npm test\*”/,
    );
    expect(describeRule({ tool: "bash", pattern: "rm *", decision: "reject" })).toMatch(
      /^Refuses a shell command when the whole command or any of its simple commands/,
    );
    expect(describeRule({ tool: "edit", pattern: "*", decision: "always" })).toBe(
      "Approves (as “always”) an edit whose path matches anything. Questions are never answered by a rule.",
    );
    expect(describeRule({ tool: "*", pattern: "*.md", decision: "once" })).toMatch(/any tool's ask whose text matches the glob “\*\.md”/);
  });
  it("moves a row (order matters)", () => {
    expect(moveRow(["a", "b", "c"], 2, 0)).toEqual(["c", "a", "b"]);
    expect(moveRow(["a", "b"], 0, -1)).toEqual(["a", "b"]);
  });
});
