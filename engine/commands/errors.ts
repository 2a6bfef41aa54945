import { ERROR_MAP, OcwError, type ErrorCode } from "../../shared/errors";
import { config } from "../api/launcher";
import { grantOffer, type PermissionAsk } from "../../shared/permission";
import { showUntrusted } from "../../shared/untrusted";
import { engineErrorText } from "../../shared/words";

/** The names of JavaScript's own runtime errors (a SyntaxError is left out: JSON.parse of bad input throws one). */
const INTERNAL_ERRORS = new Set(["TypeError", "RangeError", "ReferenceError"]);

/** A user error: printed as one line, exit code 2. */
export class CliError extends Error {}

const NOT_FOUND_HINTS: [RegExp, string][] = [
  [/^unknown batch "(?:[^"\\]|\\.)*"$/, ": `ocw list` shows each worker's batch"],
  [/^unknown worker "(?:[^"\\]|\\.)*"$/, ": `ocw list` lists the workers"],
];

export function fail(err: unknown): never {
  const e = err as Error;
  // A request that got no answer ("fetch failed", a refused connection) says the engine did not answer and what to do.
  let msg = engineErrorText((e?.message ?? String(err)).split("\n")[0] ?? "");
  // JavaScript's own runtime errors in the command itself are a bug of ocw, said as one ("Cannot read properties of
  // undefined" alone reads like a refusal); one whose text engineErrorText rewrote is a request that got no answer.
  const internal = e instanceof Error && INTERNAL_ERRORS.has(e.name) && msg === (e.message.split("\n")[0] ?? "");
  if (internal)
    msg = `an internal error (${e.name}: ${msg}): a bug in ocw, not a fault of the command; run it again with OCW_DEBUG=1 for the stack, and please report it`;
  // Anything not anticipated is still one line, but keeps its stack for OCW_DEBUG=1.
  if (config().OCW_DEBUG) console.error(e?.stack);
  const code = (e as { data?: { ocwCode?: string } })?.data?.ocwCode ?? (e instanceof OcwError ? e.code : undefined);
  // The engine's bare "unknown batch/worker" (every command that takes the id) says where the ids are listed.
  if (code === "not-found") msg += NOT_FOUND_HINTS.find(([re]) => re.test(msg))?.[1] ?? "";
  // An error may quote worker-written text (a command, a path): no escape sequence reaches the terminal.
  console.error(`ocw: ${showUntrusted(msg ?? "", { lines: false, max: 2000 })}`);
  // The engine's error code decides the exit status (shared/errors.ts); a bug of ocw's own is 1; anything else is a
  // usage error.
  process.exit(code && code in ERROR_MAP ? ERROR_MAP[code as ErrorCode].exit : internal ? 1 : 2);
}

/**
 * How an unattended run (`--approve once|always|reject`, `ocw grade`) answers an ask. A question cannot be answered
 * for the person, so it is dismissed with a note; the worker then reports its outcome.
 */
export function unattendedDecision(
  ask: Pick<PermissionAsk, "id" | "kind" | "tool" | "what" | "flags">,
  mode: "once" | "always" | "reject",
): { askId: string; decision: "once" | "always" | "reject"; message?: string } {
  if (ask.kind === "question") return { askId: ask.id, decision: "reject" as const, message: "unattended run: questions are dismissed" };
  // "always" only where a grant is offered (the exact simple commands); elsewhere the ask is approved once.
  if (mode === "always" && !grantOffer(ask).ok) return { askId: ask.id, decision: "once" };
  return { askId: ask.id, decision: mode };
}
