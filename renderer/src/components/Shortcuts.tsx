import { useEffect, useRef, useState } from "react";
import { go, type Route } from "../router";

/** "g" then a letter goes to a screen. */
const GO_KEYS: { key: string; route: Route; label: string }[] = [
  { key: "d", route: { name: "dashboard" }, label: "Dashboard" },
  { key: "a", route: { name: "approvals" }, label: "Approvals" },
  { key: "n", route: { name: "new" }, label: "New task" },
  { key: "s", route: { name: "setup" }, label: "Model setup" },
  { key: "r", route: { name: "grades" }, label: "Grades" },
  { key: "p", route: { name: "settings" }, label: "Settings" },
];

const SECTIONS: { title: string; rows: [string[], string][] }[] = [
  {
    title: "Anywhere",
    rows: [
      [["?"], "show / hide this sheet"],
      [["Esc"], "close a sheet or dialog"],
      ...GO_KEYS.map((g): [string[], string] => [["g", g.key], `go to ${g.label}`]),
    ],
  },
  {
    title: "Approvals",
    rows: [
      [["j"], "next ask"],
      [["k"], "previous ask"],
      [["a"], "approve the selected ask once"],
      [["A"], "always allow (a grant for that worker, revocable)"],
      [["r"], "reject the selected ask"],
    ],
  },
  {
    title: "Worker",
    rows: [[["Ctrl", "Enter"], "send the steering message"]],
  },
];

const typing = (t: EventTarget | null) => {
  const el = t as HTMLElement | null;
  return !!el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
};

/** Global keys: `?` opens the shortcut sheet, `g` + letter navigates. Keys typed into a field are left alone. */
export function Shortcuts() {
  const [open, setOpen] = useState(false);
  const pendingG = useRef<number>(0);
  const closeRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && open) {
        setOpen(false);
        e.preventDefault();
        return;
      }
      if (typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "?") {
        setOpen((o) => !o);
        e.preventDefault();
        return;
      }
      // While the sheet is open, no screen acts on a key (an "a" must not approve an ask behind it).
      if (open) {
        e.stopImmediatePropagation();
        return;
      }
      if (e.key === "g" && !e.shiftKey) {
        pendingG.current = Date.now();
        return;
      }
      if (pendingG.current && Date.now() - pendingG.current < 1500) {
        pendingG.current = 0;
        const g = GO_KEYS.find((x) => x.key === e.key);
        if (g) {
          setOpen(false);
          go(g.route);
          e.preventDefault();
          e.stopImmediatePropagation();
        }
      }
    };
    // Capture, so "g a" is not also read as "approve" by the approvals screen.
    window.addEventListener("keydown", onKey, true);
    return () => window.removeEventListener("keydown", onKey, true);
  }, [open]);
  useEffect(() => {
    if (open) closeRef.current?.focus();
  }, [open]);
  if (!open) return null;
  return (
    <div className="modal-back" onClick={() => setOpen(false)}>
      <div className="modal shortcuts" role="dialog" aria-modal="true" aria-label="Keyboard shortcuts" onClick={(e) => e.stopPropagation()}>
        <div className="shortcuts-head">
          <h3>Keyboard shortcuts</h3>
          <button type="button" className="btn ghost small" ref={closeRef} aria-label="Close" onClick={() => setOpen(false)}>
            ×
          </button>
        </div>
        <div className="shortcut-sections">
          {SECTIONS.map((s) => (
            <section key={s.title} aria-label={`${s.title} shortcuts`}>
              <h2>{s.title}</h2>
              <table>
                <tbody>
                  {s.rows.map(([keys, what]) => (
                    <tr key={keys.join("+") + what}>
                      <td className="keys">
                        {keys.map((k, i) => (
                          <span key={i}>
                            {i > 0 && <span className="muted"> {keys[0] === "g" ? "then" : "+"} </span>}
                            <kbd>{k}</kbd>
                          </span>
                        ))}
                      </td>
                      <td>{what}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          ))}
        </div>
      </div>
    </div>
  );
}
