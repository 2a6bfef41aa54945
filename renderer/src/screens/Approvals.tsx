import { useEffect, useMemo, useRef, useState } from "react";
import { askView } from "../../../shared/ask-view";
import { showUntrusted } from "../../../shared/untrusted";
import { errorText } from "../api";
import { AskCard, decide, keyRefusal } from "../components/AskCard";
import { Empty, useFocusKept } from "../components/common";
import { toolShown } from "../format";
import { GrantList } from "../components/Grants";
import { grantsInView } from "../../../shared/grants";
import { pushNotice, usePending, useStore, ENGINE_WORDS } from "../store";

/** Every pending ask across workers, oldest first. Keys: j/k move, a approve once, A always allow, r reject. */
export function Approvals({ focus }: { focus?: string }) {
  const pending = usePending();
  const workers = useStore((s) => s.workers);
  // Only grants in force: those of finished workers expired with their run (and would name their workspaces).
  const grants = useMemo(() => grantsInView(Object.values(workers).flatMap((w) => w.grants)), [workers]);
  const [selectedId, setSelectedId] = useState<string | null>(focus ?? null);
  const listRef = useRef<HTMLUListElement>(null);
  // A deep link (ocw://ask/ID, a card's ask badge) only focuses an ask: the single-key decisions (a, A, r) stay off until
  // a click on this screen, so keys typed meant for another window, or a link opened by someone else, approve nothing.
  const [armed, setArmed] = useState(!focus);
  // A deep link (a card's ask badge) selects that ask and brings it into view.
  useEffect(() => {
    if (!focus) return;
    setArmed(false);
    setSelectedId(focus);
    requestAnimationFrame(() => listRef.current?.querySelector(`[data-ask-id="${CSS.escape(focus)}"]`)?.scrollIntoView({ block: "start" }));
  }, [focus]);
  const index = Math.max(
    0,
    pending.findIndex((a) => a.id === selectedId),
  );
  const selected = pending[index];

  useEffect(() => {
    if (pending.length && (!selectedId || !pending.some((a) => a.id === selectedId))) setSelectedId(pending[Math.min(index, pending.length - 1)]!.id);
  }, [pending, selectedId, index]);

  // A card decided with its own button goes away with the focus (to the page's top): it goes on to the ask selected
  // next, its list item, as j / k leave it.
  const keepFocus = useFocusKept(
    pending.map((a) => a.id).join(),
    () => listRef.current?.querySelector<HTMLElement>('li[aria-current="true"]') ?? listRef.current?.querySelector<HTMLElement>("li"),
    // After the selection has moved on (the effect above).
    { later: true },
  );

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (!pending.length) return;
      const conn = useStore.getState().connection;
      // While the engine is unreachable, keys decide nothing (the buttons are disabled too).
      if (conn !== "live" && conn !== "connecting" && (e.key === "a" || e.key === "A" || e.key === "r")) return;
      const move = (d: number) => {
        const next = pending[Math.max(0, Math.min(pending.length - 1, index + d))]!;
        setSelectedId(next.id);
        listRef.current?.querySelector(`[data-ask-id="${CSS.escape(next.id)}"]`)?.scrollIntoView({ block: "nearest" });
        // The selected ask takes the focus, so a screen reader reads which ask j / k moved to (its list item's name).
        listRef.current?.querySelector<HTMLElement>(`li[data-ask="${CSS.escape(next.id)}"]`)?.focus({ preventScroll: true });
      };
      const act = (d: "once" | "always" | "reject") => {
        if (!selected) return;
        const refused = keyRefusal(selected, d);
        if (refused) {
          // The card's first choice gets the focus, so the keyboard goes on from there.
          listRef.current
            ?.querySelector<HTMLElement>(`[data-ask-id="${CSS.escape(selected.id)}"] input, [data-ask-id="${CSS.escape(selected.id)}"] button`)
            ?.focus();
          return pushNotice("info", refused);
        }
        const offer = askView(selected);
        if (d === "always" && !offer.always)
          return pushNotice("info", `“Always allow” is not offered for the ask from ${selected.workerId}: ${offer.alwaysWhy}`);
        // Select the next one right away so a run of keypresses walks the list.
        const next = pending[index + 1] ?? pending[index - 1];
        setSelectedId(next?.id ?? null);
        decide(selected, d).catch((err) => pushNotice("error", `the ask from ${selected.workerId}: ${errorText(err)}`, ENGINE_WORDS));
      };
      if ((e.key === "a" || e.key === "A" || e.key === "r") && !armed) {
        e.preventDefault();
        pushNotice("info", "Opened from a link: click the ask (or anywhere on this screen) before deciding with a key");
        return;
      }
      if (e.key === "j" || e.key === "ArrowDown") move(1);
      else if (e.key === "k" || e.key === "ArrowUp") move(-1);
      else if (e.key === "a") act("once");
      else if (e.key === "A") act("always");
      else if (e.key === "r") act("reject");
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [pending, index, selected, armed]);

  return (
    <div className="approvals" data-keys={armed ? "on" : "off-until-click"} onPointerDown={(e) => e.isTrusted && setArmed(true)}>
      <p className="muted small keys">
        <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve once · <kbd>A</kbd> always allow · <kbd>r</kbd> reject (a question: dismiss; its answers are
        picked on its card). Oldest first. Nothing is approved automatically unless you set a policy.
      </p>
      {!armed && (
        <p className="small field-error" role="status" aria-label="keys off until a click">
          Opened from a link: the <kbd>a</kbd> / <kbd>A</kbd> / <kbd>r</kbd> keys decide nothing until you click on this screen.
        </p>
      )}
      {pending.length === 0 && <Empty title="Nothing is waiting for you">Permission asks and questions from every worker show up here.</Empty>}
      <ul className="ask-list" aria-label="Pending approvals" ref={listRef} {...keepFocus}>
        {pending.map((a) => (
          <li
            key={a.id}
            data-ask={a.id}
            tabIndex={-1}
            aria-current={a.id === selected?.id ? "true" : undefined}
            // A path in the worker's own workspace named as the card shows it, relative (not the engine's state folder).
            aria-label={`${a.kind === "question" ? "question" : toolShown(a.tool)} from ${a.workerId}: ${showUntrusted(inWorkspace(a.what, workers[a.workerId]?.worktree), { max: 300, lines: false })}`}
          >
            <AskCard ask={a} selected={a.id === selected?.id} onSelect={() => setSelectedId(a.id)} />
          </li>
        ))}
      </ul>
      <section className="panel grants-panel" aria-label="Grants">
        <h2>
          Grants{" "}
          <span className="muted small">· “always” answers the engine holds, per worker; revoke one and that worker's later asks wait for you again</span>
        </h2>
        <GrantList grants={grants.shown} expiredLeftOut={grants.expired} label="All grants" worktreeOf={(id) => workers[id]?.worktree} />
      </section>
    </div>
  );
}

/** `what` with the worker's workspace folder left out of its paths, as its card shows them. */
const inWorkspace = (what: string, worktree: string | null | undefined) => (worktree ? what.split(`${worktree}/`).join("") : what);
