import { ERROR_MAP, OcwError, type ErrorCode } from "../../shared/errors";
import { config } from "../api/launcher";
import { grantOffer, type PermissionAsk } from "../../shared/permission";
import { showUntrusted } from "../../shared/untrusted";
import { engineErrorText } from "../../shared/words";

/** A user error: printed as one line, exit code 2. */
export class CliError extends Error {}

export function fail(err: unknown): never {
  const e = err as Error;
  // A request that got no answer ("fetch failed", a refused connection) says the engine did not answer and what to do.
  const msg = engineErrorText((e?.message ?? String(err)).split("\n")[0] ?? "");
  // Anything not anticipated is still one line, but keeps its stack for OCW_DEBUG=1.
  if (config().OCW_DEBUG) console.error(e?.stack);
  // An error may quote worker-written text (a command, a path): no escape sequence reaches the terminal.
  console.error(`ocw: ${showUntrusted(msg ?? "", { lines: false, max: 2000 })}`);
  // The engine's error code decides the exit status (shared/errors.ts); anything else is a usage error.
  const code = (e as { data?: { ocwCode?: string } })?.data?.ocwCode ?? (e instanceof OcwError ? e.code : undefined);
  process.exit(code && code in ERROR_MAP ? ERROR_MAP[code as ErrorCode].exit : 2);
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
