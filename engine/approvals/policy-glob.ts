// A policy rule's pattern matched against what a worker asks, in bounded time. picomatch turns each `*` into a lazy
// `.*?` of a regular expression that backtracks polynomially in their number when the match fails: `*a*a*a*b` against
// 3,000 `a`s held the engine's thread for minutes (every client and every worker waited), and the text is the worker's
// command or path. So a pattern of plain text, `*` and `?` is matched here by the linear wildcard walk (the same answer
// as picomatch's with {dot, bash}: policy-glob.test.ts checks it against picomatch); any other pattern or text goes to
// picomatch only where its cost is bounded (one run of `*`, or two on a text of at most 10,000 characters), and
// otherwise gets the answer that holds the worker back: a rejecting rule matches, an approving one does not.
import picomatch from "picomatch";
import { STAR, type WildcardToken, wildcardMatch } from "../../shared/wildcard";

const OPTIONS = { dot: true, bash: true } as const;

/**
 * Plain: literal text, `*` and `?` only — no quote, class, brace, extglob, `|`, `$`, `\`, `!`, control character, `/`
 * beside a `*` (`a/**` also matches `a`) or leading `./` (picomatch reads all of those its own way).
 */
const plainPattern = (p: string) => /^[^"'\\[\]{}()!+@|$\u0000-\u001f]+$/.test(p) && !/\/\*|\*\/|^\.\//.test(p);

/** Plain text: not empty, no `.` or `..` segment (picomatch's `*` never matches one), no line break (nor does its `*`). */
const plainText = (t: string) => t !== "" && !/(^|\/)\.\.?(\/|$)|[\n\r\u2028\u2029]/.test(t);

/** A plain pattern as the walk's tokens: `*` any run, `?` one character that is not `/`, anything else itself. */
const tokens = (pattern: string): WildcardToken[] =>
  pattern.split("").map((c): WildcardToken => (c === "*" ? STAR : c === "?" ? (x) => x !== "/" : (x) => x === c));

/** Texts longer than this are matched by picomatch only with a single run of `*`. */
const PICOMATCH_TEXT_MAX = 10_000;

/**
 * Whether `pattern` matches `text` as picomatch would ({dot: true, bash: true}), in bounded time; where that cannot be
 * told in bounded time, `holdBack` (true for a rejecting rule: it matches; false for an approving one: it does not).
 */
export function policyGlob(text: string, pattern: string, holdBack: boolean): boolean {
  if (plainPattern(pattern) && plainText(text)) return wildcardMatch(text, tokens(pattern));
  const stars = pattern.match(/\*+/g)?.length ?? 0;
  if (stars <= 1 || (stars === 2 && text.length <= PICOMATCH_TEXT_MAX)) return picomatch.isMatch(text, pattern, OPTIONS);
  return holdBack;
}
