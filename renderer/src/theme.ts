// Light, dark or the system's: the person's choice, kept in this browser (localStorage `ocw.theme`), applied as
// `data-theme` on <html> before the app's first paint (main.tsx) and again whenever the choice or the system's scheme
// changes. The CSS picks its colours from `data-theme`; before any script runs, from the system's scheme.
export type ThemePref = "system" | "light" | "dark";
export const THEME_PREFS: readonly ThemePref[] = ["system", "light", "dark"];
const THEME_KEY = "ocw.theme";

/** A stored value read back: anything but "light" or "dark" (missing, garbage) is "system". */
export function parseThemePref(v: string | null | undefined): ThemePref {
  return v === "light" || v === "dark" ? v : "system";
}

/** The theme shown for a choice, given whether the system asks for dark. */
export function resolveTheme(pref: ThemePref, systemDark: boolean): "light" | "dark" {
  return pref === "system" ? (systemDark ? "dark" : "light") : pref;
}

const media = () => (typeof window !== "undefined" && window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null);

export function readThemePref(): ThemePref {
  try {
    return parseThemePref(localStorage.getItem(THEME_KEY));
  } catch {
    return "system";
  }
}

/** Shows `pref` now (and remembers it when `save`). */
export function applyTheme(pref: ThemePref = readThemePref(), save = false): void {
  if (save) {
    try {
      if (pref === "system") localStorage.removeItem(THEME_KEY);
      else localStorage.setItem(THEME_KEY, pref);
    } catch {
      /* storage off: the choice lasts for this page */
    }
  }
  const theme = resolveTheme(pref, media()?.matches ?? false);
  document.documentElement.dataset.theme = theme;
  document.documentElement.dataset.themePref = pref;
}

/** Follows the system's scheme while the choice is "system"; returns the unsubscribe. */
export function followSystemTheme(): () => void {
  const m = media();
  if (!m) return () => undefined;
  const on = () => readThemePref() === "system" && applyTheme("system");
  m.addEventListener("change", on);
  return () => m.removeEventListener("change", on);
}

/** Whether the page shows the dark theme now (the person's choice, else the system's). */
export function themeIsDark(): boolean {
  const t = document.documentElement.dataset.theme;
  return t ? t === "dark" : (media()?.matches ?? false);
}

/** Calls `fn` when the theme shown may have changed (the choice, or the system's scheme); returns the unsubscribe. */
export function onThemeChange(fn: () => void): () => void {
  const mo = new MutationObserver(fn);
  mo.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  const m = media();
  m?.addEventListener("change", fn);
  return () => {
    mo.disconnect();
    m?.removeEventListener("change", fn);
  };
}
