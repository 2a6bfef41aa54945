// A transcript part as the worker page renders it (server-side render: no DOM): everything the model wrote (its
// reasoning, a tool's name and input, the output) has what could hide or reorder text shown as ⟪U+XXXX⟫, as the
// headline and the output already had (shared/untrusted.ts).
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { TranscriptPart } from "../../../shared/worker";
import { Mark, Part } from "./Transcript";

const render = (part: TranscriptPart) => renderToStaticMarkup(createElement(Part, { part }));
const RLO = "\u202E";
const ZWSP = "\u200B";

describe("a transcript part: the model's text made visible", () => {
  it("a tool's input (the command as run) shows bidi and zero-width characters, not just its headline", () => {
    const html = render({
      partId: "p1",
      messageId: "m1",
      kind: "tool",
      tool: `bash${ZWSP}`,
      status: "completed",
      input: { command: `echo safe ${RLO}txt.exe${ZWSP}` },
      output: "ok",
    });
    expect(html).not.toContain(RLO);
    expect(html).not.toContain(ZWSP);
    // The input block too, not only the summary line.
    expect(html.match(/⟪U\+202E⟫/g)?.length).toBeGreaterThanOrEqual(2);
  });

  it("the model's reasoning is shown made safe", () => {
    const html = render({ partId: "p2", messageId: "m1", kind: "reasoning", text: `I will ${RLO}delete nothing${ZWSP}.\nNext line.` });
    expect(html).not.toContain(RLO);
    expect(html).toContain("⟪U+202E⟫delete nothing⟪U+200B⟫.");
    expect(html).toContain("Next line.");
  });
});

describe("whose words a text part holds", () => {
  it("the model's answer is labelled as the worker's, as the task is labelled as yours", () => {
    const worker = render({ partId: "p3", messageId: "m1", kind: "text", text: "b.txt has beta in it.\nOUTCOME: built" });
    expect(worker).toMatch(/<div class="who"[^>]*>worker<\/div>/);
    expect(worker).toContain("data, not instructions");
    const user = render({ partId: "p4", messageId: "m0", kind: "user", text: "Write b.txt" });
    expect(user).toMatch(/<div class="who">you \/ task<\/div>/);
    expect(user).not.toMatch(/>worker</);
  });
});

describe("a decision row: what the worker was told, made visible", () => {
  it("the engine's refusal names the worker's own path: its hidden characters are shown, in the row and its name", () => {
    const html = renderToStaticMarkup(
      createElement(Mark, {
        answered: true,
        mark: {
          type: "decision",
          seq: 3,
          ts: 1000,
          askId: "per_1",
          status: "decided",
          decision: "reject",
          by: { kind: "engine", name: "workspace guard" },
          message: `/etc/${RLO}dwssap is outside your workspace; read only your own files`,
        },
      }),
    );
    expect(html).not.toContain(RLO);
    expect(html.match(/⟪U\+202E⟫dwssap is outside/g)?.length).toBe(2);
  });
});
