// The engine token for this page, taken once from where it was handed over (see api.ts). Its own module, so the entry
// (main.tsx) takes it at once: the app loads a frame later, and a URL changed in between must not lose it.
import { desktop } from "./desktop";

const TOKEN_KEY = "ocw.token";

let taken: string | null = null;

/** The engine token for this page, taken once from where it was handed over; "" when the page was opened without one. */
export function takeToken(): string {
  taken ??= take();
  return taken;
}

function take(): string {
  if (typeof window === "undefined") return "";
  if (desktop?.token) return desktop.token;
  const url = new URL(window.location.href);
  const fromQuery = url.searchParams.get("token");
  const fromHash = /^#token=([^&]*)/.exec(url.hash)?.[1];
  const given = fromQuery ?? (fromHash !== undefined ? decodeURIComponent(fromHash) : null);
  if (given !== null) {
    url.searchParams.delete("token");
    if (fromHash !== undefined) url.hash = "#/";
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
    try {
      window.sessionStorage.setItem(TOKEN_KEY, given);
    } catch {
      /* storage off: the token lives as long as the page */
    }
    return given;
  }
  try {
    return window.sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}
