// The policy rule builder's pure parts: rows as drafted (strings, possibly invalid), validated by the shared zod
// schema the engine uses, the JSON of the "advanced" box, and a plain account of exactly what a rule answers.
import { z } from "zod";
import { PolicyRule } from "../../shared/permission";

export interface RuleRow {
  tool: string;
  pattern: string;
  decision: string;
}

export const MAX_RULES = 200;
/** The tools a rule usually names ("*": any tool). Others may be typed. */
export const RULE_TOOLS = ["bash", "edit", "webfetch", "external_directory", "*"] as const;

type RowErrors = Partial<Record<keyof RuleRow, string>>;

/** The rules as the engine will take them, or each row's problems (field → message) and any problem with the list. */
export function validateRules(
  rows: readonly RuleRow[],
): { ok: true; rules: PolicyRule[] } | { ok: false; rows: Record<number, RowErrors>; list: string | null } {
  const r = z.array(PolicyRule).max(MAX_RULES, `at most ${MAX_RULES} rules`).safeParse(rows);
  if (r.success) return { ok: true, rules: r.data };
  const out: Record<number, RowErrors> = {};
  let list: string | null = null;
  for (const issue of r.error.issues) {
    const [i, field] = issue.path;
    if (typeof i !== "number" || typeof field !== "string") {
      list = issue.message;
      continue;
    }
    const f = field as keyof RuleRow;
    out[i] = { ...out[i], [f]: out[i]?.[f] ?? fieldMessage(f, issue.message) };
  }
  return { ok: false, rows: out, list };
}

function fieldMessage(field: keyof RuleRow, message: string): string {
  if (field === "tool") return "name a tool (bash, edit, webfetch…) or * for any";
  if (field === "pattern") return "give a pattern (* matches everything)";
  return message;
}

/** The advanced box's text into rows: a JSON array of objects, or why not. */
export function parseRulesJson(text: string): { ok: true; rows: RuleRow[] } | { ok: false; error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text.trim() || "[]");
  } catch (err) {
    return { ok: false, error: `Not valid JSON: ${(err as Error).message}` };
  }
  if (!Array.isArray(v)) return { ok: false, error: "Not a list: the rules are a JSON array, [] for none" };
  const rows: RuleRow[] = [];
  for (const [i, x] of v.entries()) {
    if (!x || typeof x !== "object" || Array.isArray(x))
      return { ok: false, error: `Rule ${i + 1} is not an object like {"tool":"bash","pattern":"npm test","decision":"once"}` };
    const o = x as Record<string, unknown>;
    const str = (k: string) => (typeof o[k] === "string" ? (o[k] as string) : o[k] === undefined ? "" : JSON.stringify(o[k]));
    rows.push({ tool: str("tool"), pattern: str("pattern"), decision: str("decision") });
  }
  return { ok: true, rows };
}

export const rulesJson = (rows: readonly RuleRow[]): string => JSON.stringify(rows, null, 2);

const VERB: Record<string, string> = { once: "approves (once each time)", always: "approves (as “always”)", reject: "refuses" };
const OPS = "; && || | & and line breaks";

/**
 * Exactly what a rule answers, in words (the engine's matching: inspect.ts ruleMatches / pickRule): a glob over the
 * asked text; a shell command per simple command — approving only when every part matches and the command splits with
 * certainty, refusing when the whole command or any part matches.
 */
export function describeRule(r: RuleRow): string {
  const verb = VERB[r.decision] ?? "answers";
  const glob = r.pattern === "*" ? "anything" : `the glob “${r.pattern}”`;
  const tool = r.tool.trim();
  if (tool === "bash") {
    if (r.decision === "reject") return `Refuses a shell command when the whole command or any of its simple commands (split at ${OPS}) matches ${glob}.`;
    return `${cap(verb)} a shell command only when every one of its simple commands (split at ${OPS}) matches ${glob}; never one that cannot be split with certainty ($(…), backticks, subshells, invisible characters).`;
  }
  const what =
    tool === "*" ? "any tool's ask" : tool === "edit" ? "an edit whose path" : tool === "webfetch" ? "a fetch whose URL" : `a ${tool} ask whose text`;
  const tail = tool === "*" ? ` whose text matches ${glob} (shell commands part by part, as for bash)` : ` matches ${glob}`;
  return `${cap(verb)} ${what}${tail}. Questions are never answered by a rule.`;
}

const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** A rule's order matters: a rejecting rule wins, otherwise the first matching rule answers. */
export function moveRow<T>(rows: readonly T[], from: number, to: number): T[] {
  if (to < 0 || to >= rows.length || from === to) return [...rows];
  const next = [...rows];
  const [x] = next.splice(from, 1);
  next.splice(to, 0, x!);
  return next;
}
