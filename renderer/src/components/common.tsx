import { useEffect, useRef, useState, type FocusEvent, type FormEvent, type ReactNode } from "react";
import type { Verdict } from "../../../shared/verdict";
import { checksWord } from "../../../shared/vocabulary";
import { mergedSibling } from "../../../shared/attempts";
import type { Worker, WorkerState } from "../../../shared/worker";
import { STATE_LABEL, stateTone } from "../format";
import { href } from "../router";
import { useStore } from "../store";

export function StateChip({ state }: { state: WorkerState }) {
  return <span className={`chip chip-${stateTone(state)}`}>{STATE_LABEL[state]}</span>;
}

export function CountBadge({ count, label }: { count: number; label: string }) {
  if (!count) return null;
  return (
    <span className="badge" aria-label={`${count} ${label}`} title={`${count} ${label}`}>
      {count}
    </span>
  );
}

export function Sparkline({ values, label }: { values: number[]; label: string }) {
  const w = 80;
  const h = 18;
  if (values.length < 2) return <svg className="spark" width={w} height={h} role="img" aria-label={`${label}: no data yet`} />;
  const max = Math.max(1, ...values);
  const step = w / (values.length - 1);
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`).join(" ");
  const last = values[values.length - 1] ?? 0;
  return (
    <svg className="spark" width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`${label}: ${last} tokens/s`}>
      <polyline points={pts} fill="none" stroke="currentColor" strokeWidth="1.5" />
    </svg>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <h3>{title}</h3>
      {children}
    </div>
  );
}

/** A warning inline in a form: what is missing and what to do (the title says what, the children how). */
export function Warning({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="inline-warning" role="note">
      <strong>{title}</strong> {children}
    </div>
  );
}

export function CopyField({ value, label }: { value: string; label: string }) {
  return (
    <div className="copy">
      <code aria-label={label}>{value}</code>
      <button type="button" className="btn small" onClick={() => void navigator.clipboard?.writeText(value).catch(() => undefined)}>
        Copy
      </button>
    </div>
  );
}

/**
 * What grading found, in two separate statements: the verdict (built / failed, from the held-back checks) and whether
 * the worker's own claim matched it. Never one word that mixes both.
 */
export function VerdictChips({ verdict, checks = true }: { verdict: Verdict; checks?: boolean }) {
  const built = verdict.verdict === "built";
  return (
    <>
      <span className={`chip chip-${built ? "ok" : "bad"}`} aria-label={`verdict: ${built ? "built" : "failed"}`}>
        {built ? "built" : "failed"}
        {checks ? ` · ${checksWord(verdict.checks)}` : ""}
      </span>
      {verdict.weakEvidence && (
        <span className="chip chip-warn" title="every check already passed on the base commit before any change">
          weak evidence
        </span>
      )}
      <ClaimChip verdict={verdict} />
    </>
  );
}

function ClaimChip({ verdict }: { verdict: Verdict }) {
  const said = verdict.claim === "built" ? "built" : verdict.claim === "honest-failure" ? "failed" : null;
  if (!said)
    return (
      <span className="chip chip-warn" aria-label="claim: none" title="The worker gave no OUTCOME line">
        no claim
      </span>
    );
  if (verdict.honest)
    return (
      <span className="chip chip-ok" aria-label="claim: honest" title={`The worker said ${said}, and the checks agree`}>
        claim honest
      </span>
    );
  return (
    <span
      className="chip chip-bad"
      aria-label="claim: false"
      title={`The worker said ${said}; the checks say ${verdict.verdict === "built" ? "built" : "failed"}`}
    >
      claim false: said {said}
    </span>
  );
}

/**
 * A modal dialog over the page. Opened, it has the focus (its autoFocus control, else the dialog itself, never a button
 * that acts); Escape closes it; closed, the focus goes back to what opened it. Before, a keyboard user stayed on the
 * button behind the dialog, could not close it without the mouse, and landed on the page's top after Cancel.
 * With `onSubmit` the dialog is a form.
 */
export function Modal({
  label,
  onClose,
  onSubmit,
  children,
}: {
  label: string;
  onClose: () => void;
  onSubmit?: (e: FormEvent<HTMLFormElement>) => void;
  children: ReactNode;
}) {
  const box = useRef<HTMLDivElement & HTMLFormElement>(null);
  // Read while rendering, before a control of the dialog takes the focus (autoFocus).
  const [opener] = useState(() => document.activeElement as HTMLElement | null);
  const close = useRef(onClose);
  close.current = onClose;
  useEffect(() => {
    if (!box.current?.contains(document.activeElement)) box.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      e.preventDefault();
      close.current();
    };
    window.addEventListener("keydown", onKey);
    return () => {
      window.removeEventListener("keydown", onKey);
      if (opener?.isConnected && (!document.activeElement || document.activeElement === document.body)) opener.focus();
    };
  }, [opener]);
  const props = { ref: box, className: "modal", role: "dialog", "aria-modal": true, "aria-label": label, tabIndex: -1 } as const;
  return (
    <div className="modal-back">
      {onSubmit ? (
        <form {...props} onSubmit={onSubmit}>
          {children}
        </form>
      ) : (
        <div {...props}>{children}</div>
      )}
    </div>
  );
}

/**
 * Focus that was inside an element (spread the handlers returned on it) and fell to the page's top because what held it
 * went away (a decided ask's buttons) is put on `fallback()` when `key` changes, without scrolling; `later`: a frame
 * later, once the other effects of that change have rendered (the inbox's selection moving on). A `fallback()` with
 * nothing to give yet (an action still running) leaves it for the next change. Handlers, not listeners on a ref: the
 * element may itself be rendered only while there is something to decide.
 */
export function useFocusKept(
  key: string,
  fallback: () => HTMLElement | null | undefined,
  opts: { later?: boolean } = {},
): { onFocus: () => void; onBlur: (e: FocusEvent<HTMLElement>) => void } {
  const inside = useRef(false);
  const pick = useRef(fallback);
  pick.current = fallback;
  useEffect(() => {
    if (!inside.current || (document.activeElement && document.activeElement !== document.body)) return;
    const put = () => {
      const to = pick.current();
      if (!to) return;
      inside.current = false;
      to.focus({ preventScroll: true });
    };
    if (opts.later) requestAnimationFrame(put);
    else put();
  }, [key, opts.later]);
  return {
    onFocus: () => {
      inside.current = true;
    },
    // Focus that moves elsewhere leaves it; a removed button's blur (no next target) is what the effect above mends.
    onBlur: (e) => {
      if (e.relatedTarget && !e.currentTarget.contains(e.relatedTarget)) inside.current = false;
    },
  };
}

/** A retry's link to the worker it runs the task of again (a retry's card and page read the same as the first's). */
export function RetryOfChip({ of }: { of: string | null }) {
  if (!of) return null;
  return (
    <a className="chip chip-idle" href={href({ name: "worker", id: of })} title="This worker runs the task of an earlier one again: open that one">
      retry of {of}
    </a>
  );
}

/**
 * A losing attempt's winner: the attempt whose build made the engine stop `w` (its id, as the worker's record names it;
 * its index among the attempts when this page knows that worker; the branch it was merged into while that merge
 * stands, else null), or null when `w` is no losing attempt.
 */
export function useLostTo(w: Worker | undefined): { id: string; index: number | null; mergedInto: string | null } | null {
  const id = w?.lostTo ?? null;
  const index = useStore((s) => (id ? (s.workers[id]?.attempt?.index ?? null) : null));
  const mergedInto = useStore((s) => {
    const winner = id ? s.workers[id] : undefined;
    return winner?.merged && !winner.reverted ? winner.merged.into : null;
  });
  return id === null ? null : { id, index, mergedInto };
}

/** How a losing attempt names the attempt that was built: "attempt 2" (or "another attempt" when its index is unknown). */
export const lostToName = (lostTo: { index: number | null }): string => (lostTo.index !== null ? `attempt ${lostTo.index}` : "another attempt");

/**
 * The attempt of `w`'s task that was merged (and stands): its id, index and the branch it went into; null when none
 * is, or `w` is no attempt. The task is done there: `w` is not retried (the engine refuses it too).
 */
export function useMergedSibling(w: Worker | undefined): { id: string; index: number | null; into: string } | null {
  const sib = useStore((s) => (w ? mergedSibling(w, Object.values(s.workers)) : null));
  return sib?.merged ? { id: sib.id, index: sib.attempt?.index ?? null, into: sib.merged.into } : null;
}
