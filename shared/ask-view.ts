// What every client shows of an ask (GUI card, `ocw run` prompt, MCP forms and pending_approvals): the asked text made
// safe (shared/untrusted.ts), the engine's flags, and exactly what "always" would grant, or why it is not offered.
// Pure: no Node, no DOM.
import { grantOffer, type PermissionAsk } from "./permission";
import { showUntrusted, SHOW_MAX, untrustedView } from "./untrusted";
import { counted } from "./words";

interface AskView {
  /** The command / path / URL / question, made visible and cut (head and tail) past SHOW_MAX. */
  what: string;
  /** Characters cut from the middle of `what` (0: shown whole). */
  cut: number;
  /** Each engine flag as "kind: detail" (detail made safe). */
  flags: string[];
  /** What "always" grants, each simple command made safe; or null with `alwaysWhy`. */
  always: string[] | null;
  alwaysWhy: string | null;
  /** A bash command's folder (its `workdir`) as the worker gave it, made safe; null: the worker's own folder. */
  workdir: string | null;
}

/** Said instead of the diff of a write that leaves the file as it was (its diff is the header lines alone). */
export const UNCHANGED_DIFF = "no change to the file's content: what the write puts there is what the file already holds";

/** A unified diff's header lines (opencode's: `Index:`, a rule of `=`, `---`, `+++`); a hunk starts with `@@`. */
const DIFF_HEADER = /^(Index: |={10,}\s*$|--- |\+\+\+ )/;

/**
 * Whether an edit ask's diff changes nothing: header lines only, no hunk (a write of the content the file already
 * holds). Every client says UNCHANGED_DIFF then, not an empty diff; any other text (a hunk, a patch's own format) is a change.
 */
export function diffChangesNothing(diff: string): boolean {
  const lines = diff.split("\n").filter((l) => l.trim() !== "");
  return lines.length > 0 && lines.every((l) => DIFF_HEADER.test(l));
}

export const FLAG_LABEL: Record<string, string> = {
  "outside-workspace": "outside the workspace",
  protected: "protected",
  "out-of-scope": "out of scope",
  symlink: "symlink",
  workdir: "working directory",
};

export function askView(
  ask: Pick<PermissionAsk, "kind" | "tool" | "what"> & { flags?: PermissionAsk["flags"]; workdir?: string },
  opts: { lines?: boolean } = {},
): AskView {
  const v = untrustedView(ask.what, { max: SHOW_MAX, lines: opts.lines });
  const offer = grantOffer(ask);
  return {
    what: v.text,
    cut: v.cut,
    flags: (ask.flags ?? []).map((f) => `${FLAG_LABEL[f.kind] ?? f.kind}: ${showUntrusted(f.detail, { max: 500, lines: false })}`),
    always: offer.ok ? offer.patterns.map((p) => showUntrusted(p, { lines: false })) : null,
    alwaysWhy: offer.ok ? null : offer.why,
    workdir: ask.workdir ? showUntrusted(ask.workdir, { max: 500, lines: false }) : null,
  };
}

/** Questions of one question ask shown to a person or to Claude (one MCP form holds five), and options of each. */
export const QUESTIONS_SHOWN = 5;
export const OPTIONS_SHOWN = 10;

interface QuestionsView {
  /** The first QUESTIONS_SHOWN questions, each made safe and bounded, with its first OPTIONS_SHOWN options' labels. */
  questions: { question: string; header: string | null; options: string[]; optionsCut: number; multiple: boolean }[];
  /** Questions of the ask not shown (past QUESTIONS_SHOWN). */
  questionsCut: number;
  /** What was cut, in the engine's words (null: nothing): said wherever the questions are shown. */
  cutNote: string | null;
}

/**
 * A question ask as every client shows it, bounded in size whatever the worker sent (one ask can carry any number of
 * questions and options, each of any length): the first QUESTIONS_SHOWN questions (each up to 1,000 visible characters,
 * its header 80), the first OPTIONS_SHOWN options of each (200 each), and how many of each were left out. An ask with
 * questions left out cannot be answered by someone who did not read them: it is for dismissing, with a note.
 */
export function questionsView(ask: Pick<PermissionAsk, "questions">): QuestionsView {
  const all = ask.questions ?? [];
  const t = (x: string, max: number) => showUntrusted(x, { max, lines: false });
  const questions = all.slice(0, QUESTIONS_SHOWN).map((q) => ({
    question: t(q.question, SHOW_MAX),
    header: q.header ? t(q.header, 80) : null,
    options: q.options.slice(0, OPTIONS_SHOWN).map((o) => t(o.label, 200)),
    optionsCut: Math.max(0, q.options.length - OPTIONS_SHOWN),
    multiple: !!q.multiple,
  }));
  const questionsCut = Math.max(0, all.length - QUESTIONS_SHOWN);
  const optionsCut = questions.reduce((n, q) => n + q.optionsCut, 0);
  const parts = [
    ...(questionsCut
      ? [
          `${questionsCut} of its ${all.length} questions not shown (at most ${QUESTIONS_SHOWN} are): dismiss it, asking the worker to ask at most ${QUESTIONS_SHOWN} at a time`,
        ]
      : []),
    ...(optionsCut ? [`${counted(optionsCut, "option")} not shown (at most ${OPTIONS_SHOWN} a question are): an answer may be any option's text`] : []),
  ];
  return { questions, questionsCut, cutNote: parts.length ? parts.join("; ") : null };
}

/** The note a dismissal of an ask with too many questions sends the worker. */
export const TOO_MANY_QUESTIONS = `Too many questions in one ask: ask at most ${QUESTIONS_SHOWN} at a time, each with at most ${OPTIONS_SHOWN} options.`;
