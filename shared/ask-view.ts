// What every client shows of an ask (GUI card, `ocw run` prompt, MCP forms and pending_approvals): the asked text made
// safe (shared/untrusted.ts), the engine's flags, and exactly what "always" would grant, or why it is not offered.
// Pure: no Node, no DOM.
import { grantOffer, type PermissionAsk } from "./permission";
import { showUntrusted, SHOW_MAX, untrustedView } from "./untrusted";

export interface AskView {
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
