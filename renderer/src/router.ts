// Hash routes, so a reload of any screen still loads index.html (the engine serves it at /).
import { useSyncExternalStore } from "react";

export type Route =
  | { name: "dashboard" }
  | { name: "new" }
  | { name: "approvals"; ask?: string }
  | { name: "worker"; id: string }
  | { name: "attempts"; id: string }
  | { name: "setup" }
  | { name: "grades" }
  | { name: "settings" };

function parse(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  switch (parts[0]) {
    case "new":
      return { name: "new" };
    case "approvals":
      return parts[1] ? { name: "approvals", ask: parts[1] } : { name: "approvals" };
    case "workers":
      return parts[1] ? { name: "worker", id: parts[1] } : { name: "dashboard" };
    case "attempts":
      return parts[1] ? { name: "attempts", id: parts[1] } : { name: "dashboard" };
    case "setup":
      return { name: "setup" };
    case "grades":
      return { name: "grades" };
    case "settings":
      return { name: "settings" };
    default:
      return { name: "dashboard" };
  }
}

export function href(r: Route): string {
  if (r.name === "worker") return `#/workers/${encodeURIComponent(r.id)}`;
  if (r.name === "attempts") return `#/attempts/${encodeURIComponent(r.id)}`;
  if (r.name === "approvals" && r.ask) return `#/approvals/${encodeURIComponent(r.ask)}`;
  return r.name === "dashboard" ? "#/" : `#/${r.name}`;
}

export function go(r: Route): void {
  location.hash = href(r);
}

/**
 * go(r) from a control that goes away with the screen it is on (New task's "Start …"): the focus would fall to the page's
 * top. It goes to the element `target` (a CSS selector) selects once the new screen shows it (within 10 s, the engine's
 * news of what was started may come after the screen), unless something else has taken the focus by then.
 */
export function goAndFocus(r: Route, target: string): void {
  const hash = href(r);
  go(r);
  /** Done: the element focused (or the focus taken by something else), or the screen left. */
  const settled = (): boolean => {
    if (location.hash !== hash) return true;
    const el = document.querySelector<HTMLElement>(target);
    if (!el) return false;
    const now = document.activeElement;
    if (!now || now === document.body || !now.isConnected) el.focus();
    return true;
  };
  // Looked at again as the page changes (the new screen renders, the engine's news of what was started comes).
  const watch = new MutationObserver(() => settled() && stop());
  const timer = setTimeout(() => stop(), 10_000);
  const stop = () => {
    watch.disconnect();
    clearTimeout(timer);
  };
  watch.observe(document.body, { childList: true, subtree: true });
}

const subscribe = (fn: () => void) => {
  window.addEventListener("hashchange", fn);
  return () => window.removeEventListener("hashchange", fn);
};

export function useRoute(): Route {
  const hash = useSyncExternalStore(subscribe, () => location.hash);
  return parse(hash);
}
