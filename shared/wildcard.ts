// The wildcard walk of two matchers that must take bounded time on text a worker chose: a policy rule's pattern against
// an asked command (engine/approvals/policy-glob.ts) and a Makefile's include word against a file name
// (engine/grading/make-includes.ts). picomatch's regular expression for several `*` backtracks polynomially.

/** `*`: any run of characters. */
export const STAR = Symbol("*");
/** A pattern read as tokens: STAR, or a test of one character. */
export type WildcardToken = typeof STAR | ((c: string) => boolean);

/** Whether the tokens match the whole text: `*` any run, a test one character; back to the last `*` only (linear in practice). */
export function wildcardMatch(text: string, tokens: WildcardToken[]): boolean {
  let t = 0;
  let k = 0;
  let star = -1;
  let from = 0;
  while (t < text.length) {
    const tok = tokens[k];
    if (tok !== undefined && tok !== STAR && tok(text[t]!)) {
      t++;
      k++;
    } else if (tok === STAR) {
      star = k++;
      from = t;
    } else if (star >= 0) {
      k = star + 1;
      t = ++from;
    } else return false;
  }
  while (tokens[k] === STAR) k++;
  return k === tokens.length;
}
