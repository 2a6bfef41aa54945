import { z } from "zod";
import { splitCommand } from "./shell";
import { hasHidden, SHOW_MAX } from "./untrusted";

/** Who answered an ask. Nothing is answered automatically unless the user set a policy rule. */
export const DecidedBy = z.object({
  kind: z.enum(["person", "mcp", "policy", "cli", "engine"]),
  /** e.g. "gui", "claude-code", the policy rule's text, "--approve once". */
  name: z.string().max(200).optional(),
});
export type DecidedBy = z.infer<typeof DecidedBy>;

export const DecisionKind = z.enum(["once", "always", "reject"], {
  error: 'decision must be "once", "always" or "reject"',
});
export type DecisionKind = z.infer<typeof DecisionKind>;

export const QuestionItem = z.object({
  question: z.string(),
  header: z.string().optional(),
  options: z.array(z.object({ label: z.string(), description: z.string().optional() })).default([]),
  multiple: z.boolean().optional(),
});

/** One pending request from a worker: a permission gate (edit, bash, webfetch, …) or a question to the person. */
export const PermissionAsk = z.object({
  id: z.string(),
  workerId: z.string(),
  sessionId: z.string(),
  kind: z.enum(["permission", "question"]),
  /** edit | bash | webfetch | external_directory | question | … (opencode's permission name). */
  tool: z.string(),
  /** What is asked, in one line: the command, the path, the URL, or the question. */
  what: z.string(),
  /** A bash command's folder (opencode's `workdir`) as the worker gave it; absent: the worker's own folder. */
  workdir: z.string().optional(),
  diff: z.string().optional(),
  /** The tool call it asks for (opencode's callID): the transcript's tool row of the same call says it waits on this ask. */
  callId: z.string().max(200).optional(),
  /**
   * Every file an edit ask writes, moves to or deletes, as opencode names them (absolute, or relative to the workspace):
   * one `apply_patch` ask (the tool opencode gives `gpt-*` models instead of edit/write) covers several files, and its
   * `what` is their names joined. Each is inspected by real path; absent, `what` is the one file.
   */
  paths: z.array(z.string()).optional(),
  patterns: z.array(z.string()).default([]),
  always: z.array(z.string()).default([]),
  questions: z.array(QuestionItem).optional(),
  /** What the engine found before anyone decides: real paths (symlinks resolved) and what they touch. */
  flags: z.array(z.object({ kind: z.enum(["outside-workspace", "protected", "out-of-scope", "symlink"]), detail: z.string() })).optional(),
  createdAt: z.number(),
  status: z.enum(["pending", "decided", "cancelled"]),
  decision: DecisionKind.optional(),
  by: DecidedBy.optional(),
  message: z.string().optional(),
  decidedAt: z.number().optional(),
});
export type PermissionAsk = z.infer<typeof PermissionAsk>;

/** The longest askId an answer may name. */
export const ASK_ID_MAX = 200;

/** An answer to an ask. For a question, `once` with `answers` replies and `reject` dismisses it. */
export const Decision = z.object({
  // An ask's id is opencode's (~30 characters): a longer one is refused unread, never echoed back in a message.
  askId: z
    .string()
    .min(1, "askId is required (see pending_approvals)")
    .max(ASK_ID_MAX, `askId is longer than any ask's id (${ASK_ID_MAX} characters): see pending_approvals for valid ids`),
  decision: DecisionKind,
  message: z.string().max(4000).optional(),
  answers: z.array(z.array(z.string())).optional(),
});
export type Decision = z.infer<typeof Decision>;

/** A user-set rule that answers matching asks. None exist by default. */
export const PolicyRule = z.object({
  tool: z.string().min(1),
  /** A glob matched against what is asked (command, path, URL); "*" matches everything. */
  pattern: z.string().min(1),
  decision: DecisionKind,
});
export type PolicyRule = z.infer<typeof PolicyRule>;

