import { describe, expect, it } from "vitest";
import { askerRig } from "../../test/fixtures/asker";
import { OPTIONS_SHOWN, QUESTIONS_SHOWN, questionsView, TOO_MANY_QUESTIONS } from "../../shared/ask-view";
import type { PermissionAsk } from "../../shared/permission";
import { formFor } from "./elicit";
import { pendingItem, pendingQuestions } from "./format";
import { PendingItem } from "./schemas";
import { questionAskOf as question } from "../../test/fixtures/question-ask";

// Each text its own string, as a parsed ask's are; the long run they start with is made once (a million fresh 5,000
// character strings took seconds of the pure tier's CPU to build, not to bound).
const many = (n: number, options: number, len = 50) => {
  const q = "q".repeat(len);
  const o = "o".repeat(len);
  return Array.from({ length: n }, (_, i) => ({
    question: `${q} ${i}?`,
    options: Array.from({ length: options }, (_, j) => ({ label: `${o} ${i}.${j}` })),
  }));
};

describe("a question ask with many questions, many options, long text", () => {
  const huge = question(many(2000, 500, 5000));

  it("pending_approvals and wait: at most QUESTIONS_SHOWN questions of OPTIONS_SHOWN options, each text cut; the cut is counted and said", () => {
    const qs = pendingQuestions(huge)!;
    expect(qs).toHaveLength(QUESTIONS_SHOWN);
    for (const q of qs) {
      expect(q.options).toHaveLength(OPTIONS_SHOWN);
      expect(q.optionsCut).toBe(500 - OPTIONS_SHOWN);
      expect(q.question.length).toBeLessThan(1200);
      for (const o of q.options) expect(o.length).toBeLessThan(300);
    }
    expect(JSON.stringify(qs).length).toBeLessThan(20_000);
    const item = PendingItem.parse(pendingItem(huge));
    expect(item.questionsCut).toBe(2000 - QUESTIONS_SHOWN);
    expect(item.questionsNote).toMatch(/^1995 of its 2000 questions not shown .*dismiss it.*; 2450 options not shown/);
    expect(JSON.stringify(item).length).toBeLessThan(3_000);
    // A small one is shown whole, with nothing said.
    const small = question(many(2, 3));
    expect(pendingQuestions(small)!.map((q) => q.options.length)).toEqual([3, 3]);
    expect(pendingItem(small).questionsNote).toBeUndefined();
  });

  it("the MCP form: bounded; over QUESTIONS_SHOWN questions it only dismisses, with a note asking for fewer", () => {
    const form = formFor(huge, "t");
    expect(JSON.stringify(form.requestedSchema).length + form.message.length).toBeLessThan(12_000);
    expect(form.answers).toBeUndefined();
    expect((form.requestedSchema.properties as Record<string, { enum?: string[] }>).decision!.enum).toEqual(["reject"]);
    expect(form.message).toContain("1995 of its 2000 questions not shown");
    expect("defaultMessage" in form && form.defaultMessage).toBe(TOO_MANY_QUESTIONS);
    // Within the bound, but with too many options: a free-text answer, the first options listed and the rest counted.
    const wide = formFor(question(many(2, 500)), "t");
    const q0 = (wide.requestedSchema.properties as Record<string, { enum?: string[]; description: string }>).q0!;
    expect(q0.enum).toBeUndefined();
    expect(q0.description).toContain(`${500 - OPTIONS_SHOWN} more not shown`);
    expect(JSON.stringify(wide.requestedSchema).length).toBeLessThan(6_000);
    expect(wide.answers!({ q0: "x", q1: "y" })).toEqual([["x"], ["y"]]);
  });

  it("ocw run --approve ask: at most OPTIONS_SHOWN options a question, the rest counted; over QUESTIONS_SHOWN questions, Enter dismisses it with the note", async () => {
    const run = async (ask: PermissionAsk, lines: string[]) => {
      const { input, asker, decided, printed } = askerRig();
      asker.enqueue(ask);
      for (const l of lines) {
        await new Promise((r) => setTimeout(r, 20));
        input.write(`${l}\n`);
      }
      await new Promise((r) => setTimeout(r, 30));
      asker.close();
      return { text: printed(), decided };
    };
    const big = await run(huge, [""]);
    expect(big.text.length).toBeLessThan(12_000);
    expect(big.text).toContain("1995 of its 2000 questions not shown");
    expect(big.decided).toEqual([{ askId: "que_1", decision: "reject", message: TOO_MANY_QUESTIONS }]);
    const wide = await run(question(many(1, 500)), ["3"]);
    expect(wide.text).toContain(`${OPTIONS_SHOWN}) `);
    expect(wide.text).not.toContain(`${OPTIONS_SHOWN + 1}) `);
    expect(wide.text).toContain(`(${500 - OPTIONS_SHOWN} more options not shown: type one's text)`);
    expect(wide.decided).toEqual([{ askId: "que_1", decision: "once", answers: [[`${"o".repeat(50)} 0.2`]] }]);
  });

  it("questionsView says nothing of a question ask within the bounds", () => {
    expect(questionsView(question(many(QUESTIONS_SHOWN, OPTIONS_SHOWN))).cutNote).toBeNull();
  });
});
