// How counts and lost connections read to a person, the same in the engine's messages, the CLI, the MCP bridge and
// the GUI. Pure: no I/O, no Node module, no DOM.

/** A count with its noun: "1 worker", "3 workers", "2 batches" (an irregular plural is given). Never "worker(s)". */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The words a platform uses for a request that never got an answer: the browser's "Failed to fetch" (Chrome),
 * "NetworkError when attempting to fetch resource." (Firefox), "Load failed" (Safari), Node's "fetch failed", a refused
 * or reset connection, a socket closed mid-answer. Only a message that is nothing else: "could not reach URL: ECONNREFUSED"
 * already says what failed (a provider, a model server), and is not about the engine.
 */
const NO_ANSWER =
  /^(?:TypeError: )?(?:failed to fetch|fetch failed|networkerror when attempting to fetch resource|load failed|socket hang up|other side closed|(?:connect |read )?ECONN(?:REFUSED|RESET))\b/i;

/** Whether an error message is a platform's "no answer" rather than the engine's own words. */
export function isNoAnswer(message: string): boolean {
  return NO_ANSWER.test(message.trim());
}

/** How `engineErrorText` begins. */
export const ENGINE_NO_ANSWER = "the engine did not answer";

/**
 * A lost connection to the engine in words a person can act on: what happened and what to do, the platform's words
 * kept in parentheses. Any other message is returned as it is (the engine's errors already say what to do).
 * `where`: the engine's address when known.
 */
export function engineErrorText(message: string, where?: string): string {
  const m = message.trim().replace(/^TypeError: /, "");
  if (!isNoAnswer(m)) return message;
  return `${ENGINE_NO_ANSWER}${where ? ` at ${where}` : ""} (${m}): it may have stopped — start it with \`ocw serve\` (or reopen the app), then try again`;
}