/** The default message a worker gets with a rejection, so it carries on and still reports its outcome. */
export function rejectionMessage(ask: Pick<PermissionAsk, "tool" | "what">, extra?: string): string {
  const base = `The supervisor refused this ${ask.tool} request (${ask.what}). Do not retry it or work around it; continue without it, and report your outcome honestly.`;
  return extra ? `${base} Reason: ${extra}` : base;
}

/**
 * An "always" answer, held by the engine (opencode only ever hears "once"): later asks of the same worker for the same
 * tool matching the pattern are answered by it, after the engine's own checks. Revocable.
 */
export const Grant = z.object({
  id: z.string(),
  workerId: z.string(),
  tool: z.string(),
  /** One simple command (or the path / URL) matched exactly, as written: never a glob (see grantOffer). */
  pattern: z.string(),
  askId: z.string(),
  by: DecidedBy,
  createdAt: z.number(),
  /** When its worker's run ended (settled, stopped, failed): an expired grant answers nothing (shared/grants.ts). */
  expiredAt: z.number().optional(),
});
export type Grant = z.infer<typeof Grant>;

/**
 * What an ask shows on a terminal: control characters (escape sequences that could rewrite the screen, fake a prompt or
 * hide text) made visible, e.g. `\x1b[2J` → `\x1b[2J` as plain text, newlines as `\n`.
 */
export function terminalSafe(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) =>
    c === "\n" ? "\\n" : c === "\t" ? "\\t" : `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

/**
 * What an "always" answer would grant, or why it is not offered. A grant answers one simple command (or one path, one
 * URL) exactly as written, never a pattern and never across shell operators: "always" on `npm test && npm run lint`
 * grants `npm test` and `npm run lint`, each on its own, and a later `npm test; touch pwned` still asks for
 * `touch pwned`. Not offered: a question, a flagged ask (outside the workspace, protected, out of scope…; a symlink
 * inside the workspace aside), text longer than clients show whole (SHOW_MAX), a command that cannot be split with
 * certainty (shared/shell.ts), text with invisible or control characters.
 */
type GrantOffer = { ok: true; patterns: string[] } | { ok: false; why: string };

export function grantOffer(ask: Pick<PermissionAsk, "kind" | "tool" | "what"> & { flags?: PermissionAsk["flags"] }): GrantOffer {
  if (ask.kind !== "permission") return { ok: false, why: "a question is answered each time" };
  const flag = ask.flags?.find((f) => f.kind !== "symlink");
  if (flag) return { ok: false, why: `the engine flagged it (${flag.kind}): a flagged ask is decided each time` };
  if (ask.what.length > SHOW_MAX) return { ok: false, why: `it is ${ask.what.length} characters long, over the ${SHOW_MAX} shown whole` };
  if (ask.tool === "bash") {
    const split = splitCommand(ask.what);
    if (!split.ok) return { ok: false, why: `the command cannot be split into simple commands with certainty: ${split.why}` };
    return { ok: true, patterns: [...new Set(split.commands)] };
  }
  if (!ask.what.trim()) return { ok: false, why: "it names nothing" };
  if (hasHidden(ask.what)) return { ok: false, why: "it holds invisible or control characters" };
  return { ok: true, patterns: [ask.what] };
}

/** The grants that answer an ask: one per simple command (or the path / URL), each matched exactly; none unless all are covered. */
export function grantsFor(ask: PermissionAsk, grants: Grant[]): Grant[] | undefined {
  const offer = grantOffer(ask);
  if (!offer.ok) return undefined;
  const found: Grant[] = [];
  for (const p of offer.patterns) {
    const g = grants.find((x) => x.workerId === ask.workerId && x.tool === ask.tool && x.pattern === p && x.expiredAt === undefined);
    if (!g) return undefined;
    found.push(g);
  }
  return found;
}

/** What an "always" answer grants, as one line for display (simple commands joined by " ⟂ "), or "" when none is offered. */
export function grantPattern(ask: Pick<PermissionAsk, "kind" | "tool" | "what"> & { flags?: PermissionAsk["flags"] }): string {
  const offer = grantOffer(ask);
  return offer.ok ? offer.patterns.join(" ⟂ ") : "";
}
