// The ask card as the GUI renders it (server-side render: no DOM needed), for a question ask of any size: bounded as the
// MCP form and `ocw run` bound it (shared/ask-view.ts), with the note, and still answerable or dismissible.
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { OPTIONS_SHOWN, QUESTIONS_SHOWN, TOO_MANY_QUESTIONS } from "../../../shared/ask-view";
import type { PermissionAsk } from "../../../shared/permission";
import { questionAskOf as question } from "../../../test/fixtures/question-ask";

const sent = vi.hoisted(() => [] as unknown[]);
vi.mock("../api", () => ({
  errorText: (e: unknown) => String(e),
  api: { approvals: { decide: { mutate: async (input: unknown) => void sent.push(input) } } },
}));

const { AskCard, decide, keyRefusal, settledElsewhereNote } = await import("./AskCard");

const many = (n: number, options: number, len = 20) =>
  Array.from({ length: n }, (_, i) => ({
    question: `${"q".repeat(len)} question-${i}?`,
    options: Array.from({ length: options }, (_, j) => ({ label: `${"o".repeat(len)} option-${i}.${j}`, description: `why ${i}.${j}` })),
  }));
const render = (ask: PermissionAsk) => renderToStaticMarkup(createElement(AskCard, { ask }));
const count = (html: string, re: RegExp) => (html.match(re) ?? []).length;

beforeEach(() => void sent.splice(0));

