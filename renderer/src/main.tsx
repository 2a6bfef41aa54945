// Entry. index.html holds a static shell (brand, "Loading…") that the browser paints as soon as the page and its CSS
// are in: the app's script (React, the store, the dashboard) would otherwise run before the first paint, which on a
// busy machine took over a second. The app is a chunk of its own (preloaded by the page), started once that first
// frame is on screen. The engine token is taken from the address at once, before anything can change the address.
import "./styles.css";
import { applyTheme, followSystemTheme } from "./theme";
import { takeToken } from "./token";

takeToken();
// The person's theme before the first paint (no flash of the other one).
applyTheme();
followSystemTheme();
requestAnimationFrame(() => setTimeout(() => void import("./boot")));