describe("the GUI's question card", () => {
  it("shows at most QUESTIONS_SHOWN questions, says how many are not, and offers only Dismiss", () => {
    const html = render(question(many(12, 3)));
    expect(html).toContain("question-4?");
    expect(html).not.toContain("question-5?");
    expect(html).toContain(`7 of its 12 questions not shown (at most ${QUESTIONS_SHOWN} are)`);
    // Nothing to answer with: no choice, no Answer button; Dismiss is there.
    expect(count(html, /type="radio"|type="checkbox"/g)).toBe(0);
    expect(html).not.toMatch(/>Answer</);
    expect(html).not.toMatch(/>Approve once</);
    expect(html).toMatch(/>Dismiss</);
    // Its description for a screen reader names the shown questions only (the ask's `what` joins all twelve).
    const short = render(question(many(12, 3, 1))).replace(/<!-- -->/g, "");
    expect(/<span id="ask-about-que_1" hidden="">([^<]*)<\/span>/.exec(short)?.[1]).toBe(
      `question from w1: ${[0, 1, 2, 3, 4].map((i) => `q question-${i}?`).join(" / ")}`,
    );
  });

  it("shows at most OPTIONS_SHOWN options a question, with a field for the text of one not shown", () => {
    const html = render(question(many(2, 40)));
    expect(count(html, /type="radio"/g)).toBe(2 * OPTIONS_SHOWN);
    expect(html).toContain(`option-0.${OPTIONS_SHOWN - 1}`);
    expect(html).not.toContain(`option-0.${OPTIONS_SHOWN}<`);
    expect(html).toContain(`${2 * (40 - OPTIONS_SHOWN)} options not shown`);
    expect(html).toContain(`${40 - OPTIONS_SHOWN} more options not shown`);
    expect(html).toContain('aria-label="typed answer to question 1 of que_1"');
    expect(html).toMatch(/>Answer</);
    expect(html).toMatch(/>Dismiss</);
  });

  it("cuts each text (question, header, option, description) and makes hidden characters visible", () => {
    const ask = question([
      {
        question: `Which?\u202E ${"x".repeat(50_000)}`,
        header: `H${"h".repeat(5000)}`,
        options: [{ label: `L\u200B${"l".repeat(5000)}`, description: "d".repeat(5000) }],
      },
    ]);
    const html = render(ask);
    expect(html.length).toBeLessThan(12_000);
    expect(html).toContain("⟪U+202E⟫");
    expect(html).toContain("⟪U+200B⟫");
    expect(html).not.toContain("\u202E");
  });

  it("a question of no options (opencode takes free text) has a field to type the answer in; any other one too", () => {
    const html = render(question([{ question: "What should the flag be called?", options: [] }, ...many(1, 2)]));
    expect(html).toContain('aria-label="typed answer to question 1 of que_1"');
    expect(html).toContain("your answer:");
    expect(html).toContain('aria-label="typed answer to question 2 of que_1"');
    expect(html).toContain("or your own answer");
    // Nothing typed yet for the first: Answer waits for it.
    expect(html).toMatch(/<button [^>]*disabled=""[^>]*title="1 question not answered yet[^"]*"[^>]*>Answer<\/button>/);
    expect(render(question(many(1, 2)))).toMatch(/<button [^>]*class="btn ok" title="a"[^>]*>Answer<\/button>/);
  });

  it("within the bounds: every question and option, no note", () => {
    const html = render(question(many(QUESTIONS_SHOWN, OPTIONS_SHOWN)));
    expect(count(html, /type="radio"/g)).toBe(QUESTIONS_SHOWN * OPTIONS_SHOWN);
    expect(html).not.toContain("not shown");
  });

  it("dismissing an ask of too many questions tells the worker why (as MCP and ocw run do); a message typed is sent instead", async () => {
    const big = question(many(6, 2));
    await decide(big, "reject");
    await decide(big, "reject", { message: "one at a time please" });
    await decide(question(many(1, 2)), "reject");
    expect(sent).toEqual([
      { askId: "que_1", decision: "reject", message: TOO_MANY_QUESTIONS },
      { askId: "que_1", decision: "reject", message: "one at a time please" },
      { askId: "que_1", decision: "reject" },
    ]);
  });

  it("the a key does not answer a question (no answers picked; the engine would refuse): it says why; r dismisses", () => {
    expect(keyRefusal(question(many(1, 2)), "once")).toMatch(/is a question: pick its answers on the card/);
    expect(keyRefusal(question(many(6, 2)), "once")).toMatch(/can only be dismissed/);
    // Named by its worker, as on its card; never by the ask's internal id.
    expect(keyRefusal(question(many(6, 2)), "once")).toBe("The question from w1 asks more than 5 questions: it can only be dismissed (r)");
    expect(keyRefusal(question(many(1, 2)), "once")).not.toContain("que_1");
    expect(keyRefusal(question(many(6, 2)), "reject")).toBeNull();
    expect(keyRefusal({ ...question([]), kind: "permission", tool: "bash", what: "ls" }, "once")).toBeNull();
  });

  it("a card closed because its ask was settled elsewhere says what was not sent, and by whom; nothing when nothing was typed", () => {
    const q = question(many(1, 2));
    const decided = (over: Partial<PermissionAsk>): PermissionAsk => ({ ...q, status: "decided", ...over });
    expect(settledElsewhereNote(decided({ decision: "once", by: { kind: "mcp", name: "claude-code" } }), true)).toBe(
      "The question from w1 was answered by Claude (claude-code) while you were deciding it here: what you typed or picked on its card was not sent.",
    );
    expect(settledElsewhereNote({ ...decided({ decision: "reject", by: { kind: "cli", name: "ocw run" } }), kind: "permission", tool: "bash" }, true)).toMatch(
      /^The ask from w1 was rejected by the terminal \(ocw run\) while/,
    );
    expect(settledElsewhereNote({ ...q, status: "cancelled" }, true)).toMatch(/was cancelled/);
    // Nothing typed, still pending (the card only left the screen), or gone: nothing to say.
    expect(settledElsewhereNote(decided({ decision: "once" }), false)).toBeNull();
    expect(settledElsewhereNote(q, true)).toBeNull();
    expect(settledElsewhereNote(undefined, true)).toBeNull();
  });

  it("its decision buttons say which ask they decide, for a screen reader (many cards, many 'Approve once' buttons)", () => {
    const html = render({ ...question([]), id: "per_7", kind: "permission", tool: "bash", what: "npm test\u202E", questions: undefined });
    const about = /<span id="(ask-about-per_7)" hidden="">([^<]*)<\/span>/.exec(html);
    expect(about?.[2]).toBe("bash from w1: npm test⟪U+202E⟫");
    for (const name of ["Approve once", "Reject"]) expect(html).toMatch(new RegExp(`<button [^>]*aria-describedby="ask-about-per_7"[^>]*>${name}</button>`));
  });
});
